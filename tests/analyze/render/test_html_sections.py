"""The report's evidence sections (nsysgen/analyze/render/html_sections.py): tables that right-align
numbers and write an absent figure as a dash, the step-by-step table capped to the latest steps,
the window's edges with a rank's own edges named, and the sections' words when there is nothing
to show."""

from __future__ import annotations

import re
from typing import Any

from nsysgen.analyze.judge.summary_types import Summary
from nsysgen.analyze.render import html_sections as hs

S = Summary.from_json  # a summary as its file holds it


def test_tables_align_numbers_and_escape_words() -> None:
    rows = [(1, 2.5, "+3.0 %", "a<b"), (None, 1234.56, "x", True)]
    page = hs.table(["rank", "late (ms)", "change", "what"], rows, "cap & more")
    assert page.startswith("<table><caption>cap &amp; more</caption><thead><tr><th class=n>rank")
    assert "<th>what</th>" in page  # the first row's cell decides a column's alignment
    cells = re.findall(r"<td( class=n)?>([^<]*)</td>", page)
    assert cells == [
        (" class=n", "1"), (" class=n", "2.500"), (" class=n", "+3.0 %"), ("", "a&lt;b"),
        ("", "–"), (" class=n", "1,234.6"), ("", "x"), ("", "True"),
    ]  # fmt: skip
    assert hs.table(["a"], []) == "<table><thead><tr><th>a</th></tr></thead><tbody></tbody></table>"
    assert hs.para("<b>") == "<p>&lt;b&gt;</p>"
    assert (
        hs.figure("<svg/>", "x < y") == "<figure><svg/><figcaption>x &lt; y</figcaption></figure>"
    )


def test_step_by_step_keeps_the_judged_steps_latest_first_past_the_cap() -> None:
    summary = {"by_step": [
        {"step": s, "judged": s > 0, "job_step_ms": 10.0 + s, "late_rank": None if s % 2 else 1,
         "late_ms": float(s), "late_count": 0 if s % 2 else 1,
         "what_if_step_ms": None if s % 2 else 10.0, "waited": [0, 2]}
        for s in range(6)
    ]}  # fmt: skip
    page = hs.by_step(S(summary), most=3)
    assert "<caption>the 5 judged steps, the 3 with the longest lateness; late: a rank" in page
    rows = re.findall(r"<tr><td class=n>(\d+)</td>.*?</tr>", page)
    assert rows == ["5", "4", "3"]
    # No late rank is a dash, and so are its lateness and the step had it been on time; the
    # count of ranks that waited from the list when not given.
    assert re.findall(r"<tr>(?:<td[^>]*>[^<]*</td>){2}<td[^>]*>([^<]*)</td>", page) == [
        "–", "1", "–"
    ]  # fmt: skip
    assert re.findall(r"<tr>(?:<td[^>]*>[^<]*</td>){5}<td[^>]*>([^<]*)</td>", page) == [
        "–", "10.000", "–"
    ]  # fmt: skip
    assert page.count("<td class=n>2</td></tr>") == 3
    everything = hs.by_step(S(summary))
    assert "<caption>the 5 judged steps; late: a rank" in everything
    assert hs.by_step(S({})) == ""


def stepped(rank: int, steps: range, first: int, last: int) -> dict[str, Any]:
    edge = {first: "open", last: "close"}
    return {"rank": rank, "steps": [{"step": s, "window_edge": edge.get(s)} for s in steps]}


def test_the_window_names_the_ranks_with_edges_of_their_own() -> None:
    summary = {"first_step_ignored": 0, "last_step_ignored": 5,
               "ranks": [stepped(0, range(6), 0, 5), stepped(1, range(1, 6), 1, 5),
                         stepped(2, range(6), 0, 5)]}  # fmt: skip
    items = re.findall(r"<li>([^<]*)</li>", hs.window(S(summary)))
    assert items == [
        "First recorded step 0: left out (warm-up, and the pause when the capture opens).",
        "Last recorded step 5: left out (the pause when the capture closes, seconds on the "
        "recorded ranks).",
        "Rank 1 opened or closed their own window on another step (ranks on other nodes can "
        "start a step apart): those steps are left out for them.",
        "Judged: steps 1..4 (4 steps).",
    ]


def test_what_the_sections_say_with_nothing_to_show() -> None:
    assert "<p>No steps recorded: no window.</p>" in hs.window(S({}))
    assert "<p>No step ranges: no per-step figures.</p>" in hs.breakdown(S({"ranks": []}))
    one = {"ranks": [stepped(0, range(3), 0, 2)]}
    assert "<p>Lateness needs two ranks or more with steps.</p>" in hs.lateness(S(one))
    two = {"ranks": [stepped(0, range(3), 0, 2), stepped(1, range(3), 0, 2)],
           "collectives_matched": 1234, "collectives_matched_by": ["operationId"]}  # fmt: skip
    assert "<p>1,234 collectives matched across ranks (by operationId). " in hs.lateness(S(two))
    two.pop("collectives_matched_by")
    assert "(by step times)" in hs.lateness(S(two))
