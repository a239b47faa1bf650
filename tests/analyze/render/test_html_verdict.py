"""The verdict the report opens with (nsysgen/analyze/render/html_verdict.py): the analysis's own
sentence where the summary has one, else sentences from its stragglers (who waited named, or
counted as "all other ranks" from three on); the sentences for no steps, one rank and no late
rank under the summary's thresholds; and the baseline comparison read back."""

from __future__ import annotations

from typing import Any

from nsysgen.analyze.judge.summary_types import Summary
from nsysgen.analyze.render import html_verdict as hv

S = Summary.from_json  # a summary as its file holds it


def job(ranks: int, late: int | None = None, **keys: Any) -> dict[str, Any]:
    """Ranks with steps 0..3 (0 and 3 the edges); every other rank waits on step 1 and 2 for
    `late`, whose straggler entry lists those steps."""
    entries = []
    for r in range(ranks):
        wait = 2.0 if late is not None and r != late else 0.0
        steps = [{"step": s, "wait_ms": wait if s in (1, 2) else 0.0} for s in range(4)]
        entries.append({"rank": r, "steps": steps})
    stragglers = [] if late is None else [
        {"rank": late, "steps": [1, 2], "kind": "slow rank", "mean_lateness_ms": 12.34}
    ]  # fmt: skip
    return {"ranks": entries, "stragglers": stragglers, "first_step_ignored": 0,
            "last_step_ignored": 3, **keys}  # fmt: skip


def test_sentences_from_the_stragglers() -> None:
    said = hv.verdict(S(job(3, late=1)))
    assert said.late and said.details == ()
    assert said.headline == (
        "Rank 1 (slow rank) was late on 2 of 2 judged steps (1, 2) by 12.3 ms on average; "
        "ranks 0 and 2 waited for it."
    )
    four = hv.verdict(S(job(4, late=1))).headline  # three others, all waited
    assert four.endswith("by 12.3 ms on average; all 3 other ranks waited for it.")
    nobody = job(3, late=1)
    for rank in nobody["ranks"]:
        for step in rank["steps"]:
            step["wait_ms"] = 0.0
    nobody["stragglers"][0].pop("kind")
    assert hv.verdict(S(nobody)).headline == (
        "Rank 1 was late on 2 of 2 judged steps (1, 2) by 12.3 ms on average."
    )


def test_the_analysis_own_sentence_wins_and_names_the_others_itself() -> None:
    summary = job(3, late=1, verdict={"text": "rank 1 late on 2 of 2 judged steps; also rank 0"})
    summary["stragglers"].append({"rank": 0, "steps": [2], "mean_lateness_ms": 1.5})
    said = hv.verdict(S(summary))
    assert said.headline == "Rank 1 late on 2 of 2 judged steps; also rank 0."
    assert said.details == () and said.late
    without = job(3, late=1)
    without["stragglers"].append({"rank": 0, "steps": [2], "mean_lateness_ms": 1.5})
    assert hv.verdict(S(without)).details == (
        # Rank 1, late itself, waited for nobody.
        "Rank 0 was late on 1 of 2 judged steps (2) by 1.5 ms on average; rank 2 waited for it.",
    )
    # An empty sentence is none (a summary.json written before verdicts were).
    assert hv._given(S({"verdict": {"text": "fine."}})) == "Fine."
    assert hv._given(S({"verdict": {"text": ""}})) is None and hv._given(S({})) is None


def test_the_sentences_without_a_late_rank() -> None:
    assert hv.verdict(S({"ranks": []})).headline == (
        "No step ranges ('step N') in the reports: no per-step verdict."
    )
    assert hv.verdict(S(job(1))).headline == (
        "One rank recorded: who was late needs two ranks or more."
    )
    quiet = hv.verdict(S(job(5, thresholds={"late_min_ms": 2.5, "late_min_fraction_of_step": 0.1})))
    assert not quiet.late
    assert quiet.headline == (
        "No rank was late: on the 2 judged steps of 5 ranks, no rank's share of a step's "
        "critical path beyond the ranks on time was above 2.5 ms and 10 % of the step."
    )
    assert hv.console_line(S(job(2))) == (
        "verdict: No rank was late: on the 2 judged steps of 2 ranks, no rank's share of a "
        "step's critical path beyond the ranks on time was above 1 ms and 25 % of the step."
    )


def test_the_baseline_comparison_read_back() -> None:
    assert hv.regression(S(job(2))) is None
    block = {
        "text": "REGRESSED job median step time: 10 -> 20 ms",
        "baseline": "old/analysis",
        "changes": [{"what": "a", "regressed": True}, {"what": "b", "regressed": False},
                    "not a change"],
    }  # fmt: skip
    found = hv.regression(S(job(2, baseline=block)))
    assert found is not None
    assert (found.headline, found.source) == (
        "REGRESSED job median step time: 10 -> 20 ms.", "old/analysis"
    )  # fmt: skip
    assert [c["what"] for c in found.changes] == ["a", "b"]
    assert [c["what"] for c in found.regressed] == ["a"]
