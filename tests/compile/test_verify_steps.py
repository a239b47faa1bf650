"""`verify` proves the step window: each step range holds exactly the number of optimizer steps
that make one training step (the helper's numbering mark, else the configured number), marked
with the range's number and, where the program's counter numbered the steps, read as that number
by the counter. Reports are written by the torch stand-in from what the real step helper asked
of it while the capture was open (the NVTX_EVENTS table of an nsys export), or here row by row
(`write_report`) for the mark protocol itself; the GPU tests read real nsys reports."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from nsysgen.config.compose import Composer
from nsysgen.drivers import pipeline
from nsysgen.reports.contract import Expect
from nsysgen.shipped.verify import (
    Contents,
    Finding,
    Numbering,
    check_contents,
    expected_reports,
    main,
    read_contents,
)
from tests.compile.test_verify import expect_of
from tests.shipped.test_step_window_loops import CONTINUE, ENGINE, GAN, window
from tests.stepruns import run_script


def expect(*overrides: str) -> Expect:
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


def test_two_optimizers_learned_by_the_helper_need_no_setting(tmp_path: Path) -> None:
    # The helper learns the GAN's 2 optimizer steps a training step and says so in its
    # numbering mark, which verify follows over capture.optimizer_steps (1 here).
    contents = report_of(tmp_path, GAN, "hook")
    found = check_contents(expect("capture.first_step=3", "capture.last_step=5"), contents, False)
    assert (found.status, found.problems, found.notes) == ("ok", [], [])
    assert [(n.source, n.per_step) for n in found.numbering] == [("count", 2)]
    # Without its numbering mark, each range holds 2 optimizer steps where 1 is configured.
    contents.numbering = []
    found = check_contents(expect("capture.first_step=3", "capture.last_step=5"), contents, False)
    assert found.causes == [
        "several optimizers step in one step (Adam#0, Adam#1): set capture.optimizer_steps=2"
    ]
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


EXPR = {
    "NSYSGEN_PROFILE_STEP_EXPR": "global_step + 1",
    "NSYSGEN_PROFILE_STEP_SCOPE": "train.py:<module>",
}
COUNTER = "global_step + 1 in train.py:<module>"  # as the helper names it in its marks
# CONTINUE whose counter skips one after step 3 (as a resume from the wrong checkpoint would).
SKIPS = CONTINUE.replace(
    "    global_step += 1\n",
    "    global_step += 1\n    if global_step == 3:\n        global_step += 1\n",
)


def test_the_scripts_counter_proves_the_numbers(tmp_path: Path) -> None:
    contents = report_of(tmp_path, CONTINUE, "hook", **EXPR)
    found = check_contents(STEPS, contents, False)
    assert (found.status, found.problems, found.notes) == ("ok", [], [])
    (pid,) = {process for process, _, _ in contents.marks}
    assert found.numbering == [Numbering(pid, "counter", COUNTER, 1, 1)]
    assert contents.marks[0][2] == f"nsysgen optimizer step 3 AdamW#0 | {COUNTER} = 3"


def test_a_counter_that_jumps_inside_the_window_is_named(tmp_path: Path) -> None:
    contents = report_of(tmp_path, SKIPS, "hook", **EXPR)
    found = check_contents(STEPS, contents, False)
    (pid,) = {process for process, _, _ in contents.marks}
    assert f"step 4 of process {pid}: {COUNTER} read 5 at its optimizer step (+1)" in (
        found.problems
    )
    assert JUMPED in found.causes


def test_a_counter_that_failed_the_check_is_a_note(tmp_path: Path) -> None:
    more = {**EXPR, "NSYSGEN_PROFILE_STEP_EXPR": "no_such_name"}
    contents = report_of(tmp_path, CONTINUE, "hook", **more)
    found = check_contents(STEPS, contents, False)
    (pid,) = {process for process, _, _ in contents.marks}
    why = (
        "no_such_name cannot be read in train.py:<module> (NameError(\"name 'no_such_name' is "
        "not defined\")): numbered by nsysgen's count of training steps (from 0 in this process)"
    )
    assert (found.status, found.problems) == ("ok", [])
    assert found.numbering == [Numbering(pid, "fallback", why, 1, 2)]
    assert found.notes == [
        f"process {pid}: steps numbered by nsysgen's own count, not the program's counter "
        f'({why}): a range "step N" may not be the step the program\'s log calls N'
    ]


# ---------------------------------------------------------------------------------------------
# The mark protocol, row by row: reports as the helper of this protocol writes them, whatever
# the helper of the day does.

PID = 4242
TRAINER = "state.global_step + 1 (transformers Trainer)"  # a counter with spaces
JUMPED = (
    "the program's counter jumped or restarted inside the window (an epoch reset, a resume): a "
    'range "step N" may hold another step than the one the program logs as N'
)
Row = tuple[int, int | None, str]  # (start, end, text): a range, or a mark where end is None


def write_report(path: Path, rows: list[Row], pid: int = PID) -> Path:
    """An nsys SQLite export as far as verify reads it: NVTX ranges (push/pop, 59) and marks
    (34) of one process (its pid in globalTid's bits 24..47, as nsys writes it), and kernels.
    Called again with another pid, it adds that process's rows to the same report."""
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE IF NOT EXISTS StringIds (id INTEGER, value TEXT);"
            "CREATE TABLE IF NOT EXISTS NVTX_EVENTS (start INTEGER, end INTEGER, "
            "eventType INTEGER, text TEXT, textId INTEGER, globalTid INTEGER, domainId INTEGER);"
            "CREATE TABLE IF NOT EXISTS CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER);"
        )
        tid = (pid << 24) | 7
        db.executemany(
            "INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, NULL, ?, 0)",
            [(start, end, 34 if end is None else 59, text, tid) for start, end, text in rows],
        )
        db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?)", [(1,), (2,)])
    return path


