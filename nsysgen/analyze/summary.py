"""summary.json and the CSV tables of `nsysgen analyze`: per rank x step figures, stragglers,
and NCCL bandwidth per message size, in one machine-readable file that `--baseline` compares.

Medians per rank leave out the window's edges, as the straggler analysis does: the first
recorded step (warm-up, and the pause when the capture opens) and the last one (the pause when
it closes: seconds, nsysgen/profile/pause.py). steps.csv and summary.json mark both.
"""

from __future__ import annotations

import csv
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Literal, TypedDict, get_args

from nsysgen.analyze.nccl import NcclCall, human_size
from nsysgen.analyze.steps import RankTables, StepRow, window_edges
from nsysgen.analyze.stragglers import Lateness, Straggler, Thresholds

SCHEMA = "nsysgen-analyze-summary/1"
StepField = Literal[
    "step_ms", "compute_ms", "nccl_ms", "compute_busy_ms", "exposed_comm_ms", "other_ms", "idle_ms"
]
STEP_FIELDS: tuple[StepField, ...] = get_args(StepField)

# summary.json, typed: each entry's keys in the order the file holds them.
StepColumn = Literal[
    "step", "source", "cpu_ms", StepField, "wait_ms", "late_ms", "kernels", "window_edge"
]
TotalsColumn = Literal["kernel_ms", "kernels", "nccl_kernel_ms", "nccl_kernels", "steps"]
SizeColumn = Literal["op", "size_bytes", "size", "calls", "median_us", "algbw_GBps", "busbw_GBps"]


class StepEntry(TypedDict):
    step: int
    source: str  # "gpu": from the step's kernels; "cpu": the NVTX range alone
    cpu_ms: float
    step_ms: float | None
    compute_ms: float | None
    nccl_ms: float | None
    compute_busy_ms: float | None
    exposed_comm_ms: float | None
    other_ms: float | None
    idle_ms: float | None
    kernels: int
    wait_ms: float | None
    late_ms: float | None
    window_edge: str | None  # "open" (first recorded step), "close" (last), None: inside


class Totals(TypedDict):
    kernel_ms: float
    kernels: int
    nccl_kernel_ms: float
    nccl_kernels: int
    steps: int


class RankEntry(TypedDict):
    rank: int
    report: str
    pid: int
    device: int | None
    medians_without_window_edges: dict[str, float | None]  # STEP_FIELDS and cpu_ms
    totals: Totals
    steps: list[StepEntry]


class SizeEntry(TypedDict):
    op: str
    size_bytes: int
    size: str
    calls: int
    median_us: float
    algbw_GBps: float
    busbw_GBps: float | None  # None: it cannot be computed (one rank known; see "limits")


class _SummaryKeys(TypedDict):
    schema: str
    reports: list[str]
    world_size: int
    first_step_ignored: int | None
    last_step_ignored: int | None
    # Which steps are the window's edges, and whether stragglers and medians count them.
    window_edges: dict[str, int | bool | None]
    thresholds: dict[str, float]
    collectives_matched: int
    collectives_matched_by: list[str]
    steps_with_unequal_collective_counts: list[int]
    ranks: list[RankEntry]
    stragglers: list[Straggler]
    nccl_by_size: list[SizeEntry]
    # What the figures cannot say, and why, in words: never a number that is silently wrong.
    limits: list[str]


class Summary(_SummaryKeys, total=False):
    label: str  # the job, run and report count the analysis read
    # nccl-tests' own figures from its log: [bytes, time in us, bus bandwidth in GB/s or None].
    nccl_tests: list[tuple[int, float, float | None]]


def bus_factor(op: str, world: int) -> float:
    """nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md there), from the operation name."""
    name = op.lower().replace("_", "")
    if "allreduce" in name:
        return 2 * (world - 1) / world
    if any(k in name for k in ("allgather", "reducescatter", "alltoall")):
        return (world - 1) / world
    return 1.0  # broadcast, reduce, send/recv


def nccl_by_size(calls: list[NcclCall], world: int) -> list[SizeEntry]:
    groups: dict[tuple[str, int], list[int]] = defaultdict(list)
    for call in calls:
        if call.size_bytes:
            groups[(call.op, call.size_bytes)].append(call.duration_ns)
    rows: list[SizeEntry] = []
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
                "busbw_GBps": round(algbw * bus_factor(op, world), 3) if world > 1 else None,
            }
        )
    return rows


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 4) if present else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def all_edges(ranks: list[RankTables]) -> tuple[int | None, int | None]:
    """The window's edges over every rank: the first and last step recorded on any."""
    return window_edges(row.step for t in ranks for row in t.steps)


def own_edges(t: RankTables) -> tuple[int | None, int | None]:
    """A rank's own window edges: ranks on other nodes can start their window a step apart,
    and each pauses at its own first and last recorded step."""
    return window_edges(row.step for row in t.steps)


