"""Per rank x per step figures of one report, from the GPU's point of view.

`tables_in(db, tables, report)` is a pure function of one open SQLite export: it returns compact
per-process tables (one `RankTables` per recorded process) and nothing else, so it can be mapped
over many reports (one per node, or per rank) and the results combined afterwards.

How a step is seen on the GPU: a step is an NVTX range "step N" on a CPU thread (nsysgen's
training-loop patch pushes exactly that name; "iteration N" and "train_step N" are accepted for
other loops). Kernels run later than the CPU range that launched them, so each CUDA API call
made inside the range (on any thread of the process: backward and DDP's reducer launch from
autograd threads) is followed to its GPU work through the CUDA correlation id. The step's GPU
time is first start to last end of that work (what nsys's nvtx_gpu_proj_sum calls the projected
range). Inside it:

- compute: non-NCCL kernels; nccl: kernels whose name starts with "nccl";
- exposed comm: time an NCCL kernel runs while no compute kernel of the step runs;
- other: memcpy/memset time not under a kernel;
- idle: the step's GPU time with nothing of the step running.

compute_busy + exposed_comm + other + idle = step time, so they stack in one bar.

CPU-only reports (no CUDA work in a step) fall back to the NVTX range itself: the step time is
the CPU range's duration, and communication is the union of the NVTX ranges inside the step
whose name says collective (all_reduce, all_gather, reduce_scatter, all_to_all, broadcast,
barrier); NCCL's own NVTX domain is left out there, since its ranges only enqueue work.
"""

from __future__ import annotations

import bisect
import re
import sqlite3
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import groupby
from operator import itemgetter

STEP_NAME = re.compile(r"^\s*(?:step|iteration|iter|train[_ ]step)[ _:#=]*(\d+)\s*$", re.I)
COMM_NAME = re.compile(
    r"(?i)(all[_ -]?reduce|all[_ -]?gather|reduce[_ -]?scatter|all[_ -]?to[_ -]?all|broadcast|"
    r"barrier)"
)
RANK_IN_NAME = re.compile(r"(?:^|[_.-])rank(\d+)(?:[_.-]|$)")
NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class StepRow:
    """One step of one rank. Times in ms; None where the source cannot say (CPU-only)."""

    step: int
    source: str  # "gpu": projected onto the GPU; "cpu": the NVTX range itself
    cpu_ms: float  # the CPU range's own duration
    step_ms: float
    compute_ms: float | None  # sum of compute kernel durations
    nccl_ms: float | None  # sum of NCCL kernel durations
    compute_busy_ms: float | None  # union of compute kernels
    exposed_comm_ms: float  # NCCL not under compute (GPU); comm ranges (CPU)
    other_ms: float | None
    idle_ms: float | None
    kernels: int


@dataclass(frozen=True)
class Collective:
    """One communication of one rank in one step, in launch order (`index`)."""

    step: int
    index: int
    name: str
    duration_ns: int
    # The collective's operationId under nsys's advanced NCCL tracing (the same on every rank
    # of the communicator); None without it.
    operation: int | None = None


@dataclass
class RankTables:
    """Everything later stages need from one process of one report."""

    report: str
    pid: int
    rank: int | None  # from the report's name (rankN); None: numbered later
    device: int | None
    steps: list[StepRow] = field(default_factory=list)
    collectives: list[Collective] = field(default_factory=list)
    kernel_ms_total: float = 0.0  # every kernel of the process, in steps or not
    nccl_ms_total: float = 0.0
    kernels_total: int = 0
    nccl_kernels_total: int = 0


def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    last_end = None
    for start, end in sorted(intervals):
        if last_end is not None and start <= last_end:
            if end > last_end:
                merged[-1] = (merged[-1][0], end)
                last_end = end
        else:
            merged.append((start, end))
            last_end = end
    return merged


def _length(merged: list[tuple[int, int]]) -> int:
    total = 0
    for start, end in merged:
        total += end - start
    return total


def _overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    """Length of the intersection of two merged interval lists."""
    total, i, j = 0, 0, 0
    while i < len(a) and j < len(b):
        low, high = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if high > low:
            total += high - low
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


# One piece of GPU work, as a plain tuple (a report holds millions; tuples cost a third of a
# dataclass to make): (start of the CUDA API call that launched it, start, end, kind, name).
_GpuOp = tuple[int, int, int, int, str]
_COMPUTE, _NCCL, _COPY = 0, 1, 2