def steps(first: int, last: int, names: list[str], read: dict[int, int] | None = None) -> list[Row]:
    """Ranges step first..last, each holding one optimizer step of each of `names` in turn;
    `read`: the counter's reading (TRAINER) at the optimizer steps of some steps, by step."""
    rows: list[Row] = []
    for n in range(first, last + 1):
        start = 100 * n
        rows.append((start, start + 90, f"step {n}"))
        for i, name in enumerate(names):
            text = f"nsysgen optimizer step {n} {name}"
            if read is not None:
                text += f" | {TRAINER} = {read.get(n, n)}"
            rows.append((start + 10 + i, None, text))
    return rows


def numbering(per_step: int, checked: int, source: str) -> Row:
    return (5, None, f"nsysgen numbering per_step={per_step} checked={checked} {source}")


def check_rows(tmp_path: Path, rows: list[Row], *overrides: str) -> Finding:
    window = ("capture.first_step=11", "capture.last_step=13", *overrides)
    report = write_report(tmp_path / "report.sqlite", rows)
    return check_contents(expect(*window), read_contents(report), False)


def test_a_counter_that_agrees_is_ok(tmp_path: Path) -> None:
    rows = [numbering(1, 2, f"counter={TRAINER}"), *steps(11, 13, ["AdamW#0"], read={})]
    found = check_rows(tmp_path, rows)
    assert (found.status, found.problems, found.causes, found.notes) == ("ok", [], [], [])
    assert found.numbering == [Numbering(PID, "counter", TRAINER, 1, 2)]


def test_a_counter_off_by_one_on_one_range_is_named(tmp_path: Path) -> None:
    rows = [numbering(1, 2, f"counter={TRAINER}"), *steps(11, 13, ["AdamW#0"], read={12: 13})]
    found = check_rows(tmp_path, rows)
    assert found.status == "wrong"
    assert found.problems == [
        "step 12 of process 4242: state.global_step + 1 (transformers Trainer) read 13 at its "
        "optimizer step (+1)"
    ]
    assert found.causes == [JUMPED]


def test_a_restarted_counter_is_summarized(tmp_path: Path) -> None:
    # An epoch reset before the window's second step: every range after it reads 10 less.
    expect_steps = ("capture.first_step=11", "capture.last_step=17")
    read = {n: n - 10 for n in range(12, 18)}
    rows = [numbering(1, 3, f"counter={TRAINER}"), *steps(11, 17, ["AdamW#0"], read=read)]
    found = check_rows(tmp_path, rows, *expect_steps)
    listed = "; ".join(
        f"step {n} of process 4242: {TRAINER} read {n - 10} at its optimizer step (-10)"
        for n in range(12, 16)
    )
    assert found.problems == [f"{listed} and 2 more"]


