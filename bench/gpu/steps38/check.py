#!/usr/bin/env python3
"""Whether each `step N` range of an nsys SQLite export holds the optimizer steps that the
framework itself numbers N (standard library only), as JSON.

    check.py EXPORT.sqlite PROOF_LOG.jsonl [--per-step K] [--expect-steps A..B]

The ranges are nsysgen's NVTX ranges `step N` (push/pop or start/end); the evidence is the
program's own (proof.py): a mark `proof pre-optimizer <key>` right before each optimizer step,
and PROOF_LOG's lines {pid, key, logged, by} that pair each key with the step number the
framework's log gives that optimizer step. Per range: N, the proof keys inside it, the logged
numbers they map to, and ok = exactly K proof marks inside (K optimizer steps make one training
step: 1, or 2 for a GAN) and every one of them logged as N. The whole export is ok when every
range is, the ranges are A..B (--expect-steps), and no proof mark of the window's span lies
between ranges.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

STEP = re.compile(r"^step (\d+)$")
PROOF = "proof pre-optimizer "
NSYSGEN_MARK = "nsysgen optimizer step "
PUSH_POP, START_END, MARK = 59, 60, 34  # ENUM_NSYS_EVENT_TYPE (nsys 2025.x)


def _pid(global_id: int) -> int:
    """The process id of a globalTid (bits 24..47; the bits above hold the VM id)."""
    return (int(global_id) >> 24) & 0xFFFFFF


def _tables(db: sqlite3.Connection) -> set[str]:
    return {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def read_nvtx(path: str) -> tuple[list[tuple[int, int, int, int]], list[tuple[int, int, str]]]:
    """(ranges, marks) of the export: ranges (pid, start, end, N) of `step N`, marks
    (pid, time, text) of every NVTX mark."""
    ranges: list[tuple[int, int, int, int]] = []
    marks: list[tuple[int, int, str]] = []
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        tables = _tables(db)
        if "NVTX_EVENTS" not in tables:
            return ranges, marks
        strings: dict[int, str] = {}
        if "StringIds" in tables:
            strings = {int(i): str(v) for i, v in db.execute("SELECT id, value FROM StringIds")}
        columns = {row[1] for row in db.execute("PRAGMA table_info(NVTX_EVENTS)")}
        text_id = "textId" if "textId" in columns else "NULL"
        rows = db.execute(
            f"SELECT start, end, eventType, text, {text_id}, globalTid FROM NVTX_EVENTS"  # noqa: S608
        )
        for start, end, kind, text, tid, gtid in rows:
            text = text if text is not None else strings.get(tid, "")
            pid = _pid(gtid or 0)
            if kind in (PUSH_POP, START_END) and end is not None:
                found = STEP.match(text)
                if found:
                    ranges.append((pid, int(start), int(end), int(found.group(1))))
            elif kind == MARK:
                marks.append((pid, int(start), text))
    return sorted(ranges), sorted(marks)


def read_log(path: str) -> dict[tuple[int | None, str], list[int]]:
    """PROOF_LOG: (pid, key) -> the numbers logged for it, and (None, key) for any process."""
    logged: dict[tuple[int | None, str], list[int]] = defaultdict(list)
    file = Path(path)
    if not file.is_file():
        return logged
    for line in file.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        for pid in (int(record["pid"]), None):
            numbers = logged[(pid, str(record["key"]))]
            if int(record["logged"]) not in numbers:
                numbers.append(int(record["logged"]))
    return logged


def check(export: str, log: str, per_step: int, span: tuple[int, int] | None) -> dict[str, Any]:
    ranges, marks = read_nvtx(export)
    logged = read_log(log)
    logged_pids = {pid for pid, _ in logged if pid is not None}
    proof_marks = [(pid, t, text[len(PROOF) :]) for pid, t, text in marks if text.startswith(PROOF)]
    rows, problems, inside_total = [], [], 0
    for pid, start, end, number in ranges:
        keys = [key for p, t, key in proof_marks if p == pid and start <= t <= end]
        inside_total += len(keys)
        # By process where the log names this one (a pid namespace would hide it: any process).
        owner: int | None = pid if pid in logged_pids else None
        numbers = [logged.get((owner, key), []) for key in keys]
        row_problems = []
        if len(keys) != per_step:
            row_problems.append(f"{len(keys)} proof marks, expected {per_step}")
        for key, found in zip(keys, numbers, strict=True):
            if found != [number]:
                row_problems.append(f"key {key} logged as {found or 'nothing'}")
        rows.append(
            {
                "pid": pid,
                "step": number,
                "keys": keys,
                "logged": numbers,
                "nsysgen_marks": [
                    text
                    for p, t, text in marks
                    if p == pid and start <= t <= end and text.startswith(NSYSGEN_MARK)
                ],
                "ms": round((end - start) / 1e6, 3),
                "ok": not row_problems,
                "problems": row_problems,
            }
        )
    steps = [row["step"] for row in rows]
    if not rows:
        problems.append("no step range in the export")
    if span is not None and steps != list(range(span[0], span[1] + 1)):
        problems.append(f"steps {steps}, expected {span[0]}..{span[1]}")
    if ranges:
        first, last = min(r[1] for r in ranges), max(r[2] for r in ranges)
        between = [k for _, t, k in proof_marks if first <= t <= last]
        if len(between) != inside_total:
            problems.append(f"{len(between) - inside_total} proof marks between the step ranges")
    return {
        "export": export,
        "proof_log": log,
        "proof_log_keys": len({key for pid, key in logged if pid is None}),
        "per_step": per_step,
        "steps": steps,
        "ranges": rows,
        "proof_marks": len(proof_marks),
        "problems": problems,
        "ok": not problems and all(row["ok"] for row in rows),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("export")
    parser.add_argument("proof_log")
    parser.add_argument("--per-step", type=int, default=1, help="optimizer steps a training step")
    parser.add_argument("--expect-steps", help="A..B: the step ranges the export should hold")
    args = parser.parse_args(argv)
    span = None
    if args.expect_steps:
        first, _, last = args.expect_steps.partition("..")
        span = int(first), int(last)
    result = check(args.export, args.proof_log, args.per_step, span)
    json.dump(result, sys.stdout, indent=1)
    print()
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
