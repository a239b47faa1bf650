"""The judged steps read back as one typed value (nsysgen/analyze/judge/window.py): from a
summary of today, and from a baseline written before the last edge or the judged flags."""

from __future__ import annotations

from nsysgen.analyze.judge.window import JudgedWindow


def test_todays_summary_reads_its_edges_and_judged_steps() -> None:
    summary = {
        "first_step_ignored": 10,
        "last_step_ignored": 14,
        "by_step": [{"step": n, "judged": n not in (10, 12, 14)} for n in range(10, 15)],
    }
    window = JudgedWindow.read_back(summary)
    assert (window.first_edge, window.last_edge, window.judged) == (10, 14, (11, 13))
    assert window.edges == {10, 14}
    assert window.steps(range(10, 15)) == [11, 13]  # the flags, not the edges alone
    assert not window.keeps(10, alone=False) and window.keeps(10, alone=True)
    assert window.keeps(12, alone=False)


def test_an_older_baseline_has_the_first_edge_only_and_no_flags() -> None:
    window = JudgedWindow.read_back({"first_step_ignored": 3, "by_step": None})
    assert (window.edges, window.judged) == (frozenset({3}), ())
    assert window.steps([3, 4, 5]) == [4, 5]
    assert window.steps([3]) == [3]  # nothing inside: every recorded step
    empty = JudgedWindow.read_back({})
    assert (empty.first_edge, empty.last_edge, empty.steps([])) == (None, None, [])