def _nccl_names(db: sqlite3.Connection) -> dict[int, str]:
    """String ids of NCCL kernel names (case-sensitive "nccl" prefix, as NCCL names them)."""
    return dict(db.execute("SELECT id, value FROM StringIds WHERE value GLOB 'nccl*'"))


_NCCL_IDS = "(SELECT id, value FROM StringIds WHERE value GLOB 'nccl*')"


def _read_ops(db: sqlite3.Connection, tables: set[str]) -> dict[int, list[_GpuOp]]:
    """GPU work per process, each with the start of the CUDA API call that launched it, in
    launch order. The rows come out of SQLite as they are kept (tuples made in C, sorted
    there): a report holds millions."""
    ops: dict[int, list[_GpuOp]] = {}
    if not {"CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL", "StringIds"} <= tables:
        return ops
    # Kernels, copies and memsets first, then one join to the API calls that launched them
    # (one lookup structure over the API table, not one per kind of work).
    work = [
        f"SELECT k.globalPid >> 24 AS pid, k.correlationId AS id, k.start AS start, k.end AS end, "
        f"CASE WHEN n.id IS NULL THEN {_COMPUTE} ELSE {_NCCL} END AS kind, "
        "COALESCE(n.value, '') AS name "
        f"FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN {_NCCL_IDS} n ON k.shortName = n.id"
    ]
    for table in ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        if table in tables:
            work.append(
                f"SELECT globalPid >> 24, correlationId, start, end, {_COPY}, '{table}' "
                f"FROM {table}"
            )
    query = (
        "SELECT w.pid, r.start, w.start, w.end, w.kind, w.name FROM "
        f"({' UNION ALL '.join(work)}) w JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
        "ON r.correlationId = w.id AND (r.globalTid >> 24) = w.pid"
    )
    # Sorted here, not in SQL: launches come out almost in order, which Python's sort takes
    # in one pass.
    rows = db.execute(query).fetchall()
    rows.sort(key=itemgetter(0, 1))
    for pid, group in groupby(rows, key=itemgetter(0)):
        ops[pid] = [row[1:] for row in group]
    return ops


def _kernel_totals(
    db: sqlite3.Connection, tables: set[str]
) -> dict[int, tuple[int, int, int, int]]:
    """pid -> (kernel ns, kernels, NCCL kernel ns, NCCL kernels), every kernel counted (in
    SQL: one pass over the kernel table, no row reaches Python)."""
    if not {"CUPTI_ACTIVITY_KIND_KERNEL", "StringIds"} <= tables:
        return {}
    return {
        pid: (int(ns or 0), int(count), int(nccl_ns or 0), int(nccl_count or 0))
        for pid, ns, count, nccl_ns, nccl_count in db.execute(
            "SELECT k.globalPid >> 24, SUM(k.end - k.start), COUNT(*), "
            "SUM(CASE WHEN n.id IS NULL THEN 0 ELSE k.end - k.start END), COUNT(n.id) "
            "FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN "
            "(SELECT id FROM StringIds WHERE value GLOB 'nccl*') n ON k.shortName = n.id "
            "GROUP BY 1"
        )
    }


def _devices(db: sqlite3.Connection, tables: set[str]) -> dict[int, int]:
    if "CUPTI_ACTIVITY_KIND_KERNEL" not in tables:
        return {}
    return {
        pid: device
        for pid, device in db.execute(
            "SELECT globalPid >> 24, MIN(deviceId) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1"
        )
    }


def _ranges(
    db: sqlite3.Connection, tables: set[str]
) -> tuple[dict[int, list[tuple[int, int, int]]], dict[int, list[tuple[int, int, str]]]]:
    """pid -> step ranges (start, end, step), and pid -> collective-named ranges."""
    steps: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    comm: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
    if "NVTX_EVENTS" not in tables:
        return steps, comm
    join = "LEFT JOIN StringIds s ON e.textId = s.id" if "StringIds" in tables else ""
    text = "COALESCE(e.text, s.value)" if join else "e.text"
    nccl_domains = {
        domain
        for domain, name in db.execute(
            f"SELECT e.domainId, {text} FROM NVTX_EVENTS e {join} WHERE e.eventType = 75"
        )
        if name == "NCCL"
    }
    for start, end, tid, name, domain in db.execute(
        f"SELECT e.start, e.end, e.globalTid, {text}, e.domainId FROM NVTX_EVENTS e {join} "
        "WHERE e.eventType IN (59, 60) AND e.end IS NOT NULL"
    ):
        name = name or ""
        pid = (tid or 0) >> 24
        match = STEP_NAME.match(name)
        if match:
            steps[pid].append((start, end, int(match.group(1))))
        elif domain not in nccl_domains and COMM_NAME.search(name):
            comm[pid].append((start, end, name))
    for values in steps.values():
        values.sort()
    return steps, comm