def test_a_counter_value_with_an_equals_sign(tmp_path: Path) -> None:
    # The counter is the program's expression: its value is after the last " = ".
    counter = "steps[k == 1] = x"
    rows = [numbering(1, 2, f"counter={counter}"), *steps(11, 13, ["SGD#0"])]
    rows += [(1250, None, f"nsysgen optimizer step 12 SGD#0 | {counter} = -1")]
    rows = [r for r in rows if r[2] != "nsysgen optimizer step 12 SGD#0"]
    found = check_rows(tmp_path, sorted(rows))
    assert found.problems == [
        "step 12 of process 4242: steps[k == 1] = x read -1 at its optimizer step (-13)"
    ]
    assert found.numbering == [Numbering(PID, "counter", counter, 1, 2)]


def test_fallback_numbering_is_a_note(tmp_path: Path) -> None:
    why = (
        "overall_step advanced by 4, not 1, between training steps 2 and 3: numbered by "
        "nsysgen's count from 0"
    )
    # Its readings are of a counter known not to number the steps: they prove nothing.
    rows = [numbering(1, 2, f"fallback={why}"), *steps(11, 13, ["AdamW#0"], read={12: 48})]
    found = check_rows(tmp_path, rows)
    assert (found.status, found.problems) == ("ok", [])
    assert found.notes == [
        "process 4242: steps numbered by nsysgen's own count, not the program's counter "
        "(overall_step advanced by 4, not 1, between training steps 2 and 3: numbered by "
        "nsysgen's count from 0): a range \"step N\" may not be the step the program's log "
        "calls N"
    ]
    assert found.numbering == [Numbering(PID, "fallback", why, 1, 2)]


def test_an_unchecked_counter_is_a_note(tmp_path: Path) -> None:
    rows = [numbering(1, 0, f"counter={TRAINER}"), *steps(11, 13, ["AdamW#0"], read={})]
    found = check_rows(tmp_path, rows)
    assert (found.status, found.problems) == ("ok", [])
    assert found.notes == [
        "process 4242: steps numbered by the program's counter state.global_step + 1 "
        "(transformers Trainer), which could not be checked before the window (too few steps "
        "before step 11)"
    ]


def test_per_step_from_the_numbering_mark(tmp_path: Path) -> None:
    # Two optimizers take turns; the helper learned 2 optimizer steps a training step.
    gan = steps(11, 13, ["Adam#0", "Adam#1"])
    learned = check_rows(tmp_path, [numbering(2, 2, "count=the optimizer's own step count"), *gan])
    assert (learned.status, learned.problems, learned.notes) == ("ok", [], [])
    assert learned.numbering == [Numbering(PID, "count", "the optimizer's own step count", 2, 2)]
    # The same ranges without the mark: the setup's 1 is what each range must hold.
    (tmp_path / "old").mkdir()
    found = check_rows(tmp_path / "old", gan)
    assert found.problems == [
        "1 optimizer step per step asked; the step ranges hold 2 (step 11 of process 4242: 2, "
        "step 12 of process 4242: 2, step 13 of process 4242: 2)"
    ]


def test_each_process_steps_as_its_own_mark_says(tmp_path: Path) -> None:
    # One report of two processes (one session per node): a GAN learned as 2 optimizer steps,
    # and a plain loop of 1, whose two ranks disagree on per_step without a problem.
    report = tmp_path / "report.sqlite"
    gan = steps(11, 13, ["Adam#0", "Adam#1"])
    write_report(report, [numbering(2, 2, "count=nsysgen's count"), *gan], pid=4242)
    write_report(
        report, [numbering(1, 2, "count=nsysgen's count"), *steps(11, 13, ["SGD#0"])], 4243
    )
    found = check_contents(
        expect("capture.first_step=11", "capture.last_step=13"), read_contents(report), False
    )
    assert (found.status, found.problems) == ("ok", [])
    assert [(n.process, n.per_step) for n in found.numbering] == [(4242, 2), (4243, 1)]


