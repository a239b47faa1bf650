"""The analysis's answer in one sentence and its figures (summary.json's "verdict"): which rank
was late, on how many of the judged steps, by how much, and which ranks waited for it."""

from __future__ import annotations

import statistics
from typing import TypedDict

from nsysgen.analyze.judge.late_ranks import Straggler
from nsysgen.analyze.judge.naming import ranks_text, steps_text
from nsysgen.analyze.judge.stragglers import Lateness, Thresholds
from nsysgen.analyze.judge.waiting import StepVerdict

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
    by_ms: float | None  # mean lateness over those steps: its share of the critical path
    late_together: list[int]  # the ranks late on the same steps with it (itself included)
    late_together_count: int
    nodes: list[str]  # the nodes all of whose ranks were late together (a bad node)
    job_step_ms: float | None  # the job's median step time over the judged steps
    what_if_step_ms: float | None  # the same had the late ranks been on time
    waited: list[int]  # ranks that waited for it on those steps, longest total wait first
    waited_count: int
    also: list[Also]  # the other late ranks, latest first
    not_judged: dict[str, str]  # rank -> why it could not be judged (its report lacks a table)
    not_judged_steps: dict[str, dict[str, str]]  # step -> rank -> why it is not judged there
    text: str


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 4) if values else None


def _whole_nodes(together: list[int], nodes: dict[int, str]) -> list[str]:
    """The nodes every recorded rank of which is in `together`."""
    members: dict[str, set[int]] = {}
    for rank, node in nodes.items():
        members.setdefault(node, set()).add(rank)
    chosen = set(together)
    return sorted(
        (node for node, ranks in members.items() if ranks <= chosen and len(ranks) > 1),
        key=lambda n: min(members[n]),
    )


def _who(rank: int, together: list[int], whole: list[str]) -> str:
    if len(together) == 1:
        return f"rank {rank}"
    ranks = ranks_text(together[:NAMED], NAMED, len(together))
    if whole:
        where = whole[0] if len(whole) == 1 else f"{len(whole):,} nodes"
        where = f"the node of {where}" if where.startswith("ranks ") else where
        return f"{where} ({ranks}) together"
    return f"{ranks} together"


def build(
    stragglers: list[Straggler],
    steps: list[StepVerdict],
    lateness: Lateness,
    ranks: int,
    thresholds: Thresholds,
    nodes: dict[int, str] | None = None,
    unjudged: dict[int, str] | None = None,
    holes: dict[int, dict[int, str]] | None = None,
) -> Verdict:
    """The verdict (`nodes`: each rank's node, for naming a node late as a whole; `unjudged`:
    the ranks whose reports lack what judging needs, and why; `holes`: step -> rank -> why
    that rank cannot be judged on it: named first, never cleared)."""
    verdict = _build(stragglers, steps, lateness, ranks, thresholds, nodes)
    missing, holes = unjudged or {}, holes or {}
    verdict["not_judged"] = {str(rank): why for rank, why in sorted(missing.items())}
    verdict["not_judged_steps"] = {
        str(step): {str(rank): why for rank, why in sorted(on.items())}
        for step, on in sorted(holes.items())
    }
    if missing or holes:
        by_why: dict[str, list[int]] = {}
        for rank, why in sorted(missing.items()):
            by_why.setdefault(why, []).append(rank)
        parts = [f"{ranks_text(r, NAMED, len(r))} ({why})" for why, r in by_why.items()]
        # Steps with the same ranks not judged for the same reason are named together.
        alike: dict[tuple[str, tuple[int, ...]], list[int]] = {}
        for step, on in sorted(holes.items()):
            for why in sorted(set(on.values()), reverse=True):
                ranks_there = tuple(sorted(r for r, w in on.items() if w == why))
                alike.setdefault((why, ranks_there), []).append(step)
        parts += [
            f"step{'s' if len(steps) > 1 else ''} {steps_text(steps)} on "
            f"{ranks_text(list(r), NAMED, len(r))} ({why})"
            for (why, r), steps in list(alike.items())[:NAMED]
        ]
        if len(alike) > NAMED:
            parts.append("more steps not judged on some rank")
        named = "; ".join(parts)
        rest = verdict["text"]
        if missing and verdict["late_rank"] is None and rest.startswith("no rank late"):
            rest = "among the others, " + rest
        elif rest.startswith("one rank recorded"):
            rest = rest.replace("one rank recorded", "one rank left to judge", 1)
        verdict["text"] = f"not judged: {named}; {rest}"
    return verdict


