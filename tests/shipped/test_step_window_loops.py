"""The step helper ends every step at its optimizer step, whatever the loop's shape: run
unmodified scripts (zero-patch: the helper on PYTHONPATH as sitecustomize) under the torch
stand-in and check one capture start and stop, exactly FIRST..LAST, one optimizer step per step
range (or the number configured), every micro-batch inside its step, and the numbering."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nsysgen.patching.patch import PatchError, analyse
from tests.conftest import RunCli
from tests.stepruns import STANDIN, run_script, write_site

FB = ["forward", "backward"]
OM = ["optimizer.step", "mark"]
WINDOW = {"NSYSGEN_PROFILE_RANKS": "0", "RANK": "0"}

CONTINUE = """\
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.AdamW(model.parameters())
global_step = 0
for micro_step, batch in enumerate(range(40)):
    loss = model(batch)
    loss.backward()
    if (micro_step + 1) % 4 != 0:
        continue
    optimizer.step()
    optimizer.zero_grad()
    global_step += 1
    print("@@ log", global_step)
"""
ENGINE = """\
import torch


class Engine:
    # DeepSpeed's shape: backward() and step() every micro-batch, the optimizer steps at the
    # accumulation boundary only.
    def __init__(self, model, accumulation):
        self.model, self.calls, self.accumulation = model, 0, accumulation
        self.optimizer = torch.optim.Adam(model.parameters())

    def __call__(self, batch):
        return self.model(batch)

    def backward(self, loss):
        loss.backward()

    def step(self):
        self.calls += 1
        if self.calls % self.accumulation == 0:
            self.optimizer.step()


engine = Engine(torch.nn.Linear(4, 4), 4)
for step, batch in enumerate(range(48)):
    loss = engine(batch)
    engine.backward(loss)
    engine.step()
"""
GAN = """\
import torch

generator, discriminator = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)
opt_g = torch.optim.Adam(generator.parameters())
opt_d = torch.optim.Adam(discriminator.parameters())
for i in range(12):
    discriminator(i).backward()
    opt_d.step()
    generator(i).backward()
    opt_g.step()
"""
SCALER = """\
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler()
for it in range(10):
    scaler.found_inf = it == 4
    scaler.scale(model(it)).backward()
    scaler.step(optimizer)
    scaler.update()
"""
IN_BACKWARD = """\
import torch

model = torch.nn.Linear(4, 4)
optimizers = {p: torch.optim.SGD([p], lr=0.1) for p in model.parameters()}
for p in model.parameters():
    p.register_post_accumulate_grad_hook(lambda param: optimizers[param].step())
for it in range(10):
    model(it).backward()
"""
NO_OPTIMIZER = """\
import torch

model = torch.nn.Linear(4, 4)
for it in range(10):
    model(it)
"""
RESUMED = """\
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.AdamW(model.parameters())
optimizer.load_state_dict({"step": 100})
for it in range(10):
    model(it).backward()
    optimizer.step()
