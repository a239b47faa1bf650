"""The workload's own script, read once (inputs.py): its loop and step counter found, its sha256
taken as read (line endings kept), the patch or what the zero-patch helper reads, a library's
loop read at run time, and a script that cannot be read or has no loop an Issue at its field."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from nsysgen.errors import Issue
from nsysgen.model import TrainingPatch
from nsysgen.profile.inputs import training_patch
from nsysgen.profile.workloads.steps import METHOD_TEXT
from tests.profile.configs import config

LOOP = """\
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.Adam(model.parameters())
for step in range(10):
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
"""
GAN = """\
import torch

g = torch.nn.Linear(4, 4)
d = torch.nn.Linear(4, 4)
opt_g = torch.optim.Adam(g.parameters())
opt_d = torch.optim.Adam(d.parameters())
for step in range(10):
    d(torch.randn(2, 4)).sum().backward()
    opt_d.step()
    g(torch.randn(2, 4)).sum().backward()
    opt_g.step()
"""
HF = """\
import torch
from transformers import Trainer, TrainingArguments

model = torch.nn.Linear(4, 4)
trainer = Trainer(model, TrainingArguments(max_steps=12))
trainer.train()
"""
EPOCHS = """\
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.Adam(model.parameters())
loader = [torch.randn(2, 4)] * 8
for epoch in range(3):
    for i, batch in enumerate(loader):
        model(batch).sum().backward()
        optimizer.step()
        print(f"epoch {epoch} [{i}/{len(loader)}]")