# Advanced NCCL tracing's composite tables (nsys 2025.6.1+, exported with --include-json true),
# collectives only first. Their columns as NVIDIA's user guide names them; no such export was
# seen here (no nsys 2025.6+ runs on these machines): a table without these columns is ignored.
_OPERATION_TABLES = ("NCCL_GPU_OPERATIONS_COLLECTIVE", "NCCL_GPU_OPERATIONS")
_OPERATION_COLUMNS = {"start", "end", "operationId", "globalPid"}
_Operation = tuple[int, int, int]  # (first start, last end over its channels, operationId)


def _operations(db: sqlite3.Connection, tables: set[str]) -> dict[int, list[_Operation]]:
    """pid -> the NCCL operations of advanced tracing, one per operationId, by start."""
    for table in _OPERATION_TABLES:
        if table not in tables:
            continue
        columns = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if not columns >= _OPERATION_COLUMNS:
            continue
        found: dict[int, list[_Operation]] = defaultdict(list)
        for pid, operation, start, end in db.execute(
            f"SELECT globalPid >> 24, operationId, MIN(start), MAX(end) FROM {table} "  # noqa: S608
            "WHERE operationId IS NOT NULL GROUP BY 1, 2"
        ):
            found[pid].append((int(start), int(end), int(operation)))
        for values in found.values():
            values.sort()  # exports keep no row order (nsys 2025.6): sorted here
        return found
    return {}


_LOOK_BACK = 64  # operations that may overlap one moment (communicators run side by side)


def _operation_at(operations: list[_Operation], starts: list[int], moment: int) -> int | None:
    """The operationId of the operation running at `moment`: of those started by then and not
    yet ended, the latest started (operations of other communicators overlap it)."""
    index = bisect.bisect_right(starts, moment) - 1
    for candidate in range(index, max(-1, index - _LOOK_BACK), -1):
        if operations[candidate][1] >= moment:
            return operations[candidate][2]
    return None


def _rank_from_name(report: str) -> int | None:
    match = RANK_IN_NAME.search(report)
    return int(match.group(1)) if match else None


def _in_steps(spans: list[tuple[int, int, int]], moments: list[int]) -> list[int | None]:
    """For each moment (in ascending order), the index of the step range holding it, or None:
    the last range that starts at or before it, if it has not ended (at a shared edge, the
    later step). One merge walk over both sorted lists."""
    found: list[int | None] = []
    i, n = 0, len(spans)
    for moment in moments:
        while i + 1 < n and spans[i + 1][0] <= moment:
            i += 1
        found.append(i if n and spans[i][0] <= moment <= spans[i][1] else None)
    return found


def _gpu_row(step: int, cpu_ns: int, ops: list[_GpuOp]) -> StepRow:
    compute: list[tuple[int, int]] = []
    nccl: list[tuple[int, int]] = []
    every: list[tuple[int, int]] = []
    compute_ns = nccl_ns = 0
    for _, start, end, kind, _ in ops:
        every.append((start, end))
        if kind == _COMPUTE:
            compute.append((start, end))
            compute_ns += end - start
        elif kind == _NCCL:
            nccl.append((start, end))
            nccl_ns += end - start
    begin, finish = min(s for s, _ in every), max(e for _, e in every)
    compute_u, nccl_u = _union(compute), _union(nccl)
    all_u = _union(every)
    # Two merged lists merge again cheaply: far fewer intervals than the kernels themselves.
    kernels_u = _union(compute_u + nccl_u) if nccl_u else compute_u
    exposed = _length(nccl_u) - _overlap(nccl_u, compute_u)
    span = finish - begin
    return StepRow(
        step=step,
        source="gpu",
        cpu_ms=cpu_ns / NS_PER_MS,
        step_ms=span / NS_PER_MS,
        compute_ms=compute_ns / NS_PER_MS,
        nccl_ms=nccl_ns / NS_PER_MS,
        compute_busy_ms=_length(compute_u) / NS_PER_MS,
        exposed_comm_ms=exposed / NS_PER_MS,
        other_ms=(_length(all_u) - _length(kernels_u)) / NS_PER_MS,
        idle_ms=(span - _length(all_u)) / NS_PER_MS,
        kernels=len(compute) + len(nccl),
    )