def _waits(lateness: Lateness, members: set[int], steps: set[int]) -> dict[int, float]:
    """Who waited for the late ranks: on their late steps, the ranks not late with them that
    waited for one of them most (where the collectives tell: a pipeline's other pairs waited
    for their own partners) -> their time lost."""
    waits: dict[int, float] = {}
    for (other, step), value in lateness.wait_ms.items():
        if step not in steps or other in members or value <= 0:
            continue
        target = lateness.waited_for.get((other, step))  # None: no collective tells whom
        if target is None or target in members:
            waits[other] = waits.get(other, 0.0) + value
    return waits


def _build(
    stragglers: list[Straggler],
    steps: list[StepVerdict],
    lateness: Lateness,
    ranks: int,
    thresholds: Thresholds,
    nodes: dict[int, str] | None,
) -> Verdict:
    judged = [s for s in steps if s["judged"]]
    verdict = said_nothing(len(judged), _median([s["job_step_ms"] for s in judged]))
    if not steps:
        verdict["text"] = "no step ranges ('step N') in the reports: no per-step verdict"
        return verdict
    if ranks < 2:
        verdict["text"] = "one rank recorded: who was late needs two ranks or more"
        return verdict
    if not judged:
        verdict["text"] = f"no step judged on {ranks:,} ranks"
        return verdict
    if not stragglers:
        verdict["text"] = (
            f"no rank late on the {len(judged)} judged steps of {ranks:,} ranks (no rank's "
            f"share of a step's critical path beyond the ranks on time above "
            f"{thresholds.min_ms:g} ms and {100 * thresholds.min_fraction:g} % of the step)"
        )
        return verdict
    first = stragglers[0]
    rank, late_steps = first["rank"], set(first["steps"])
    # Late together: the stragglers late on exactly its steps (a node, a switch, half the job).
    together = sorted(
        (s for s in stragglers if s["steps"] == first["steps"]),
        key=lambda s: (-s["mean_lateness_ms"], s["rank"]),
    )
    members = [s["rank"] for s in together]
    others = [s for s in stragglers if s["rank"] not in set(members)]
    whole = _whole_nodes(members, nodes or {})
    waits = _waits(lateness, set(members), late_steps)
    waited = sorted(waits, key=lambda r: (-waits[r], r))
    count = len(waited)
    by_ms = round(statistics.fmean(s["mean_lateness_ms"] for s in together), 3)
    what_if = _median(
        [s["job_step_ms"] if s["what_if_step_ms"] is None else s["what_if_step_ms"]
         for s in judged]
    )  # fmt: skip
    verdict.update(
        {
            "late_rank": rank,
            "kind": first["kind"],
            "steps": first["steps"],
            "by_ms": by_ms,
            "late_together": members[:NAMED],
            "late_together_count": len(members),
            "nodes": whole,
            "what_if_step_ms": what_if,
            "waited": waited[:NAMED],
            "waited_count": count,
            "also": [
                {
                    "rank": s["rank"],
                    "kind": s["kind"],
                    "steps": s["steps"],
                    "by_ms": s["mean_lateness_ms"],
                }
                for s in others[:NAMED]
            ],  # fmt: skip
        }
    )
    text = (
        f"{_who(rank, members, whole)} late on {len(first['steps'])} of {len(judged)} judged "
        f"steps ({steps_text(first['steps'])}) by {by_ms:.1f} ms on average"
    )
    if verdict["job_step_ms"] is not None and what_if is not None:
        text += (
            f" (the job's median step {verdict['job_step_ms']:.1f} ms, {what_if:.1f} ms had "
            f"{'it' if len(members) == 1 else 'they'} been on time)"
        )
    if waited:
        lost = statistics.fmean(waits[r] for r in waited) / max(1, len(late_steps))
        text += (
            f"; {ranks_text(waited[:NAMED], NAMED, count)} waited (lost {lost:.1f} ms a step: "
            f"exposed wait and compute slowed by waiting)"
        )
    for s in others[:2]:
        text += (
            f"; also rank {s['rank']} ({s['kind']}) on step{'s' if len(s['steps']) > 1 else ''} "
            f"{steps_text(s['steps'])} by {s['mean_lateness_ms']:.1f} ms"
        )
    verdict["text"] = text
    return verdict


def said_nothing(judged_steps: int = 0, job_step_ms: float | None = None) -> Verdict:
    """A verdict naming no rank, its sentence still to be said (empty: a summary.json written
    before verdicts were has this one)."""
    return {
        "late_rank": None,
        "kind": None,
        "steps": [],
        "judged_steps": judged_steps,
        "by_ms": None,
        "late_together": [],
        "late_together_count": 0,
        "nodes": [],
        "job_step_ms": job_step_ms,
        "what_if_step_ms": None,
        "waited": [],
        "waited_count": 0,
        "also": [],
        "not_judged": {},
        "not_judged_steps": {},
        "text": "",
    }
