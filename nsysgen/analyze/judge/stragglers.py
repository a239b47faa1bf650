"""Who was late and who waited, per rank and step, without comparing clocks of different hosts.

Collectives are matched across ranks (nsysgen/analyze/judge/matching.py). Every rank's kernel of one
collective ends at about the same moment, once the last rank has arrived, so its duration is
(wait for the last rank) + (transfer): the rank with the SHORTEST kernel arrived last. Only
durations and times from each rank's own gate are compared, so skewed or unsynchronised host
clocks change nothing. The same rule applies to the blocking NVTX collective ranges of CPU-only
reports.

Per (rank, step):
- late_ms: the rank's share of the step's critical path beyond the ranks on time
  (nsysgen/analyze/judge/critical.py): one figure per step, waits that overlap never summed;
- wait_ms: the time it lost waiting: the exposed part of its kernels' waiting heads (split()),
  plus its compute slowed by its own spinning kernels where the path measured it;
- summed_late_ms / summed_wait_ms: the per-collective sums lateness and wait were before (how
  long the next-to-last rank waited for this one; how long its own kernels waited), kept for the
  split of the exposed communication and for comparison.

Steps without any matched communication (a job without collectives) fall back to step times:
a rank whose step is longer than the median of the other ranks by more than the threshold is
late by the difference.

The noise floor: lateness counts above max(min_ms, min_fraction x the step's median GPU time).
Defaults 1 ms and 25 %: on the device proof (bench/gpu/RESULTS.md, issue 17: two ranks sharing
one H200, launch-bound steps of ~70 ms under nsys) the clean run's ranks differed by up to 23 %
of a step at random; --straggler-min-percent lowers the bar for dedicated GPUs. The first and
last recorded steps are never judged. A straggler late on at least `slow_fraction` (50 %) of
the judged steps is a "slow rank"; on fewer, a "hiccup".
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from nsysgen.analyze.judge import pipeline
from nsysgen.analyze.judge.critical import Arrival, StepPath, walk
from nsysgen.analyze.judge.matching import (
    Comm,
    Member,
    matched,
    per_step,
    rank_of,
    stages,
    with_median_of_others,
)
from nsysgen.analyze.read.intervals import head_overlap
from nsysgen.analyze.read.steps import NS_PER_MS, RankTables, StepRow


@dataclass(frozen=True)
class Thresholds:
    min_ms: float = 1.0
    min_fraction: float = 0.25
    slow_fraction: float = 0.5

    def as_dict(self) -> dict[str, float]:
        return {
            "late_min_ms": self.min_ms,
            "late_min_fraction_of_step": self.min_fraction,
            "slow_rank_min_fraction_of_steps": self.slow_fraction,
        }


@dataclass
class Lateness:
    wait_ms: dict[tuple[int, int], float]
    late_ms: dict[tuple[int, int], float]
    evidence: dict[int, str]  # step -> "collectives" | "step-time"
    matched: int  # collectives matched across ranks
    mismatched_steps: list[int]  # steps whose ranks did not issue the same number
    matched_by: set[str] = field(default_factory=set)  # "operationId" and/or "order in step"
    # Per (rank, step): how much of its collectives' time not under compute was waiting (the
    # head of each kernel, as long as its wait) and how much there was (nsysgen/analyze/
    # waiting.py splits the exposed communication by their ratio); the rank it waited for most.
    exposed_wait_ns: dict[tuple[int, int], int] = field(default_factory=dict)
    exposed_ns: dict[tuple[int, int], int] = field(default_factory=dict)
    waited_for: dict[tuple[int, int], int] = field(default_factory=dict)
    # Per matched collective of a rank, by (report, start ns, duration ns): how long of it was
    # waiting for the last peer (own duration - shortest, so within [0, duration]). NCCL bus
    # bandwidth takes it out of the kernel's time (nsysgen/analyze/judge/bandwidth.py); a call not
    # here was not matched across ranks.
    call_wait_ns: dict[tuple[str, int, int], int] = field(default_factory=dict)
    # Per (rank, step): the sums over the step's collectives that lateness and wait were before
    # the critical path (how long the others' kernels waited for this rank; how long its own
    # waited). Overlapping waits add up in them: kept for the split of the exposed
    # communication and for comparison (BENCHMARKS.md), never shown as lateness.
    summed_late_ms: dict[tuple[int, int], float] = field(default_factory=dict)
    summed_wait_ms: dict[tuple[int, int], float] = field(default_factory=dict)
    paths: dict[int, StepPath] = field(default_factory=dict)  # step -> its critical path
    stages: dict[int, int] = field(default_factory=dict)  # step -> groups judged apart (>1)
    reports: dict[int, str] = field(default_factory=dict)  # rank -> its report
    unwalked: list[int] = field(default_factory=list)  # steps without landmarks on some rank
    # Steps of point-to-point kernels whose pipeline stages the names do not tell apart.
    unsplit: list[int] = field(default_factory=list)
    # step -> the ranks alone in their pipeline stage there: no peer to measure them against
    peerless: dict[int, list[int]] = field(default_factory=dict)
    unpaired: list[int] = field(default_factory=list)  # steps with sends/receives not paired
    # step -> rank its stage found late without a share of its own -> the rank that held it
    # through the pipeline (nsysgen/analyze/judge/pipeline.py)
    held: dict[int, dict[int, int]] = field(default_factory=dict)
    # Per (rank, step): the exposed part of its waits at send/recv pairs. A pipeline's bubble
    # is among them, in the control run too: waiting (comm_wait_ms), but no time lost to a
    # late rank (wait_ms leaves it out).
    p2p_wait_ns: dict[tuple[int, int], int] = field(default_factory=dict)


def _record_waits(
    into: dict[tuple[str, int, int], int], group: list[Member], reports: dict[int, str]
) -> None:
    """Each member's wait for the last peer (own duration - shortest), by its call."""
    shortest = group[0][0]
    for d, rank, _, start, _ in group:
        if start is not None:
            into[(reports[rank], start, d)] = d - shortest


