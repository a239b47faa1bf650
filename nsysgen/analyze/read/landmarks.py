"""Where a rank stood when it became ready for each collective: the half of the critical path
that is read from one report (nsysgen/analyze/judge/critical.py walks the path across ranks).

A step's gate is the end of its last collective: the last rank's arrival ends that collective
on every rank of the group at the same instant, so times measured on one rank's clock from its
previous gate are comparable across ranks without aligning any clocks. For each collective of a
step, on the rank's own clock and from the step's opening gate (the previous step's gate; the
step's CPU entry for the first recorded step):

- ready: when the rank's own work for the collective was done: the later of the moment its
  host issued the collective's launch and the end of the GPU work it launched before it (the
  bucket of gradients a DDP all-reduce carries). An NCCL kernel starting later than that was
  held by something else: the previous collective on its stream, itself waiting for a peer.
  A CPU collective (gloo) is ready when its blocking call is entered;
- busy: how long compute kernels (and graph launches) ran between the gate and ready;
- idle: how long nothing at all ran on the GPU between the gate and ready: launch gaps, host
  syncs, data loading, sleeps. Time the GPU spent in an NCCL kernel is neither (waiting or
  transfer).
"""

from __future__ import annotations

import bisect
from itertools import accumulate
from operator import itemgetter, sub

from nsysgen.analyze.read import intervals as iv
from nsysgen.analyze.read.events import Wait
from nsysgen.analyze.read.steps_read import NCCL, GpuOp

_START, _END = itemgetter(0), itemgetter(1)


class Coverage:
    """How much of the time up to a moment a merged interval list covers (prefix sums, one
    binary search a lookup)."""

    def __init__(self, merged: list[iv.Interval]) -> None:
        # One list built, in C (map, accumulate): a process holds as many intervals as kernels.
        self._merged = merged
        lengths = map(sub, map(_END, merged), map(_START, merged))
        self._before: list[int] = [0, *accumulate(lengths)]

    def until(self, moment: int) -> int:
        index = bisect.bisect_right(self._merged, moment, key=_START)  # started by `moment`
        if index == 0:
            return 0
        still_running = self._merged[index - 1][1] - moment
        return self._before[index] - max(0, still_running)

    def between(self, begin: int, end: int) -> int:
        return self.until(end) - self.until(begin) if end > begin else 0


def process_coverage(
    compute: list[list[iv.Interval]], every: list[list[iv.Interval]]
) -> tuple[Coverage, Coverage]:
    """Coverage of compute and of all GPU work over the process's steps (each step's merged
    lists merged again: a step's work can run into the next step's time)."""
    return Coverage(_joined(compute)), Coverage(_joined(every))


def _joined(steps: list[list[iv.Interval]]) -> list[iv.Interval]:
    """The steps' merged lists as one: laid end to end where each step's work ended before the
    next step's began (the usual case: no sort), merged again where not."""
    filled = [step for step in steps if step]
    flat = [interval for step in filled for interval in step]
    if all(a[-1][1] <= b[0][0] for a, b in zip(filled, filled[1:], strict=False)):
        return flat
    return iv.union(flat)


# Said wherever readiness came from launch order: a report without its stream waits.
BY_LAUNCH_ORDER = (
    "when a rank was ready for an NCCL kernel is inferred from launch order (the GPU work it "
    "launched before it, on any stream), not from its stream's waits on CUDA events: work on "
    "a stream the kernel did not wait for counts as holding it"
)


def nccl_ready(ops: list[GpuOp], waits: list[Wait] | None = None) -> list[int]:
    """For each NCCL op of a step (in launch order), when its rank was ready for it: from the
    report's stream waits where it has them (`waits`, even empty: read), else from launch
    order. In comprehensions and C-level accumulate: a step can hold a million ops."""
    at = [i for i, op in enumerate(ops) if op[3] == NCCL]
    if not at:
        return []
    if waits is not None:
        return _by_streams(ops, at, waits)
    ends = [0 if op[3] == NCCL else op[2] for op in ops[: at[-1]]]
    done = list(accumulate(ends, max, initial=0))  # done[i]: the latest end of ops[:i]
    return [min(ops[i][1], max(ops[i][0], done[i])) for i in at]


_WHEN = itemgetter(0)  # of a Wait: when it was issued


class _Streams:
    """Per stream, its ops' launch moments and the latest end of its own work launched so far
    (an NCCL kernel's end is a peer's doing, not the rank's: left out, as above)."""

    def __init__(self, ops: list[GpuOp]) -> None:
        self.launches: dict[int, list[int]] = {}
        self.done: dict[int, list[int]] = {}
        for op in ops:
            launched = self.launches.setdefault(op[6], [])
            done = self.done.setdefault(op[6], [])
            launched.append(op[0])
            done.append(max(done[-1] if done else 0, 0 if op[3] == NCCL else op[2]))

    def before(self, stream: int, moment: int) -> tuple[int | None, int]:
        """(the launch of the stream's last op before `moment`, the latest end of the stream's
        own work launched before it); (None, 0) where there is none."""
        index = bisect.bisect_left(self.launches.get(stream, []), moment)
        if not index:
            return None, 0
        return self.launches[stream][index - 1], self.done[stream][index - 1]


def _by_streams(ops: list[GpuOp], at: list[int], waits: list[Wait]) -> list[int]:
    """An NCCL kernel waits for the work before it on its own stream and, through each event
    its stream waited on since its previous op there, for the work on the event's stream
    before the event was recorded."""
    streams = _Streams(ops[: at[-1] + 1])
    by_stream: dict[int, list[Wait]] = {}
    for wait in waits:
        by_stream.setdefault(wait[1], []).append(wait)
    ready = []
    for i in at:
        launch, start, stream = ops[i][0], ops[i][1], ops[i][6]
        previous, needed = streams.before(stream, launch)
        own = by_stream.get(stream, [])
        low = 0 if previous is None else bisect.bisect_right(own, previous, key=_WHEN)
        for _, _, recorded, source in own[low : bisect.bisect_left(own, launch, key=_WHEN)]:
            needed = max(needed, streams.before(source, recorded)[1])
        ready.append(min(start, max(launch, needed)))
    return ready


Landmark = tuple[int, int, int]  # (ready, busy, idle) ns from the step's opening gate


def landmark(gate: int, ready: int, compute: Coverage, every: Coverage) -> Landmark:
    """One collective's landmark (`ready` before the gate counts as at the gate: the host
    issued it early, the rank was ready when the step opened)."""
    at = max(ready, gate)
    return at - gate, compute.between(gate, at), (at - gate) - every.between(gate, at)
