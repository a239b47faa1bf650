"""Pictures of the per rank x step analysis: heatmaps, the per-rank time bar, and NCCL time and
bus bandwidth against message size on one shared x axis. Drawn from summary.json's content, so
they show exactly the figures the summary holds."""

from __future__ import annotations

from collections import defaultdict
from functools import partial
from pathlib import Path
from typing import Any

from nsysgen.analyze.nccl import NcclCall, human_size
from nsysgen.analyze.plot import Plots
from nsysgen.analyze.summary import RankEntry, StepField, Summary


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def _ranks(summary: Summary) -> list[RankEntry]:
    return summary["ranks"]


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


def heatmap(summary: Summary, field: StepField, title: str, out: Path) -> Path | None:
    ranks = [r for r in _ranks(summary) if r["steps"]]
    if not ranks:
        return None
    steps = sorted({s["step"] for r in ranks for s in r["steps"]})
    column = {step: i for i, step in enumerate(steps)}
    grid = [[float("nan")] * len(steps) for _ in ranks]
    for row, rank in enumerate(ranks):
        for s in rank["steps"]:
            value = s[field]
            if value is not None:
                grid[row][column[s["step"]]] = value
    plt = _pyplot()
    figure, axis = plt.subplots(
        figsize=_size(max(5.0, 0.45 * len(steps) + 2.5), max(2.5, 0.45 * len(ranks) + 1.5))
    )
    image = axis.imshow(grid, aspect="auto", cmap="viridis", interpolation="nearest")
    axis.set_xticks(*_ticks([str(s) for s in steps]), fontsize=8)
    axis.set_yticks(*_ticks([str(r["rank"]) for r in ranks]), fontsize=8)
    axis.set_xlabel("step (the first is warm-up)")
    axis.set_ylabel("rank")
    figure.colorbar(image, ax=axis, label="ms")
    sources = {s["source"] for r in ranks for s in r["steps"]}
    where = "on the GPU" if sources == {"gpu"} else "CPU NVTX range where no GPU work"
    axis.set_title(f"{title} per rank and step (ms; {where})", fontsize=10)
    figure.tight_layout()
    target = out / f"heatmap_{field.removesuffix('_ms')}.png"
    figure.savefig(target, dpi=110)
    plt.close(figure)
    return target


def rank_bars(summary: Summary, out: Path) -> Path | None:
    ranks = [r for r in _ranks(summary) if r["steps"]]
    if not ranks:
        return None
    parts = [
        ("compute_busy_ms", "compute kernels", "#4c72b0"),
        ("exposed_comm_ms", "exposed communication", "#c44e52"),
        ("other_ms", "memcpy/memset only", "#8c8c8c"),
        ("idle_ms", "GPU idle", "#dddddd"),
    ]
    medians = [r["medians_without_first_step"] for r in ranks]
    gpu = all(m["compute_busy_ms"] is not None for m in medians)
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=_size(max(5.0, 0.6 * len(ranks) + 3), 4))
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
    axis.set_title("Where each rank's step goes (median over steps, first step left out)")
    axis.legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    target = out / "rank_breakdown.png"
    figure.savefig(target, dpi=110)
    plt.close(figure)
    return target


def size_panels(op: str, calls: list[NcclCall], summary: Summary, out: Path) -> Path | None:
    """Kernel time per call (top) and bus bandwidth (bottom) against message size."""
    sized = [c for c in calls if c.op == op and c.size_bytes]
    rows = [r for r in summary["nccl_by_size"] if r["op"] == op]
    if not sized or not rows:
        return None
    plt = _pyplot()
    figure, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(7, 6))
    by_size: dict[int, list[float]] = defaultdict(list)
    for call in sized:
        assert call.size_bytes is not None
        by_size[call.size_bytes].append(call.duration_ns / 1000)
    for size, values in by_size.items():
        top.scatter([size] * len(values), values, s=8, alpha=0.4, color="#4c72b0")
    sizes = [int(r["size_bytes"]) for r in rows]
    top.plot(sizes, [r["median_us"] for r in rows], color="#c44e52", marker="o", label="median")
    top.set_yscale("log")
    top.set_ylabel("GPU kernel time per call (µs)")
    top.legend(fontsize=8)
    world = summary["world_size"]
    label = f"bus bandwidth ({world} ranks)" if world > 1 else "algorithm bandwidth (1 rank)"
    bottom.plot(sizes, [r["busbw_GBps"] for r in rows], color="#55a868", marker="o", label=label)
    bottom.set_ylabel("GB/s (median call)")
    bottom.set_xscale("log", base=2)
    bottom.set_xticks(sizes, [human_size(s) for s in sizes], rotation=30, fontsize=8)
    bottom.set_xlabel("message size")
    bottom.legend(fontsize=8)
    figure.suptitle(f"{op}: GPU kernel time and bandwidth by message size")
    figure.tight_layout()
    target = out / f"nccl_{op}_by_size.png"
    figure.savefig(target, dpi=110)
    plt.close(figure)
    return target


_HEATMAPS: tuple[tuple[StepField, str], ...] = (
    ("step_ms", "Step time"),
    ("exposed_comm_ms", "Exposed communication"),
)


def draw_all(summary: Summary, calls: list[NcclCall], out: Path, plots: Plots) -> list[Path]:
    """Every picture, each drawn again only when its data changed (`plots`)."""
    shown = plots.key("summary", summary)  # what the summary holds, once for every plot
    drawn = [
        plots.draw(
            f"heatmap_{field.removesuffix('_ms')}.png",
            [shown, field, title],
            partial(heatmap, summary, field, title, out),
        )
        for field, title in _HEATMAPS
    ]
    drawn.append(plots.draw("rank_breakdown.png", shown, partial(rank_bars, summary, out)))
    for op in sorted({c.op for c in calls}):
        data = [shown, op, [c for c in calls if c.op == op]]
        panels = partial(size_panels, op, calls, summary, out)
        drawn.append(plots.draw(f"nccl_{op}_by_size.png", data, panels))
    return [p for p in drawn if p is not None]