"""


def window(first: int, last: int, **more: str) -> dict[str, str]:
    env = {"NSYSGEN_PROFILE_FIRST_STEP": str(first), "NSYSGEN_PROFILE_LAST_STEP": str(last)}
    return {**WINDOW, **env, **more}


@pytest.mark.parametrize(
    ("source", "first", "last", "more", "inside"),
    [
        (CONTINUE, 3, 5, {}, [*FB * 4, *OM]),
        (ENGINE, 2, 6, {}, [*FB * 4, *OM]),
        (GAN, 2, 4, {"NSYSGEN_PROFILE_OPTIMIZER_STEPS": "2"}, [*FB, *OM, *FB, *OM]),
        (RESUMED, 102, 104, {}, [*FB, *OM]),
    ],
    ids=["continue", "deepspeed-engine", "two-optimizers", "resumed"],
)
def test_zero_patch_window_holds_exactly_the_steps(
    tmp_path: Path, source: str, first: int, last: int, more: dict[str, str], inside: list[str]
) -> None:
    run = run_script(tmp_path, source, window(first, last, **more), mode="hook")
    assert (run.starts, run.stops) == (1, 1)
    assert run.recorded == [f"step {n}" for n in range(first, last + 1)]
    assert not [m for m in run.mismatched if " marked as " in m]
    for n in range(first, last + 1):
        assert run.inside(n) == inside, n


def test_the_scripts_counter_numbers_the_steps(tmp_path: Path) -> None:
    # global_step is logged after its increment: the step the script logs as 3 is step 3.
    more = {
        "NSYSGEN_PROFILE_STEP_EXPR": "global_step + 1",
        "NSYSGEN_PROFILE_STEP_SCOPE": "train.py:<module>",
    }
    run = run_script(tmp_path, CONTINUE, window(3, 5, **more), mode="hook")
    assert run.recorded == ["step 3", "step 4", "step 5"]
    assert not run.mismatched
    assert (
        "steps are numbered by global_step + 1 in train.py:<module> (checked over the 2 "
        "training steps before step 3)"
    ) in run.stderr
    assert run.numbering == ["per_step=1 checked=1 counter=global_step + 1 in train.py:<module>"]
    without = run_script(tmp_path, CONTINUE, window(3, 5), mode="hook")
    assert without.mismatched  # counted from 0: the step logged as 4 is the optimizer's step 3
    assert "nsysgen's count of training steps (from 0 in this process)" in without.stderr
    resumed = run_script(tmp_path, RESUMED, window(102, 104), mode="hook")
    assert "the optimizer's own step count (read at the first step" in resumed.stderr


def test_an_unreadable_counter_falls_back_and_says_why(tmp_path: Path) -> None:
    more = {
        "NSYSGEN_PROFILE_STEP_EXPR": "no_such_name",
        "NSYSGEN_PROFILE_STEP_SCOPE": "train.py:<module>",
    }
    run = run_script(tmp_path, CONTINUE, window(3, 5, **more), mode="hook")
    assert run.recorded == ["step 3", "step 4", "step 5"]
    assert run.stderr == (
        'nsysgen: no_such_name cannot be read in train.py:<module> (NameError("name '
        "'no_such_name' is not defined\")): steps are numbered by nsysgen's count of training "
        "steps (from 0 in this process) instead\n"
    )
    assert run.numbering[0].startswith("per_step=1 checked=2 fallback=no_such_name cannot be")


def test_a_skipped_optimizer_step_still_ends_its_step(tmp_path: Path) -> None:
    run = run_script(tmp_path, SCALER, window(3, 5), mode="hook")
    assert run.recorded == ["step 3", "step 4", "step 5"]
    assert run.inside(4) == [*FB, "scaler.skip", "mark"]
    assert run.steps["step 4"][-1].endswith(" skipped")
    assert run.inside(5) == [*FB, *OM]


@pytest.mark.parametrize("mode", ["hook", "patch"])
def test_two_optimizers_a_step_are_learned(tmp_path: Path, mode: str) -> None:
    # Before the window the helper sees D, G, D, G: a cycle of 2 optimizers is one step.
    run = run_script(tmp_path, GAN, window(2, 4), mode=mode)
    assert run.recorded == ["step 2", "step 3", "step 4"]
    for n in (2, 3, 4):
        assert run.inside(n) == [*FB, *OM, *FB, *OM], n
    assert "2 optimizer steps make one training step (the cycle of 2 optimizers" in run.stderr
    assert run.numbering[0].startswith("per_step=2 ")


@pytest.mark.parametrize("mode", ["hook", "patch"])
def test_optimizer_in_backward_is_refused(tmp_path: Path, mode: str) -> None:
    source = IN_BACKWARD + ("" if mode == "hook" else "")
    if mode == "patch":
        source = source.replace("    model(it).backward()", "    model(it).backward()\n    pass")
    run = run_script(tmp_path, source, window(2, 4), mode=mode)
    assert (run.starts, run.stops) == (0, 0)
    assert "optimizer-in-backward" in run.stderr


def test_a_run_without_optimizer_steps_says_so(tmp_path: Path) -> None:
    run = run_script(tmp_path, NO_OPTIMIZER, window(2, 4), mode="hook")
    assert (run.starts, run.steps) == (0, {})
    assert "no optimizer step was seen" in run.stderr


def test_a_launcher_process_stays_silent(tmp_path: Path) -> None:
    # torchrun's agent imports torch and never starts CUDA: not a training process.
    run = run_script(tmp_path, NO_OPTIMIZER, window(2, 4, STANDIN_CUDA="0"), mode="hook")
    assert run.stderr == ""


def test_a_run_that_ends_inside_the_window_says_so(tmp_path: Path) -> None:
    run = run_script(tmp_path, RESUMED, window(105, 200), mode="hook")
    assert run.starts == 1
    said = "the run ended after step 109, before step 200: the window holds steps 105..109 only"
    assert said in run.stderr


@pytest.mark.parametrize(
    "env",
    [
        {},
        {
            "NSYSGEN_PROFILE_FIRST_STEP": "1",
            "NSYSGEN_PROFILE_LAST_STEP": "3",
            "RANK": "1",
            "NSYSGEN_PROFILE_RANKS": "0",
        },
        {
            "NSYSGEN_PROFILE_FIRST_STEP": "x",
            "NSYSGEN_PROFILE_LAST_STEP": "3",
            "RANK": "0",
            "NSYSGEN_PROFILE_RANKS": "0",
        },
        {
            **WINDOW,
            "NSYSGEN_PROFILE_FIRST_STEP": "1",
            "NSYSGEN_PROFILE_LAST_STEP": "3",
            "NSYSGEN_PROFILE_OPTIMIZER_STEPS": "0",
        },
    ],
    ids=["no-variables", "other-rank", "bad-step", "bad-optimizer-steps"],
)
def test_without_a_window_nothing_happens(tmp_path: Path, env: dict[str, str]) -> None:
    run = run_script(tmp_path, CONTINUE, env, mode="hook")
    assert (run.starts, run.stops, run.steps, run.stderr) == (0, 0, {}, "")


def _modules(tmp_path: Path, site: bool, env: dict[str, str]) -> set[str]:
    folder = write_site(tmp_path / "site")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("NSYSGEN_PROFILE_")}
    environ.update(env, PYTHONPATH=str(folder) if site else str(tmp_path / "none"))
    code = "import sys; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], env=environ, capture_output=True, text=True, check=True
    )
    return set(done.stdout.split())


@pytest.mark.parametrize("env", [{}, window(1, 3)], ids=["inert", "armed"])
def test_the_helper_imports_nothing_before_torch(tmp_path: Path, env: dict[str, str]) -> None:
    # Armed, the helper itself loads (and __future__, 4 KB, for its annotations): nothing else.
    own = {"nsysgen_window", "__future__"} if env else set()
    assert _modules(tmp_path, True, env) - _modules(tmp_path, False, env) == {"sitecustomize", *own}


def test_the_images_own_sitecustomize_still_runs(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("print('@@ log 0 theirs', __name__)\n")
    run = run_script(tmp_path, CONTINUE, window(3, 5), mode="hook", extra_path=(theirs,))
    assert run.recorded == ["step 3", "step 4", "step 5"]
    environ = {k: v for k, v in os.environ.items() if not k.startswith("NSYSGEN_PROFILE_")}
    environ.update(PYTHONPATH=f"{tmp_path / 'nsysgen-site'}:{theirs}:{STANDIN}")
    done = subprocess.run(
        [sys.executable, "-c", "pass"], env=environ, capture_output=True, text=True, check=True
    )
    assert done.stdout == "@@ log 0 theirs sitecustomize\n"


@pytest.mark.parametrize(
    ("source", "first", "last", "more", "inside"),
    [
        (CONTINUE, 3, 5, {}, [*FB * 4, *OM]),  # numbered by global_step + 1, as logged
        (ENGINE, 2, 6, {}, [*FB * 4, *OM]),  # the loop counts engine calls: counted steps
        (GAN, 2, 4, {"NSYSGEN_PROFILE_OPTIMIZER_STEPS": "2"}, [*FB, *OM, *FB, *OM]),
        (SCALER, 3, 5, {}, None),
    ],
    ids=["continue", "deepspeed-engine", "two-optimizers", "scaler-skip"],
)
def test_patched_window_holds_exactly_the_steps(
    tmp_path: Path,
    source: str,
    first: int,
    last: int,
    more: dict[str, str],
    inside: list[str] | None,
) -> None:
    """The same shapes with the patch: the loop's top opens a step, the optimizer ends it."""
    run = run_script(tmp_path, source, window(first, last, **more), mode="patch")
    assert (run.starts, run.stops) == (1, 1)
    assert run.recorded == [f"step {n}" for n in range(first, last + 1)]
    assert not run.mismatched
    assert run.outside_marks == 0
    for n in range(first, last + 1):
        if inside is not None:
            assert run.inside(n) == inside, n
    if source is SCALER:
        assert run.inside(4) == [*FB, "scaler.skip", "mark"]