"""
STEPS = ("workload=python", "capture=steps")


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory for the scripts (`source` is relative to it)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def patch_of(*overrides: str) -> TrainingPatch:
    found = training_patch(config(*STEPS, *overrides))
    assert isinstance(found, TrainingPatch), found
    return found


def test_nothing_is_read_without_a_step_window_a_source_or_a_helper(here: Path) -> None:
    (here / "loop.py").write_text(LOOP)
    assert training_patch(config("workload=python", "workload.python.source=loop.py")) is None
    assert training_patch(config(*STEPS)) is None  # no source
    native = config(
        "workload=command",
        "capture=steps",
        "capture.step_method=native",
        "workload.command.source=loop.py",
    )
    assert training_patch(native) is None  # the program opens the window itself


def test_the_zero_patch_helper_reads_the_loops_own_counter(here: Path) -> None:
    (here / "loop.py").write_text(LOOP)
    found = patch_of("workload.python.source=loop.py")
    assert found == TrainingPatch(
        "loop.py",
        hashlib.sha256(LOOP.encode()).hexdigest(),
        "",
        (
            ("step loop", "loop.py:5 (in <module>)"),
            ("step number", "step in loop.py:<module> (read while the optimizer steps)"),
            ("accumulation", "none"),
            ("method", METHOD_TEXT["hook"]),
        ),
        "step",
        "loop.py:<module>",
    )


def test_the_patch_method_carries_the_diff(here: Path) -> None:
    (here / "loop.py").write_text(LOOP)
    found = patch_of("workload.python.source=loop.py", "capture.step_method=patch")
    assert found.diff.startswith("--- a/loop.py\n+++ b/loop.py\n")
    assert "\n for step in range(10):\n+    _nsysgen_window.open(step)  # nsysgen\n" in found.diff
    assert "nsysgen_window.py\n" not in found.diff  # the helper is the tree's one copy
    assert found.detected[-1] == ("method", METHOD_TEXT["patch"])


def test_a_crlf_script_is_hashed_as_it_is_on_disk(here: Path) -> None:
    raw = LOOP.replace("\n", "\r\n").encode()
    (here / "loop.py").write_bytes(raw)
    assert patch_of("workload.python.source=loop.py").sha256 == hashlib.sha256(raw).hexdigest()


def test_several_optimizers_are_counted_as_the_helper_will(here: Path) -> None:
    (here / "gan.py").write_text(GAN)
    # capture.optimizer_steps=1 (the default) passes the helper no count: it learns the cycle.
    learned = dict(patch_of("workload.python.source=gan.py").detected)["optimizers"]
    assert learned.startswith("opt_d, opt_g step in the loop: the helper learns before the window")
    told = patch_of("workload.python.source=gan.py", "capture.optimizer_steps=2")
    assert dict(told.detected)["optimizers"] == (
        "opt_d, opt_g: 2 optimizer steps make one step (set)"
    )


def test_a_librarys_loop_is_numbered_by_its_counter_at_run_time(here: Path) -> None:
    (here / "hf.py").write_text(HF)
    found = patch_of("workload.python.source=hf.py")
    assert found.detected == (
        ("step loop", "the Hugging Face Trainer's own, run at hf.py:6 (trainer.train())"),
        (
            "step number",
            "state.global_step + 1 (transformers Trainer), the number its logs give the step, "
            "read at run time",
        ),
        ("method", METHOD_TEXT["hook"]),
    )
    assert (found.diff, found.at_step, found.scope) == ("", None, "")


def test_a_script_that_cannot_be_read_or_has_no_loop_is_an_issue(here: Path) -> None:
    assert training_patch(config(*STEPS, "workload.python.source=missing.py")) == Issue(
        "workload.python.source",
        "cannot read missing.py (No such file or directory) (allowed: a UTF-8 Python file, its "
        "path relative to the current directory)",
    )
    (here / "latin1.py").write_bytes(b"# caf\xe9\n")
    issue = training_patch(config(*STEPS, "workload.python.source=latin1.py"))
    assert isinstance(issue, Issue) and issue.path == "workload.python.source"
    assert issue.message.startswith("cannot read latin1.py ('utf-8' codec can't decode byte 0xe9")
    (here / "flat.py").write_text("x = 1\n")
    issue = training_patch(config(*STEPS, "workload.python.source=flat.py"))
    assert isinstance(issue, Issue) and issue.path == "workload.python.loop_line"
    assert issue.message.startswith("flat.py: found no training loop")


def test_the_manifest_records_what_was_decided_not_the_scripts_text() -> None:
    from dataclasses import replace

    from nsysgen.model import TrainingPatch
    from nsysgen.profile.inputs import decided

    patch = TrainingPatch("train.py", "a" * 64, "", (("step loop", "train.py:10"),), "step", "m")
    assert decided(replace(patch, sha256="b" * 64)) == decided(patch)  # an unrelated edit
    assert decided(replace(patch, detected=(("step loop", "train.py:11"),))) != decided(patch)
    assert decided(replace(patch, at_step="step + 1")) != decided(patch)
    assert decided(replace(patch, diff="--- a\n")) != decided(patch)


def test_a_log_of_the_index_within_the_epoch_asks_for_step_expr(here: Path) -> None:
    (here / "epochs.py").write_text(EPOCHS)
    for method in ("hook", "patch"):
        asked = training_patch(
            config(*STEPS, "workload.python.source=epochs.py", f"capture.step_method={method}")
        )
        assert isinstance(asked, Issue)
        assert asked.path == "workload.python.step_expr"
        assert asked.message.startswith(
            "epochs.py: the script's log shows each step as `i` (line 10), which restarts every "
            "epoch;"
        )
        assert asked.message.endswith("(candidates: `epoch * len(loader) + i`)")
    # Answered, in both modes: the number set, and where the helper reads it.
    # (Hydra's grammar takes the expression quoted, as a shell passes it on.)
    answer = (
        "workload.python.source=epochs.py",
        "workload.python.step_expr='epoch * len(loader) + i'",
    )
    hooked = patch_of(*answer)
    assert hooked.at_step == "epoch * len(loader) + i"
    assert dict(hooked.detected)["step number"] == (
        "epoch * len(loader) + i in epochs.py:<module> (workload.python.step_expr, read while "
        "the optimizer steps)"
    )
    patched = patch_of(*answer, "capture.step_method=patch")
    assert "+        _nsysgen_window.open(epoch * len(loader) + i)  # nsysgen\n" in patched.diff
    assert dict(patched.detected)["step number"].endswith("read at the top of each iteration)")