def _arrivals(group: list[Member], gates: dict[int, int | None]) -> list[Arrival] | None:
    """A matched collective's members for the critical path; None where one lacks its
    landmark (a CPU range without a start, a report reduced by older code)."""
    found = []
    for d, rank, _, start, c in group:
        gate = gates.get(rank)
        if c.ready_ns is None or start is None or gate is None:
            return None
        found.append(Arrival(rank, d, start - gate, c.ready_ns, c.busy_ns, c.idle_ns))
    return found


def _floor_ns(thresholds: Thresholds, rows: list[StepRow]) -> int:
    return int(late_bar(thresholds, [scale_ms(row) for row in rows]) * NS_PER_MS)


def _walk(
    step: int,
    groups: list[list[Member]],
    rows: dict[int, StepRow],
    thresholds: Thresholds,
    result: Lateness,
) -> dict[int, float] | None:
    """The step's critical path (into result.paths): rank -> its lateness, 0 below the floor;
    None where it cannot be walked."""
    gates = {rank: row.gate_ns for rank, row in rows.items()}
    arrivals = [_arrivals(group, gates) for group in groups]
    walkable = [a for a in arrivals if a is not None]
    if len(walkable) < len(arrivals):
        if step not in result.unwalked:  # once a step, whatever its stages
            result.unwalked.append(step)
        return None
    floor = _floor_ns(thresholds, list(rows.values()))
    path = walk(walkable, floor)
    before = result.paths.get(step)  # another stage of the same step: one path a stage
    result.paths[step] = (
        path
        if before is None
        else StepPath(
            path.collective,
            {**before.late, **path.late},
            max(before.saving_ms, path.saving_ms),
            {**before.slowed, **path.slowed},
        )
    )
    return {rank: value if value * NS_PER_MS > floor else 0.0 for rank, value in path.late.items()}


def _lost(
    rows: dict[int, dict[int, StepRow]],
    wait: dict[tuple[int, int], float],
    result: Lateness,
) -> None:
    """A waiting rank's figure: the time it lost to waiting (its exposed wait, plus its compute
    slowed by its own spinning kernels where the path measured it)."""
    for step, per_rank in rows.items():
        path = result.paths.get(step)
        for rank, row in per_rank.items():
            if (rank, step) in wait:
                slowed = path.slowed.get(rank, 0.0) if path is not None else 0.0
                result.wait_ms[(rank, step)] = _p2p_free(row, rank, result) + slowed


def _p2p_free(row: StepRow, rank: int, result: Lateness) -> float:
    """The rank's exposed wait on the step; on a pipeline's step, at its stage's collectives
    only (measured kernel by kernel: the waits at sends and receives, its bubble among them,
    are left out, paired or not)."""
    key = (rank, row.step)
    if row.step not in result.stages or row.source != "gpu":
        return split(row, rank, result)[0]
    own = result.exposed_wait_ns.get(key, 0) - result.p2p_wait_ns.get(key, 0)
    return max(0, own) / NS_PER_MS


