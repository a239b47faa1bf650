"""The guide's all-reduce spread plot, per NCCL operation: one histogram of GPU kernel time per
message size, with the time nccl-tests reported as a line when its log is given."""

from __future__ import annotations

import importlib
import math
from pathlib import Path

from nsysgen.analyze import AnalyzeError, NcclCall, human_size

INSTALL = "pip install 'nsysgen[analyze]'"


class MissingDependency(AnalyzeError):
    """An optional dependency of `nsysgen analyze` (the `analyze` extra) is not installed."""


def require_matplotlib() -> None:
    """Fail before anything is written, not after the CSVs, when plots cannot be drawn."""
    try:
        importlib.import_module("matplotlib")
    except ImportError:
        raise MissingDependency(
            f"nsysgen analyze draws its plots with matplotlib, which is not installed "
            f"(install it with: {INSTALL})"
        ) from None


def plot_op(op: str, calls: list[NcclCall], reference_us: dict[int, float], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    by_size: dict[int | None, list[float]] = {}
    for call in calls:
        by_size.setdefault(call.size_bytes, []).append(call.duration_ns / 1000)
    sizes = sorted(by_size, key=lambda s: -1 if s is None else s)
    columns = min(3, len(sizes))
    rows = math.ceil(len(sizes) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(5 * columns, 3.4 * rows), squeeze=False)
    for axis, size in zip(axes.flat, sizes, strict=False):
        values = by_size[size]
        label = "no size (outside a sized NVTX range)" if size is None else human_size(size)
        axis.hist(values, bins=min(30, max(5, len(values) // 2)), color="#4c72b0")
        axis.set_title(f"{label} ({len(values)} calls)")
        axis.set_xlabel("GPU kernel time per call (µs)")
        axis.set_ylabel("calls")
        axis.yaxis.set_major_locator(MaxNLocator(integer=True))
        if size is not None and size in reference_us:
            axis.axvline(
                reference_us[size],
                color="#c44e52",
                linewidth=2,
                label=f"nccl-tests: {reference_us[size]:.1f} µs",
            )
            axis.legend(loc="upper right", fontsize=8)
    for axis in list(axes.flat)[len(sizes) :]:
        axis.set_visible(False)
    figure.suptitle(f"{op}: spread of GPU kernel time per call, by message size")
    figure.tight_layout()
    target = out / f"nccl_{op}_durations.png"
    figure.savefig(target, dpi=110)
    plt.close(figure)
    return target
