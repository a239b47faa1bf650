#!/usr/bin/env python3
"""What each step range of one nsys SQLite export holds (stdlib only), as JSON.

For every NVTX range "step N" of every process: the step helper's optimizer-step marks inside
it ("nsysgen optimizer step N <Class>#<i>[ skipped][ | <counter> = <value>]"), the optimizer
kernels and the forward-pass kernels whose launching CUDA API call (CUPTI_ACTIVITY_KIND_RUNTIME,
joined on correlationId within the process) started inside the range, and all kernels so
launched. Kernel names are matched (case
insensitive regular expressions, searched in the demangled name, else the short name) by
--optimizer and --forward. Without a runtime table (a trimmed export), a kernel counts for the
range its GPU start lies in, and "by" says so.

    count.py EXPORT.sqlite [--optimizer RE] [--forward RE] [--expect-marks N]
             [--expect-forwards N[,STEP=M...]] [--expect-steps A..B] [--top N]

With --expect-*, each process gets "ok" and "problems": every step range holds exactly
--expect-marks marks whose number is the range's own, at least one optimizer kernel (the same
count in every step), exactly --expect-forwards forward kernels (N, or M in the steps named
STEP=M), and the steps are A..B.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
from collections import Counter, defaultdict

STEP = re.compile(r"^step (\d+)$")
# The helper's mark, with the counter it numbers by since issue 38 (" | iter_num ... = 10").
MARK = re.compile(r"^nsysgen optimizer step (\d+) (\S+)#(\d+)( skipped)?( \| .*)?$")
PUSH_POP, START_END, MARK_TYPE = 59, 60, 34  # ENUM_NSYS_EVENT_TYPE (nsys 2025.x)


def _pid(global_id: int) -> int:
    """The process id of a globalTid or globalPid (bits 24..47)."""
    return (int(global_id) >> 24) & 0xFFFFFF


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info([{table}])")}


def _has(db: sqlite3.Connection, table: str) -> bool:
    return bool(_columns(db, table))


def _strings(db: sqlite3.Connection) -> dict[int, str]:
    if not _has(db, "StringIds"):
        return {}
    return dict(db.execute("SELECT id, value FROM StringIds"))


def nvtx(db: sqlite3.Connection, strings: dict[int, str]):
    """(ranges, marks): ranges (pid, start, end, text), marks (pid, time, text)."""
    ranges, marks = [], []
    if not _has(db, "NVTX_EVENTS"):
        return ranges, marks
    cols = _columns(db, "NVTX_EVENTS")
    text_id = "textId" if "textId" in cols else "NULL"
    rows = db.execute(f"SELECT start, end, eventType, text, {text_id}, globalTid FROM NVTX_EVENTS")
    for start, end, kind, text, tid, gtid in rows:
        text = text if text is not None else strings.get(tid, "")
        if gtid is None:
            continue
        if kind in (PUSH_POP, START_END) and end is not None:
            ranges.append((_pid(gtid), start, end, text))
        elif kind == MARK_TYPE or (end is None and MARK.match(text or "")):
            marks.append((_pid(gtid), start, text))
    return ranges, marks


def kernels(db: sqlite3.Connection, strings: dict[int, str]):
    """(kernels, by): kernels (pid, time, name); time is the launching call's start when the
    export has the runtime table, else the kernel's GPU start."""
    cols = _columns(db, "CUPTI_ACTIVITY_KIND_KERNEL")
    if not cols:
        return [], "no kernel table"
    name = "COALESCE(k.demangledName, k.shortName)" if "demangledName" in cols else "k.shortName"
    if _has(db, "CUPTI_ACTIVITY_KIND_RUNTIME"):
        # Correlation ids are unique within a process only: key the calls by (pid, id).
        calls = {
            (_pid(gtid), corr): start
            for gtid, corr, start in db.execute(
                "SELECT globalTid, correlationId, start FROM CUPTI_ACTIVITY_KIND_RUNTIME"
            )
        }
        out, unmatched = [], 0
        rows = db.execute(
            f"SELECT k.globalPid, k.correlationId, k.start, {name} "
            "FROM CUPTI_ACTIVITY_KIND_KERNEL k"
        )
        for gpid, corr, gpu_start, name_id in rows:
            launched = calls.get((_pid(gpid), corr))
            if launched is None:
                unmatched += 1
                launched = gpu_start
            out.append((_pid(gpid), launched, strings.get(name_id, str(name_id))))
        by = "launching CUDA API call"
        if unmatched:
            by += f" ({unmatched} kernels by their GPU start: no launching call found)"
        return out, by
    rows = db.execute(f"SELECT k.globalPid, k.start, {name} FROM CUPTI_ACTIVITY_KIND_KERNEL k")
    out = [(_pid(g), t, strings.get(n, str(n))) for g, t, n in rows]
    return out, "kernel GPU start (no runtime table in this export)"