def _add_waits(
    step: int,
    durations: list[Member],
    wait: dict[tuple[int, int], float],
    exposed_wait: dict[tuple[int, int], int],
    exposed: dict[tuple[int, int], int],
    waited_on: dict[tuple[int, int], dict[int, int]],
) -> None:
    """One matched collective's waits (members shortest first) added to the step's sums."""
    shortest, last = durations[0][:2]
    for d, rank, pieces, _, _ in durations:
        wait[(rank, step)] += (d - shortest) / NS_PER_MS
        # The wait is the head of the kernel: the last rank's arrival ends it.
        exposed_wait[(rank, step)] += head_overlap(pieces, d - shortest)
        exposed[(rank, step)] += head_overlap(pieces, d)
        if d > shortest:
            waited_on[(rank, step)][last] += d - shortest


def _rows(ranks: list[RankTables]) -> dict[int, dict[int, StepRow]]:
    """step -> rank -> its row."""
    rows: dict[int, dict[int, StepRow]] = defaultdict(dict)
    for t in ranks:
        for row in t.steps:
            rows[row.step][rank_of(t)] = row
    return rows


@dataclass
class _Sums:
    """What measure() adds up per (rank, step)."""

    late: dict[tuple[int, int], float] = field(default_factory=lambda: defaultdict(float))
    summed: dict[tuple[int, int], float] = field(default_factory=lambda: defaultdict(float))
    wait: dict[tuple[int, int], float] = field(default_factory=lambda: defaultdict(float))
    exposed_wait: dict[tuple[int, int], int] = field(default_factory=lambda: defaultdict(int))
    exposed: dict[tuple[int, int], int] = field(default_factory=lambda: defaultdict(int))
    waited_on: dict[tuple[int, int], dict[int, int]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(int))
    )
    p2p_waited_on: dict[tuple[int, int], dict[int, int]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(int))
    )


def _judge(
    step: int,
    by_rank: dict[int, list[Comm]],
    rows: dict[int, StepRow],
    thresholds: Thresholds,
    sums: _Sums,
    result: Lateness,
) -> bool:
    """One group of ranks on one step, matched by their collectives; False: none matched."""
    groups, how, differ = matched(by_rank)
    if differ:
        result.mismatched_steps.append(step)
    if not groups:
        return False
    result.matched_by.add(how)
    for rank in by_rank:
        sums.wait[(rank, step)] += 0.0
        sums.late[(rank, step)] += 0.0
        sums.summed[(rank, step)] += 0.0
    for group in groups:
        durations = sorted(group, key=lambda m: (m[0], m[1]))
        shortest, last = durations[0][:2]
        sums.summed[(last, step)] += (durations[1][0] - shortest) / NS_PER_MS
        _record_waits(result.call_wait_ns, durations, result.reports)
        _add_waits(step, durations, sums.wait, sums.exposed_wait, sums.exposed, sums.waited_on)
        result.matched += 1
    own = {rank: rows[rank] for rank in by_rank if rank in rows}
    walked = _walk(step, groups, own, thresholds, result)
    if walked is None:  # no path: these ranks' lateness is not measured, not 0
        for rank in by_rank:
            del sums.late[(rank, step)]
        return True
    for rank, value in walked.items():
        sums.late[(rank, step)] = value
    return True


def _judge_stages(
    step: int,
    groups: list[dict[int, list[Comm]]],
    rows: dict[int, StepRow],
    thresholds: Thresholds,
    sums: _Sums,
    result: Lateness,
) -> list[bool]:
    """A pipeline's stages on one step: each among its data-parallel peers by its collectives,
    the stages' send/recv kernels paired across them, and the ranks held through the pipeline
    traced to the rank that held them."""
    judged = []
    for group in groups:
        if len(group) < 2:
            result.peerless.setdefault(step, []).extend(group)
            continue
        judged.append(_judge(step, pipeline.without_p2p(group), rows, thresholds, sums, result))
    found, unpaired = pipeline.pairs(groups)
    if unpaired:
        result.unpaired.append(step)
    for pair in found:
        _record_waits(result.call_wait_ns, pair, result.reports)
        _add_waits(step, pair, sums.wait, sums.exposed_wait, sums.exposed, sums.p2p_waited_on)
        for d, rank, pieces, _, _ in pair:
            key = (rank, step)
            result.p2p_wait_ns[key] = result.p2p_wait_ns.get(key, 0) + head_overlap(
                pieces, d - pair[0][0]
            )
        result.matched += 1
    path = result.paths.get(step)
    if path is not None:
        late = {rank: sums.late.get((rank, step), 0.0) for rank in path.late}
        held = pipeline.held_by(late, pipeline.partners(groups))
        if held:
            result.held[step] = held
    return judged


