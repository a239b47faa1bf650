"""What the per-step analysis reads of an export (nsysgen/analyze/read/steps_read.py), on SQLite
databases built here with nsys's table and column names: the names it recognises, the step and
collective NVTX ranges (NCCL's own domain left out), per-process totals with CUDA graphs traced
either way, the GPU work joined to its launches, and advanced NCCL tracing's operations."""

from __future__ import annotations

import sqlite3

import pytest

from nsysgen.analyze.read import steps_read as read
from nsysgen.analyze.read.steps_read import COMPUTE, COPY, GRAPH, NCCL, Totals

PID, OTHER = 11, 12


def tid(pid: int) -> int:
    return (pid << 24) | 3


def database(node_traced: bool = False) -> sqlite3.Connection:
    """Pid 11: two compute kernels, one NCCL kernel and a memcpy; pid 12: one kernel. One graph
    launch of pid 11 in the graph table; `node_traced`: the second kernel ran inside a graph."""
    db = sqlite3.connect(":memory:")
    db.executescript(
        "CREATE TABLE StringIds (id INTEGER, value TEXT);"
        "INSERT INTO StringIds VALUES (1, 'gemm'), (2, 'ncclDevKernel_AllReduce'), (3, 'NCCL'),"
        " (4, 'step 7');"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, globalTid INTEGER,"
        " correlationId INTEGER);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,"
        " correlationId INTEGER, globalPid INTEGER, shortName INTEGER, graphNodeId INTEGER);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER,"
        " correlationId INTEGER, globalPid INTEGER);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER, end INTEGER,"
        " correlationId INTEGER, globalPid INTEGER);"
    )
    node = 9 if node_traced else None
    kernels = [  # (start, end, device, correlation, pid, name, graph node)
        (100, 150, 2, 1, PID, 1, None),
        (300, 310, 2, 3, PID, 1, node),
        (200, 260, 2, 2, PID, 2, None),
        (500, 505, 5, 7, OTHER, 1, None),
    ]
    db.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(s, e, d, c, p << 24, n, g) for s, e, d, c, p, n, g in kernels],
    )
    db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (400, 420, 4, ?)", (PID << 24,))
    db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES (290, 330, 5, ?)", (PID << 24,))
    # Launches: correlation id -> API call (start, end), on the process's thread; correlation
    # ids repeat across processes, so the join must keep to the process.
    launches = [(10, 20, PID, 1), (30, 40, PID, 2), (50, 60, PID, 3), (70, 80, PID, 4),
                (85, 95, PID, 5), (5, 9, OTHER, 7), (1, 2, OTHER, 1)]  # fmt: skip
    db.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?)",
        [(s, e, tid(p), c) for s, e, p, c in launches],
    )
    return db


