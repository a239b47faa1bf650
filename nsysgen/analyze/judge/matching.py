"""Collectives matched across ranks, step by step: which kernel of one rank is the same
collective as which kernel of another (nsysgen/analyze/judge/stragglers.py measures waits and walks
the critical path over the groups made here).

By the operationId of nsys's advanced NCCL tracing where every rank's report has it, else by
their order inside the step on each rank; ranks that ran different collectives in a step (a
pipeline's stages) are matched within their own group.
"""

from __future__ import annotations

import re
from collections import defaultdict

from nsysgen.analyze.read.steps import Collective, RankTables


def rank_of(t: RankTables) -> int:
    assert t.rank is not None, "ranks are assigned before the straggler analysis"
    return t.rank


# (operationId or None, duration ns, exposed pieces, start ns or None, the collective)
Comm = tuple[int | None, int, list[int], int | None, Collective]


def per_step(
    ranks: list[RankTables],
) -> tuple[dict[int, dict[int, float]], dict[int, dict[int, list[Comm]]]]:
    """step -> rank -> step time, and step -> rank -> its collectives in order."""
    step_ms: dict[int, dict[int, float]] = defaultdict(dict)
    comms: dict[int, dict[int, list[Comm]]] = defaultdict(dict)
    for t in ranks:
        per_step: dict[int, list[Comm]] = defaultdict(list)
        for c in sorted(t.collectives, key=lambda c: (c.step, c.index)):
            per_step[c.step].append((c.operation, c.duration_ns, c.exposed, c.start_ns, c))
        for row in t.steps:
            step_ms[row.step][rank_of(t)] = row.step_ms
            comms[row.step][rank_of(t)] = per_step.get(row.step, [])
    return step_ms, comms


def with_median_of_others(times: dict[int, float]) -> list[tuple[int, float, float]]:
    """(rank, value, median of the other ranks' values) for every rank, from one sort: without
    the value at sorted position i, position j of the others is j, or j + 1 from i on."""
    ordered = sorted((value, rank) for rank, value in times.items())
    n = len(ordered) - 1  # the others
    out = []
    for i, (value, rank) in enumerate(ordered):

        def at(j: int, i: int = i) -> float:
            return ordered[j if j < i else j + 1][0]

        middle = n // 2
        median = at(middle) if n % 2 else (at(middle - 1) + at(middle)) / 2
        out.append((rank, value, median))
    return out


# (duration ns, rank, exposed pieces, start, the collective)
Member = tuple[int, int, list[int], int | None, Collective]


def matched(by_rank: dict[int, list[Comm]]) -> tuple[list[list[Member]], str, bool]:
    """The step's collectives matched across ranks, each as (duration, rank, exposed pieces)
    of every rank; how they were matched; and whether the ranks' collectives differ (count or
    ids)."""
    # A rank with the same id twice in a step (two kernels of one operation, or one id per
    # communicator) cannot be matched by id: the order in the step is used instead.
    distinct = all(len({c[0] for c in comms}) == len(comms) for comms in by_rank.values())
    if distinct and all(c[0] is not None for comms in by_rank.values() for c in comms):
        per_rank = {rank: {c[0]: c for c in comms} for rank, comms in by_rank.items()}
        ids = [set(ops) for ops in per_rank.values()]
        common = set.intersection(*ids)
        groups = [
            [
                (ops[op][1], rank, ops[op][2], ops[op][3], ops[op][4])
                for rank, ops in per_rank.items()
            ]
            for op in sorted(o for o in common if o is not None)
        ]
        return groups, "operationId", any(i != common for i in ids)
    counts = {len(comms) for comms in by_rank.values()}
    common_count = min(counts)
    groups = [
        [
            (comms[k][1], rank, comms[k][2], comms[k][3], comms[k][4])
            for rank, comms in by_rank.items()
        ]
        for k in range(common_count)
    ]
    return groups, "order in step", len(counts) > 1


# A point-to-point kernel (a pipeline's send or receive): ncclDevKernel_SendRecv, and the
# older ncclKernel_SendRecv_*, ncclDevKernel_Send*, ncclDevKernel_Recv*.
P2P = re.compile(r"SendRecv|nccl\w*?_(?:Send|Recv)(?![a-z])", re.IGNORECASE)


def stages(
    by_rank: dict[int, list[Comm]], layout: tuple[int, int] | None = None
) -> list[dict[int, list[Comm]]] | None:
    """The step's ranks in groups judged apart: a pipeline's stages, each with its
    data-parallel peers (a bubble, waiting for another stage, is no rank's lateness).

    `layout` (stages, world): contiguous blocks of world/stages ranks, as Megatron and
    torchtitan order them (the pipeline outermost). Without it, the groups of ranks that ran the
    same collectives (kernel names, in order); one group where all ran the same, or where a
    sequence is one rank's alone (a rank short of a kernel is matched by order, as before).
    None where that cannot tell: every rank ran the same names and some are point-to-point
    kernels, so the stages' sends and receives look alike and their all-reduces would be
    matched across stages."""
    if layout is not None:
        count, world = layout
        per_stage = max(1, -(-world // max(1, count)))
        blocks: dict[int, dict[int, list[Comm]]] = defaultdict(dict)
        for rank, comms in by_rank.items():
            blocks[rank // per_stage][rank] = comms
        return [blocks[key] for key in sorted(blocks)]
    found: dict[tuple[str, ...], dict[int, list[Comm]]] = defaultdict(dict)
    for rank, comms in by_rank.items():
        found[tuple(c[4].name for c in comms)][rank] = comms
    if len(found) > 1 and all(len(group) >= 2 for group in found.values()):
        return list(found.values())
    names = {c[4].name for comms in by_rank.values() for c in comms}
    if any(P2P.search(name) for name in names):
        return None
    return [by_rank]