LOOKED_UP_FIRST = (
    """\
import importlib.util

importlib.util.find_spec("torch")  # as libraries do to see whether torch is there
"""
    + CONTINUE
)
RAISES_ONCE = CONTINUE.replace(
    "    optimizer.step()\n",
    "    try:\n"
    "        optimizer.step(fail=global_step == 1)\n"
    "    except MemoryError:\n"
    "        pass  # the script carries on after an out-of-memory step\n",
)
SKIP_THEN_ADAM = """\
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.AdamW(model.parameters())
scaler = torch.amp.GradScaler()
for it in range(10):
    scaler.found_inf = it == 1
    scaler.scale(model(it)).backward()
    scaler.step(optimizer)
"""
BROKEN_NVTX = (
    """\
import torch


def broken(label):
    raise RuntimeError("no NVTX here")


torch.cuda.nvtx.mark = broken
"""
    + CONTINUE
)


def test_a_library_looking_torch_up_first_does_not_disarm_the_helper(tmp_path: Path) -> None:
    run = run_script(tmp_path, LOOKED_UP_FIRST, window(3, 5), mode="hook")
    assert run.recorded == ["step 3", "step 4", "step 5"]


def test_an_optimizer_step_that_raises_does_not_stop_the_helper(tmp_path: Path) -> None:
    run = run_script(tmp_path, RAISES_ONCE, window(3, 5), mode="hook")
    assert (run.starts, run.stops) == (1, 1)
    assert len(run.recorded) == 3


