"""Own work told from waiting: each rank's communication split into waiting for the last peer
and transfer, and, per step, who was late and who waited for it.

A collective ends on every rank once the last rank has arrived, so a rank that arrived before
the last one spends (last arrival - own arrival) of its collective waiting: the head of its
NCCL kernel, or of its blocking CPU collective range (gloo). nsysgen/analyze/judge/stragglers.py
matches the collectives across ranks and measures that wait per kernel; here it becomes part of
the step's time:

- NCCL: of the step's exposed communication (NCCL kernels running with no compute), comm_wait
  is the share that falls in the kernels' waiting heads (each kernel's exposed time in its first
  `wait` ns, over all its exposed time); comm_transfer the rest;
- a process without NCCL: its step's cpu comm (the GPU idle inside a collective's CPU range)
  is waiting up to the wait measured on those ranges, and transfer beyond it;
- CPU-only steps: the collective ranges' union, split the same way.

Unmatched collectives (one rank recorded) cannot be split: all of it is transfer, and the
summary's limits say so. The step's figures still add up:
compute_busy + comm_wait + comm_transfer + other + host_gap + idle = step_ms (GPU steps).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import TypedDict

from nsysgen.analyze.judge.stragglers import Lateness, Thresholds, late_bar, scale_ms
from nsysgen.analyze.read.steps import RankTables, window_edges

WAITED_LISTED = 8  # ranks listed by name in a step's "waited"; the count says how many in all


class StepVerdict(TypedDict):
    """One step over all ranks (summary.json's "by_step", in this key order)."""

    step: int
    judged: bool  # False: a window edge, or no evidence across ranks
    job_step_ms: float  # the slowest rank's step: the job's step
    late_rank: int | None  # the latest rank above the noise floor (its share of the path)
    late_ms: float  # late_rank's lateness: its share of the critical path (0: nobody late)
    late_ranks: list[int]  # the late group, latest first (at most WAITED_LISTED)
    late_count: int
    what_if_step_ms: float | None  # the job's step had the late group been on time
    waited: list[int]  # ranks that waited for the late group, longest first (at most 8)
    waited_count: int
    evidence: str | None  # "collectives" | "step-time" | None: not measured


def by_step(
    ranks: list[RankTables],
    lateness: Lateness,
    thresholds: Thresholds,
    unjudged: set[int] | None = None,
) -> list[StepVerdict]:
    """One verdict per step (`unjudged`: steps some rank cannot be judged on: not judged)."""
    times: dict[int, dict[int, float]] = defaultdict(dict)
    scales: dict[int, list[float]] = defaultdict(list)
    for t in ranks:
        assert t.rank is not None
        for row in t.steps:
            times[row.step][t.rank] = row.step_ms
            scales[row.step].append(scale_ms(row))
    edges = window_edges(times)
    late: dict[int, list[tuple[float, int]]] = defaultdict(list)
    for (rank, step), value in lateness.late_ms.items():
        late[step].append((value, rank))
    waits: dict[int, list[tuple[float, int]]] = defaultdict(list)
    for (rank, step), value in lateness.wait_ms.items():
        if value > 0:
            waits[step].append((value, rank))
    out: list[StepVerdict] = []
    for step, per_rank in sorted(times.items()):
        evidence = lateness.evidence.get(step)
        bar = late_bar(thresholds, scales[step])
        group = sorted((-value, rank) for value, rank in late[step] if value > bar)
        top = group[0] if group else (0.0, None)
        members = {rank for _, rank in group}
        waited = sorted(
            (-value, rank) for value, rank in waits[step] if members and rank not in members
        )
        job_step = max(per_rank.values())
        path = lateness.paths.get(step)
        what_if = None
        if members:
            saving = path.saving_ms if path is not None else -top[0]
            what_if = round(max(0.0, job_step - saving), 4)
        out.append(
            {
                "step": step,
                "judged": evidence is not None and step not in (*edges, *(unjudged or ())),
                "job_step_ms": round(job_step, 4),
                "late_rank": top[1],
                "late_ms": round(-top[0], 4) or 0.0,
                "late_ranks": [rank for _, rank in group[:WAITED_LISTED]],
                "late_count": len(group),
                "what_if_step_ms": what_if,
                "waited": [rank for _, rank in waited[:WAITED_LISTED]],
                "waited_count": len(waited),
                "evidence": evidence,
            }
        )
    return out


def job_step_median(steps: list[StepVerdict]) -> float | None:
    """The job's median step time over its judged steps (every step if none is judged)."""
    judged = [s["job_step_ms"] for s in steps if s["judged"]] or [s["job_step_ms"] for s in steps]
    return round(statistics.median(judged), 4) if judged else None
