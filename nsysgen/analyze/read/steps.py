"""Per rank x per step figures of one report, from the GPU's point of view.

`tables_in(db, tables, report)` is a pure function of one open SQLite export: it returns compact
per-process tables (one `RankTables` per recorded process) and nothing else, so it can be mapped
over many reports (one per node, or per rank) and the results combined afterwards. What it
reads of the export is nsysgen/analyze/read/steps_read.py's.

How a step is seen on the GPU: a step is an NVTX range "step N" on a CPU thread (nsysgen's
training-loop patch pushes exactly that name; "iteration N" and "train_step N" are accepted for
other loops). Kernels run later than the CPU range that launched them, so each CUDA API call
made inside the range (on any thread of the process: backward and DDP's reducer launch from
autograd threads) is followed to its GPU work through the CUDA correlation id. CUDA graph
launches are GPU work too (steps_read.py says how graphs are read).

- gpu_ms: first start to last end of that work (what nsys's nvtx_gpu_proj_sum calls the
  projected range);
- step_ms: the step on the GPU's timeline: from when the CPU entered the step, or when the GPU
  finished the previous step if that was later, to the end of the step's GPU work. A rank whose
  CPU is late inside its own step (a slow data loader, a sleep, Python overhead) shows it here,
  as a host gap, instead of looking faster than the ranks that waited for it.

Inside step_ms, each instant counted once, in this order:

- compute_busy: compute kernels (and graph launches) running; compute_ms/nccl_ms are the sums
  of kernel durations;
- exposed comm: an NCCL kernel running and no compute (the reduce step splits it into waiting
  for the last peer and transfer, nsysgen/analyze/judge/waiting.py);
- other: a memcpy/memset running and no kernel;
- cpu comm: nothing running on the GPU while the CPU is inside a collective's NVTX range (a
  process without NCCL kernels: gloo's all-reduce blocks the CPU, the GPU waits with it);
- host gap: nothing running while the work that ends the gap was not yet handed to the GPU
  (its CUDA API call had not returned): the GPU waited for the CPU to launch;
- idle: nothing running although the next work was already launched (a dependency, a
  synchronisation, launch latency).

compute_busy + exposed_comm + other + cpu_comm + host_gap + idle = step time.

CPU-only reports (no CUDA work in a step) fall back to the NVTX range itself: the step time is
the CPU range's duration, and communication is the union of the NVTX ranges inside the step
whose name says collective (all_reduce, all_gather, reduce_scatter, all_to_all, broadcast,
barrier); NCCL's own NVTX domain is left out there, since its ranges only enqueue work.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import itemgetter

from nsysgen.analyze.read import events
from nsysgen.analyze.read import intervals as iv
from nsysgen.analyze.read import landmarks as lm
from nsysgen.analyze.read import steps_read as read
from nsysgen.analyze.read.events import Wait
from nsysgen.analyze.read.steps_read import (
    COMM_NAME,
    COMPUTE,
    GRAPH,
    NCCL,
    RANK_IN_NAME,
    STEP_NAME,
    GpuOp,
    Operation,
)

__all__ = ["COMM_NAME", "NS_PER_MS", "STEP_NAME", "Collective", "RankTables", "StepRow"]

NS_PER_MS = 1_000_000
_START, _KIND, _READY = itemgetter(1), itemgetter(3), itemgetter(5)  # of a GpuOp
_PIECES = 8  # exposed pieces kept per collective: the wait is at a kernel's head


@dataclass(frozen=True)
class StepRow:
    """One step of one rank. Times in ms; None where the source cannot say (CPU-only)."""

    step: int
    source: str  # "gpu": projected onto the GPU; "cpu": the NVTX range itself
    cpu_ms: float  # the CPU range's own duration
    step_ms: float
    compute_ms: float | None  # sum of compute kernel (and graph launch) durations
    nccl_ms: float | None  # sum of NCCL kernel durations
    compute_busy_ms: float | None  # union of compute kernels
    exposed_comm_ms: float  # NCCL not under compute (GPU); comm ranges (CPU)
    other_ms: float | None
    idle_ms: float | None
    kernels: int
    gpu_ms: float | None = None  # nsys's projected range: first start to last end
    host_gap_ms: float | None = None
    cpu_comm_ms: float = 0.0  # GPU idle inside a collective's CPU range (no NCCL)
    graph_launches: int = 0
    # The step's opening gate on the rank's clock (ns): the end of the previous step's last
    # collective, or the CPU entry of the first recorded step (nsysgen/analyze/read/landmarks.py).
    gate_ns: int | None = None


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
    # Its time not under compute, as offsets from its start [a0, b0, a1, b1, ...] (at most
    # _PIECES pairs, the rest folded into the last): how much of a wait at its head is exposed.
    exposed: list[int] = field(default_factory=list)
    # Its start on the rank's clock (the NCCL kernel's, or the CPU range's): with the report and
    # the duration it names the NCCL call (nccl.NcclCall) whose wait the bandwidth takes out.
    start_ns: int | None = None
    # Ready for it; compute and GPU idle until then (ns from the step's gate; landmarks.py).
    ready_ns: int | None = None
    busy_ns: int = 0
    idle_ns: int = 0


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
    graph_ms_total: float = 0.0  # graph launches (traced as graphs)
    graph_launches_total: int = 0
    graphs_traced: str | None = None  # "graph" | "node" | None: no graph launch seen
    # Why readiness for its NCCL kernels came from launch order, not its stream waits (None:
    # from its stream waits; nsysgen/analyze/read/events.py).
    ready_lost: str | None = None


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


def _exposed_pieces(
    start: int, end: int, compute: list[iv.Interval], starts: list[int]
) -> list[int]:
    pieces = iv.minus((start, end), compute, starts)
    if len(pieces) > _PIECES:  # the tail folded into one piece of the same length
        rest = sum(e - s for s, e in pieces[_PIECES - 1 :])
        pieces = [*pieces[: _PIECES - 1], (pieces[_PIECES - 1][0], pieces[_PIECES - 1][0] + rest)]
    return [x - start for piece in pieces for x in piece]


def _host_and_comm(
    gaps: list[iv.Interval], ops: list[GpuOp], comm: list[iv.Interval]
) -> tuple[int, int]:
    """(cpu comm, host gap) ns of the step's GPU gaps: the part under a collective's CPU range,
    and, of the rest, the part before the work ending the gap was launched."""
    # The work starting at a moment, handed over when its API call returned (of several
    # starting at one moment, the first handed over).
    launched = dict(zip(map(_START, ops), map(_READY, ops), strict=True))
    if len(launched) < len(ops):
        launched = {}
        for op in ops:
            if op[1] not in launched or op[5] < launched[op[1]]:
                launched[op[1]] = op[5]
    host = []
    for g0, g1 in gaps:
        ready = launched.get(g1)
        if ready is not None and ready > g0:
            host.append((g0, min(ready, g1)))
    comm_u = iv.union(comm)
    cpu_comm = iv.overlap(gaps, comm_u)
    return cpu_comm, iv.length(host) - iv.overlap(host, comm_u)


def _gpu_row(
    step: int, cpu: tuple[int, int], after: int | None, ops: list[GpuOp], comm: list[iv.Interval]
) -> tuple[StepRow, list[iv.Interval], list[iv.Interval]]:
    """One step's row (`after`: when the process's previous step's GPU work ended), its
    compute intervals (for the exposed pieces of its collectives) and all its work, merged."""
    # One comprehension per list (a report's steps hold millions of ops: this is its hot loop).
    every = [(start, end) for _, start, end, _, _, _, _ in ops]
    compute = [(start, end) for _, start, end, kind, _, _, _ in ops if kind in (COMPUTE, GRAPH)]
    nccl = [(start, end) for _, start, end, kind, _, _, _ in ops if kind == NCCL]
    graphs = list(map(_KIND, ops)).count(GRAPH)
    kernels = len(compute) - graphs + len(nccl)
    compute_ns, nccl_ns = iv.length(compute), iv.length(nccl)
    compute_u, nccl_u = iv.union(compute), iv.union(nccl)
    all_u = iv.union(every)
    first, finish = all_u[0][0], all_u[-1][1]  # merged: sorted, disjoint
    begin = min(first, max(cpu[0], after if after is not None else cpu[0]))
    # Two merged lists merge again cheaply: far fewer intervals than the kernels themselves.
    kernels_u = iv.union(compute_u + nccl_u) if nccl_u else compute_u
    exposed = iv.length(nccl_u) - iv.overlap(nccl_u, compute_u)
    gaps = iv.gaps(all_u, begin, finish)
    cpu_comm, host = _host_and_comm(gaps, ops, comm)
    span = finish - begin
    row = StepRow(
        step=step,
        source="gpu",
        cpu_ms=(cpu[1] - cpu[0]) / NS_PER_MS,
        step_ms=span / NS_PER_MS,
        compute_ms=compute_ns / NS_PER_MS,
        nccl_ms=nccl_ns / NS_PER_MS,
        compute_busy_ms=iv.length(compute_u) / NS_PER_MS,
        exposed_comm_ms=exposed / NS_PER_MS,
        other_ms=(iv.length(all_u) - iv.length(kernels_u)) / NS_PER_MS,
        idle_ms=(iv.length(gaps) - cpu_comm - host) / NS_PER_MS,
        kernels=kernels,
        gpu_ms=(finish - first) / NS_PER_MS,
        host_gap_ms=host / NS_PER_MS,
        cpu_comm_ms=cpu_comm / NS_PER_MS,
        graph_launches=graphs,
    )
    return row, compute_u, all_u


def _cpu_row(step: int, start: int, end: int, ranges: list[tuple[int, int, str]]) -> StepRow:
    comm_ns = iv.length(iv.union([(s, e) for s, e, _ in ranges]))
    return StepRow(
        step, "cpu", (end - start) / NS_PER_MS, (end - start) / NS_PER_MS,
        None, None, None, comm_ns / NS_PER_MS, None, None, 0,
    )  # fmt: skip


def _reduce_process(
    report: str,
    pid: int,
    spans: list[tuple[int, int, int]],
    ops: list[GpuOp],
    comm: list[tuple[int, int, str]],
    operations: list[Operation],
    waits: list[Wait] | None = None,
) -> RankTables:
    # globalPid >> 24 still holds nsys's hardware id above the 24 bits of the OS pid.
    tables = RankTables(report=report, pid=pid & 0xFFFFFF, rank=None, device=None)
    per_step: dict[int, list[GpuOp]] = defaultdict(list)
    for op, index in zip(ops, _in_steps(spans, [op[0] for op in ops]), strict=True):
        if index is not None:
            per_step[index].append(op)
    comm_per_step: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
    comm = sorted(comm)
    for item, index in zip(comm, _in_steps(spans, [c[0] for c in comm]), strict=True):
        if index is not None:
            comm_per_step[index].append(item)
    uses_nccl = any(op[3] == NCCL for op in ops)
    starts = [operation[0] for operation in operations]
    after: int | None = None
    every: list[list[iv.Interval]] = []
    computes: list[list[iv.Interval]] = []
    for index, (start, end, step) in enumerate(spans):
        step_ops = per_step.get(index, [])
        ranges = sorted(comm_per_step.get(index, []))
        compute_u: list[iv.Interval] = []
        if step_ops:
            # With NCCL, a collective's CPU range only enqueues: the kernels tell its time.
            cpu_comm = [] if uses_nccl else [(s, e) for s, e, _ in ranges]
            row, compute_u, all_u = _gpu_row(step, (start, end), after, step_ops, cpu_comm)
            after = max(after or 0, max(op[2] for op in step_ops))
            computes.append(compute_u)
            every.append(all_u)
        else:
            row = _cpu_row(step, start, end, ranges)
        tables.steps.append(row)
        # The communications the straggler analysis matches across ranks: NCCL kernels when
        # the process runs any (their durations include the wait on the GPU), else the CPU
        # ranges that block on a collective.
        if uses_nccl:
            compute_starts = [s for s, _ in compute_u]
            tables.collectives += [
                Collective(
                    step,
                    i,
                    op[4],
                    op[2] - op[1],
                    read.operation_at(operations, starts, op[1]),
                    _exposed_pieces(op[1], op[2], compute_u, compute_starts),
                    op[1],
                )  # fmt: skip
                for i, op in enumerate(o for o in step_ops if o[3] == NCCL)
            ]
        else:
            tables.collectives += [
                Collective(step, i, name, e - s, start_ns=s)
                for i, (s, e, name) in enumerate(ranges)
            ]
    if tables.collectives:  # landmarks only where there is a collective to place them at
        coverage = lm.process_coverage(computes, every)
        _place(tables, spans, per_step, uses_nccl, waits, *coverage)
    return tables


def _place(
    tables: RankTables,
    spans: list[tuple[int, int, int]],
    per_step: dict[int, list[GpuOp]],
    uses_nccl: bool,
    waits: list[Wait] | None,
    compute: lm.Coverage,
    every: lm.Coverage,
) -> None:
    """Each step's opening gate and each collective's landmark (read/landmarks.py)."""
    by_step: dict[int, list[Collective]] = defaultdict(list)
    for c in tables.collectives:
        by_step[c.step].append(c)
    numbers, placed = [step for _, _, step in spans], []
    gate: tuple[int | None, int] = (None, 0)  # the last closing, and its step
    for index, ((start, _, step), row) in enumerate(zip(spans, tables.steps, strict=True)):
        if numbers.count(step) > 1:  # a number recorded twice: its collectives not told apart
            continue
        # Opened by the last gate (the first step: its entry); after a hole in the ranges, none.
        opening = start if gate[0] is None else gate[0] if gate[1] == step - 1 else None
        tables.steps[index] = dataclasses.replace(row, gate_ns=opening)
        own = by_step.pop(step, [])
        ready = lm.nccl_ready(per_step.get(index, []), waits) if uses_nccl else []
        for c in own:
            at = ready[c.index] if c.index < len(ready) else c.start_ns
            if at is not None and opening is not None:
                mark = lm.landmark(opening, at, compute, every)
                c = dataclasses.replace(c, ready_ns=mark[0], busy_ns=mark[1], idle_ns=mark[2])
            placed.append(c)
        ends = [c.start_ns + c.duration_ns for c in own if c.start_ns is not None]
        gate = (max(ends), step) if ends else (gate[0], step)  # none: the last gate holds
    tables.collectives = placed + [c for rest in by_step.values() for c in rest]  # repeated


def tables_in(db: sqlite3.Connection, tables: set[str], report: str) -> list[RankTables]:
    """An open export (`tables`: the tables it has) -> one table set per process with steps
    or kernels."""
    totals = read.totals(db, tables)
    by_node = any(t.node_launches for t in totals.values())
    stream_waits = events.read_waits(db, tables)
    # Each op's stream only where the stream waits are there to follow.
    ops = read.read_ops(db, tables, graphs=not by_node, streams=stream_waits.lost is None)
    operations = read.operations(db, tables)
    steps, comm = read.ranges(db, tables)
    result = []
    for pid in sorted(set(steps) | set(totals)):
        # A process's steps are its ranges on one thread: keep the thread-free, sorted list.
        waits = None if stream_waits.lost else stream_waits.by_pid.get(pid, [])
        rank_tables = _reduce_process(
            report, pid, steps.get(pid, []), ops.get(pid, []), comm[pid],
            operations.get(pid, []), waits,
        )  # fmt: skip
        rank_tables.ready_lost = stream_waits.lost
        total = totals.get(pid, read.Totals())
        rank_tables.kernel_ms_total = total.kernel_ns / NS_PER_MS
        rank_tables.nccl_ms_total = total.nccl_ns / NS_PER_MS
        rank_tables.kernels_total, rank_tables.nccl_kernels_total = (
            total.kernels,
            total.nccl_kernels,
        )
        rank_tables.graph_ms_total = total.graph_ns / NS_PER_MS
        rank_tables.graph_launches_total = total.graph_launches or total.node_launches
        if total.node_launches:
            rank_tables.graphs_traced = "node"
        elif total.graph_launches:
            rank_tables.graphs_traced = "graph"
        rank_tables.device = total.device
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