def test_a_skipped_step_does_not_repeat_a_number(tmp_path: Path) -> None:
    # Adam's own count stays behind on a skipped step: the helper counts after the first read.
    run = run_script(tmp_path, SKIP_THEN_ADAM, window(2, 4), mode="hook")
    assert run.recorded == ["step 2", "step 3", "step 4"]
    assert not [m for m in run.mismatched if " marked as " in m]


def test_a_failing_helper_never_stops_the_training(tmp_path: Path) -> None:
    run = run_script(tmp_path, BROKEN_NVTX, window(3, 5), mode="hook")  # exit 0: asserted there
    assert "the step helper stopped (RuntimeError('no NVTX here'))" in run.stderr
    assert run.stops == run.starts


def test_two_copies_of_the_helper_run_once(tmp_path: Path) -> None:
    second = write_site(tmp_path / "second")
    run = run_script(tmp_path, CONTINUE, window(3, 5), mode="hook", extra_path=(second,))
    assert run.recorded == ["step 3", "step 4", "step 5"]
    assert "Error" not in run.stderr


def test_zero_patch_refuses_what_it_cannot_record(run_cli: RunCli, tmp_path: Path) -> None:
    megatron = run_cli(
        "experiment=megatron-p5", "capture.step_method=hook", "capture.first_step=1",
        f"output_dir={tmp_path}",
    )  # fmt: skip
    assert megatron.code == 2
    assert "capture.first_step: the zero-patch helper sees where a step ends" in megatron.err
    assert "(allowed: first_step >= 2, or capture.step_method=patch)" in megatron.err
    expr = run_cli(
        "workload=python", "capture=steps", "workload.python.step_expr=step",
        f"output_dir={tmp_path}",
    )  # fmt: skip
    assert expr.code == 2
    said = "workload.python.step_expr: the zero-patch helper reads step_expr in the step loop's"
    assert said in expr.err
    assert "or workload.python.source set" in expr.err
    assert not list(tmp_path.iterdir())


