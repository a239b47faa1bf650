"""`verify` proves the step window: each step range holds exactly the configured number of
optimizer steps (the helper's marks), numbered as the range is. The reports here are written by
the torch stand-in from what the real step helper asked of it while the capture was open (the
NVTX_EVENTS table of an nsys export); the GPU tests read real nsys reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsysgen import pipeline
from nsysgen.config.compose import Composer
from nsysgen.shipped.verify import Contents, check_contents, read_contents
from tests.compile.test_verify import expect_of
from tests.patching.test_step_helper import CONTINUE, ENGINE, GAN, window
from tests.stepruns import run_script


def expect(*overrides: str) -> dict[str, object]:
    composed = Composer().compose(["cluster=local", "workload=python", "capture=steps", *overrides])
    return expect_of(pipeline.typed(composed.data))


def report_of(tmp_path: Path, source: str, mode: str, **env: str) -> Contents:
    path = tmp_path / "report.sqlite"
    run_script(tmp_path, source, {**window(3, 5), **env, "STANDIN_REPORT": str(path)}, mode=mode)
    return read_contents(path)


@pytest.mark.parametrize("mode", ["hook", "patch"])
@pytest.mark.parametrize("source", [CONTINUE, ENGINE], ids=["continue", "engine"])
def test_a_right_window_is_complete(tmp_path: Path, source: str, mode: str) -> None:
    contents = report_of(tmp_path, source, mode)
    found = check_contents(expect("capture.first_step=3", "capture.last_step=5"), contents, False)
    assert (found.problems, found.status) == ([], "ok")
    assert len(contents.marks) == 3


def test_two_optimizers_need_the_setting(tmp_path: Path) -> None:
    contents = report_of(tmp_path, GAN, "hook")
    found = check_contents(expect("capture.first_step=3", "capture.last_step=5"), contents, False)
    assert found.problems == [
        "2 optimizers take turns (Adam#0, Adam#1): each iteration is 2 step ranges"
    ]
    assert found.causes == ["several optimizers step each iteration: set capture.optimizer_steps=2"]
    (tmp_path / "paired").mkdir()
    paired = report_of(tmp_path / "paired", GAN, "hook", NSYSGEN_PROFILE_OPTIMIZER_STEPS="2")
    ok = check_contents(
        expect("capture.first_step=3", "capture.last_step=5", "capture.optimizer_steps=2"),
        paired,
        False,
    )
    assert ok.status == "ok", ok.problems


def _contents(spans: list[tuple[int, int, str]], marks: list[tuple[int, str]]) -> Contents:
    names = [name for _, _, name in spans]
    return Contents(
        names, 10, 0, 0, 1.0,
        spans=[(1, s, e, n) for s, e, n in spans],
        marks=[(1, t, text) for t, text in marks],
    )  # fmt: skip


STEPS = expect("capture.first_step=3", "capture.last_step=5")


def test_micro_batch_ranges_are_named() -> None:
    # A loop edited by hand per micro-batch: 12 ranges "step 3".."step 5"x4, 3 optimizer steps.
    spans = [(10 * i, 10 * i + 9, f"step {3 + i // 4}") for i in range(12)]
    marks = [(10 * i + 8, f"nsysgen optimizer step {3 + i // 4} AdamW#0") for i in (3, 7, 11)]
    found = check_contents(STEPS, _contents(spans, marks), False)
    assert found.problems[0] == (
        "1 optimizer step per step asked; the step ranges hold 0..1 (step 3 of process 1: 0, "
        "step 3 of process 1: 0, step 3 of process 1: 0, step 4 of process 1: 0 and 5 more)"
    )
    assert found.causes[0] == (
        "4 ranges per optimizer step: the patched loop is a micro-batch loop, not the step loop"
    )


def test_an_epoch_loop_is_named() -> None:
    spans = [(0, 100, "step 3"), (101, 200, "step 4"), (201, 300, "step 5")]
    marks = [(t, f"nsysgen optimizer step {3 + t // 101} SGD#0") for t in range(5, 300, 25)]
    found = check_contents(STEPS, _contents(spans, marks), False)
    assert (
        "optimizer steps in one step range: the patched loop is not the step loop"
        in found.causes[0]
    )


def test_numbers_off_by_one_are_named() -> None:
    spans = [(0, 9, "step 3"), (10, 19, "step 4"), (20, 29, "step 5")]
    marks = [
        (8, "nsysgen optimizer step 4 AdamW#0"),
        (18, "nsysgen optimizer step 5 AdamW#0"),
        (28, "nsysgen optimizer step 6 AdamW#0"),
    ]
    found = check_contents(STEPS, _contents(spans, marks), False)
    assert found.problems == ["step numbers differ from the optimizer step's own by 1"]
    assert found.causes == [
        "step numbers are 1 below the number read at the optimizer step: the counter jumps, or "
        "the step numbering is wrong"
    ]


def test_unmarked_reports_are_noted_not_failed() -> None:
    spans = [(0, 9, "step 3"), (10, 19, "step 4"), (20, 29, "step 5")]
    found = check_contents(STEPS, _contents(spans, []), False)
    assert found.status == "ok"
    assert found.notes[0].startswith("no optimizer-step marks in the report")


def test_a_skipped_step_is_a_note() -> None:
    spans = [(0, 9, "step 3"), (10, 19, "step 4"), (20, 29, "step 5")]
    marks = [
        (8, "nsysgen optimizer step 3 SGD#0"),
        (18, "nsysgen optimizer step 4 SGD#0 skipped"),
        (28, "nsysgen optimizer step 5 SGD#0"),
    ]
    found = check_contents(STEPS, _contents(spans, marks), False)
    assert found.status == "ok"
    assert "1 optimizer step skipped by GradScaler (inf/nan)" in found.notes


def test_a_replaced_optimizer_is_not_two_taking_turns() -> None:
    spans = [(0, 9, "step 3"), (10, 19, "step 4"), (20, 29, "step 5")]
    marks = [
        (8, "nsysgen optimizer step 3 AdamW#0"),
        (18, "nsysgen optimizer step 4 AdamW#1"),  # re-created after a restart of the loop
        (28, "nsysgen optimizer step 5 AdamW#1"),
    ]
    assert check_contents(STEPS, _contents(spans, marks), False).status == "ok"


def test_the_scripts_own_step_ranges_do_not_take_the_marks() -> None:
    # The script pushes its own "step N" inside nsysgen's: each mark still finds its step.
    spans = [(0, 9, "step 3"), (1, 8, "step 3"), (10, 19, "step 4"), (20, 29, "step 5")]
    spans += [(11, 18, "step 4"), (21, 28, "step 5")]
    marks = [(7, "nsysgen optimizer step 3 AdamW#0"), (17, "nsysgen optimizer step 4 AdamW#0")]
    marks += [(27, "nsysgen optimizer step 5 AdamW#0")]
    found = check_contents(STEPS, _contents(sorted(spans), marks), False)
    assert (found.status, found.problems) == ("ok", [])
