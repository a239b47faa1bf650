"""CUDA graphs counted (issue 39 item 4): graph launches are GPU work in every figure, and kernels
traced inside graphs (--cuda-graph-trace=node) are read instead, never both.

Real data: tests/data/gpu/cuda-graphs/ (one H100, torch.compile(mode="reduce-overhead"), steps
20..24, nsys 2025.3.1's default graph tracing; its README.md says what is in it): two graph
launches per step, 0.98 ms of kernels and 0.98 ms of graph launches in the report. Before, the
analysis counted the graphs' time as idle."""

from __future__ import annotations

import lzma
import sqlite3
from pathlib import Path

import pytest

from nsysgen.analyze.judge.summary import cuda_graphs
from nsysgen.analyze.read.report import read_export
from tests.conftest import REPO

GRAPHS = REPO / "tests/data/gpu/cuda-graphs/graph_compile_job3401_rank0_node0_gpunode1.sqlite.xz"


@pytest.fixture
def graph_export(tmp_path: Path) -> Path:
    target = tmp_path / GRAPHS.name.removesuffix(".xz")
    target.write_bytes(lzma.decompress(GRAPHS.read_bytes()))
    return target


def test_graph_launches_count_as_compute_on_the_real_export(graph_export: Path) -> None:
    (tables,) = read_export(graph_export).tables
    assert (tables.graphs_traced, tables.graph_launches_total) == ("graph", 10)
    assert tables.graph_ms_total == pytest.approx(0.98, abs=0.01)
    assert tables.kernel_ms_total == pytest.approx(0.98, abs=0.01)  # kernels alone, as nsys
    assert [row.step for row in tables.steps] == [20, 21, 22, 23, 24]
    for row in tables.steps:
        assert (row.graph_launches, row.kernels) == (2, 17)
        assert row.compute_ms is not None and row.compute_busy_ms is not None
        # The graphs' 0.2 ms a step is compute now: 0.39 ms, not the 0.196 ms of kernels.
        assert row.compute_busy_ms == pytest.approx(0.39, abs=0.01)
        assert row.idle_ms is not None and row.idle_ms < 0.05
        # The rest of the step is the eager optimizer's launches: the GPU waiting for the CPU.
        parts = [row.compute_busy_ms, row.other_ms, row.host_gap_ms, row.idle_ms]
        assert sum(p or 0.0 for p in parts) == pytest.approx(row.step_ms, abs=1e-6)
    assert cuda_graphs([tables]) == {
        "launches": 10,
        "traced": "graph",
        "note": "graph launches counted as compute, each as one piece of work: the kernels "
        "inside were not traced (record with --cuda-graph-trace=node to see inside)",
    }


def node_traced(path: Path) -> Path:
    """One step: a graph launch whose two kernels were traced by node (graphNodeId set), and
    the graph's own row as well: the kernels count, the graph row does not."""
    pid, tid = 55, (55 << 24) | 1
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE StringIds (id INTEGER, value TEXT);"
        "CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT,"
        " globalTid INTEGER, textId INTEGER, domainId INTEGER, binaryData TEXT);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER,"
        " globalTid INTEGER, correlationId INTEGER, nameId INTEGER);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,"
        " streamId INTEGER, correlationId INTEGER, globalPid INTEGER, shortName INTEGER,"
        " graphNodeId INTEGER);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER, end INTEGER,"
        " deviceId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,"
        " graphId INTEGER, graphExecId INTEGER);"
        "INSERT INTO StringIds VALUES (1, 'gemm');"
    )
    db.execute(
        "INSERT INTO NVTX_EVENTS VALUES (0, 10000000, 59, 'step 1', ?, NULL, 0, NULL)", (tid,)
    )
    db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (100, 200, ?, 9, 0)", (tid,))
    for start, end, node in ((1_000_000, 2_000_000, 1), (2_000_000, 4_000_000, 2)):
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 7, 9, ?, 1, ?)",
            (start, end, pid << 24, node),
        )
    db.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES (1000000, 4000000, 0, 7, 9, ?, 1, 1)",
        (pid << 24,),
    )
    db.commit()
    db.close()
    return path


def test_kernels_traced_inside_graphs_are_read_and_not_counted_twice(tmp_path: Path) -> None:
    (tables,) = read_export(node_traced(tmp_path / "node_rank0.sqlite")).tables
    assert (tables.graphs_traced, tables.graph_launches_total, tables.graph_ms_total) == (
        "node", 1, 0.0
    )  # fmt: skip
    (row,) = tables.steps
    assert (row.kernels, row.graph_launches, row.compute_ms, row.compute_busy_ms) == (
        2,
        0,
        3.0,
        3.0,
    )
    summary = cuda_graphs([tables])
    assert summary is not None and summary["traced"] == "node"
