"""What the per-step analysis reads of one SQLite export (nsysgen/analyze/read/steps.py computes
from it): the GPU work of each process with the CUDA API call that launched it, the step and
collective NVTX ranges, per-process kernel totals, and advanced NCCL tracing's operations.

CUDA graphs: nsys's default graph tracing (--cuda-graph-trace=graph) records one row per graph
launch in CUPTI_ACTIVITY_KIND_GRAPH_TRACE and none of the kernels inside; those launches are GPU
work here (compute), joined to their cudaGraphLaunch call like a kernel. With
--cuda-graph-trace=node the kernels inside graphs are in the kernel table (their graphNodeId
set), and the graph rows, if any, are left out so that no work counts twice.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
import sqlite3
from collections import defaultdict
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter

# The names the analysis recognises: a training step's NVTX range, a collective's, and the rank
# in a report's file name.
STEP_NAME = re.compile(r"^\s*(?:step|iteration|iter|train[_ ]step)[ _:#=]*(\d+)\s*$", re.I)
COMM_NAME = re.compile(
    r"(?i)(all[_ -]?reduce|all[_ -]?gather|reduce[_ -]?scatter|all[_ -]?to[_ -]?all|broadcast|"
    r"barrier)"
)
RANK_IN_NAME = re.compile(r"(?:^|[_.-])rank(\d+)(?:[_.-]|$)")
# One piece of GPU work, as a plain tuple (a report holds millions; tuples cost a third of a
# dataclass to make): (start of the CUDA API call that launched it, start, end, kind, name,
# end of that API call, its stream).
GpuOp = tuple[int, int, int, int, str, int, int]
COMPUTE, NCCL, COPY, GRAPH = 0, 1, 2, 3

_NCCL_IDS = "(SELECT id, value FROM StringIds WHERE value GLOB 'nccl*')"
KERNELS = "CUPTI_ACTIVITY_KIND_KERNEL"
GRAPHS = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"


@dataclass(frozen=True)
class Totals:
    """One process's GPU work over the whole report, in steps or not."""

    kernel_ns: int = 0
    kernels: int = 0
    nccl_ns: int = 0
    nccl_kernels: int = 0
    graph_ns: int = 0  # graph launches' time (graph tracing; 0 when traced by node)
    graph_launches: int = 0
    node_launches: int = 0  # graph launches whose kernels were traced (by node)
    device: int | None = None  # the lowest GPU its kernels ran on


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def totals(db: sqlite3.Connection, tables: set[str]) -> dict[int, Totals]:
    """pid -> its totals and GPU (in SQL: one pass over the kernel table, no row reaches
    Python)."""
    found: dict[int, Totals] = {}
    if {KERNELS, "StringIds"} <= tables:
        node = (
            "COUNT(DISTINCT CASE WHEN k.graphNodeId IS NOT NULL THEN k.correlationId END)"
            if "graphNodeId" in _columns(db, KERNELS)
            else "0"
        )
        for pid, ns, count, nccl_ns, nccl_count, nodes, device in db.execute(
            "SELECT k.globalPid >> 24, SUM(k.end - k.start), COUNT(*), "
            "SUM(CASE WHEN n.id IS NULL THEN 0 ELSE k.end - k.start END), COUNT(n.id), "
            f"{node}, MIN(k.deviceId) FROM {KERNELS} k LEFT JOIN "
            "(SELECT id FROM StringIds WHERE value GLOB 'nccl*') n ON k.shortName = n.id "
            "GROUP BY 1"
        ):
            found[pid] = Totals(
                int(ns or 0), int(count), int(nccl_ns or 0), int(nccl_count or 0),
                node_launches=int(nodes or 0), device=device,
            )  # fmt: skip
    if GRAPHS in tables and not any(t.node_launches for t in found.values()):
        for pid, ns, count in db.execute(
            f"SELECT globalPid >> 24, SUM(end - start), COUNT(*) FROM {GRAPHS} GROUP BY 1"
        ):
            old = found.get(pid, Totals())
            found[pid] = dataclasses.replace(old, graph_ns=int(ns or 0), graph_launches=int(count))
    return found