def _reduce_process(
    report: str,
    pid: int,
    spans: list[tuple[int, int, int]],
    ops: list[_GpuOp],
    comm: list[tuple[int, int, str]],
    operations: list[_Operation],
) -> RankTables:
    # globalPid >> 24 still holds nsys's hardware id above the 24 bits of the OS pid.
    tables = RankTables(report=report, pid=pid & 0xFFFFFF, rank=None, device=None)
    per_step: dict[int, list[_GpuOp]] = defaultdict(list)
    for op, index in zip(ops, _in_steps(spans, [op[0] for op in ops]), strict=True):
        if index is not None:
            per_step[index].append(op)
    comm_per_step: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
    comm = sorted(comm)
    for item, index in zip(comm, _in_steps(spans, [c[0] for c in comm]), strict=True):
        if index is not None:
            comm_per_step[index].append(item)
    uses_nccl = any(op[3] == _NCCL for op in ops)
    starts = [operation[0] for operation in operations]
    for index, (start, end, step) in enumerate(spans):
        step_ops = per_step.get(index, [])
        ranges = sorted(comm_per_step.get(index, []))
        if step_ops:
            row = _gpu_row(step, end - start, step_ops)
        else:
            comm_ns = _length(_union([(s, e) for s, e, _ in ranges]))
            row = StepRow(
                step, "cpu", (end - start) / NS_PER_MS, (end - start) / NS_PER_MS,
                None, None, None, comm_ns / NS_PER_MS, None, None, 0,
            )  # fmt: skip
        tables.steps.append(row)
        # The communications the straggler analysis matches across ranks: NCCL kernels when
        # the process runs any (their durations include the wait on the GPU), else the CPU
        # ranges that block on a collective.
        if uses_nccl:
            items = [
                (op[4], op[2] - op[1], _operation_at(operations, starts, op[1]))
                for op in step_ops
                if op[3] == _NCCL
            ]
        else:
            items = [(name, e - s, None) for s, e, name in ranges]
        tables.collectives += [Collective(step, i, *item) for i, item in enumerate(items)]
    return tables


def tables_in(db: sqlite3.Connection, tables: set[str], report: str) -> list[RankTables]:
    """An open export (`tables`: the tables it has) -> one table set per process with steps
    or kernels."""
    ops = _read_ops(db, tables)
    operations = _operations(db, tables)
    steps, comm = _ranges(db, tables)
    totals = _kernel_totals(db, tables)
    devices = _devices(db, tables)
    result = []
    for pid in sorted(set(steps) | set(totals)):
        # A process's steps are its ranges on one thread: keep the thread-free, sorted list.
        rank_tables = _reduce_process(
            report, pid, steps.get(pid, []), ops.get(pid, []), comm[pid], operations.get(pid, [])
        )
        kernel_ns, kernels, nccl_ns, nccl_kernels = totals.get(pid, (0, 0, 0, 0))
        rank_tables.kernel_ms_total = kernel_ns / NS_PER_MS
        rank_tables.nccl_ms_total = nccl_ns / NS_PER_MS
        rank_tables.kernels_total, rank_tables.nccl_kernels_total = kernels, nccl_kernels
        rank_tables.device = devices.get(pid)
        result.append(rank_tables)
    # Ranks: the report's name says rankN (nsysgen's wrapper names reports so); several
    # processes in one report (one nsys per node around torchrun) count up from it in the
    # order of their GPU, then pid, as LOCAL_RANK usually picks the GPU.
    base = _rank_from_name(report)
    if base is not None:
        ordered = sorted(
            result, key=lambda t: (t.device if t.device is not None else 1 << 30, t.pid)
        )
        for offset, rank_tables in enumerate(ordered):
            rank_tables.rank = base + offset
    return result


def window_edges(steps: Iterable[int]) -> tuple[int | None, int | None]:
    """(first, last) of the recorded steps: those the window's open and close pause (the
    first also holds the warm-up). The last one only when a step is left between them."""
    ordered = sorted(set(steps))
    if not ordered:
        return None, None
    return ordered[0], (ordered[-1] if len(ordered) >= 3 else None)


def assign_ranks(per_report: list[list[RankTables]]) -> list[RankTables]:
    """All processes of all reports, each with a distinct rank.

    Reports named without a rank, or whose ranks collide, are numbered in report order
    instead (every process, so that the numbering stays consistent).
    """
    flat = [t for tables in per_report for t in tables]
    ranks = [t.rank for t in flat]
    if None in ranks or len(set(ranks)) != len(ranks):
        ordered = sorted(flat, key=lambda t: (t.report, t.device or 0, t.pid))
        for rank, rank_tables in enumerate(ordered):
            rank_tables.rank = rank
    return sorted(flat, key=lambda t: t.rank or 0)
