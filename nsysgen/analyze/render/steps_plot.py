"""Pictures of the per rank x step analysis: who was late (lateness and wait per rank and step),
exposed communication per rank and step, the per-rank time bar, and NCCL time and bus bandwidth
against message size on one shared x axis. Drawn from the summary (summary.json's content), so
they show exactly the figures the summary holds.

Every figure is built on a constrained layout, its legends outside the axes, its title and the
job, run and report count it shows above them: nothing is clipped or covers the data. A figure
that would hold only zeros (or nothing) is not drawn; `draw_all` says why.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, cast

from nsysgen.analyze.judge.summary_types import RankEntry, StepColumn, Summary
from nsysgen.analyze.read.nccl import NcclCall, human_size
from nsysgen.analyze.read.safe import op_file
from nsysgen.analyze.render import views
from nsysgen.analyze.render.plot import Plots, new_figure, pyplot, save


def _ranks(summary: Summary) -> list[RankEntry]:
    return cast(list[RankEntry], views.stepped(summary))


# A picture stays a picture at any scale: at most this many inches (a cell per step and rank
# gets smaller, not the file bigger) and this many labelled ticks per axis.
_MAX_WIDTH_IN, _MAX_HEIGHT_IN = 16.0, 10.0
_MAX_TICKS = 40


def _size(width: float, height: float) -> tuple[float, float]:
    return min(width, _MAX_WIDTH_IN), min(height, _MAX_HEIGHT_IN)


def _ticks(labels: list[str]) -> tuple[list[int], list[str]]:
    """Every label while they fit, else every k-th (the first and the k-th after it ...)."""
    every = -(-len(labels) // _MAX_TICKS)
    kept = list(range(0, len(labels), every))
    return kept, [labels[i] for i in kept]


def _grid(ranks: list[RankEntry], field: StepColumn) -> tuple[list[int], list[list[float]]]:
    steps = sorted({s["step"] for r in ranks for s in r["steps"]})
    column = {step: i for i, step in enumerate(steps)}
    grid = [[float("nan")] * len(steps) for _ in ranks]
    for row, rank in enumerate(ranks):
        for s in rank["steps"]:
            value = s[field]
            if isinstance(value, int | float):
                grid[row][column[s["step"]]] = float(value)
    return steps, grid


def _has_values(summary: Summary, field: StepColumn) -> bool:
    return any(
        isinstance(v := s[field], int | float) and v > 0
        for r in _ranks(summary)
        for s in r["steps"]
    )


def _heat(
    figure: Any, axis: Any, ranks: list[RankEntry], field: StepColumn, cmap: str, floor: float
) -> None:
    """A heatmap whose 0 is the colormap's lightest end, never its middle: the top of the scale
    is at least `floor` (the lateness threshold), so a grid of zeros reads as nothing late."""
    steps, grid = _grid(ranks, field)
    top = max([floor, *(v for row in grid for v in row if v == v)])
    colours = pyplot().get_cmap(cmap).with_extremes(bad="white")  # white: no figure there
    image = axis.imshow(
        grid, aspect="auto", cmap=colours, interpolation="nearest", vmin=0, vmax=top
    )
    axis.set_xticks(*_ticks([str(s) for s in steps]), fontsize=8)
    axis.set_yticks(*_ticks([str(r["rank"]) for r in ranks]), fontsize=8)
    axis.set_xlabel("step (the first and last: the window's edges, not judged)")
    axis.set_ylabel("rank")
    figure.colorbar(image, ax=axis, label="ms")


def _floor(summary: Summary) -> float:
    return float(summary.thresholds.get("late_min_ms", 1.0))


def _spread(axis: Any, summary: Summary, field: str, colour: str, what: str) -> None:
    """Per step over ranks: the median, p90 and max of `field` (from SCALE_RANKS ranks on)."""
    from matplotlib.ticker import MaxNLocator

    spreads = views.per_step(summary, field)
    x = [s.step for s in spreads]
    axis.plot(x, [s.max for s in spreads], color=colour, marker="o", markersize=3, label="max")
    axis.plot(x, [s.p90 for s in spreads], color=colour, linestyle="--", label="p90")
    axis.plot(x, [s.median for s in spreads], color="#555555", linestyle=":", label="median")
    for s in spreads:
        if s.edge:
            axis.axvspan(s.step - 0.5, s.step + 0.5, color="#eeeeee", zorder=0)
    axis.set_ylim(bottom=0, top=max([_floor(summary), *(s.max for s in spreads)]) * 1.1)
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    axis.set_xlabel("step (grey: the window's edges, not judged)")
    axis.set_ylabel("ms")
    axis.set_title(f"{what}: median, p90, max over {len(_ranks(summary)):,} ranks", fontsize=9)


def _latest(summary: Summary, count: int = 16) -> list[RankEntry]:
    order = [r.rank for r in views.lateness_by_rank(summary)][:count]
    by_rank = {r["rank"]: r for r in _ranks(summary)}
    return [by_rank[rank] for rank in order]


def lateness_figure(summary: Summary) -> Any:
    """Who cost the job time: per rank and step, its share of the step's critical path beyond
    the ranks on time (late), and apart from it, the time it lost waiting (wait). The late rank
    stands out on the left; the ranks that waited for it on the right. From SCALE_RANKS ranks
    on: the 16 latest ranks' heatmaps over the spread of both per step across every rank."""
    ranks = _ranks(summary)
    steps = len({s["step"] for r in ranks for s in r["steps"]})
    scaled = len(ranks) >= views.SCALE_RANKS
    shown = _latest(summary) if scaled else ranks
    # At scale a row of spread panels is added below the heatmaps (the figure stays bounded).
    spread_in = 3.2 if scaled else 0.0
    heat_in = max(3.2, 0.45 * len(shown) + 2.2)
    figure, axes = new_figure(
        "Late ranks: the time each cost the job, per rank and step",
        summary.label,
        _size(max(9.0, 0.8 * steps + 5), heat_in + spread_in),
        rows=2 if scaled else 1,
        columns=2,
    )
    late, wait = axes[0], axes[1]
    which = f"the {len(shown)} latest of {len(ranks):,} ranks: " if scaled else ""
    _heat(figure, late, shown, "late_ms", "Reds", _floor(summary))
    late.set_title(f"{which}late: its share of the step's critical path (ms)", fontsize=9)
    _heat(figure, wait, shown, "wait_ms", "Blues", _floor(summary))
    wait.set_title(f"{which}wait: the time it lost waiting for the late (ms)", fontsize=9)
    if scaled:
        _spread(axes[2], summary, "late_ms", "#b2182b", "late")
        _spread(axes[3], summary, "wait_ms", "#2166ac", "wait")
        figure.legend(*axes[2].get_legend_handles_labels(), loc="outside lower center", ncols=3,
                      fontsize=8)  # fmt: skip
    return figure


