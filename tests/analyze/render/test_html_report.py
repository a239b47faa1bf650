"""report.html's content without a browser: the verdict first, names from the reports escaped,
zero lateness in the neutral colour (the HTML's and the PNG's), views that do not grow a row
per rank from 64 ranks on, and the console's order (the verdict on the first line)."""

from __future__ import annotations

import copy
import re
from typing import Any

from nsysgen.analyze.judge.summary_types import Summary
from nsysgen.analyze.render import console, html_svg, steps_plot, views
from nsysgen.analyze.render.html_report import render
from tests.analyze.synth_summary import summary as synthetic

S = Summary.from_json  # a summary as its file holds it

HOSTILE = "<script>alert('x')</script>"


def _zeroed(summary: Any) -> Any:
    """The same job with nobody late and nobody waiting (copies of one report)."""
    quiet = copy.deepcopy(summary)
    for rank in quiet["ranks"]:
        for step in rank["steps"]:
            step["late_ms"] = step["wait_ms"] = 0.0
    quiet["stragglers"] = []
    return quiet


def test_verdict_comes_first_and_names_the_late_rank_and_who_waited() -> None:
    page = render(S(synthetic(ranks=8, late=5)))
    verdict = page.index('id="verdict-headline"')
    assert verdict < page.index('id="lateness"') < page.index('id="breakdown"')
    headline = re.search(r'id="verdict-headline">([^<]*)<', page)
    assert headline is not None
    assert headline.group(1).startswith("Rank 5 (slow rank) was late on 15 of 18 judged steps")
    assert "all 7 other ranks waited for it" in headline.group(1)


def test_names_from_the_reports_are_escaped() -> None:
    hostile = synthetic(ranks=4, late=1)
    hostile["label"] = HOSTILE
    hostile["limits"] = [f"limit about {HOSTILE}"]
    for rank in hostile["ranks"]:
        rank["host"] = HOSTILE
        rank["report"] = HOSTILE
    for row in hostile["nccl_by_size"]:
        row["op"] = HOSTILE
    hostile["verdict"] = {"text": f"rank 1 {HOSTILE}"}
    page = render(S(hostile), notes=[f"not drawn: {HOSTILE}"], files=[HOSTILE])
    assert "<script" not in page.lower()
    assert "&lt;script&gt;" in page
    # Nothing is fetched: no script, no source, no link but the page's own anchors.
    assert not re.search(r"\b(src|srcset)=", page)
    assert re.findall(r'href="([^"]*)"', page) == [
        "#lateness", "#breakdown", "#nccl", "#window", "#not-judged"
    ]  # fmt: skip


def test_zero_lateness_is_drawn_in_the_neutral_colour() -> None:
    """Copies of one report: every cell is 0 and must read as "nobody late", in the HTML and
    in the PNG (the colormap's lightest end, not its middle)."""
    quiet = _zeroed(synthetic(ranks=4, late=1))
    page = render(S(quiet))
    cells = re.findall(
        r'<rect [^>]*fill="(#[0-9a-f]{6})"><title>rank \d+, step \d+: ([^<]*)<', page
    )
    assert cells and {fill for fill, _ in cells} == {html_svg.NEUTRAL}
    assert page.count("No rank was late") == 1  # (no "verdict" key: the report says it)
    summary = S(quiet)
    figure = steps_plot.lateness_figure(summary)
    for axes in figure.axes[:2]:
        image = axes.images[0]
        assert image.norm.vmax >= 1.0  # the threshold, not 0: zeros at the bottom of the scale
        assert image.norm(0.0) == 0.0  # the colormap's lightest end
        red, green, blue, _ = image.cmap(image.norm(0.0))
        assert min(red, green, blue) > 0.9, (red, green, blue)  # near white, not orange


def test_views_from_64_ranks_on_show_distributions_not_a_row_per_rank() -> None:
    big = synthetic(ranks=1024, late=700)
    page = render(S(big))
    for heading in ("Top late ranks", "Ranks that waited most", "By node"):
        assert f"<h3>{heading}</h3>" in page
    assert "median, p90 and max" in page
    # Bars of the breakdown: the median rank, the straggler and three that waited.
    bars = re.findall(r"<title>(rank \d+ \([a-z]+\)): compute ", page)
    assert bars == [
        "rank 606 (median)", "rank 700 (late)", "rank 934 (waited)", "rank 403 (waited)",
        "rank 836 (waited)",
    ]  # fmt: skip
    rows = {m for m in re.findall(r"<title>rank (\d+), step", page)}
    assert len(rows) <= views.TOP and "700" in rows
    assert "all 1,023 other ranks waited for it" in page
    assert "node-087" in page  # the straggler's node heads the nodes
    assert len(page) < 400_000
    # The PNG breakdown likewise: five bars per part, not 1,024.
    figure = steps_plot.breakdown_figure(S(big))
    labels = [t.get_text() for t in figure.axes[0].get_xticklabels()]
    assert labels == ["606 (median)", "700 (late)", "934 (waited)", "403 (waited)",
                      "836 (waited)"]  # fmt: skip


def test_the_nccl_sizes_far_below_the_fabric_are_flagged() -> None:
    page = render(S(synthetic(ranks=8, late=5)))
    row = re.search(r"<tr><td>64 KiB</td>(.*?)</tr>", page)
    assert row is not None and "far below the fabric" in row.group(1)
    assert "10 %" in row.group(1)
    assert "expected from the fabric" in page


def test_the_console_prints_the_verdict_first_and_notes_after() -> None:
    lines = [
        "no NCCL kernels in 2 report(s): nothing to plot",
        "not drawn: heatmap_exposed_comm.png: every step's exposed communication is 0 ms",
        "steps 8..15 on 2 rank(s); first and last step not judged",
        "straggler: rank 1 (slow rank) late on steps 9, 12, 13, 14 by 49.4 ms on average",
        "baseline old: 6 figure(s) compared, 2 regressed beyond 10 %",
        "REGRESSED  job median step time: 69.030 -> 93.935 ms (+36.1 %)",
        "   waited  rank 0 median step time: 69.030 -> 101.464 ms (+47.0 %): waited for rank 1",
        "verdict: Rank 1 (slow rank) was late on 4 of 6 judged steps",
        "report: out/report.html",
        "wrote out/summary.json",
    ]
    assert console.order(lines) == [lines[i] for i in (7, 3, 4, 5, 6, 2, 0, 1, 8, 9)]


def test_a_summary_without_the_split_takes_the_wait_out_of_communication_and_idle() -> None:
    """An older summary.json (no comm_wait_ms): the lateness analysis's wait_ms stands in for
    the waiting, carved out of the exposed communication first, then out of idle time."""
    step = {"compute_busy_ms": 10.0, "exposed_comm_ms": 4.0, "other_ms": 1.0, "idle_ms": 20.0,
            "wait_ms": 9.0}  # fmt: skip
    assert views.step_parts(step) == {
        "compute": 10.0, "transfer": 0.0, "wait": 9.0, "host": 0.0, "other": 1.0, "idle": 15.0
    }  # fmt: skip
    split = {**step, "comm_wait_ms": 3.0, "comm_transfer_ms": 1.0, "host_gap_ms": 5.0}
    assert views.step_parts(split) == {
        "compute": 10.0, "transfer": 1.0, "wait": 3.0, "host": 5.0, "other": 1.0, "idle": 20.0
    }  # fmt: skip
