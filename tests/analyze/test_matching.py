"""Collectives matched across ranks (nsysgen/analyze/matching.py): the median of the other
ranks from one sort, and the ranks of a step grouped by the collectives they ran (a pipeline's
stages apart; a rank short of a kernel stays with the others)."""

from __future__ import annotations

import statistics

from nsysgen.analyze.matching import Comm, stages, with_median_of_others
from nsysgen.analyze.steps import Collective


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
    assert [sorted(g) for g in stages(two_stages)] == [[0, 1], [2, 3]]
    # One rank short of a kernel: one group, matched by order as before.
    short = {0: comms(reduce, reduce), 1: comms(reduce, reduce), 2: comms(reduce)}
    assert [sorted(g) for g in stages(short)] == [[0, 1, 2]]
