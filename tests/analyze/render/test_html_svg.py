"""The report's inline SVG (nsysgen/analyze/render/html_svg.py): the colour ramp (zero neutral, the
hue at the top, red and blue from their own light ends), heatmap cells (no data blank, edges
hatched, values written from the floor on, names escaped), line charts on a log axis with
flagged points ringed and gaps where a value is missing, and bars scaled to the longest."""

from __future__ import annotations

import re

from nsysgen.analyze.render import html_svg as svg

RED, BLUE = (0xB2, 0x18, 0x2B), (0x21, 0x66, 0xAC)


def test_the_ramp_starts_neutral_and_ends_at_the_hue() -> None:
    for value, top in ((0.0, 10.0), (-1.0, 10.0), (5.0, 0.0), (float("nan"), 10.0)):
        assert svg.ramp(value, top, RED) == svg.NEUTRAL
    assert svg.ramp(10.0, 10.0, RED) == svg.ramp(99.0, 10.0, RED) == "#b2182b"
    assert svg.ramp(5.0, 10.0, RED) == "#d88086"  # halfway from #fde8e0
    assert svg.ramp(5.0, 10.0, BLUE) == "#82a9d2"  # halfway from #e3ecf7
    assert svg._fmt(0.012345) == "0.0123" and svg._fmt(12345.6) == "12,346"


def test_heatmap_cells() -> None:
    chart = svg.heatmap(["rank <0>", "rank 1"], ["3", "4"], [[0.0, None], [2.5, 10.0]], 10.0,
                        RED, "late & wait", edge_columns=[1], floor=1.0)  # fmt: skip
    assert chart.startswith('<svg xmlns="http://www.w3.org/2000/svg" role="img" '
                            'aria-label="late &amp; wait" ')  # fmt: skip
    cells = re.findall(r'fill="(#[0-9a-f]{6})"><title>([^<]*)</title>', chart)
    assert cells == [
        (svg.NEUTRAL, "rank &lt;0&gt;, step 3: 0 ms"),
        (svg.MISSING, "rank &lt;0&gt;, step 4: no data"),
        ("#eab4b3", "rank 1, step 3: 2.5 ms"),
        ("#b2182b", "rank 1, step 4: 10 ms"),
    ]
    hatch = re.findall(r'<pattern id="([^"]+)"', chart)
    assert len(hatch) == 1 and chart.count(f'fill="url(#{hatch[0]})"') == 2  # column 4, hatched
    # Two heatmaps on one page (late and wait) do not share the pattern's id.
    other = svg.heatmap(["r"], ["3"], [[1.0]], 1.0, RED, "wait", edge_columns=[0])
    assert re.findall(r'<pattern id="([^"]+)"', other) != hatch
    # Values from the floor on are written in their cells, except under the hatching.
    written = re.findall(r'font-size="9">([^<]*)<', chart)
    assert written == ["2.5"]
    legend = re.findall(r'fill="(#[0-9a-f]{6})" stroke="#ccc"/><text [^>]*>([^<]*)<', chart)
    assert legend == [(svg.NEUTRAL, "0 ms"), ("#d88086", "5 ms"), ("#b2182b", "10 ms")]


def test_lines_on_a_log_axis_ring_the_flagged_points_of_the_first_series() -> None:
    chart = svg.lines(
        ["1 KiB", "2 KiB", "4 KiB"],
        [("bus", "#111111", [1.0, None, 100.0], ""), ("exp", "#222222", [10.0] * 3, "6 4")],
        "bandwidth",
        "GB/s",
        log=True,
        marks=[0, 2],
        shaded=[1],
    )
    ticks = re.findall(r'text-anchor="end" >([^<]*)<', chart)
    assert ticks == ["0.01", "0.1", "1", "10", "100"]  # five decades up to the top
    # The missing value is a gap: two points of the first series, three of the second.
    assert re.findall(r'<polyline points="([^"]*)"', chart) == [
        "116.0,110.0 356.0,10.0", "116.0,60.0 236.0,60.0 356.0,60.0"
    ]  # fmt: skip
    rings = re.findall(r'r="5" fill="[^"]*" stroke="#d62728"[^>]*><title>([^<]*)<', chart)
    assert rings == ["bus at 1 KiB: 1 GB/s", "bus at 4 KiB: 100 GB/s"]
    assert chart.count("window edge: not judged") == 1
    assert 'stroke-dasharray="6 4"' in chart


def test_bars_are_scaled_to_the_longest_and_skip_empty_parts() -> None:
    parts = [("a", "compute", "#111111"), ("b", "idle", "#222222"), ("c", "wait", "#333333")]
    chart = svg.stacked_bars([("rank 0", {"a": 10.0, "b": 0.0, "c": 4.0}),
                              ("rank 1", {"a": 7.0})], parts, "bars")  # fmt: skip
    bars = re.findall(r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)" height="20.0" '
                      r'fill="[^"]*"><title>([^<]*)<', chart)  # fmt: skip
    assert bars == [
        ("150.0", "400.0", "rank 0: compute 10 ms"),
        ("550.0", "160.0", "rank 0: wait 4 ms"),  # the 0 ms part takes no room
        ("150.0", "280.0", "rank 1: compute 7 ms"),
    ]
    totals = re.findall(r'text-anchor="start" >(\d+ ms)<', chart)
    assert totals == ["14 ms", "7 ms"]
    assert re.findall(r'text-anchor="start" >([a-z]+)<', chart) == ["compute", "idle", "wait"]