def count(path: str, optimizer: str, forward: str, top: int) -> dict:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        strings = _strings(db)
        ranges, marks = nvtx(db, strings)
        launched, by = kernels(db, strings)
    opt_re, fwd_re = re.compile(optimizer, re.I), re.compile(forward, re.I)
    steps = defaultdict(list)
    for pid, start, end, text in ranges:
        found = STEP.match(text or "")
        if found:
            steps[pid].append((start, end, int(found.group(1))))
    other_ranges = Counter(text for _, _, _, text in ranges if not STEP.match(text or ""))
    by_pid_kernels = defaultdict(list)
    for pid, time, name in launched:
        by_pid_kernels[pid].append((time, name))
    by_pid_marks = defaultdict(list)
    for pid, time, text in marks:
        by_pid_marks[pid].append((time, text))
    processes = {}
    for pid in sorted(set(steps) | set(by_pid_kernels) | set(by_pid_marks)):
        rows, inside_total = [], 0
        for start, end, number in sorted(steps.get(pid, [])):
            inside = [name for time, name in by_pid_kernels[pid] if start <= time <= end]
            inside_total += len(inside)
            texts = [text for time, text in by_pid_marks[pid] if start <= time <= end]
            row = {
                "step": number,
                "ms": round((end - start) / 1e6, 3),
                "marks": len(texts),
                "mark_texts": texts,
                "optimizer_kernels": sum(1 for n in inside if opt_re.search(n)),
                "forward_kernels": sum(1 for n in inside if fwd_re.search(n)),
                "kernels": len(inside),
            }
            if top and not rows:
                row["top_kernels"] = Counter(_short(n) for n in inside).most_common(top)
            rows.append(row)
        in_ranges = [
            t for t, _ in by_pid_marks[pid] if any(s <= t <= e for s, e, _ in steps.get(pid, []))
        ]
        processes[str(pid)] = {
            "steps": rows,
            "kernels": len(by_pid_kernels[pid]),
            "kernels_outside_steps": len(by_pid_kernels[pid]) - inside_total,
            "marks": len(by_pid_marks[pid]),
            "marks_outside_steps": len(by_pid_marks[pid]) - len(in_ranges),
        }
    return {
        "file": path,
        "by": by,
        "optimizer": optimizer,
        "forward": forward,
        "other_ranges": dict(other_ranges.most_common(20)),
        "processes": processes,
    }


def _short(name: str) -> str:
    """A kernel name shortened for the top list: the template's functor survives."""
    return name if len(name) <= 160 else name[:157] + "..."


def _forwards(text: str | None) -> tuple[int | None, dict[int, int]]:
    """ "4" -> (4, {}); "1,8=3" -> (1, {8: 3})."""
    if not text:
        return None, {}
    default, *special = text.split(",")
    return int(default), {int(k): int(v) for k, _, v in (item.partition("=") for item in special)}


def _step_problems(row: dict, marks: int | None, forwards: int | None) -> list[str]:
    """What one step range holds that it should not (marks, their numbers, forwards)."""
    problems, step = [], row["step"]
    if marks is not None and row["marks"] != marks:
        problems.append(f"step {step}: {row['marks']} marks, expected {marks}")
    for text in row["mark_texts"]:
        found = MARK.match(text)
        if not found or int(found.group(1)) != step:
            problems.append(f"step {step}: mark {text!r}")
    if forwards is not None and row["forward_kernels"] != forwards:
        problems.append(
            f"step {step}: {row['forward_kernels']} forward kernels, expected {forwards}"
        )
    return problems


def _process_problems(rows: list[dict], span: tuple[int, int] | None) -> list[str]:
    """What the steps of one process hold together: their numbers, the optimizer kernels."""
    problems = []
    numbers = [row["step"] for row in rows]
    if span is not None and numbers != list(range(span[0], span[1] + 1)):
        problems.append(f"steps {numbers}, expected {span[0]}..{span[1]}")
    optimizer = {row["optimizer_kernels"] for row in rows}
    if 0 in optimizer:
        problems.append("a step without optimizer kernels")
    if len(optimizer) > 1:
        problems.append(f"optimizer kernels differ between steps: {sorted(optimizer)}")
    return problems


def check(result: dict, marks: int | None, forwards: str | None, span: str | None) -> None:
    forwards_default, forwards_at = _forwards(forwards)
    steps = None
    if span:
        a, _, b = span.partition("..")
        steps = int(a), int(b)
    for process in result["processes"].values():
        rows = process["steps"]
        if not rows:
            problems = ["no step range"] if process["kernels"] or process["marks"] else []
        else:
            problems = _process_problems(rows, steps)
            for row in rows:
                expected = forwards_at.get(row["step"], forwards_default)
                problems += _step_problems(row, marks, expected)
        process["ok"], process["problems"] = not problems, problems
    # Every process that ran kernels in the window must hold step ranges, and all of them pass.
    recorded = [p for p in result["processes"].values() if p["steps"] or p["kernels"]]
    result["ok"] = bool(recorded) and all(p["ok"] for p in recorded)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export")
    parser.add_argument("--optimizer", default=r"multi_tensor_apply|adam|sgd")
    parser.add_argument("--forward", default=r"nll_loss_forward")
    parser.add_argument("--expect-marks", type=int)
    parser.add_argument("--expect-forwards", help="N, or N,STEP=M,... (M in those steps)")
    parser.add_argument("--expect-steps", help="A..B")
    parser.add_argument("--top", type=int, default=12, help="kernel names listed for step 1")
    args = parser.parse_args(argv)
    result = count(args.export, args.optimizer, args.forward, args.top)
    if args.expect_marks is not None or args.expect_forwards is not None or args.expect_steps:
        check(result, args.expect_marks, args.expect_forwards, args.expect_steps)
    json.dump(result, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