def _cause(result: Lateness, waiter: tuple[int, int], rank: int) -> int:
    """The rank that held `rank` through the pipeline on the waiter's step, else `rank` (and
    `rank` where that is the waiter itself)."""
    cause = result.held.get(waiter[1], {}).get(rank, rank)
    return rank if cause == waiter[0] else cause


def measure(
    ranks: list[RankTables],
    thresholds: Thresholds | None = None,
    pipeline: int | None = None,
    world: int | None = None,
) -> Lateness:
    """Every rank's lateness and wait on every step (`pipeline`: the number of pipeline stages,
    where the job has them and the kernel names cannot tell them apart, in blocks of `world`
    ranks: the job's, default those given)."""
    thresholds = thresholds or Thresholds()
    world = world or len(ranks)
    layout = (pipeline, world) if pipeline and pipeline > 1 else None
    result = Lateness({}, {}, {}, 0, [])
    result.reports = {rank_of(t): t.report for t in ranks}
    step_ms, comms = per_step(ranks)
    rows = _rows(ranks)
    sums = _Sums()
    for step, by_rank in sorted(comms.items()):
        if len(by_rank) < 2:
            continue
        found = stages(by_rank, layout)
        if found is None:
            result.unsplit.append(step)
        groups = found or []
        if len(groups) > 1:
            result.stages[step] = len(groups)
            judged = _judge_stages(step, groups, rows[step], thresholds, sums, result)
        else:
            judged = [_judge(step, group, rows[step], thresholds, sums, result) for group in groups]
        if any(judged):
            result.evidence[step] = "collectives"
            continue
        if step in result.peerless:  # no peer to measure against: not judged, not all clear
            continue
        result.evidence[step] = "step-time"
        for rank, value, others in with_median_of_others(step_ms[step]):
            sums.late[(rank, step)] = max(0.0, value - others)
    result.summed_wait_ms, result.summed_late_ms = dict(sums.wait), dict(sums.summed)
    result.late_ms = dict(sums.late)
    result.exposed_wait_ns, result.exposed_ns = dict(sums.exposed_wait), dict(sums.exposed)
    # Whom a rank waited for most at its collectives; where it waited at none, at its sends
    # and receives.
    waited_on = {**sums.p2p_waited_on, **sums.waited_on}
    result.waited_for = {
        key: _cause(result, key, max(sorted(by), key=lambda r: by[r]))
        for key, by in waited_on.items()
    }
    _lost(rows, sums.wait, result)
    return result


def split(row: StepRow, rank: int, lateness: Lateness) -> tuple[float, float]:
    """(comm_wait_ms, comm_transfer_ms) of one rank's step: its exposed communication split
    into waiting for the last peer and transfer (nsysgen/analyze/judge/waiting.py says how)."""
    key = (rank, row.step)
    wait_ms = lateness.summed_wait_ms.get(key, 0.0)
    if row.source != "gpu":
        comm = row.exposed_comm_ms
        waited = min(comm, wait_ms)
        return waited, comm - waited
    exposed, cpu_comm = row.exposed_comm_ms, row.cpu_comm_ms
    total = lateness.exposed_ns.get(key, 0)
    share = min(1.0, lateness.exposed_wait_ns.get(key, 0) / total) if total else 0.0
    waited = exposed * share + min(cpu_comm, wait_ms)
    return waited, exposed + cpu_comm - waited


def scale_ms(row: StepRow) -> float:
    """The step time the lateness bar is a share of: the step's GPU work (nsys's projected
    range, what the 25 % was measured against), not the step on the timeline, which grows with
    the late rank's own delay."""
    return row.gpu_ms if row.gpu_ms is not None else row.step_ms


def late_bar(thresholds: Thresholds, step_times: list[float]) -> float:
    """How long the others must have waited for a rank on a step for it to count as late."""
    return max(thresholds.min_ms, thresholds.min_fraction * statistics.median(step_times))
