"""The step number the program prints (nsysgen/shipped/step_window/printed.py): read from its
print() and logging lines, it numbers the steps where it counted every step, wins over the
other counters (and says so where they differ), and is never taken from lines that skip steps
or restart. Scripts run under the torch stand-in; each prints `@@ log N` beside its own line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nsysgen.shipped.step_window.printed import PATTERN
from nsysgen.shipped.verify.report import helper_said
from tests.shipped.test_step_window import expr, window
from tests.stepruns import Run, run_script

PRINTED = "steps are numbered by the step number the program prints"


@pytest.mark.parametrize(
    ("line", "number"),
    [
        ("step 12 loss 0.5", 12),
        ("Step [12/100] loss=0.5", 12),
        ("epoch 3 iter: 12", 12),
        ("global_step=12", 12),
        ("global step 12", 12),
        ("Iteration #12", 12),
        ("phase 1 step 12", 12),
        ("total steps 100, step_time 0.3", None),
        ("steps: 100", None),
        ("the next_step 3", None),
        ("model.step 4", None),
        ("loss 0.5", None),
    ],
)
def test_the_step_number_of_a_line(line: str, number: int | None) -> None:
    found = re.search(PATTERN, line)
    assert (int(found.group(1)) if found else None) == number


AFTER = """\
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.AdamW(model.parameters())
global_step = 0
for batch in range(12):
    loss = model(batch)
    loss.backward()
    optimizer.step()
    global_step += 1
    print(f"step {global_step} loss 0.1")
    print("@@ log", global_step)
"""
BEFORE = """\
import logging
import torch

logging.basicConfig(level=logging.INFO)
log = logging.getLogger("train")
model = torch.nn.Linear(4, 4)
optimizer = torch.optim.AdamW(model.parameters())
for it in range(12):
    loss = model(it)
    loss.backward()
    log.info("iter %d loss %.3f", it, 0.1)
    print("@@ log", it)
    optimizer.step()
