"""A pipeline's stages joined at their send/recv pairs (nsysgen/analyze/judge/stragglers.py judges
each stage among its data-parallel peers; this module is what crosses the stages).

- A send or receive is no collective of its stage: it syncs a rank with its partner in the
  next or previous stage (the same place among its stage's ranks: Megatron and torchtitan pair
  ranks so). It is taken out of the stage's matching and paired with the partner's kernel it
  ran with: the two end together, so the shorter kernel's rank arrived last and the other
  waited for it. Pairs are found by their ends, the two hosts' clocks set side by side by the
  most common difference of ends (a middle stage's kernels interleave its two neighbours: this
  tells them apart); without starts (CPU ranges), in order where each rank has one neighbour.
- A rank its stage found late with no share of its own (its GPU was in a receive, not idle or
  computing) was held through the pipeline: the rank that held it is found along its partners,
  stage by stage, and the ranks that waited for it waited for that one.
- A stage of one rank has no peer to measure lateness against, and a bubble is no lateness: its
  ranks are not judged there.
"""

from __future__ import annotations

import statistics
from collections import Counter

from nsysgen.analyze.judge.matching import P2P, Comm, Member


def is_p2p(comm: Comm) -> bool:
    return P2P.search(comm[4].name) is not None


def without_p2p(group: dict[int, list[Comm]]) -> dict[int, list[Comm]]:
    """A stage's ranks with their collectives only."""
    return {rank: [c for c in comms if not is_p2p(c)] for rank, comms in group.items()}


def partners(stages: list[dict[int, list[Comm]]]) -> dict[int, list[int]]:
    """rank -> its partners in the stages before and after it (the same place among their
    ranks, by rank order)."""
    ordered = [sorted(stage) for stage in stages]
    found: dict[int, list[int]] = {rank: [] for stage in ordered for rank in stage}
    for here, there in zip(ordered, ordered[1:], strict=False):
        for a, b in zip(here, there, strict=False):
            found[a].append(b)
            found[b].append(a)
    return found


# A send and its receive end together: within this much of each other, once the two ranks'
# clocks are set side by side.
TOGETHER_NS = 20_000
# Of a rank's kernels in a step, those whose ends set two clocks side by side. A schedule is
# periodic: an offset shifted by one period lines up all but the edge kernels, so the true one
# wins by those few, and as many as a long step holds must vote.
VOTERS = 64


def _ends(comms: list[Comm]) -> list[int] | None:
    ends = [c[3] + c[1] for c in comms if c[3] is not None]
    return ends if len(ends) == len(comms) else None


def _aligned(mine: list[Comm], theirs: list[Comm]) -> list[tuple[int, int]]:
    """(i, j): my kernel i and their kernel j ended together, each on its own clock, once
    their clock is shifted by the offset at which most of them do (the clocks of two hosts
    differ by a constant: the most common difference of ends, to TOGETHER_NS, is it)."""
    a, b = _ends(mine), _ends(theirs)
    if not a or not b:
        return []
    # My first kernels vote, each with every one of theirs (a thousand microbatches cost no
    # more than VOTERS).
    voters = a[:VOTERS]
    votes = Counter((y - x) // TOGETHER_NS for x in voters for y in b)
    bucket = max(sorted(votes), key=lambda k: votes[k] + votes.get(k - 1, 0) + votes[k + 1])
    offset = statistics.median(
        y - x for x in voters for y in b if abs((y - x) // TOGETHER_NS - bucket) <= 1
    )
    matched, j = [], 0
    for i, x in enumerate(a):  # in order on both sides: NCCL runs a pair's kernels in order
        while j < len(b) and b[j] - offset < x - TOGETHER_NS:
            j += 1
        if j < len(b) and abs(b[j] - offset - x) <= TOGETHER_NS:
            matched.append((i, j))
            j += 1
    return matched


def pairs(stages: list[dict[int, list[Comm]]]) -> tuple[list[list[Member]], int]:
    """The send/recv kernels paired across the stages (each pair as a group of two members,
    the shorter kernel first), and how many ranks' send/recv kernels could not all be paired.

    Each rank with its partner in the next stage: by the ends of their kernels, clocks set
    side by side (a middle stage's kernels interleave its two neighbours); where a kernel lacks
    its start (a CPU range), in order, if each of the two has that one neighbour and as many
    kernels as the other."""
    links = partners(stages)
    p2p = {
        rank: [c for c in comms if is_p2p(c)] for stage in stages for rank, comms in stage.items()
    }
    found: list[list[Member]] = []
    covered: dict[int, set[int]] = {rank: set() for rank in p2p}
    for rank, others in links.items():
        for other in others:
            if other < rank:
                continue  # each partnership once, from its lower rank
            mine, theirs = p2p[rank], p2p[other]
            matched = _aligned(mine, theirs)
            alone = len(others) == len(links[other]) == 1  # two stages: one neighbour each
            if not matched and alone and len(mine) == len(theirs):
                matched = [(i, i) for i in range(len(mine))]
            for i, j in matched:
                a, b = mine[i], theirs[j]
                members = [(a[1], rank, a[2], a[3], a[4]), (b[1], other, b[2], b[3], b[4])]
                found.append(sorted(members, key=lambda m: (m[0], m[1])))
                covered[rank].add(i)
                covered[other].add(j)
    unpaired = sum(1 for rank, kernels in p2p.items() if len(covered[rank]) < len(kernels))
    return found, unpaired


def held_by(late: dict[int, float], links: dict[int, list[int]]) -> dict[int, int]:
    """held rank -> the rank that held it: for each rank its stage found late without a share
    of its own (`late`: late rank -> its lateness, 0 for those), the nearest partner along the
    pipeline that was late by its own doing."""
    found: dict[int, int] = {}
    for rank, value in late.items():
        if value > 0:
            continue
        seen, frontier = {rank}, [rank]
        while frontier and rank not in found:
            step: list[int] = []
            for at in frontier:
                for other in links.get(at, []):
                    if other in seen or other not in late:
                        continue
                    seen.add(other)
                    if late[other] > 0 and rank not in found:
                        found[rank] = other
                    step.append(other)
            frontier = sorted(step)
    return found