def exposed_figure(summary: Summary) -> Any:
    ranks = _ranks(summary)
    steps = len({s["step"] for r in ranks for s in r["steps"]})
    sources = {s["source"] for r in ranks for s in r["steps"]}
    where = (
        "NCCL kernels not overlapped by compute"
        if sources == {"gpu"}
        else ("CPU collective ranges where no GPU work")
    )
    scaled = len(ranks) >= views.SCALE_RANKS
    figure, (axis,) = new_figure(
        f"Exposed communication per {'step over ranks' if scaled else 'rank and step'} ({where})",
        summary.label,
        (9.0, 4.6) if scaled else
        _size(max(6.0, 0.45 * steps + 3), max(3.0, 0.45 * len(ranks) + 2.0)),
    )  # fmt: skip
    if scaled:
        _spread(axis, summary, "exposed_comm_ms", "#4c72b0", "exposed communication")
        figure.legend(loc="outside lower center", ncols=3, fontsize=8)
    else:
        _heat(figure, axis, ranks, "exposed_comm_ms", "viridis", 0.0)
    return figure


def breakdown_figure(summary: Summary) -> Any:
    """Where each rank's step goes, waiting for a late peer apart from the rank's own work;
    one bar per rank below SCALE_RANKS ranks, else the rank with the median step, the
    stragglers and the ranks that waited most."""
    ranks = _ranks(summary)
    parts = {r["rank"]: views.rank_parts(r) for r in ranks}
    if len(ranks) < views.SCALE_RANKS:
        rows = [(str(r["rank"]), parts[r["rank"]]) for r in ranks]
        title = "Where each rank's step goes (mean per judged step, the window's edges left out)"
    else:
        by_rank = views.lateness_by_rank(summary)
        late = [r.rank for r in by_rank[:5] if r.late_steps]
        waited = [r.rank for r in sorted(by_rank, key=lambda r: (-r.wait_ms, r.rank))[:3]]
        middle = sorted(parts, key=lambda k: (sum(parts[k].values()), k))[len(parts) // 2]
        rows = [(f"{middle} (median)", parts[middle])]
        rows += [(f"{k} (late)", parts[k]) for k in late]
        rows += [(f"{k} (waited)", parts[k]) for k in waited if k not in late]
        title = (
            f"Where the step goes: the rank with the median step, the late ranks and those\n"
            f"that waited most, of {len(ranks):,} ranks (mean per judged step)"
        )
    figure, (axis,) = new_figure(title, summary.label,
                                 _size(max(7.5, 0.6 * len(rows) + 3), 4.8))  # fmt: skip
    labels = [label for label, _ in rows]
    bottom = [0.0] * len(rows)
    for key, label, colour, _ in views.PARTS:
        values = [values[key] for _, values in rows]
        if not any(values):
            continue  # a part no rank has (host gaps not measured) keeps the legend short
        axis.bar(labels, values, bottom=bottom, color=colour, label=label)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    axis.set_xticks(*_ticks(labels), fontsize=8)
    axis.set_xlabel("rank")
    axis.set_ylabel("mean per judged step (ms)")
    figure.legend(loc="outside lower center", ncols=3, fontsize=8)
    return figure


def sizes_figure(op: str, calls: list[NcclCall], summary: Summary) -> Any:
    """Kernel time per call (top) and bus bandwidth (bottom) against message size; nccl-tests'
    own bus bandwidth beside nsysgen's when its log was given. The bandwidth is from each call's
    transfer time (its wait for the last peer taken out, nsysgen/analyze/judge/bandwidth.py); the
    median transfer is drawn beside the median kernel where a wait was taken out."""
    sized = [c for c in calls if c.op == op and c.size_bytes]
    rows = [r for r in summary.nccl_by_size if r["op"] == op]
    figure, (top, bottom) = new_figure(
        f"{op}: GPU kernel time and transfer bandwidth by message size",
        summary.label,
        (7.5, 6.8),
        rows=2,
        sharex=True,
    )
    by_size: dict[int, list[float]] = defaultdict(list)
    for call in sized:
        assert call.size_bytes is not None
        by_size[call.size_bytes].append(call.duration_ns / 1000)
    for size, values in by_size.items():
        top.scatter([size] * len(values), values, s=8, alpha=0.4, color="#4c72b0")
    sizes = [int(r["size_bytes"]) for r in rows]
    top.plot(sizes, [r["median_us"] for r in rows], color="#c44e52", marker="o",
             label="median call (nsys report)")  # fmt: skip
    if any(r["transfer_median_us"] != r["median_us"] for r in rows):
        transfer = [r["transfer_median_us"] for r in rows]
        top.plot(sizes, transfer, color="#55a868", marker="o", linestyle="--",
                 label="median transfer (its wait for the last peer taken out)")  # fmt: skip
    top.set_yscale("log")
    top.set_ylabel("GPU kernel time per call (µs)")
    world = summary.world_size
    bus = [(r["size_bytes"], r["transfer_busbw_GBps"]) for r in rows
           if r["transfer_busbw_GBps"] is not None]  # fmt: skip
    if bus:
        bottom.plot([s for s, _ in bus], [b for _, b in bus], color="#55a868", marker="o",
                    label=f"bus bandwidth, nsysgen ({world} ranks)")  # fmt: skip
    else:
        algbw = [r["transfer_algbw_GBps"] or float("nan") for r in rows]
        bottom.plot(sizes, algbw, color="#8c8c8c", marker="o",
                    label="algorithm bandwidth (world size unknown)")  # fmt: skip
    reference = [(size, busbw) for size, _, busbw in summary.nccl_tests if busbw]
    if reference:
        bottom.plot([s for s, _ in reference], [b for _, b in reference], color="#dd8452",
                    marker="s", linestyle="--", label="bus bandwidth, nccl-tests log")  # fmt: skip
    bottom.set_ylabel("GB/s (median call's transfer time)")
    bottom.set_xscale("log", base=2)
    ticks = sorted({*sizes, *(s for s, _ in reference)})
    bottom.set_xticks(ticks, [human_size(s) for s in ticks], rotation=30, fontsize=8)
    bottom.set_xlabel("message size")
    figure.legend(loc="outside lower center", ncols=2, fontsize=8)
    return figure


def _exposed_skip(summary: Summary) -> str | None:
    if not _ranks(summary):
        return "no step ranges"
    if not _has_values(summary, "exposed_comm_ms"):
        return "every step's exposed communication is 0 ms (or not measured)"
    return None


def _lateness_skip(summary: Summary) -> str | None:
    ranks = _ranks(summary)
    if len(ranks) < 2:
        return "lateness needs two ranks or more"
    if summary.collectives_matched == 0:
        return "no collective matched across ranks"
    if not (_has_values(summary, "late_ms") or _has_values(summary, "wait_ms")):
        return "no rank waited for another"
    return None


def _breakdown_skip(summary: Summary) -> str | None:
    ranks = _ranks(summary)
    if not ranks:
        return "no step ranges"
    if not any(any(views.rank_parts(r).values()) for r in ranks):
        # CPU-only reports without collectives: a step is its CPU range, nothing to split.
        return "every part of every rank's steps is 0 ms (no GPU work or collective in the steps)"
    return None


Figure = tuple[str, Callable[[], Any], str | None]


def figures(summary: Summary, calls: list[NcclCall]) -> list[Figure]:
    """(file name, figure builder, why it is not drawn or None) for every picture."""
    shown: list[Figure] = [
        ("heatmap_lateness.png", partial(lateness_figure, summary), _lateness_skip(summary)),
        ("heatmap_exposed_comm.png", partial(exposed_figure, summary), _exposed_skip(summary)),
        ("rank_breakdown.png", partial(breakdown_figure, summary), _breakdown_skip(summary)),
    ]
    for op in sorted({c.op for c in calls}):
        rows = [r for r in summary.nccl_by_size if r["op"] == op]
        why = None if rows else "no call of known message size"
        shown.append((op_file(op, "by_size"), partial(sizes_figure, op, calls, summary), why))
    return shown


def draw_all(
    summary: Summary, calls: list[NcclCall], out: Path, plots: Plots
) -> tuple[list[Path], list[str]]:
    """Every picture, each drawn again only when its data changed (`plots`); and a line per
    picture not drawn, saying why (a PNG of an earlier run under that name is removed)."""
    shown = plots.key("summary", summary.as_json())  # what the summary holds, once for every plot
    drawn, skipped = [], []
    for name, build, why in figures(summary, calls):
        if why is not None:
            skipped.append(f"not drawn: {name}: {why}")
            (out / name).unlink(missing_ok=True)
            continue
        op_calls = [c for c in calls if name == op_file(c.op, "by_size")]
        path = plots.draw(name, [shown, name, op_calls], partial(save, build, out / name))
        if path is not None:
            drawn.append(path)
    return drawn, skipped
