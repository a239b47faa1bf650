"""A pipeline's stages joined at their send/recv pairs (nsysgen/analyze/stragglers.py judges
each stage among its data-parallel peers; this module is what crosses the stages).

- A send or receive is no collective of its stage: it syncs a rank with its partner in the
  next or previous stage (the same place among its stage's ranks: Megatron and torchtitan pair
  ranks so). It is taken out of the stage's matching, and paired with the partner's kernel in
  order, which is sound where each of the two ranks has that one neighbour (two stages): the
  pair ends together, so the shorter kernel's rank arrived last and the other waited for it.
  With more stages, a middle stage's sends and receives interleave its two neighbours and no
  kernel tells which: those are not paired (a limit says so).
- A rank its stage found late with no share of its own (its GPU was in a receive, not idle or
  computing) was held through the pipeline: the rank that held it is found along its partners,
  stage by stage, and the ranks that waited for it waited for that one.
- A stage of one rank has no peer to measure lateness against, and a bubble is no lateness: its
  ranks are not judged there.
"""

from __future__ import annotations

from nsysgen.analyze.matching import P2P, Comm, Member


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


def pairs(stages: list[dict[int, list[Comm]]]) -> tuple[list[list[Member]], int]:
    """The send/recv kernels paired across the stages (each pair as a group of two members,
    the shorter kernel first), and how many ranks' send/recv kernels could not be paired."""
    links = partners(stages)
    p2p = {
        rank: [c for c in comms if is_p2p(c)] for stage in stages for rank, comms in stage.items()
    }
    found: list[list[Member]] = []
    unpaired = 0
    for rank, others in links.items():
        mine = p2p[rank]
        if not mine:
            continue
        if len(others) != 1 or len(links[others[0]]) != 1 or len(p2p[others[0]]) != len(mine):
            unpaired += 1
            continue
        if rank > others[0]:
            continue  # each pair once, from its lower rank
        for a, b in zip(mine, p2p[others[0]], strict=True):
            members = [(a[1], rank, a[2], a[3], a[4]), (b[1], others[0], b[2], b[3], b[4])]
            found.append(sorted(members, key=lambda m: (m[0], m[1])))
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
