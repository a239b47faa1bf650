"""Collectives matched across ranks (nsysgen/analyze/judge/matching.py): the median of the other
ranks from one sort, and the ranks of a step grouped by the collectives they ran (a pipeline's
stages apart; a rank short of a kernel stays with the others)."""

from __future__ import annotations

import statistics

from nsysgen.analyze.judge.matching import Comm, stages, with_median_of_others
from nsysgen.analyze.read.steps import Collective


def test_median_of_the_others_from_one_sort() -> None:
    """The step-time evidence compares each rank with the median of the others; computed from
    one sort it must equal the median taken the slow way, ties and all."""
    for n in range(2, 10):
        for seed in range(50):
            times = {r: float((r * 7 + seed * 13) % 5) for r in range(n)}
            for rank, value, median in with_median_of_others(times):
                assert value == times[rank]
                others = [v for r, v in times.items() if r != rank]
                assert median == statistics.median(others)


def comms(*names: str) -> list[Comm]:
    return [(None, 1, [], 0, Collective(1, i, name, 1)) for i, name in enumerate(names)]


def test_ranks_are_grouped_by_the_collectives_they_ran() -> None:
    send, reduce = "ncclDevKernel_SendRecv", "ncclDevKernel_AllReduce"
    two_stages = {0: comms(send, reduce), 1: comms(send, reduce), 2: comms(reduce, send),
                  3: comms(reduce, send)}  # fmt: skip
    assert [sorted(g) for g in stages(two_stages) or []] == [[0, 1], [2, 3]]
    # One rank short of a kernel: one group, matched by order as before.
    short = {0: comms(reduce, reduce), 1: comms(reduce, reduce), 2: comms(reduce)}
    assert [sorted(g) for g in stages(short) or []] == [[0, 1, 2]]


def test_stages_that_ran_the_same_names_are_not_guessed() -> None:
    """Every rank sends, receives and all-reduces under the same kernel names: the stages
    cannot be told apart by them (their all-reduces would be matched across stages). With the
    job's layout given, contiguous blocks of ranks are the stages."""
    p2p, reduce = "ncclDevKernel_SendRecv", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    same = {rank: comms(p2p, p2p, reduce) for rank in range(4)}
    assert stages(same) is None
    assert [sorted(g) for g in stages(same, (2, 4)) or []] == [[0, 1], [2, 3]]
    no_p2p = {rank: comms(reduce, reduce) for rank in range(4)}  # data parallel only
    assert [sorted(g) for g in stages(no_p2p) or []] == [[0, 1, 2, 3]]
    older = {rank: comms("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t") for rank in range(2)}
    assert stages(older) is None
    assert stages({r: comms("ncclDevKernel_Recv") for r in range(2)}) is None
