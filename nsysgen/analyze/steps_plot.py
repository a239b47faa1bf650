"""Pictures of the per rank x step analysis: who was late (lateness and wait per rank and step),
exposed communication per rank and step, the per-rank time bar, and NCCL time and bus bandwidth
against message size on one shared x axis. Drawn from summary.json's content, so they show
exactly the figures the summary holds.

Every figure is built on a constrained layout, its legends outside the axes, its title and the
job, run and report count it shows above them: nothing is clipped or covers the data. A figure
that would hold only zeros (or nothing) is not drawn; `draw_all` says why.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from nsysgen.analyze.nccl import NcclCall, human_size
from nsysgen.analyze.plot import Plots, new_figure, save
from nsysgen.analyze.summary import RankEntry, StepColumn, Summary


def _ranks(summary: Summary) -> list[RankEntry]:
    return [r for r in summary["ranks"] if r["steps"]]


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


def _heat(figure: Any, axis: Any, ranks: list[RankEntry], field: StepColumn, cmap: str) -> None:
    steps, grid = _grid(ranks, field)
    image = axis.imshow(grid, aspect="auto", cmap=cmap, interpolation="nearest", vmin=0)
    axis.set_xticks(*_ticks([str(s) for s in steps]), fontsize=8)
    axis.set_yticks(*_ticks([str(r["rank"]) for r in ranks]), fontsize=8)
    axis.set_xlabel("step (the first and last: the window's edges, not judged)")
    axis.set_ylabel("rank")
    figure.colorbar(image, ax=axis, label="ms")


def lateness_figure(summary: Summary) -> Any:
    """Who held the others up: per rank and step, how long the others waited for this rank
    (late), and apart from it, how long this rank waited for the others (wait). The late rank
    stands out on the left; the ranks that waited for it on the right."""
    ranks = _ranks(summary)
    steps = len({s["step"] for r in ranks for s in r["steps"]})
    width, height = _size(max(9.0, 0.8 * steps + 5), max(3.2, 0.45 * len(ranks) + 2.2))
    figure, (late, wait) = new_figure(
        "Late ranks: who the others waited for, per rank and step",
        summary.get("label", ""),
        (width, height),
        columns=2,
    )
    _heat(figure, late, ranks, "late_ms", "Reds")
    late.set_title("late: the others waited this long for the rank (ms)", fontsize=9)
    _heat(figure, wait, ranks, "wait_ms", "Blues")
    wait.set_title("wait: the rank waited this long for the others (ms)", fontsize=9)
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
    figure, (axis,) = new_figure(
        f"Exposed communication per rank and step ({where})",
        summary.get("label", ""),
        _size(max(6.0, 0.45 * steps + 3), max(3.0, 0.45 * len(ranks) + 2.0)),
    )
    _heat(figure, axis, ranks, "exposed_comm_ms", "viridis")
    return figure


def breakdown_figure(summary: Summary) -> Any:
    ranks = _ranks(summary)
    parts = [
        ("compute_busy_ms", "compute kernels", "#4c72b0"),
        ("exposed_comm_ms", "exposed communication", "#c44e52"),
        ("other_ms", "memcpy/memset only", "#8c8c8c"),
        ("idle_ms", "GPU idle", "#dddddd"),
    ]
    medians = [r["medians_without_window_edges"] for r in ranks]
    gpu = all(m["compute_busy_ms"] is not None for m in medians)
    figure, (axis,) = new_figure(
        "Where each rank's step goes (median per step, the window's edge steps left out)",
        summary.get("label", ""),
        _size(max(6.0, 0.6 * len(ranks) + 3), 4.6),
    )
    labels = [str(r["rank"]) for r in ranks]
    bottom = [0.0] * len(ranks)
    if not gpu:
        # CPU-only steps: the step's own range split into blocking communication and the rest.
        comm = [float(m["exposed_comm_ms"] or 0) for m in medians]
        rest = [float(m["step_ms"] or 0) - c for m, c in zip(medians, comm, strict=True)]
        axis.bar(labels, rest, color="#4c72b0", label="step outside collectives")
        axis.bar(labels, comm, bottom=rest, color="#c44e52", label="in collective ranges")
    else:
        for key, label, color in parts:
            values = [float(m[key] or 0) for m in medians]
            axis.bar(labels, values, bottom=bottom, color=color, label=label)
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    axis.set_xticks(*_ticks(labels))
    axis.set_xlabel("rank")
    axis.set_ylabel("median per step (ms)")
    figure.legend(loc="outside lower center", ncols=2, fontsize=8)
    return figure


def sizes_figure(op: str, calls: list[NcclCall], summary: Summary) -> Any:
    """Kernel time per call (top) and bus bandwidth (bottom) against message size; nccl-tests'
    own bus bandwidth beside nsysgen's when its log was given."""
    sized = [c for c in calls if c.op == op and c.size_bytes]
    rows = [r for r in summary["nccl_by_size"] if r["op"] == op]
    figure, (top, bottom) = new_figure(
        f"{op}: GPU kernel time and bandwidth by message size",
        summary.get("label", ""),
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
    top.set_yscale("log")
    top.set_ylabel("GPU kernel time per call (µs)")
    world = summary["world_size"]
    bus = [(r["size_bytes"], r["busbw_GBps"]) for r in rows if r["busbw_GBps"] is not None]
    if bus:
        bottom.plot([s for s, _ in bus], [b for _, b in bus], color="#55a868", marker="o",
                    label=f"bus bandwidth, nsysgen ({world} ranks)")  # fmt: skip
    else:
        bottom.plot(sizes, [r["algbw_GBps"] for r in rows], color="#8c8c8c", marker="o",
                    label="algorithm bandwidth (world size unknown)")  # fmt: skip
    reference = [(size, busbw) for size, _, busbw in summary.get("nccl_tests", []) if busbw]
    if reference:
        bottom.plot([s for s, _ in reference], [b for _, b in reference], color="#dd8452",
                    marker="s", linestyle="--", label="bus bandwidth, nccl-tests log")  # fmt: skip
    bottom.set_ylabel("GB/s (median call)")
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
    if summary["collectives_matched"] == 0:
        return "no collective matched across ranks"
    if not (_has_values(summary, "late_ms") or _has_values(summary, "wait_ms")):
        return "no rank waited for another"
    return None


def _breakdown_skip(summary: Summary) -> str | None:
    return None if _ranks(summary) else "no step ranges"


Figure = tuple[str, Callable[[], Any], str | None]


def figures(summary: Summary, calls: list[NcclCall]) -> list[Figure]:
    """(file name, figure builder, why it is not drawn or None) for every picture."""
    shown: list[Figure] = [
        ("heatmap_lateness.png", partial(lateness_figure, summary), _lateness_skip(summary)),
        ("heatmap_exposed_comm.png", partial(exposed_figure, summary), _exposed_skip(summary)),
        ("rank_breakdown.png", partial(breakdown_figure, summary), _breakdown_skip(summary)),
    ]
    for op in sorted({c.op for c in calls}):
        rows = [r for r in summary["nccl_by_size"] if r["op"] == op]
        why = None if rows else "no call of known message size"
        shown.append((f"nccl_{op}_by_size.png", partial(sizes_figure, op, calls, summary), why))
    return shown


def draw_all(
    summary: Summary, calls: list[NcclCall], out: Path, plots: Plots
) -> tuple[list[Path], list[str]]:
    """Every picture, each drawn again only when its data changed (`plots`); and a line per
    picture not drawn, saying why (a PNG of an earlier run under that name is removed)."""
    shown = plots.key("summary", summary)  # what the summary holds, once for every plot
    drawn, skipped = [], []
    for name, build, why in figures(summary, calls):
        if why is not None:
            skipped.append(f"not drawn: {name}: {why}")
            (out / name).unlink(missing_ok=True)
            continue
        op_calls = [c for c in calls if name == f"nccl_{c.op}_by_size.png"]
        path = plots.draw(name, [shown, name, op_calls], partial(save, build, out / name))
        if path is not None:
            drawn.append(path)
    return drawn, skipped
