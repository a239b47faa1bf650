"""The time each rank cost a step: its share of the step's critical path across ranks, and the
step time had it been on time.

A step ends at its gate, the end of its last collective: the same instant on every rank of the
group. The walk starts there and goes back (nsysgen/analyze/read/landmarks.py gives, per rank and
collective, the times it uses, each on one rank's clock from the step's opening gate):

- at a collective, to the rank that arrived last: the one whose kernel is shortest (the others'
  kernels waited for it; durations only, so no clock is compared across hosts);
- if that rank arrived later than it was ready, something held its kernel: the previous
  collective on its stream, itself ended by a later peer, and the walk goes on there;
- else the path runs through that rank's own work from the opening gate to its ready moment.

There, the ranks' ready moments are split at their largest gap: the ranks above it (by more
than the noise floor) are the late group (one rank, a node, half the job), those below it the
ranks on time. A late rank's lateness is its share of the path beyond what the ranks on time
show for the same work:

- its GPU idle (nothing running: launch gaps, syncs, data loading, sleeps) beyond their median;
- its kernels' excess, from its GPU's speed: its compute before the step's first collective
  against theirs (no rank waits there, so no SM is shared with a spinning NCCL kernel) applied
  to its compute on the path; where nothing was computed before the first collective, its
  compute on the path beyond their least.

Overlapped waits are never summed: one figure per rank and step. What-if: with the late ranks'
lateness taken off, the collective starts at the latest of their new ready moments and the
next-latest arrival; the step is shorter by the difference (never more than the slack to the
next-latest arrival, that rank's compute taken unslowed: its slowdown came from waiting). A
rank that waited lost its exposed wait (nsysgen/analyze/judge/waiting.py) plus its compute slowed by
its own waiting kernels (its compute on the path beyond the late ranks', at their speed), which
this module measures. Copies (memcpy, memset) count as neither compute nor idle: a rank late
by its copies alone is not measured late.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

HELD_NS = 50_000  # a kernel starting this long after its rank was ready was held by something


@dataclass(frozen=True)
class Arrival:
    """One rank at one collective of a step; times in ns from the rank's opening gate."""

    rank: int
    duration: int  # its kernel (or blocking call): wait for the last peer + transfer
    start: int  # its arrival
    ready: int
    busy: int  # compute between the gate and ready
    idle: int  # nothing running between the gate and ready


@dataclass(frozen=True)
class StepPath:
    """What the walk found on one step."""

    collective: int  # where the path leaves the collectives for a rank's own work
    late: dict[int, float] = field(default_factory=dict)  # late rank -> its lateness (ms)
    saving_ms: float = 0.0  # the step shorter by this with every late rank on time
    slowed: dict[int, float] = field(default_factory=dict)  # waiting rank -> compute slowed


def _ms(ns: float) -> float:
    return ns / 1_000_000


def _split(values: list[tuple[int, int]], floor: int) -> tuple[set[int], set[int]]:
    """(late, on time): ranks above and below the largest gap in their ready moments, when
    that gap is above the floor; else nobody is late."""
    ordered = sorted(values)
    if len(ordered) < 2:
        return set(), {rank for _, rank in ordered}
    gap, at = max((ordered[i + 1][0] - ordered[i][0], i) for i in range(len(ordered) - 1))
    if gap <= floor:
        return set(), {rank for _, rank in ordered}
    return {rank for _, rank in ordered[at + 1 :]}, {rank for _, rank in ordered[: at + 1]}


def _speeds(first: list[Arrival], on_time: set[int], busy_path: float) -> dict[int, float]:
    """rank -> how much longer its kernels ran than the ranks' on time, from the compute before
    the step's first collective; empty where that is too little to tell (under a tenth of the
    compute on the path)."""
    reference = [a.busy for a in first if a.rank in on_time]
    if not reference:
        return {}
    typical = statistics.median(reference)
    if typical <= 0 or typical < 0.1 * busy_path:
        return {}
    return {a.rank: a.busy / typical for a in first if a.busy > 0}


def walk(groups: list[list[Arrival]], floor_ns: int) -> StepPath:
    """One step's collectives, matched across ranks, in order (`floor_ns`: the noise floor)."""
    k = len(groups) - 1
    while k > 0:
        last = min(groups[k], key=lambda a: (a.duration, a.rank))
        if last.start - last.ready <= HELD_NS:
            break
        k -= 1
    at = groups[k]
    late, on_time = _split([(a.ready, a.rank) for a in at], floor_ns)
    if not late:
        return StepPath(k)
    punctual = [a for a in at if a.rank in on_time]
    idle = statistics.median(a.idle for a in punctual)
    busy_least = min(a.busy for a in punctual)
    speeds = _speeds(groups[0], on_time, statistics.median(a.busy for a in punctual))
    # The waiting ranks' compute slowed by their spinning NCCL kernels: their compute on the
    # path beyond the late ranks' (taken at the speed of the ranks on time).
    unslowed = min(a.busy / speeds.get(a.rank, 1.0) for a in at if a.rank in late)
    slowed = {a.rank: max(0.0, a.busy - unslowed) for a in punctual}
    # When the ranks on time would have been ready, unslowed: a late rank's share is never
    # more than it arrived after that (the rest of its delay ran while it would have waited
    # anyway: a pipeline's bubble, its own wait at an earlier collective).
    latest = max(a.ready - slowed[a.rank] for a in punctual)
    share: dict[int, float] = {}
    for a in at:
        if a.rank not in late:
            continue
        speed = speeds.get(a.rank)
        kernels = a.busy * (1 - 1 / speed) if speed else a.busy - busy_least
        share[a.rank] = max(0.0, min(a.ready - latest, max(0.0, a.idle - idle) + kernels))
    # What-if: the late ranks ready their lateness earlier; the ranks on time then ready as
    # they would have unslowed (their slowdown came from waiting for the late ones).
    ready = {a.rank: a.ready - (share[a.rank] if a.rank in late else slowed[a.rank]) for a in at}
    top = max(a.ready for a in at)
    return StepPath(
        k,
        {rank: _ms(value) for rank, value in share.items()},
        _ms(max(0.0, top - max(ready.values()))),
        {rank: _ms(value) for rank, value in slowed.items()},
    )
