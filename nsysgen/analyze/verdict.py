"""The analysis's answer in one sentence and its figures (summary.json's "verdict"): which rank
was late, on how many of the judged steps, by how much, and which ranks waited for it."""

from __future__ import annotations

from typing import TypedDict

from nsysgen.analyze.stragglers import Lateness, Straggler, Thresholds
from nsysgen.analyze.views import ranks_text, steps_text
from nsysgen.analyze.waiting import StepVerdict

NAMED = 6  # ranks named in the sentence; the rest counted


class Also(TypedDict):
    rank: int
    kind: str
    steps: list[int]
    by_ms: float


class Verdict(TypedDict):
    late_rank: int | None  # None: no rank was late
    kind: str | None  # "slow rank" | "hiccup"
    steps: list[int]  # the judged steps it was late on
    judged_steps: int
    by_ms: float | None  # mean lateness over those steps
    waited: list[int]  # ranks that waited for it on those steps, longest total wait first
    waited_count: int
    also: list[Also]  # the other late ranks, latest first
    text: str


def build(
    stragglers: list[Straggler],
    steps: list[StepVerdict],
    lateness: Lateness,
    ranks: int,
    thresholds: Thresholds,
) -> Verdict:
    judged = [s for s in steps if s["judged"]]
    verdict: Verdict = {
        "late_rank": None,
        "kind": None,
        "steps": [],
        "judged_steps": len(judged),
        "by_ms": None,
        "waited": [],
        "waited_count": 0,
        "also": [],
        "text": "",
    }
    if not steps:
        verdict["text"] = "no step ranges ('step N') in the reports: no per-step verdict"
        return verdict
    if ranks < 2:
        verdict["text"] = "one rank recorded: who was late needs two ranks or more"
        return verdict
    if not stragglers:
        verdict["text"] = (
            f"no rank late on the {len(judged)} judged steps of {ranks:,} ranks (none held the "
            f"others up by more than {thresholds.min_ms:g} ms and "
            f"{100 * thresholds.min_fraction:g} % of the step)"
        )
        return verdict
    first, *others = stragglers
    rank, late_steps = first["rank"], set(first["steps"])
    # Who waited for it: on its late steps, the ranks whose wait was mostly for it, by their
    # total wait there.
    waits: dict[int, float] = {}
    for (other, step), value in lateness.wait_ms.items():
        mine = lateness.waited_for.get((other, step), rank) == rank
        if step in late_steps and other != rank and value > 0 and mine:
            waits[other] = waits.get(other, 0.0) + value
    waited = sorted(waits, key=lambda r: (-waits[r], r))
    count = len(waited)
    verdict["late_rank"], verdict["kind"] = rank, first["kind"]
    verdict["steps"], verdict["by_ms"] = first["steps"], first["mean_lateness_ms"]
    verdict["waited"], verdict["waited_count"] = waited[:NAMED], count
    verdict["also"] = [
        {"rank": s["rank"], "kind": s["kind"], "steps": s["steps"], "by_ms": s["mean_lateness_ms"]}
        for s in others[:NAMED]
    ]
    text = (
        f"rank {rank} late on {len(first['steps'])} of {len(judged)} judged steps "
        f"({steps_text(first['steps'])}) by {first['mean_lateness_ms']:.1f} ms on average"
    )
    if waited:
        text += f"; {ranks_text(waited[:NAMED], NAMED, count)} waited"
    for s in others[:2]:
        text += (
            f"; also rank {s['rank']} ({s['kind']}) on step{'s' if len(s['steps']) > 1 else ''} "
            f"{steps_text(s['steps'])} by {s['mean_lateness_ms']:.1f} ms"
        )
    verdict["text"] = text
    return verdict
