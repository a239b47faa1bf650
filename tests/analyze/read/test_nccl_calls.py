"""NCCL calls of one export: which NVTX ranges around a launch name its collective and size.

Synthetic exports (tests/analyze/read/test_steps.py's `make_db`: the tables and columns nsys
exports) pin the rule; a brute-force reading of the same rows pins the one-sweep implementation.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from nsysgen.analyze.read.report import read_export
from tests.analyze.read.test_steps import MS, make_db


def test_a_step_number_is_not_a_message_size(tmp_path: Path) -> None:
    """ "step 17" around an all-reduce once made its size 17 bytes, and the by-size figure a
    panel per step (2,800 panels took matplotlib 16 minutes). Only a range named for a
    collective carries a size in its name."""
    db = make_db(
        tmp_path / "r_rank0.sqlite",
        steps=[(17, 0, 10 * MS), (18, 10 * MS, 20 * MS)],
        kernels=[
            (1 * MS, 2 * MS, 3 * MS, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
            (12 * MS, 13 * MS, 14 * MS, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
        ],
        ranges=[("layer 12", 11 * MS, 19 * MS), ("all_reduce 4096", 11 * MS, 13 * MS)],
    )
    first, second = read_export(db).calls
    assert first.size_bytes is None
    assert second.size_bytes == 4096


def _brute_force(db: Path) -> list[tuple[int, int | None]]:
    """(kernel start, size) of every NCCL kernel: each launch against every range."""
    with sqlite3.connect(db) as con:
        ranges = con.execute("SELECT start, end, text FROM NVTX_EVENTS").fetchall()
        launches = con.execute(
            "SELECT r.start, k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN "
            "CUPTI_ACTIVITY_KIND_RUNTIME r USING (correlationId)"
        ).fetchall()
    found = []
    for api, start in launches:
        around = sorted((s, e, t) for s, e, t in ranges if s <= api <= e)
        sized = [t for _, _, t in reversed(around) if t.startswith("all_reduce")]
        found.append((start, int(sized[0].split()[-1]) if sized else None))
    return sorted(found)


@pytest.mark.parametrize("seed", range(5))
def test_the_sweep_finds_what_checking_every_range_finds(tmp_path: Path, seed: int) -> None:
    """Nested and overlapping sized ranges, launches inside, between and outside them."""
    rng = random.Random(seed)
    ranges = []
    for _ in range(60):
        start = rng.randrange(0, 1000) * MS // 10
        ranges.append((f"all_reduce {rng.randrange(1, 1 << 20)}", start,
                       start + rng.randrange(0, 50) * MS // 10))  # fmt: skip
    kernels = []
    for i in range(200):
        api = rng.randrange(0, 1100) * MS // 10
        kernels.append((api, 200 * MS + i * MS, 200 * MS + i * MS + 1000, "ncclDevKernel_X"))
    db = make_db(tmp_path / f"r{seed}_rank0.sqlite", steps=[], kernels=kernels, ranges=ranges)
    calls = read_export(db).calls
    assert sorted((c.start_ns, c.size_bytes) for c in calls) == _brute_force(db)