"""


def run(tmp_path: Path, source: str, env: dict[str, str]) -> Run:
    return run_script(tmp_path, source, env, mode="hook")


def test_a_line_printed_after_the_optimizer_step_names_the_step_that_ran(tmp_path: Path) -> None:
    result = run(tmp_path, AFTER, window(5, 8))
    assert result.recorded == ["step 5", "step 6", "step 7", "step 8"], result.stderr
    assert not result.mismatched, result.mismatched
    assert f"{PRINTED} (after the optimizer step)" in result.stderr
    assert result.numbering[0].startswith("per_step=1 checked=")


def test_a_line_logged_after_backward_names_the_step_to_come(tmp_path: Path) -> None:
    """logging's records are read as print's lines are; a line after the step's backward and
    before its optimizer step (0-based `it`) names the step whose optimizer step follows."""
    result = run(tmp_path, BEFORE, window(5, 8))
    assert result.recorded == ["step 5", "step 6", "step 7", "step 8"], result.stderr
    for n in range(5, 9):
        assert f"log {n}" in result.steps[f"step {n}"], (n, result.steps)
    assert f"{PRINTED} (before the optimizer step)" in result.stderr


def test_the_printed_number_wins_over_a_loop_index_and_says_they_differ(tmp_path: Path) -> None:
    """The counter compile found (the loop's `batch`, 0-based) counts every step too, one below
    the printed global_step: the printed one numbers the steps, and the helper says so."""
    result = run(tmp_path, AFTER, window(5, 8, **expr("batch")))
    assert not result.mismatched, result.mismatched
    assert "batch in train.py:<module> gives 3 where the program prints 4" in result.stderr
    assert result.numbering[0].endswith(
        "; batch in train.py:<module> gives 3 where the program prints 4"
    )


@pytest.mark.parametrize(
    "printing",
    [
        "if global_step % 3 == 0:\n        print(f'step {global_step}')",  # every third step only
        "print(f'step {global_step % 4}')",  # restarts (a step within the epoch)
        "print(f'step {global_step * 4}')",  # a micro-batch count: 4 a step
    ],
    ids=["every-third", "restarts", "micro-batches"],
)
def test_lines_that_skip_or_restart_never_number_the_steps(tmp_path: Path, printing: str) -> None:
    source = AFTER.replace('print(f"step {global_step} loss 0.1")', printing)
    result = run(tmp_path, source.replace("range(12)", "range(16)"), window(9, 12))
    assert PRINTED not in result.stderr
    assert "nsysgen's count of training steps" in result.stderr
    assert result.recorded == ["step 9", "step 10", "step 11", "step 12"]


def test_the_helpers_own_lines_are_not_read(tmp_path: Path) -> None:
    """The helper's messages ("... before step 5") go to stderr unread: with nothing printed
    by the program, the steps are numbered by the helper's count."""
    source = AFTER.replace('    print(f"step {global_step} loss 0.1")\n', "")
    result = run(tmp_path, source, window(5, 8))
    assert PRINTED not in result.stderr


def test_verify_gives_what_the_helper_said(tmp_path: Path) -> None:
    """nsys-exec points NSYSGEN_HELPER_LOG into the task's folder; verify reads it back."""
    task = tmp_path / ".nsysgen" / "task3"
    task.mkdir(parents=True)
    lines = [
        "101 nsysgen: the run ended after 4 training steps (4 optimizer steps), before step 25",
        "101 nsysgen: the run ended after 4 training steps (4 optimizer steps), before step 25",
        "102 nsysgen: an optimizer step is being captured into a CUDA graph",
        "not the helper's line",
    ]
    (task / "helper.log").write_text("\n".join(lines) + "\n")
    assert helper_said(tmp_path, {"task": 3}) == [
        "the step helper said: the run ended after 4 training steps (4 optimizer steps), "
        "before step 25",
        "the step helper said: an optimizer step is being captured into a CUDA graph",
    ]
    assert helper_said(tmp_path, {"task": 4}) == []


def test_the_helper_writes_what_it_says_where_it_is_told(tmp_path: Path) -> None:
    log = tmp_path / "task0" / "helper.log"
    log.parent.mkdir()
    result = run(tmp_path, AFTER, window(25, 29, NSYSGEN_HELPER_LOG=str(log)))
    assert result.recorded == []
    written = log.read_text()
    assert "nsysgen: the run ended after 12 training steps" in written
    assert written.split()[0].isdigit()  # the process's id first


LATE_PHASE = """\
import torch

model = torch.nn.Linear(4, 4)
global_step = 0
for phase in range(2):
    optimizer = torch.optim.AdamW(model.parameters())  # made anew after 70 steps
    for batch in range(70):
        loss = model(batch)
        loss.backward()
        optimizer.step()
        global_step += 1
        print(f"step {global_step}")
        print("@@ log", global_step)
"""


def test_a_new_optimizer_after_the_learning_limit_keeps_the_numbering(tmp_path: Path) -> None:
    """The cycle is learned over the first 64 optimizer steps; a second phase's optimizer made
    after them is one more optimizer stepping once a step: the window at 100..103 opens there,
    numbered as printed."""
    result = run(tmp_path, LATE_PHASE, window(100, 103))
    assert result.recorded == ["step 100", "step 101", "step 102", "step 103"], result.stderr
    assert not result.mismatched, result.mismatched


def test_verify_gives_what_the_helper_said_in_a_pod(tmp_path: Path) -> None:
    """EKS: the pod's env points NSYSGEN_HELPER_LOG into its folder on the reports volume
    (nsys's TMPDIR, named after the pod, which JobSet follows with a suffix)."""
    pod = tmp_path / ".nsysgen" / "job-node-0-0-x7k2p"
    pod.mkdir(parents=True)
    (pod / "helper.log").write_text("7 nsysgen: 0 training steps (40 optimizer steps)\n")
    assert helper_said(tmp_path, {"task": 0, "pod": "job-node-0-0"}) == [
        "the step helper said: 0 training steps (40 optimizer steps)"
    ]
