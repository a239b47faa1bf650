"""Advanced NCCL tracing (nsys 2025.6.1+) in `nsysgen analyze`, and exports without row order.

No nsys 2025.6+ runs on these machines: the exports here are built by the test, with the
composite table NVIDIA's user guide documents (NCCL_GPU_OPERATIONS: one row per channel of a
collective, with its operationId, seqNumber, commHash and commRank). The same analysis on real
2025.3.1 exports (tests/data/gpu) must not change when their rows come in another order, which
nsys 2025.6 no longer guarantees.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from nsysgen.analyze.judge.stragglers import measure
from nsysgen.analyze.read.ranks import assign_ranks
from nsysgen.analyze.read.report import read_export
from nsysgen.analyze.read.steps import Collective
from tests.analyze.read.test_steps import MS, PID, make_db
from tests.conftest import REPO, RunCli

X, Y = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "ncclDevKernel_AllGather_RING_LL"
STEPS = 5


def _rank_export(folder: Path, rank: int, operations: bool) -> Path:
    """One rank of a two-rank job: per step two collectives on two communicators, issued in
    opposite orders on the two ranks. At X rank 0 arrives last (1 ms against rank 1's 9 ms of
    waiting); at Y rank 1 does (1 ms against 5 ms): rank 0 is 8 ms late per step, rank 1 4 ms."""
    kernels, rows = [], []
    for step in range(STEPS):
        base = step * 20 * MS
        order = [(X, 2, 3), (Y, 4, 9)] if rank == 0 else [(Y, 2, 3), (X, 4, 13)]
        for api, (name, start, end) in enumerate(order, 1):
            kernels.append((base + api * MS, base + start * MS, base + end * MS, name))
            op = (1000 if name == X else 2000) + step
            comm = 0xA if name == X else 0xB
            for channel in range(2):  # two channels: one row each, both inside the kernel
                rows.append((base + start * MS + channel, base + end * MS - channel, op, step,
                             comm, rank, PID << 24))  # fmt: skip
    steps = [(step, step * 20 * MS, step * 20 * MS + 10 * MS) for step in range(STEPS)]
    path = make_db(folder / f"ops_job9_rank{rank}.sqlite", steps=steps, kernels=kernels)
    if operations:
        with sqlite3.connect(path) as db:
            db.execute(
                "CREATE TABLE NCCL_GPU_OPERATIONS (start INTEGER, end INTEGER, operationId "
                "INTEGER, seqNumber INTEGER, commHash INTEGER, commRank INTEGER, globalPid INTEGER)"
            )
            random.Random(rank).shuffle(rows)  # no row order, as nsys 2025.6 exports
            db.executemany("INSERT INTO NCCL_GPU_OPERATIONS VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    return path


def _summary(tmp_path: Path, run_cli: RunCli, operations: bool) -> dict[str, Any]:
    folder = tmp_path / ("with" if operations else "without")
    folder.mkdir()
    for rank in (0, 1):
        _rank_export(folder, rank, operations)
    result = run_cli("analyze", str(folder), "--serial")
    assert result.code == 0, result.err
    summary = json.loads((folder / "analysis" / "summary.json").read_text())
    assert isinstance(summary, dict)
    return summary


def _sums(tmp_path: Path, operations: bool) -> dict[int, float]:
    """rank -> its summed lateness over the judged steps 1..3 (how long the other rank's
    kernels waited for it, collective by collective: what the matching decides)."""
    folder = tmp_path / ("sums-with" if operations else "sums-without")
    folder.mkdir()
    reduced = [read_export(_rank_export(folder, rank, operations)) for rank in (0, 1)]
    lateness = measure(assign_ranks([r.tables for r in reduced]))
    return {
        rank: sum(lateness.summed_late_ms[(rank, step)] for step in (1, 2, 3)) / 3
        for rank in (0, 1)
    }


@pytest.mark.slow
def test_collectives_are_matched_by_operation_id_where_the_report_has_it(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """With NCCL_GPU_OPERATIONS, each collective is compared with itself on the other rank:
    the others waited 8 ms a step for rank 0 (at X) and 4 ms for rank 1 (at Y). Without it the
    analysis falls back to the order inside the step, pairs X with Y, and finds 4 ms for rank 0
    and nothing for rank 1: the difference the operationId makes, and that the fallback still
    runs (both through `nsysgen analyze`)."""
    matched = _summary(tmp_path, run_cli, operations=True)
    assert matched["collectives_matched_by"] == ["operationId"]
    assert matched["collectives_matched"] == 2 * STEPS
    assert _sums(tmp_path, operations=True) == {0: 8.0, 1: 4.0}
    by_order = _summary(tmp_path, run_cli, operations=False)
    assert by_order["collectives_matched_by"] == ["order in step"]
    assert _sums(tmp_path, operations=False) == {0: 4.0, 1: 0.0}


def test_operation_ids_reach_the_collectives(tmp_path: Path) -> None:
    reduced = read_export(_rank_export(tmp_path, 1, operations=True))
    (tables,) = reduced.tables
    assert [(c.step, c.index, c.operation) for c in tables.collectives[:2]] == [
        (0, 0, 2000),
        (0, 1, 1000),
    ]


def test_an_operations_table_without_the_documented_columns_is_not_read(tmp_path: Path) -> None:
    path = _rank_export(tmp_path, 0, operations=False)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE NCCL_GPU_OPERATIONS (start INTEGER, end INTEGER, id INTEGER)")
        db.execute("INSERT INTO NCCL_GPU_OPERATIONS VALUES (0, 1, 7)")
    (tables,) = read_export(path).tables
    assert {c.operation for c in tables.collectives} == {None}


def _shuffled_copy(source: Path, target: Path, seed: int) -> Path:
    """`source` with the rows of every table in another order (and no rowid order to fall back
    on: each table is rebuilt from its rows in a random order)."""
    shutil.copy(source, target)
    rng = random.Random(seed)
    with sqlite3.connect(target) as db:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for name in names:
            rows = db.execute(f'SELECT * FROM "{name}"').fetchall()  # noqa: S608
            rng.shuffle(rows)
            db.execute(f'DELETE FROM "{name}"')  # noqa: S608
            if rows:
                marks = ",".join("?" * len(rows[0]))
                db.executemany(f'INSERT INTO "{name}" VALUES ({marks})', rows)  # noqa: S608
    return target


EXPORTS = sorted((REPO / "tests" / "data" / "gpu" / "steps17").glob("*.sqlite")) + [
    REPO / "tests" / "data" / "gpu" / "nccl-allreduce-blobs.sqlite",
    REPO / "tests" / "data" / "gpu" / "nccl-allreduce.sqlite",
]


@pytest.mark.slow
@pytest.mark.parametrize("export", EXPORTS, ids=lambda p: p.name)
def test_real_exports_read_the_same_in_any_row_order(tmp_path: Path, export: Path) -> None:
    """Real nsys 2025.3.1 exports (two ranks with NCCL; NCCL payloads): every result of the
    reading is the same when every table's rows come in a random order."""
    original = read_export(export)
    for seed in (1, 2):
        copy = _shuffled_copy(export, tmp_path / f"{seed}.sqlite", seed)
        shuffled = read_export(copy, export.stem)  # named as the original
        assert shuffled == original


