"""NCCL bandwidth from transfer time (issue 39 item 3): a call's wait for the last peer, measured
by matching collectives across ranks, is taken out of its kernel time before bandwidth is
computed, so a late rank no longer hides the fabric's figure or a slow size.

Synthetic proof: bench/synth_export.py's 64-rank job, one rank late on 5 of its 8 recorded
steps, 100 GB/s of bus bandwidth planted and a 1 MiB size twenty times slower. Real data: the
H200 exports in tests/data/gpu/steps17 (two ranks, gloo: no NCCL kernel, so their collectives'
waits are checked, and no bandwidth row is made up) and the one-rank all-reduce export (no peer:
every call keeps its kernel time, and the limits say so).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nsysgen.analyze.judge.bandwidth import nccl_by_size, transfer_ns
from nsysgen.analyze.judge.stragglers import Thresholds, measure
from nsysgen.analyze.judge.summary import build
from nsysgen.analyze.read import cache
from nsysgen.analyze.read.events import NO_TABLES
from nsysgen.analyze.read.landmarks import BY_LAUNCH_ORDER
from nsysgen.analyze.read.nccl import NcclCall
from nsysgen.analyze.read.ranks import assign_ranks
from nsysgen.analyze.read.report import read_export
from tests.analyze.judge.test_waiting import DEVICE, analyse
from tests.bench.synth import by_size, planted_job, synth
from tests.conftest import REPO

ALLREDUCE = REPO / "tests" / "data" / "gpu" / "nccl-allreduce.sqlite"
SLOW_SIZE, LARGE = 1 << 20, 1 << 24
LATE_STEPS = (9, 10, 11, 12, 13)  # of the recorded steps 8..15


def test_a_rank_late_on_most_steps_leaves_the_bandwidth_and_the_slow_size_seen(
    tmp_path: Path,
) -> None:
    planted_job(tmp_path, 64, {37: dict.fromkeys(LATE_STEPS, 15.0)}, SLOW_SIZE)
    summary = analyse([read_export(p) for p in sorted(tmp_path.glob("*.sqlite"))])
    sizes = by_size(json.loads(json.dumps(summary.as_json())))  # as summary.json holds it
    planted = synth().Shape().busbw_GBps
    large, slow = sizes[LARGE], sizes[SLOW_SIZE]
    # The kernels hold the wait: 63 ranks wait 15 ms for rank 37 on 5 of 8 steps, so the median
    # 16 MiB kernel is the wait (15.3 ms, 2.15 GB/s); its transfer is the fabric's figure.
    assert large["median_us"] > 15_000 and large["busbw_GBps"] < 0.05 * planted
    assert large["transfer_busbw_GBps"] == pytest.approx(planted, rel=0.1)
    assert large["transfer_median_us"] < 400 and not large["flag"]
    # The planted slow size is slower than 16 times its size, and flagged for it.
    assert slow["transfer_median_us"] > large["transfer_median_us"]
    assert slow["flag"] == (
        f"1 MiB takes {slow['transfer_median_us']:.1f} us, longer than the larger 16 MiB "
        f"({large['transfer_median_us']:.1f} us)"
    )
    # Every call was matched: none kept its wait, and no limit says otherwise.
    assert all(row["calls_not_corrected"] == 0 for row in sizes.values())
    assert all(row["calls"] == 64 * 8 for row in sizes.values())
    assert not [text for text in summary.limits if "whole kernel time" in text]
    # Said wherever it was used: readiness is inferred from launch order (the synthetic
    # exports hold no CUDA event table).
    assert f"{BY_LAUNCH_ORDER} ({NO_TABLES})" in summary.limits
    # Taking a wait out never makes a call longer.
    for row in sizes.values():
        assert row["transfer_median_us"] <= row["median_us"]
        assert row["transfer_busbw_GBps"] >= row["busbw_GBps"]


def test_unmatched_calls_keep_their_kernel_time_and_are_counted() -> None:
    """One rank recorded of a job of 8 (--world-size 8): no call has a peer to be matched with,
    so the bus bandwidth keeps the calls' waits, and the limits say how many."""
    reduced = read_export(ALLREDUCE)
    ranks = assign_ranks([reduced.tables])
    lateness = measure(ranks)
    summary = build(ranks, lateness, [], reduced.calls, Thresholds(), 8, [reduced.name], True)
    rows = summary.nccl_by_size
    assert rows
    for row in rows:
        assert row["transfer_median_us"] == row["median_us"]
        assert row["transfer_algbw_GBps"] == row["algbw_GBps"]
        assert row["calls_not_corrected"] == row["calls"]
    sized = sum(row["calls"] for row in rows)
    assert (
        f"bandwidth of {sized} of {sized} sized NCCL call(s) from their whole kernel time: not "
        "matched across ranks"
    ) in " ".join(summary.limits)


def call(start: int, duration: int, size: int = 1 << 20) -> NcclCall:
    return NcclCall("job_rank0", "ncclAllReduce", size, "ncclDevKernel", start, duration)


def test_a_wait_is_clipped_to_the_call_and_unknown_calls_keep_their_time() -> None:
    waits = {("job_rank0", 10, 100): 30, ("job_rank0", 20, 100): 500, ("job_rank0", 30, 100): -5}
    assert transfer_ns(call(10, 100), waits) == 70
    assert transfer_ns(call(20, 100), waits) == 0  # all of it waiting: no time is negative
    assert transfer_ns(call(30, 100), waits) == 100
    assert transfer_ns(call(40, 100), waits) is None  # not matched
    (row,) = nccl_by_size([call(10, 100), call(20, 100), call(40, 100)], 2, None, waits)
    assert (row["median_us"], row["transfer_median_us"]) == (0.1, 0.07)
    assert row["calls_not_corrected"] == 1
    # A median transfer of 0 ns has no bandwidth: None, never an infinite figure.
    (empty,) = nccl_by_size([call(20, 100)], 2, None, waits)
    assert empty["transfer_busbw_GBps"] is None and empty["busbw_GBps"] is not None


def test_steps17_waits_are_within_each_collective() -> None:
    """The real two-rank exports (gloo, rank 1 late): every matched collective's wait lies
    within its duration, rank 0's is rank 1's delay, and with no NCCL kernel no bandwidth row
    nor correction limit is made up."""
    reduced = [read_export(p) for p in sorted(DEVICE.glob("s17-slow_*.sqlite"))]
    ranks = assign_ranks([r.tables for r in reduced])
    lateness = measure(ranks)
    collectives = {
        (t.report, c.start_ns, c.duration_ns): (t.rank, c.step)
        for t in ranks
        for c in t.collectives
    }
    assert lateness.call_wait_ns and set(lateness.call_wait_ns) <= set(collectives)
    for key, wait in lateness.call_wait_ns.items():
        assert 0 <= wait <= key[2]
    waited = {collectives[k]: w for k, w in lateness.call_wait_ns.items()}
    for step in (9, 12, 13, 14):  # rank 1 late: rank 0 waited, rank 1 did not
        assert waited[(0, step)] > 25_000_000 and waited[(1, step)] == 0
    summary = analyse(reduced)
    assert summary.nccl_by_size == []
    assert not [text for text in summary.limits if "whole kernel time" in text]


def test_the_map_steps_cached_result_keeps_each_collectives_start() -> None:
    reduced = read_export(sorted(DEVICE.glob("s17-slow_*.sqlite"))[0])
    again = cache._decode(json.loads(json.dumps(cache._encode(reduced))))
    assert again == reduced
    assert all(c.start_ns is not None for t in again.tables for c in t.collectives)
