"""The evidence sections of the HTML report, each from summary.json's content: lateness by rank
and step, where each rank's step went, and the window's edges. Up to SCALE_RANKS ranks a row per
rank; from there on, distributions over ranks per step, the top ranks and groups by node."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from nsysgen.analyze.judge import naming
from nsysgen.analyze.judge.summary_types import Summary
from nsysgen.analyze.render import html_svg as svg
from nsysgen.analyze.render import views

RED, BLUE = (0xB2, 0x18, 0x2B), (0x21, 0x66, 0xAC)
_SHOWN = 0.001  # ms: lateness below the tables' precision is no lateness to list


def table(header: Sequence[str], rows: Sequence[Sequence[object]], caption: str = "") -> str:
    """Numbers right-aligned (a column of them reads by magnitude), words left; a column's
    header as its first row."""

    def cell(tag: str, text: str, number: bool) -> str:
        return f"<{tag}{' class=n' if number else ''}>{escape(text)}</{tag}>"

    numeric = [_numeric(rows[0][j]) if rows else False for j in range(len(header))]
    head = "".join(cell("th", h, n) for h, n in zip(header, numeric, strict=True))
    body = "".join(
        "<tr>" + "".join(cell("td", _cell(v), _numeric(v)) for v in row) + "</tr>" for row in rows
    )
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _numeric(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    return isinstance(value, str) and value.rstrip(" %").lstrip("+-").replace(".", "").isdigit()


def _cell(value: object) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 1000 else f"{value:,.1f}"
    return str(value)


def figure(svg_text: str, caption: str) -> str:
    return f"<figure>{svg_text}<figcaption>{escape(caption)}</figcaption></figure>"


def para(text: str) -> str:
    return f"<p>{escape(text)}</p>"


def _grid(
    ranks: Sequence[Mapping[str, Any]], steps: list[int], field: str
) -> list[list[float | None]]:
    column = {s: j for j, s in enumerate(steps)}
    grid: list[list[float | None]] = [[None] * len(steps) for _ in ranks]
    for i, rank in enumerate(ranks):
        for s in rank["steps"]:
            value = s.get(field)
            if isinstance(value, int | float) and not isinstance(value, bool):
                grid[i][column[int(s["step"])]] = float(value)
    return grid


def _top(grid: list[list[float | None]], floor: float) -> float:
    return max([floor, *(v for row in grid for v in row if v is not None)])


def _heatmaps(summary: Summary, ranks: Sequence[Mapping[str, Any]], title: str) -> str:
    steps = sorted({int(s["step"]) for r in ranks for s in r["steps"]})
    edges = [j for j, s in enumerate(steps) if s in _edges(summary)]
    names = [f"rank {r['rank']}" for r in ranks]
    floor = float(summary.thresholds.get("late_min_ms", 1.0))
    out = []
    for field, hue, what in (
        ("late_ms", RED, "late: its share of the step's critical path beyond the ranks on time"),
        ("wait_ms", BLUE, "wait: the time it lost waiting (exposed wait, compute slowed by it)"),
    ):
        grid = _grid(ranks, steps, field)
        chart = svg.heatmap(names, [str(s) for s in steps], grid, _top(grid, floor), hue,
                            f"{title}: {what}", edge_columns=edges, floor=floor)  # fmt: skip
        out.append(figure(chart, f"{title}, {what} (ms per step; 0 is grey, hatched columns "
                                 "are the window's edges, not judged)"))  # fmt: skip
    return "".join(out)


def _edges(summary: Summary) -> set[int]:
    return set(summary.judged.edges)


def _spread_chart(summary: Summary, field: str, what: str, colour: str) -> str:
    spreads = views.per_step(summary, field)
    shaded = [j for j, s in enumerate(spreads) if s.edge]
    chart = svg.lines(
        [str(s.step) for s in spreads],
        [
            ("max over ranks", colour, [s.max for s in spreads], ""),
            ("p90", colour, [s.p90 for s in spreads], "6 3"),
            ("median", "#555555", [s.median for s in spreads], "2 3"),
        ],
        what,
        "ms",
        shaded=shaded,
    )
    return figure(chart, f"{what} per step over ranks: median, p90 and max (grey columns: the "
                         "window's edges, not judged)")  # fmt: skip


def lateness(summary: Summary) -> str:
    ranks = views.stepped(summary)
    head = '<section id="lateness"><h2>Lateness by rank and step</h2>'
    if len(ranks) < 2:
        return head + para("Lateness needs two ranks or more with steps.") + "</section>"
    how = ", ".join(summary.collectives_matched_by) or "step times"
    intro = para(
        f"{summary.collectives_matched:,} collectives matched across ranks (by "
        f"{how}). Each step's critical path is walked back from its last collective: at a "
        "collective to the rank that arrived last (its kernel is the shortest: the others "
        "waited for it), to the rank whose own work made it late. Its lateness is its share of "
        "that path beyond the ranks on time, each stretch measured on its own clock."
    )
    if len(ranks) < views.SCALE_RANKS:
        heat = _heatmaps(summary, ranks, "per rank")
        return head + intro + heat + by_step(summary) + "</section>"
    by_rank = views.lateness_by_rank(summary)
    top = by_rank[: views.TOP]
    waiters = sorted(by_rank, key=lambda r: (-r.wait_ms, r.rank))[: views.TOP]
    top_ranks = {r.rank for r in top}
    top_entries = [r for r in ranks if int(r["rank"]) in top_ranks]
    top_entries.sort(key=lambda r: [t.rank for t in top].index(int(r["rank"])))
    nodes = views.by_node(summary)
    node_note = (
        "nodes as the reports name them"
        if views.nodes_named(summary)
        else f"no node in the report names: consecutive blocks of {views.per_node(summary)} ranks"
    )
    return (
        head
        + intro
        + _spread_chart(summary, "late_ms", "late (ms)", "#b2182b")
        + _spread_chart(summary, "wait_ms", "wait (ms)", "#2166ac")
        + by_step(summary)
        + "<h3>Top late ranks</h3>"
        + table(
            ["rank", "node", "late, judged steps (ms)", "straggler steps", "waited (ms)"],
            [
                (r.rank, r.node, r.late_ms, naming.steps_text(r.late_steps) or "–", r.wait_ms)
                for r in top
                if r.late_ms >= _SHOWN
            ],
            f"the latest of {len(by_rank):,} ranks: {sum(r.late_ms >= _SHOWN for r in by_rank):,} "
            "held another rank up on a judged step",
        )
        + _heatmaps(summary, top_entries, f"the {len(top)} latest ranks")
        + "<h3>Ranks that waited most</h3>"
        + table(
            ["rank", "node", "waited, judged steps (ms)", "late (ms)"],
            [(r.rank, r.node, r.wait_ms, r.late_ms) for r in waiters],
        )  # fmt: skip
        + "<h3>By node</h3>"
        + table(
            ["node", "ranks", "late (ms)", "waited (ms)", "latest rank"],
            [
                (n.node, n.ranks, n.late_ms, n.wait_ms, n.latest_rank) for n in nodes[: views.TOP]
            ],  # fmt: skip
            f"the {min(views.TOP, len(nodes))} latest of {len(nodes):,} groups ({node_note})",
        )
        + "</section>"
    )


def by_step(summary: Summary, most: int = 60) -> str:
    """The job's steps (the summary's by_step, where the analysis made it): the job's step
    time, the rank the others waited for and how many waited; the judged steps, at most `most`
    (the latest ones first beyond that)."""
    rows: list[Mapping[str, Any]] = list(summary.by_step)
    if not rows:
        return ""
    judged = [s for s in rows if s.get("judged")]
    shown = judged if len(judged) <= most else sorted(
        judged, key=lambda s: -float(s.get("late_ms") or 0)
    )[:most]  # fmt: skip
    caption = f"the {len(judged)} judged steps" + (
        f", the {most} with the longest lateness" if len(judged) > most else ""
    )
    caption += (
        "; late: a rank's share of the step's critical path beyond the ranks on time, the "
        "time the job lost to it (– below the noise floor); late ranks: how many were late "
        "together; on time: the job's step had they been on time"
    )
    return "<h3>Step by step</h3>" + table(
        [
            "step",
            "job step (ms)",
            "late rank",
            "late by (ms)",
            "late ranks",
            "on time (ms)",
            "ranks waited",
        ],
        [
            (
                s.get("step"),
                s.get("job_step_ms"),
                "–" if s.get("late_rank") is None else s.get("late_rank"),
                s.get("late_ms") if s.get("late_rank") is not None else "–",
                s.get("late_count", 0),
                "–" if s.get("what_if_step_ms") is None else s.get("what_if_step_ms"),
                s.get("waited_count", len(s.get("waited") or [])),
            )
            for s in shown
        ],
        caption,
    )


def _parts() -> list[tuple[str, str, str]]:
    return [(key, label, colour) for key, label, colour, _ in views.PARTS]


def breakdown(summary: Summary) -> str:
    ranks = views.stepped(summary)
    head = '<section id="breakdown"><h2>Where each rank\'s step went</h2>'
    if not ranks:
        return head + para("No step ranges: no per-step figures.") + "</section>"
    intro = para(
        "Mean per judged step (the window's edges left out), split into compute, "
        "communication transfer, waiting for peers (a late rank's cost, paid by the others), "
        "host gaps, memcpy/memset alone and GPU idle."
    )
    if len(ranks) < views.SCALE_RANKS:
        rows = [(f"rank {r['rank']}", views.rank_parts(r)) for r in ranks]
        chart = svg.stacked_bars(rows, _parts(), "mean step per rank")
        return head + intro + figure(chart, "mean step per rank, by part (ms)") + "</section>"
    parts = {int(r["rank"]): views.rank_parts(r) for r in ranks}
    by_rank = views.lateness_by_rank(summary)
    late = [r.rank for r in by_rank[:5] if r.late_steps]  # the stragglers, not the noise
    waited = [r.rank for r in sorted(by_rank, key=lambda r: (-r.wait_ms, r.rank))[:3]]
    totals = sorted(parts, key=lambda k: (sum(parts[k].values()), k))
    median_rank = totals[len(totals) // 2]
    rows = [(f"rank {median_rank} (median)", parts[median_rank])]
    rows += [(f"rank {k} (late)", parts[k]) for k in late]
    rows += [(f"rank {k} (waited)", parts[k]) for k in waited if k not in late]
    chart = svg.stacked_bars(rows, _parts(), "mean step of chosen ranks")
    stats = []
    for key, label, _ in _parts():
        values = [p[key] for p in parts.values()]
        stats.append((label, views.quantile(values, 0.5), views.quantile(values, 0.9),
                      max(values)))  # fmt: skip
    return (
        head
        + intro
        + figure(
            chart,
            f"the rank with the median step, the latest ranks and those that waited "
            f"most, of {len(ranks):,} ranks (ms)",
        )  # fmt: skip
        + table(
            ["part", "median over ranks (ms)", "p90 (ms)", "max (ms)"],
            stats,
            f"each part of the mean step, over {len(ranks):,} ranks",
        )  # fmt: skip
        + "</section>"
    )


def window(summary: Summary) -> str:
    first, last = summary.judged.first_edge, summary.judged.last_edge
    head = '<section id="window"><h2>The window\'s edges</h2>'
    if first is None and last is None:
        return head + para("No steps recorded: no window.") + "</section>"
    items = [
        f"First recorded step {first}: left out (warm-up, and the pause when the capture opens).",
        f"Last recorded step {last}: left out (the pause when the capture closes, seconds on "
        "the recorded ranks).",
    ]
    own = sorted(
        {
            (int(r["rank"]), int(s["step"]), str(s["window_edge"]))
            for r in views.stepped(summary)
            for s in r["steps"]
            if s.get("window_edge") and int(s["step"]) not in (first, last)
        }
    )
    if own:
        ranks = sorted({r for r, _, _ in own})
        items.append(
            f"{naming.ranks_text(ranks).capitalize()} opened or closed their own window on another "
            "step "
            "(ranks on other nodes can start a step apart): those steps are left out for them."
        )
    steps = views.judged_steps(summary)
    if steps:
        shown = (
            f"{steps[0]}..{steps[-1]}"
            if steps == list(range(steps[0], steps[-1] + 1))
            else naming.steps_text(steps)
        )
        items.append(f"Judged: steps {shown} ({len(steps)} steps).")
    return head + "<ul>" + "".join(f"<li>{escape(i)}</li>" for i in items) + "</ul></section>"