def test_an_operation_inside_another_and_one_id_twice() -> None:
    """Operations of two communicators overlap: a moment inside the long one and past the short
    one belongs to the long one; inside both, to the one started last. A rank with one id twice
    in a step is matched by order instead (no silent merge of two collectives)."""
    from nsysgen.analyze.judge.matching import matched as _matched
    from nsysgen.analyze.read.steps_read import operation_at as _operation_at

    operations = [(0, 100, 1), (10, 20, 2)]
    starts = [0, 10]
    assert [_operation_at(operations, starts, t) for t in (5, 15, 50, 150)] == [1, 2, 1, None]
    c = Collective(0, 0, "nccl", 1)  # the collective itself rides along, unread here
    groups, how, differ = _matched(
        {
            0: [(7, 100, [], None, c), (7, 200, [], None, c)],
            1: [(7, 150, [], None, c), (7, 90, [], None, c)],
        }
    )
    assert (how, differ) == ("order in step", False) and len(groups) == 2
    groups, how, _ = _matched(
        {0: [(7, 100, [], 5, c), (8, 200, [], 9, c)], 1: [(8, 150, [], 8, c), (7, 90, [], 4, c)]}
    )
    assert how == "operationId"
    assert sorted([m[:4] for m in g] for g in groups) == [
        [(100, 0, [], 5), (90, 1, [], 4)], [(200, 0, [], 9), (150, 1, [], 8)]
    ]  # fmt: skip