def test_old_marks_take_turns_as_before(tmp_path: Path) -> None:
    # A helper before the numbering mark: each optimizer step of a GAN ended a range.
    rows: list[Row] = [(100 * n, 100 * n + 90, f"step {n}") for n in range(11, 14)]
    rows += [(100 * n + 10, None, f"nsysgen optimizer step {n} Adam#{n % 2}") for n in (11, 12, 13)]
    found = check_rows(tmp_path, sorted(rows))
    assert found.problems == [
        "2 optimizers take turns (Adam#0, Adam#1): each iteration is 2 step ranges"
    ]
    assert found.causes == ["several optimizers step each iteration: set capture.optimizer_steps=2"]
    assert found.numbering == []


def test_old_marks_are_checked_as_before(tmp_path: Path) -> None:
    found = check_rows(tmp_path, steps(11, 13, ["AdamW#0"]))
    assert (found.status, found.problems, found.notes, found.numbering) == ("ok", [], [], [])
    (tmp_path / "off").mkdir()
    # Marked with the next step's number: the numbering is off by one (as before the protocol).
    off = [(100 * n + 10, None, f"nsysgen optimizer step {n + 1} AdamW#0") for n in (11, 12, 13)]
    found = check_rows(tmp_path / "off", sorted([*steps(11, 13, []), *off]))
    assert found.problems == ["step numbers differ from the optimizer step's own by 1"]


# ---------------------------------------------------------------------------------------------
# Through the command line: the exit code, the table and --json


def lay_out(tmp_path: Path, rows: list[Row]) -> list[str]:
    """A setup folder and its run (job 41), the report's up-to-date export next to it, and an
    nsys that only names its version: verify reads the export, as after `nsys export`."""
    setup = expect("capture.first_step=11", "capture.last_step=13")
    (tmp_path / "nsysgen-expect.json").write_text(json.dumps(setup))
    (entry,) = expected_reports(setup)
    run = tmp_path / "reports" / "job41"
    run.mkdir(parents=True)
    name = str(entry["name"]).format(job="41", node="gpunode1")
    report = run / f"{name}.nsys-rep"
    report.write_text("its export is next to it\n")
    os.utime(report, (1, 1))
    write_report(run / f"{name}.sqlite", rows)
    nsys = tmp_path / "nsys"
    nsys.write_text("#!/bin/sh\necho 'NVIDIA Nsight Systems version 2025.3.1.0'\n")
    nsys.chmod(0o755)
    return [str(tmp_path), "--reports", str(tmp_path / "reports"), f"--nsys={nsys}"]


def test_the_command_line_fails_a_counter_that_jumps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [numbering(1, 2, f"counter={TRAINER}"), *steps(11, 13, ["AdamW#0"], read={12: 13})]
    args = lay_out(tmp_path, rows)
    assert main(args) == 1
    out = capsys.readouterr().out
    assert (
        "    problem: step 12 of process 4242: state.global_step + 1 (transformers Trainer) read "
        "13 at its optimizer step (+1)\n"
        f"    likely cause: {JUMPED}\n"
    ) in out
    assert main([*args, "--json"]) == 1
    (report,) = json.loads(capsys.readouterr().out)["reports"]
    assert report["numbering"] == [
        {"process": 4242, "source": "counter", "text": TRAINER, "per_step": 1, "checked": 2}
    ]


def test_the_command_line_passes_a_fallback_with_its_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    why = "i went from 2 to 0 between training steps 2 and 3: numbered by nsysgen's count"
    args = lay_out(tmp_path, [numbering(1, 2, f"fallback={why}"), *steps(11, 13, ["AdamW#0"])])
    assert main([*args, "--json"]) == 0
    (report,) = json.loads(capsys.readouterr().out)["reports"]
    assert report["status"] == "ok"
    assert report["numbering"] == [
        {"process": 4242, "source": "fallback", "text": why, "per_step": 1, "checked": 2}
    ]
    assert report["notes"] == [
        f"process 4242: steps numbered by nsysgen's own count, not the program's counter ({why}): "
        'a range "step N" may not be the step the program\'s log calls N'
    ]