def _stream(db: sqlite3.Connection, table: str) -> str:
    """The table's stream column, or 0 where it has none (hand-made exports)."""
    return "streamId" if "streamId" in _columns(db, table) else "0"


def read_ops(
    db: sqlite3.Connection, tables: set[str], graphs: bool, streams: bool = True
) -> dict[int, list[GpuOp]]:
    """GPU work per process, each with the CUDA API call that launched it, in launch order
    (`graphs`: graph launches count as work, their kernels not traced; `streams`: read each
    one's stream, else 0: only stream waits need them, and the column costs a sixth of this
    function's time). The rows come out of SQLite as they are kept (tuples made in C, sorted
    here): a report holds millions."""
    ops: dict[int, list[GpuOp]] = {}
    if not {"CUPTI_ACTIVITY_KIND_RUNTIME", KERNELS, "StringIds"} <= tables:
        return ops
    # What a row is, by its kernel's name id, or a negative code for the other kinds of work:
    # looked up here rather than joined in SQL (a join to the names, inside the union, made
    # SQLite copy every row once more: a third of this function's time).
    what: dict[int, tuple[int, str]] = {
        name_id: (NCCL, name)
        for name_id, name in db.execute("SELECT id, value FROM StringIds WHERE value GLOB 'nccl*'")
    }

    def stream(table: str, alias: str = "") -> str:
        return f", {_stream(db, table)}{alias}" if streams else ""

    work = [
        "SELECT globalPid AS pid, correlationId AS id, start, end, shortName AS what"
        f"{stream(KERNELS, ' AS stream')} FROM {KERNELS}"
    ]
    other = [(t, COPY, t) for t in ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")]
    if graphs:
        other.append((GRAPHS, GRAPH, "graph"))
    for code, (table, kind, name) in enumerate(other, start=1):
        if table in tables:
            what[-code] = (kind, name)
            work.append(
                f"SELECT globalPid, correlationId, start, end, {-code}{stream(table)} FROM {table}"
            )
    # Kernels, copies, memsets and graph launches first, then one join to the API calls that
    # launched them (one lookup structure over the API table, not one per kind of work).
    query = (
        f"SELECT w.pid >> 24, r.start, w.start, w.end, w.what, r.end"
        f"{', w.stream' if streams else ''} FROM "
        f"({' UNION ALL '.join(work)}) w JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
        "ON r.correlationId = w.id AND (r.globalTid >> 24) = (w.pid >> 24)"
    )
    # Sorted here, not in SQL: launches come out almost in order, which Python's sort takes
    # in one pass.
    rows = db.execute(query).fetchall()
    rows.sort(key=itemgetter(0, 1))
    compute = (COMPUTE, "")
    for pid, group in groupby(rows, key=itemgetter(0)):
        if streams:
            ops[pid] = [
                (api_start, start, end, *what.get(name_id, compute), api_end, on or 0)
                for _, api_start, start, end, name_id, api_end, on in group
            ]
        else:
            ops[pid] = [
                (api_start, start, end, *what.get(name_id, compute), api_end, 0)
                for _, api_start, start, end, name_id, api_end in group
            ]
    return ops


def ranges(
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
Operation = tuple[int, int, int]  # (first start, last end over its channels, operationId)


def operations(db: sqlite3.Connection, tables: set[str]) -> dict[int, list[Operation]]:
    """pid -> the NCCL operations of advanced tracing, one per operationId, by start."""
    for table in _OPERATION_TABLES:
        if table not in tables:
            continue
        if not _columns(db, table) >= _OPERATION_COLUMNS:
            continue
        found: dict[int, list[Operation]] = defaultdict(list)
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


def operation_at(operations: list[Operation], starts: list[int], moment: int) -> int | None:
    """The operationId of the operation running at `moment`: of those started by then and not
    yet ended, the latest started (operations of other communicators overlap it)."""
    index = bisect.bisect_right(starts, moment) - 1
    for candidate in range(index, max(-1, index - _LOOK_BACK), -1):
        if operations[candidate][1] >= moment:
            return operations[candidate][2]
    return None