def tables(db: sqlite3.Connection) -> set[str]:
    return {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


@pytest.mark.parametrize(
    ("name", "step"),
    [("step 12", 12), ("Iteration_3", 3), ("train_step: 7", 7), ("iter#4", 4),
     (" step 5 ", 5), ("train step=9", 9), ("step", None), ("stepper 3", None),
     ("step 1 2", None), ("warmup step 3", None)],
)  # fmt: skip
def test_step_range_names(name: str, step: int | None) -> None:
    match = read.STEP_NAME.match(name)
    assert (int(match.group(1)) if match else None) == step


def test_collective_and_rank_names() -> None:
    for name in ("all_reduce 4096", "AllGather", "reduce-scatter", "barrier", "alltoall",
                 "broadcast_coalesced"):  # fmt: skip
        assert read.COMM_NAME.search(name), name
    assert not read.COMM_NAME.search("reduce") and not read.COMM_NAME.search("optimizer")
    found = [read.RANK_IN_NAME.search(n) for n in ("job_rank12_node0", "x.rank3", "crank3",
                                                   "rank3x", "rank7")]  # fmt: skip
    assert [int(m.group(1)) if m else None for m in found] == [12, 3, None, None, 7]


def test_step_and_collective_ranges_leave_the_nccl_domain_out() -> None:
    db = sqlite3.connect(":memory:")
    db.executescript(
        "CREATE TABLE StringIds (id INTEGER, value TEXT);"
        "INSERT INTO StringIds VALUES (1, 'NCCL'), (2, 'step 8');"
        "CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT,"
        " globalTid INTEGER, textId INTEGER, domainId INTEGER);"
    )
    events = [
        (0, 0, 75, None, tid(PID), 1, 5),  # domain 5 is named NCCL
        (200, 300, 59, None, tid(PID), 2, 0),  # text from StringIds
        (100, 190, 60, "step 7", tid(PID), None, 0),
        (110, 120, 59, "ncclAllReduce", tid(PID), None, 5),  # NCCL's domain: enqueue only
        (130, 150, 59, "all_reduce 4096", tid(PID), None, 0),
        (160, None, 59, "barrier", tid(PID), None, 0),  # never closed
        (10, 20, 59, "step 1", tid(OTHER), None, 0),
    ]
    db.executemany("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, ?, ?, ?)", events)
    steps, comm = read.ranges(db, tables(db))
    assert dict(steps) == {PID: [(100, 190, 7), (200, 300, 8)], OTHER: [(10, 20, 1)]}
    assert dict(comm) == {PID: [(130, 150, "all_reduce 4096")]}
    assert read.ranges(db, {"StringIds"}) == ({}, {})


def test_totals_count_graph_launches_unless_their_kernels_were_traced() -> None:
    db = database()
    assert read.totals(db, tables(db)) == {
        PID: Totals(kernel_ns=120, kernels=3, nccl_ns=60, nccl_kernels=1, graph_ns=40,
                    graph_launches=1, device=2),
        OTHER: Totals(kernel_ns=5, kernels=1, device=5),
    }  # fmt: skip
    node = database(node_traced=True)
    assert read.totals(node, tables(node))[PID] == Totals(120, 3, 60, 1, node_launches=1, device=2)


def test_gpu_work_is_joined_to_its_launch_in_launch_order() -> None:
    db = database()
    ops = read.read_ops(db, tables(db), graphs=True)
    # These hand-made tables have no streamId: every op on stream 0.
    assert ops[PID] == [
        (10, 100, 150, COMPUTE, "", 20, 0),
        (30, 200, 260, NCCL, "ncclDevKernel_AllReduce", 40, 0),
        (50, 300, 310, COMPUTE, "", 60, 0),
        (70, 400, 420, COPY, "CUPTI_ACTIVITY_KIND_MEMCPY", 80, 0),
        (85, 290, 330, GRAPH, "graph", 95, 0),
    ]
    assert ops[OTHER] == [(5, 500, 505, COMPUTE, "", 9, 0)]  # not pid 11's launch of id 1
    without = read.read_ops(db, tables(db), graphs=False)[PID]
    assert [op[3] for op in without] == [COMPUTE, NCCL, COMPUTE, COPY]
    assert read.read_ops(db, {"StringIds"}, graphs=True) == {}


def test_operations_one_per_id_sorted_and_the_collective_table_first() -> None:
    db = sqlite3.connect(":memory:")
    db.executescript(
        "CREATE TABLE NCCL_GPU_OPERATIONS (start INTEGER, end INTEGER, globalPid INTEGER);"
    )
    assert read.operations(db, tables(db)) == {}  # no operationId: not the documented table
    db.executescript(
        "CREATE TABLE NCCL_GPU_OPERATIONS_COLLECTIVE (start INTEGER, end INTEGER,"
        " operationId INTEGER, globalPid INTEGER);"
    )
    rows = [(50, 70, 2, PID), (10, 30, 1, PID), (12, 40, 1, PID), (5, 6, None, PID),
            (1, 2, 9, OTHER)]  # fmt: skip
    db.executemany(
        "INSERT INTO NCCL_GPU_OPERATIONS_COLLECTIVE VALUES (?, ?, ?, ?)",
        [(s, e, o, p << 24) for s, e, o, p in rows],
    )
    assert read.operations(db, tables(db)) == {PID: [(10, 40, 1), (50, 70, 2)], OTHER: [(1, 2, 9)]}