def _step_entry(
    row: StepRow, rank: int, lateness: Lateness, edges: tuple[int | None, int | None]
) -> StepEntry:
    edge = "open" if row.step == edges[0] else "close" if row.step == edges[1] else None
    return {
        "step": row.step,
        "source": row.source,
        "cpu_ms": row.cpu_ms,
        "step_ms": _round(row.step_ms),
        "compute_ms": _round(row.compute_ms),
        "nccl_ms": _round(row.nccl_ms),
        "compute_busy_ms": _round(row.compute_busy_ms),
        "exposed_comm_ms": _round(row.exposed_comm_ms),
        "other_ms": _round(row.other_ms),
        "idle_ms": _round(row.idle_ms),
        "kernels": row.kernels,
        "wait_ms": _round(lateness.wait_ms.get((rank, row.step))),
        "late_ms": _round(lateness.late_ms.get((rank, row.step))),
        "window_edge": edge,
    }


def build(
    ranks: list[RankTables],
    lateness: Lateness,
    stragglers: list[Straggler],
    calls: list[NcclCall],
    thresholds: Thresholds,
    world: int,
    reports: list[str],
    world_given: bool = False,
    label: str = "",
    reference: tuple[tuple[int, float, float | None], ...] = (),
) -> Summary:
    edges = all_edges(ranks)
    rank_entries: list[RankEntry] = []
    for t in ranks:
        assert t.rank is not None
        own = own_edges(t)
        judged = [row for row in t.steps if row.step not in own] or t.steps
        rank_entries.append(
            {
                "rank": t.rank,
                "report": t.report,
                "pid": t.pid,
                "device": t.device,
                "medians_without_window_edges": {
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
                "steps": [_step_entry(row, t.rank, lateness, own) for row in t.steps],
            }
        )
    summary: Summary = {
        "schema": SCHEMA,
        "reports": reports,
        "world_size": world,
        "first_step_ignored": edges[0],
        "last_step_ignored": edges[1],
        "window_edges": {
            "open": edges[0],
            "close": edges[1],
            "in_stragglers": False,
            "in_medians": False,
        },
        "thresholds": thresholds.as_dict(),
        "collectives_matched": lateness.matched,
        # How: "operationId" (nsys's advanced NCCL tracing) or "order in step" (without it).
        "collectives_matched_by": sorted(lateness.matched_by),
        "steps_with_unequal_collective_counts": lateness.mismatched_steps,
        "ranks": rank_entries,
        "stragglers": stragglers,
        "nccl_by_size": nccl_by_size(calls, world),
        "limits": limits(calls, len(ranks), world, world_given),
    }
    if label:
        summary["label"] = label
    if reference:
        summary["nccl_tests"] = list(reference)
    return summary


def limits(calls: list[NcclCall], ranks: int, world: int, world_given: bool) -> list[str]:
    """What cannot be computed from these reports, or holds only under an assumption."""
    found = []
    unsized = sum(1 for call in calls if not call.size_bytes)
    if unsized:
        found.append(
            f"bandwidth of {unsized} of {len(calls)} NCCL call(s) not computed: their message "
            "size is unknown (no NCCL payload in the export, nor a sized NVTX range around "
            "them)"
        )
    if calls and world < 2:
        found.append(
            "bus bandwidth not computed: one rank known (pass --world-size, the job's rank "
            "count); algbw_GBps is per call"
        )
    elif calls and not world_given:
        found.append(
            f"bus bandwidth assumes the job had {world} ranks, the ones recorded (pass "
            "--world-size if it had more)"
        )
    if world_given and 0 < ranks < world:
        found.append(
            f"{ranks} of {world} ranks recorded: stragglers and per-step figures are among "
            "those only (a rank not recorded can be late unseen)"
        )
    return found


def write(summary: Summary, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    target = out / "summary.json"
    # One line: json's C encoder only writes unindented JSON, and a summary of 1000 ranks x 1000
    # steps holds a million step rows (steps.csv has them for reading).
    target.write_text(json.dumps(summary) + "\n")
    written = [target]
    ranks = summary["ranks"]
    step_columns: tuple[StepColumn, ...] = get_args(StepColumn)
    written.append(
        _csv(
            out / "steps.csv",
            ["rank", "report", *step_columns],
            [
                [r["rank"], r["report"], *(s[c] for c in step_columns)]
                for r in ranks
                for s in r["steps"]
            ],
        )
    )
    total_columns: tuple[TotalsColumn, ...] = get_args(TotalsColumn)
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
                    *(r["totals"][c] for c in total_columns),
                    *(r["medians_without_window_edges"][n] for n in STEP_FIELDS),
                ]
                for r in ranks
            ],
        )
    )
    stragglers = summary["stragglers"]
    written.append(
        _csv(
            out / "stragglers.csv",
            ["rank", "kind", "steps", "mean_lateness_ms", "late_on_fraction_of_steps"],
            [
                [
                    s["rank"],
                    s["kind"],
                    " ".join(map(str, s["steps"])),
                    s["mean_lateness_ms"],
                    s["late_on_fraction_of_steps"],
                ]
                for s in stragglers
            ],
        )
    )
    sizes = summary["nccl_by_size"]
    size_columns: tuple[SizeColumn, ...] = get_args(SizeColumn)
    written.append(
        _csv(
            out / "nccl_bandwidth.csv",
            list(size_columns),
            [[s[c] for c in size_columns] for s in sizes],
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
