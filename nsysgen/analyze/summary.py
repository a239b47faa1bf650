"""summary.json and the CSV tables of `nsysgen analyze`: per rank x step figures, stragglers,
and NCCL bandwidth per message size, in one machine-readable file that `--baseline` compares.

Medians per rank leave out the first recorded step (warm-up), as the straggler analysis does.
"""

from __future__ import annotations

import csv
import json
import statistics
from collections import defaultdict
from pathlib import Path

from nsysgen.analyze.nccl import NcclCall, human_size
from nsysgen.analyze.steps import RankTables, StepRow
from nsysgen.analyze.stragglers import Lateness, Thresholds

SCHEMA = "nsysgen-analyze-summary/1"
STEP_FIELDS = [
    "step_ms",
    "compute_ms",
    "nccl_ms",
    "compute_busy_ms",
    "exposed_comm_ms",
    "other_ms",
    "idle_ms",
]


def bus_factor(op: str, world: int) -> float:
    """nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md there), from the operation name."""
    name = op.lower().replace("_", "")
    if world < 2:
        return 1.0  # one rank known: algorithm bandwidth (see summary["world_size_note"])
    if "allreduce" in name:
        return 2 * (world - 1) / world
    if any(k in name for k in ("allgather", "reducescatter", "alltoall")):
        return (world - 1) / world
    return 1.0  # broadcast, reduce, send/recv


def nccl_by_size(calls: list[NcclCall], world: int) -> list[dict[str, object]]:
    groups: dict[tuple[str, int], list[int]] = defaultdict(list)
    for call in calls:
        if call.size_bytes:
            groups[(call.op, call.size_bytes)].append(call.duration_ns)
    rows: list[dict[str, object]] = []
    for (op, size), durations in sorted(groups.items()):
        median_ns = statistics.median(durations)
        algbw = size / median_ns  # bytes per ns = GB/s
        rows.append(
            {
                "op": op,
                "size_bytes": size,
                "size": human_size(size),
                "calls": len(durations),
                "median_us": round(median_ns / 1000, 3),
                "algbw_GBps": round(algbw, 3),
                "busbw_GBps": round(algbw * bus_factor(op, world), 3),
            }
        )
    return rows


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 4) if present else None


def _step_dict(row: StepRow, rank: int, lateness: Lateness) -> dict[str, object]:
    data: dict[str, object] = {"step": row.step, "source": row.source, "cpu_ms": row.cpu_ms}
    for name in STEP_FIELDS:
        value = getattr(row, name)
        data[name] = None if value is None else round(value, 4)
    data["kernels"] = row.kernels
    wait, late = lateness.wait_ms.get((rank, row.step)), lateness.late_ms.get((rank, row.step))
    data["wait_ms"] = None if wait is None else round(wait, 4)
    data["late_ms"] = None if late is None else round(late, 4)
    return data


def build(
    ranks: list[RankTables],
    lateness: Lateness,
    stragglers: list[dict[str, object]],
    calls: list[NcclCall],
    thresholds: Thresholds,
    world: int,
    reports: list[str],
) -> dict[str, object]:
    first = min((row.step for t in ranks for row in t.steps), default=None)
    rank_entries = []
    for t in ranks:
        assert t.rank is not None
        judged = [row for row in t.steps if row.step != first] or t.steps
        rank_entries.append(
            {
                "rank": t.rank,
                "report": t.report,
                "pid": t.pid,
                "device": t.device,
                "medians_without_first_step": {
                    name: _median([getattr(row, name) for row in judged])
                    for name in [*STEP_FIELDS, "cpu_ms"]
                },
                "totals": {
                    "kernel_ms": round(t.kernel_ms_total, 4),
                    "kernels": t.kernels_total,
                    "nccl_kernel_ms": round(t.nccl_ms_total, 4),
                    "nccl_kernels": t.nccl_kernels_total,
                    "steps": len(t.steps),
                },
                "steps": [_step_dict(row, t.rank, lateness) for row in t.steps],
            }
        )
    summary: dict[str, object] = {
        "schema": SCHEMA,
        "reports": reports,
        "world_size": world,
        "first_step_ignored": first,
        "thresholds": thresholds.as_dict(),
        "collectives_matched": lateness.matched,
        "steps_with_unequal_collective_counts": lateness.mismatched_steps,
        "ranks": rank_entries,
        "stragglers": stragglers,
        "nccl_by_size": nccl_by_size(calls, world),
    }
    if world < 2:
        summary["world_size_note"] = (
            "one rank known: busbw_GBps is the algorithm bandwidth (pass --world-size)"
        )
    return summary


def write(summary: dict[str, object], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    target = out / "summary.json"
    # One line: json's C encoder only writes unindented JSON, and a summary of 1000 ranks x 1000
    # steps holds a million step rows (steps.csv has them for reading).
    target.write_text(json.dumps(summary) + "\n")
    written = [target]
    ranks: list[dict[str, object]] = summary["ranks"]  # type: ignore[assignment]
    step_columns = ["step", "source", "cpu_ms", *STEP_FIELDS, "wait_ms", "late_ms", "kernels"]
    written.append(
        _csv(
            out / "steps.csv",
            ["rank", "report", *step_columns],
            [
                [r["rank"], r["report"], *(s[c] for c in step_columns)]
                for r in ranks
                for s in r["steps"]  # type: ignore[attr-defined]
            ],
        )
    )
    total_columns = ["kernel_ms", "kernels", "nccl_kernel_ms", "nccl_kernels", "steps"]
    median_columns = [f"median_{name}" for name in STEP_FIELDS]
    written.append(
        _csv(
            out / "ranks.csv",
            ["rank", "report", "pid", "device", *total_columns, *median_columns],
            [
                [
                    r["rank"],
                    r["report"],
                    r["pid"],
                    r["device"],
                    *(r["totals"][c] for c in total_columns),  # type: ignore[index]
                    *(r["medians_without_first_step"][n] for n in STEP_FIELDS),  # type: ignore[index]
                ]
                for r in ranks
            ],
        )
    )
    stragglers: list[dict[str, object]] = summary["stragglers"]  # type: ignore[assignment]
    written.append(
        _csv(
            out / "stragglers.csv",
            ["rank", "kind", "steps", "mean_lateness_ms", "late_on_fraction_of_steps"],
            [
                [
                    s["rank"],
                    s["kind"],
                    " ".join(map(str, s["steps"])),  # type: ignore[call-overload]
                    s["mean_lateness_ms"],
                    s["late_on_fraction_of_steps"],
                ]
                for s in stragglers
            ],
        )
    )
    sizes: list[dict[str, object]] = summary["nccl_by_size"]  # type: ignore[assignment]
    size_columns = ["op", "size_bytes", "size", "calls", "median_us", "algbw_GBps", "busbw_GBps"]
    written.append(
        _csv(
            out / "nccl_bandwidth.csv", size_columns, [[s[c] for c in size_columns] for s in sizes]
        )
    )
    return written


def _csv(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        for row in rows:
            writer.writerow(["" if v is None else v for v in row])
    return path
