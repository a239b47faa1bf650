"""The guide's all-reduce spread plot, per NCCL operation: one histogram of GPU kernel time per
message size, with the time nccl-tests reported as a line when its log is given."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import math
import os
import threading
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from nsysgen import __version__
from nsysgen.analyze.errors import AnalyzeError
from nsysgen.analyze.read.nccl import NcclCall, human_size
from nsysgen.analyze.read.safe import op_file

INSTALL = "pip install 'nsysgen[analyze]'"


class MissingDependency(AnalyzeError):
    """An optional dependency of `nsysgen analyze` (the `analyze` extra) is not installed."""


def require_matplotlib() -> None:
    """Fail before anything is written, not after the CSVs, when plots cannot be drawn (found,
    not imported: a run whose plots are all current never imports it)."""
    try:
        found = importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise MissingDependency(
            f"nsysgen analyze draws its plots with matplotlib, which is not installed "
            f"(install it with: {INSTALL})"
        )


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Plots:
    """Plots are drawn again only when what they show changed.

    OUT/.nsysgen-plots.json holds, per PNG, a digest of what it was drawn from (the plot's
    data, the drawing code, matplotlib's version) and of the PNG itself. A PNG whose record
    still holds, with the bytes recorded, is kept as it is; matplotlib is not even imported
    when every PNG is kept. Drawing is deterministic, so a kept PNG is the one a new drawing
    would give.
    """

    FILE = ".nsysgen-plots.json"
    _CODE = ("plot.py", "steps_plot.py", "views.py")

    def __init__(self, out: Path) -> None:
        self.out = out
        try:
            saved = json.loads((out / self.FILE).read_text())
        except (OSError, ValueError):
            saved = {}
        self.records: dict[str, dict[str, str | None]] = saved if isinstance(saved, dict) else {}
        code = hashlib.sha256()
        try:
            for name in self._CODE:
                code.update((Path(__file__).parent / name).read_bytes())
        except OSError:  # installed without its sources: the version stands in for them
            code.update(__version__.encode())
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            code.update(importlib.metadata.version("matplotlib").encode())
        self.code = code.hexdigest()

    def key(self, name: str, data: object) -> str:
        """The digest of a plot's inputs: `data` as canonical JSON (objects by their repr)."""
        text = json.dumps([self.code, name, data], sort_keys=True, default=repr)
        return _digest(text.encode())

    def draw(self, name: str, data: object, draw: Callable[[], Path | None]) -> Path | None:
        """OUT/name drawn by `draw` (None: it draws nothing) unless its record holds."""
        key, target = self.key(name, data), self.out / name
        record = self.records.get(name)
        if isinstance(record, dict) and record.get("key") == key:
            if record.get("png") is None and not target.exists():
                return None
            png = record.get("png")
            if png is not None and target.is_file() and _digest(target.read_bytes()) == png:
                return target
        drawn = draw()
        if drawn is None:
            self.records[name] = {"key": key, "png": None}
        elif drawn.is_file():
            self.records[name] = {"key": key, "png": _digest(drawn.read_bytes())}
        else:
            self.records.pop(name, None)  # nothing to check it by next time
        return drawn

    def save(self) -> None:
        target = self.out / self.FILE
        partial = target.with_name(f"{self.FILE}.{os.getpid()}.partial")
        partial.write_text(json.dumps(self.records, indent=1, sort_keys=True) + "\n")
        partial.replace(target)


def preload() -> None:
    """Import pyplot in the background while the reports are exported (about a second, and
    more on slow cores, that would otherwise come after the last report is read): the map
    waits on nsys most of the time, leaving this thread the interpreter."""
    threading.Thread(target=pyplot, name="nsysgen-preload-matplotlib", daemon=True).start()


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    # Names come from reports (a job, a kernel, a range): `$x^$` is text, never TeX to parse.
    matplotlib.rcParams["text.parse_math"] = False
    import matplotlib.pyplot as plt

    return plt


def new_figure(
    title: str,
    label: str,
    size: tuple[float, float],
    rows: int = 1,
    columns: int = 1,
    sharex: bool = False,
) -> tuple[Any, list[Any]]:
    """A figure on a constrained layout (titles, colour bars and outside legends get their room;
    nothing is clipped), titled, with what it shows (job, run, report count) under the title."""
    plt = pyplot()
    figure, axes = plt.subplots(
        rows, columns, figsize=size, squeeze=False, sharex=sharex, layout="constrained"
    )
    figure.suptitle(f"{title}\n{label}" if label else title, fontsize=10)
    return figure, list(axes.flat)


def save(build: Callable[[], Any], target: Path) -> Path:
    # Names come from reports: a tab, a control character or a script the font lacks is drawn
    # as a box, never an error (matplotlib warns per missing glyph; `-W error` would stop).
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from", category=UserWarning)
        figure = build()
        figure.savefig(target, dpi=110)
    pyplot().close(figure)
    return target


MAX_SIZE_PANELS = 30  # nccl-tests' -b 8 -e 2G -f 2 is 29 sizes


def durations_figure(
    op: str, calls: list[NcclCall], reference_us: dict[int, float], label: str = ""
) -> Any:
    by_size: dict[int | None, list[float]] = {}
    for call in calls:
        by_size.setdefault(call.size_bytes, []).append(call.duration_ns / 1000)
    sizes = sorted(by_size, key=lambda s: -1 if s is None else s)
    if len(sizes) > MAX_SIZE_PANELS:
        # The sizes with the most calls; all of them are in nccl_by_size.csv.
        busiest = sorted(sizes, key=lambda s: -len(by_size[s]))[:MAX_SIZE_PANELS]
        label = f"{label}\n{MAX_SIZE_PANELS} of {len(sizes)} sizes: those with most calls".strip()
        sizes = [s for s in sizes if s in busiest]
    columns = min(3, len(sizes))
    rows = math.ceil(len(sizes) / columns)
    figure, axes = new_figure(
        f"{op}: spread of GPU kernel time per call, by message size",
        label,
        (5 * columns, 3.4 * rows + 1.2),
        rows,
        columns,
    )
    from matplotlib.ticker import MaxNLocator

    referenced = False
    for axis, size in zip(axes, sizes, strict=False):
        values = by_size[size]
        name = "size unknown" if size is None else human_size(size)
        axis.hist(values, bins=min(30, max(5, len(values) // 2)), color="#4c72b0")
        axis.set_title(f"{name} ({len(values)} calls)", fontsize=9)
        axis.set_xlabel("GPU kernel time per call (µs)")
        axis.set_ylabel("calls")
        axis.yaxis.set_major_locator(MaxNLocator(integer=True))
        if size is not None and size in reference_us:
            axis.axvline(reference_us[size], color="#c44e52", linewidth=2,
                         label=None if referenced else "nccl-tests' own time")  # fmt: skip
            referenced = True
    for axis in axes[len(sizes) :]:
        axis.set_visible(False)
    if referenced:
        figure.legend(loc="outside lower center", fontsize=8)
    return figure


def plot_op(
    op: str, calls: list[NcclCall], reference_us: dict[int, float], out: Path, label: str = ""
) -> Path:
    target = out / op_file(op, "durations")
    return save(partial(durations_figure, op, calls, reference_us, label), target)