# Each epoch's batches, logged by their place in the epoch: the compile asks for step_expr, and
# the number given counts the steps across the run in both modes.
EPOCHS = """\
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.AdamW(model.parameters())
loader = list(range(4))
for epoch in range(3):
    for i, batch in enumerate(loader):
        model(batch).backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"epoch {epoch} [{i}/{len(loader)}]")
        print("@@ log", epoch * len(loader) + i)
"""


@pytest.mark.parametrize("mode", ["hook", "patch"])
def test_the_step_expr_asked_for_numbers_the_steps(tmp_path: Path, mode: str) -> None:
    with pytest.raises(PatchError, match="set step_expr") as asked:
        analyse(EPOCHS)
    assert asked.value.setting == "step_expr"
    answer = "epoch * len(loader) + i"
    more = {"NSYSGEN_PROFILE_STEP_EXPR": answer, "NSYSGEN_PROFILE_STEP_SCOPE": "train.py:<module>"}
    run = run_script(tmp_path, EPOCHS, window(5, 8, **more), mode=mode, step_expr=answer)
    assert run.recorded == ["step 5", "step 6", "step 7", "step 8"], run.stderr
    assert not run.mismatched, run.mismatched  # each range holds the step logged as N
    for n in range(5, 9):
        assert run.inside(n) == [*FB, *OM], n


# A PPO-style trainer: its update (the base class's `step`, in another file) runs the epochs
# and mini-batches, four optimizer steps; the loop of this file logs one step per update.
PPO_BASE = """\
import torch


class PPOTrainer:
    def __init__(self):
        self.model = torch.nn.Linear(4, 4)
        self.optimizer = torch.optim.AdamW(self.model.parameters())

    def step(self, batch):
        for epoch in range(2):
            for start in range(0, 4, 2):
                self.model(batch).backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
"""
PPO = """\
from ppo_base import PPOTrainer


class CustomPPOTrainer(PPOTrainer):
    def ppo_train(self):
        for step in range(10):
            self.step(step)
            print("@@ log", step)


CustomPPOTrainer().ppo_train()
"""


def test_an_update_of_several_optimizer_steps_is_one_step_where_asked(tmp_path: Path) -> None:
    with pytest.raises(PatchError) as asked:
        analyse(PPO)
    assert "line 6 (in ppo_train) calls self.step(), which PPOTrainer of another file" in str(
        asked.value
    )
    assert "also set capture.optimizer_steps to how many" in str(asked.value)
    found = analyse(PPO, 6)  # the answer: loop_line, and the update's four optimizer steps
    assert (found.step, found.at_step, found.scope) == ("step", "step", "ppo_train")
    (tmp_path / "ppo_base.py").write_text(PPO_BASE)
    more = {
        "NSYSGEN_PROFILE_STEP_EXPR": "step",
        "NSYSGEN_PROFILE_STEP_SCOPE": "train.py:ppo_train",
        "NSYSGEN_PROFILE_OPTIMIZER_STEPS": "4",
    }
    run = run_script(tmp_path, PPO, window(3, 5, **more), mode="hook")
    assert run.recorded == ["step 3", "step 4", "step 5"], run.stderr
    assert not run.mismatched, run.mismatched  # each range is the update the loop logs as N
    for n in range(3, 6):
        assert run.inside(n) == [*FB, *OM] * 4, n
