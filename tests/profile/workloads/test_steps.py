"""capture=steps whatever the workload (workloads/steps.py): the method (the workload's default
for auto), the variables the helper reads and where its step number comes from, the files it
needs, how the reports show the steps, and what plan says was found before the run."""

from __future__ import annotations

import dataclasses

import pytest

from nsysgen.model import TrainingPatch
from nsysgen.profile.plan_types import PATCH_FILE, SITE_FILE, SITE_HELPER_FILE, WINDOW_HELPER_FILE
from nsysgen.profile.workloads.steps import (
    METHOD_TEXT,
    step_detection,
    step_files,
    step_window_env,
)
from tests.profile.configs import config

PYTHON = ("workload=python", "capture=steps")
READ = TrainingPatch("t.py", "0" * 64, "", (("step loop", "t.py:5 (in main)"),), "it", "t.py:main")


@pytest.mark.parametrize(
    ("overrides", "method"),
    [
        (PYTHON, "hook"),
        ((*PYTHON, "capture.step_method=patch"), "patch"),
        (("workload=megatron", "capture=steps"), "native"),
        (("workload=nemo", "capture=steps"), "native"),
        (("workload=nccl", "capture=steps"), None),  # no steps to record
        (("workload=python",), None),  # a window
    ],
    ids=["python-auto", "python-patch", "megatron-auto", "nemo-auto", "nccl", "window"],
)
def test_the_method_is_the_workloads_default_unless_chosen(
    overrides: tuple[str, ...], method: str | None
) -> None:
    chosen = config(*overrides)
    assert chosen.setup.step_method == method  # decided once, when the config is typed
    assert chosen.setup.hooks is (method == "hook")
    assert chosen.setup.marks_steps is (method in ("hook", "patch"))


def test_the_helpers_variables_and_the_count_it_is_told() -> None:
    assert step_window_env(config(*PYTHON, "capture.ranks=[0,3]", "capture.optimizer_steps=2")) == (
        ("NSYSGEN_PROFILE_FIRST_STEP", "10"),
        ("NSYSGEN_PROFILE_LAST_STEP", "14"),
        ("NSYSGEN_PROFILE_RANKS", "0,3"),
        ("NSYSGEN_PROFILE_OPTIMIZER_STEPS", "2"),
    )
    assert step_window_env(config("workload=megatron", "capture=steps")) == ()  # Megatron's own


def test_the_step_number_comes_from_the_script_or_the_frameworks_counter() -> None:
    read = dataclasses.replace(config(*PYTHON), training_patch=READ)
    assert step_window_env(read)[-2:] == (
        ("NSYSGEN_PROFILE_STEP_EXPR", "it"),
        ("NSYSGEN_PROFILE_STEP_SCOPE", "t.py:main"),
    )
    megatron = config("workload=megatron", "capture=steps", "capture.step_method=hook")
    assert step_window_env(megatron)[-2:] == (
        ("NSYSGEN_PROFILE_STEP_EXPR", "iteration + 1"),
        ("NSYSGEN_PROFILE_STEP_SCOPE", "training.py:train"),
    )
    # The patched loop gives its own number: no expression to read.
    patched = dataclasses.replace(config(*PYTHON, "capture.step_method=patch"), training_patch=READ)
    assert len(step_window_env(patched)) == 3


def test_the_files_each_method_needs() -> None:
    assert step_files(config(*PYTHON)) == (SITE_FILE, SITE_HELPER_FILE)
    patch = (*PYTHON, "capture.step_method=patch")
    assert step_files(config(*patch, "workload.python.source=t.py")) == (
        PATCH_FILE,
        SITE_HELPER_FILE,
    )
    assert step_files(config(*patch)) == (WINDOW_HELPER_FILE,)  # to put in by hand
    assert step_files(config("workload=megatron", "capture=steps")) == ()
    assert step_files(config("workload=python")) == ()


def test_what_plan_says_was_found() -> None:
    read = dataclasses.replace(config(*PYTHON), training_patch=READ)
    found = step_detection(read)
    assert found[0] == ("step loop", "t.py:5 (in main)") and found[-1][0] == "checked"
    by_hand = step_detection(
        config(*PYTHON, "capture.step_method=patch", "capture.first_step=1", "capture.last_step=2")
    )
    assert [what for what, _ in by_hand] == ["method", "step number", "checked"]
    assert by_hand[0][1] == (
        "patch by hand (nsysgen_window.py: window.open(step) at the loop's top)"
    )
    assert by_hand[1][1].startswith("the number given to window.open(step), else a library's")
    assert by_hand[2][1].endswith(
        "; with capture.first_step=1, fewer than 2 training steps come before the window: a "
        "counter cannot be checked (a later first_step lets it)"
    )
    hook = dict(step_detection(config(*PYTHON)))
    assert hook["method"] == METHOD_TEXT["hook"]
    assert hook["step number"].endswith(
        "(set workload.python.source to number steps by the script's own counter)"
    )
    assert "fewer than 2 training steps" not in hook["checked"]  # first_step=10
    assert step_detection(config("workload=megatron", "capture=steps")) == (
        (
            "method",
            "native (Megatron-LM's --profile --profile-step-start=FIRST-1 "
            "--profile-step-end=LAST --profile-ranks)",
        ),
        (
            "step number",
            "the iteration Megatron logs as `iteration N` (from 1); with step_method=hook the "
            "helper reads the same counter while the optimizer steps",
        ),
    )
    assert step_detection(config("workload=python")) == ()
