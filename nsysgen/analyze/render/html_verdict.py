"""The verdict the report opens with: who was late, on which steps, by how much, and who waited;
against a baseline, whether the job's step time regressed and why. Plain sentences, from the
summary: its own verdict where the analysis made one, else from its stragglers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nsysgen.analyze.judge import naming
from nsysgen.analyze.judge.summary_types import Summary
from nsysgen.analyze.render import views


@dataclass(frozen=True)
class Verdict:
    headline: str  # one sentence: the answer
    details: tuple[str, ...]  # the sentences under it
    late: bool  # a rank held the others up


def _given(summary: Summary) -> str | None:
    """The analysis's own verdict sentence, when the summary has one."""
    given = summary.verdict["text"]
    if not given:
        return None
    return _upper(given) + ("" if given.endswith(".") else ".")


def straggler_sentence(summary: Summary, s: Mapping[str, Any]) -> str:
    judged = len(views.judged_steps(summary))
    steps = [int(x) for x in s.get("steps", [])]
    waited = views.waited_for(summary, int(s["rank"]), steps)
    kind = f" ({s['kind']})" if s.get("kind") else ""
    others = len(views.stepped(summary)) - 1
    if len(waited) == others > 2:
        who = f"; all {others:,} other ranks waited for it"
    else:
        who = f"; {naming.ranks_text(waited)} waited for it" if waited else ""
    return (
        f"rank {s['rank']}{kind} was late on {len(steps)} of {judged} judged steps "
        f"({naming.steps_text(steps)}) by {float(s.get('mean_lateness_ms', 0)):.1f} ms on "
        f"average{who}"
    )


def verdict(summary: Summary) -> Verdict:
    stragglers: Sequence[Mapping[str, Any]] = summary.stragglers
    ranks = views.stepped(summary)
    given = _given(summary)
    details = [_upper(straggler_sentence(summary, s)) + "." for s in stragglers]
    if stragglers:
        headline = given or details[0]
        # The analysis's own sentence names the other late ranks too ("also rank 0 ...").
        return Verdict(headline, () if given else tuple(details[1:]), True)
    if not ranks:
        headline = "No step ranges ('step N') in the reports: no per-step verdict."
    elif len(ranks) < 2:
        headline = "One rank recorded: who was late needs two ranks or more."
    else:
        thresholds = summary.thresholds
        bar = (
            f"{thresholds.get('late_min_ms', 1):g} ms and "
            f"{100 * float(thresholds.get('late_min_fraction_of_step', 0.25)):g} % of the step"
        )
        headline = (
            f"No rank was late: on the {len(views.judged_steps(summary))} judged steps of "
            f"{len(ranks):,} ranks, no rank's share of a step's critical path beyond the ranks "
            f"on time was above {bar}."
        )
    return Verdict(given or headline, (), False)


def console_line(summary: Summary) -> str:
    """The verdict as the first line `nsysgen analyze` prints."""
    return "verdict: " + verdict(summary).headline


@dataclass(frozen=True)
class Regression:
    """The comparison against a baseline, as summary.json's "baseline" holds it."""

    headline: str
    changes: tuple[Mapping[str, Any], ...]  # what, old, new, unit, percent, regressed, note
    source: str

    @property
    def regressed(self) -> tuple[Mapping[str, Any], ...]:
        return tuple(c for c in self.changes if c.get("regressed"))


def regression(summary: Summary) -> Regression | None:
    """The comparison's verdict (about the job's step time, naming its cause) and figures, or
    None without --baseline."""
    block = summary.baseline
    if block is None:
        return None
    changes = tuple(c for c in block.get("changes") or [] if isinstance(c, Mapping))
    text = str(block.get("text") or "")
    return Regression(_upper(text) + ("" if text.endswith(".") else "."), changes,
                      str(block.get("baseline") or ""))  # fmt: skip


def _upper(text: str) -> str:
    return text[:1].upper() + text[1:]
