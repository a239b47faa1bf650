"""bench/gpu/steps38/check.py on small nsys-shaped exports, and the claims of the committed GPU
run (bench/gpu/results/steps38-2026-12-05.json): each `step N` range holds the optimizer
step(s) that the framework itself logs as N."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

CHECK = REPO / "bench" / "gpu" / "steps38" / "check.py"
RESULT = REPO / "bench" / "gpu" / "results" / "steps38-2026-12-05.json"
PID = 4242
TID = (PID << 24) | 7  # nsys's globalTid: the pid in bits 24..47

# (start, end or None, eventType, text): ranges 59 (push/pop), marks 34
Event = tuple[int, int | None, int, str]


def _export(path: Path, events: list[Event], by_id: bool = False) -> Path:
    """An export with NVTX_EVENTS as nsys writes it (text inline, or by textId when by_id)."""
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, "
            "text TEXT, textId INTEGER, globalTid INTEGER)"
        )
        db.execute("CREATE TABLE StringIds (id INTEGER, value TEXT)")
        for number, (start, end, kind, text) in enumerate(events):
            if by_id:
                db.execute("INSERT INTO StringIds VALUES (?, ?)", (number, text))
            db.execute(
                "INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, ?, ?)",
                (start, end, kind, None if by_id else text, number if by_id else None, TID),
            )
    return path


def _log(path: Path, pairs: list[tuple[str, int]], pid: int = PID) -> Path:
    lines = [json.dumps({"pid": pid, "key": k, "logged": n, "by": "test"}) for k, n in pairs]
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _steps(numbers: range, keys: list[list[str]]) -> list[Event]:
    """A `step N` range per number, 100 ns apart, with a proof mark per key inside it."""
    events: list[Event] = []
    for index, (number, inside) in enumerate(zip(numbers, keys, strict=True)):
        start = 1000 + 100 * index
        events.append((start, start + 90, 59, f"step {number}"))
        for offset, key in enumerate(inside):
            events.append((start + 10 + offset, None, 34, f"proof pre-optimizer {key}"))
        events.append((start + 50, None, 34, f"nsysgen optimizer step {number} AdamW#0"))
    return events


def check(tmp_path: Path, events: list[Event], pairs: list[tuple[str, int]], *args: str,
          by_id: bool = False, pid: int = PID) -> tuple[int, dict[str, Any]]:  # fmt: skip
    folder = Path(tempfile.mkdtemp(dir=tmp_path))  # a test may check several exports
    export = _export(folder / "report.sqlite", events, by_id)
    log = _log(folder / "proof.jsonl", pairs, pid)
    done = subprocess.run(
        [sys.executable, str(CHECK), str(export), str(log), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return done.returncode, result


@pytest.mark.parametrize("by_id", [False, True])
def test_each_range_holds_the_step_the_framework_logs(tmp_path: Path, by_id: bool) -> None:
    # A Trainer-like program: key = the global step before the optimizer step, logged + 1.
    events = _steps(range(10, 13), [["9"], ["10"], ["11"]])
    code, result = check(
        tmp_path, events, [("9", 10), ("10", 11), ("11", 12)], "--expect-steps", "10..12",
        by_id=by_id,
    )  # fmt: skip
    assert code == 0 and result["ok"], result
    assert [(r["step"], r["keys"], r["logged"]) for r in result["ranges"]] == [
        (10, ["9"], [[10]]),
        (11, ["10"], [[11]]),
        (12, ["11"], [[12]]),
    ]
    assert result["ranges"][0]["nsysgen_marks"] == ["nsysgen optimizer step 10 AdamW#0"]


def test_a_range_numbered_off_by_one_fails(tmp_path: Path) -> None:
    events = _steps(range(10, 12), [["10"], ["11"]])
    code, result = check(tmp_path, events, [("10", 11), ("11", 12)])
    assert code == 1 and not result["ok"]
    assert result["ranges"][0]["problems"] == ["key 10 logged as [11]"]


def test_optimizer_steps_per_range(tmp_path: Path) -> None:
    gan = _steps(range(10, 12), [["10D", "10G"], ["11D", "11G"]])
    pairs = [("10D", 10), ("10G", 10), ("11D", 11), ("11G", 11)]
    assert check(tmp_path, gan, pairs, "--per-step", "2")[1]["ok"]
    code, result = check(tmp_path, gan, pairs)  # one optimizer step a range expected
    assert code == 1
    assert result["ranges"][0]["problems"] == ["2 proof marks, expected 1"]


def test_missing_ranges_steps_and_marks_between_ranges(tmp_path: Path) -> None:
    assert check(tmp_path, [], [])[1]["problems"] == ["no step range in the export"]
    events = _steps(range(10, 12), [["10"], ["11"]])
    events.append((1095, None, 34, "proof pre-optimizer 99"))  # after step 10, before step 11
    code, result = check(tmp_path, events, [("10", 10), ("11", 11)], "--expect-steps", "10..12")
    assert code == 1
    assert result["problems"] == [
        "steps [10, 11], expected 10..12",
        "1 proof marks between the step ranges",
    ]


def test_a_log_of_another_pid_maps_keys_of_any_process(tmp_path: Path) -> None:
    # In a container's pid namespace the program's pid is not the one nsys records.
    events = _steps(range(3, 4), [["3"]])
    assert check(tmp_path, events, [("3", 3)], pid=PID + 1)[1]["ok"]


def test_committed_gpu_run() -> None:
    summary = json.loads(RESULT.read_text())
    assert summary["ok"] is True
    assert {"torch", "transformers", "lightning", "accelerate", "nsys"} <= set(summary["versions"])
    windows = {"compiled-graphs": range(20, 25)}
    for setup, result in summary["setups"].items():
        assert result["job_status"] == 0 and result["verify_exit"] == 0, setup
        assert result["steps"] == list(windows.get(setup, range(10, 15))), setup
        per_step = result["optimizer_steps_per_step"]
        for row in result["ranges"]:
            assert len(row["keys"]) == per_step and row["logged"] == [[row["step"]]] * per_step
    setups = ["hf-trainer", "lightning-trainer", "accelerate-loop", "gan-two-optimizers"]
    assert sorted(summary["setups"]) == sorted([*setups, "compiled-graphs"])
