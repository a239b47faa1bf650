"""The late ranks found on the measured lateness (nsysgen/analyze/judge/stragglers.py measures it),
and what the critical path could not measure on the reports: the summary's stragglers and its
limits of the path."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import TypedDict

from nsysgen.analyze.judge.matching import rank_of
from nsysgen.analyze.judge.naming import steps_text
from nsysgen.analyze.judge.stragglers import Lateness, Thresholds, late_bar, scale_ms
from nsysgen.analyze.read.steps import RankTables, window_edges

ALONE = "alone in its pipeline stage: no data-parallel peer to measure it against"


class Straggler(TypedDict):
    """A rank late on steps (summary.json's "stragglers", in this key order)."""

    rank: int
    steps: list[int]
    mean_lateness_ms: float
    kind: str  # "slow rank" (late on most judged steps) or "hiccup"
    late_on_fraction_of_steps: float
    evidence: list[str]


def find(ranks: list[RankTables], lateness: Lateness, thresholds: Thresholds) -> list[Straggler]:
    """The stragglers, latest first."""
    step_ms: dict[int, list[float]] = defaultdict(list)
    for t in ranks:
        for row in t.steps:
            step_ms[row.step].append(scale_ms(row))
    # Neither edge of the window is judged: the first step holds the warm-up and the pause
    # when the capture opens, the last the pause when it closes (seconds on the recorded ranks).
    # A rank's own edges too: ranks on other nodes can start their window a step apart.
    edges = window_edges(step_ms)
    judged = sorted(s for s in lateness.evidence if s not in edges)
    own = {rank_of(t): window_edges(row.step for row in t.steps) for t in ranks}
    by_step: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for (rank, step), value in lateness.late_ms.items():
        by_step[step].append((rank, value))
    late: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for step in judged:
        bar = late_bar(thresholds, step_ms[step])
        for rank, value in by_step[step]:
            if value > bar and step not in own.get(rank, ()):
                late[rank].append((step, value))
    found: list[Straggler] = []
    for rank, items in late.items():
        fraction = len(items) / len(judged)
        found.append(
            {
                "rank": rank,
                "steps": [s for s, _ in items],
                "mean_lateness_ms": round(statistics.fmean(v for _, v in items), 3),
                "kind": "slow rank" if fraction >= thresholds.slow_fraction else "hiccup",
                "late_on_fraction_of_steps": round(fraction, 3),
                "evidence": sorted({lateness.evidence[s] for s, _ in items}),
            }
        )
    return sorted(found, key=lambda f: -f["mean_lateness_ms"] * len(f["steps"]))


def path_limits(lateness: Lateness) -> list[str]:
    """What the critical path could not measure on these reports."""
    found = []
    if lateness.stages:
        steps = sorted(lateness.stages)
        found.append(
            f"ranks ran different collectives on {len(steps)} step(s) ({steps_text(steps)}): "
            f"judged as {max(lateness.stages.values())} groups of ranks that ran the same "
            "(pipeline stages and their data-parallel peers); a stage's ranks held up by "
            "another stage's are traced along their send/recv partners to the rank that held "
            "them"
        )
    if lateness.unpaired:
        found.append(
            f"sends and receives not paired across stages on {len(lateness.unpaired)} step(s) "
            f"({steps_text(lateness.unpaired)}): some ended with no partner's kernel (or "
            "lack their start); their waits (the bubble among them) are split from transfer "
            "at the ratio of the stage's collectives"
        )
    if lateness.unsplit:
        found.append(
            f"pipeline stages not told apart on {len(lateness.unsplit)} step(s) "
            f"({steps_text(lateness.unsplit)}): every rank ran the same kernels, point-to-point "
            "among them, so a stage's sends and receives look alike; judged by step time only "
            "(pass --pipeline-stages N for the job's N stages)"
        )
    if lateness.unwalked:
        found.append(
            f"critical path not walked on {len(lateness.unwalked)} step(s) "
            f"({steps_text(lateness.unwalked)}): a rank's collectives lack their start or "
            "the step its opening gate; lateness there is not measured"
        )
    return found
