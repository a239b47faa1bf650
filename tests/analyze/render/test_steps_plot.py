"""Which pictures of the per rank x step analysis are drawn, and how their grids and ticks are
laid out (nsysgen/analyze/render/steps_plot.py), without drawing: the skip reasons of each figure, a
stale PNG removed with the line saying why, a grid with a hole for a missing figure, and tick
labels thinned to a readable count."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, cast

from nsysgen.analyze.judge.summary_types import Summary
from nsysgen.analyze.read.nccl import NcclCall
from nsysgen.analyze.render import steps_plot
from nsysgen.analyze.render.plot import Plots


def summary(ranks: list[dict[str, Any]], matched: int = 1, sizes: int = 0) -> Summary:
    rows = [{"op": "ncclAllReduce", "size_bytes": 1 << 20} for _ in range(sizes)]
    return Summary.from_json({"ranks": ranks, "collectives_matched": matched, "nccl_by_size": rows,
                          "thresholds": {"late_min_ms": 1.0}})  # fmt: skip


def rank(number: int, **step: Any) -> dict[str, Any]:
    return {"rank": number, "steps": [{"step": 1, "source": "gpu", **step}]}


def test_ticks_thin_out_past_forty_and_sizes_are_bounded() -> None:
    labels = [str(i) for i in range(100)]
    kept, shown = steps_plot._ticks(labels)
    assert kept == list(range(0, 100, 3)) and shown == [labels[i] for i in kept]
    assert steps_plot._ticks(labels[:40]) == (list(range(40)), labels[:40])
    assert steps_plot._size(30.0, 4.0) == (16.0, 4.0)
    assert steps_plot._size(5.0, 25.0) == (5.0, 10.0)


def test_the_grid_is_steps_by_ranks_with_holes_where_no_figure() -> None:
    ranks = [
        {"rank": 0, "steps": [{"step": 3, "late_ms": 2.0}, {"step": 5, "late_ms": None}]},
        {"rank": 1, "steps": [{"step": 4, "late_ms": 1}]},
    ]
    steps, grid = steps_plot._grid(cast(Any, ranks), "late_ms")
    assert steps == [3, 4, 5]
    assert grid[0][0] == 2.0 and grid[1][1] == 1.0
    assert [math.isnan(v) for row in grid for v in row] == [False, True, True, True, False, True]


def test_why_each_figure_is_not_drawn() -> None:
    def reasons(s: Summary, calls: tuple[NcclCall, ...] = ()) -> dict[str, str | None]:
        return {name: why for name, _, why in steps_plot.figures(s, list(calls))}

    assert reasons(summary([])) == {
        "heatmap_lateness.png": "lateness needs two ranks or more",
        "heatmap_exposed_comm.png": "no step ranges",
        "rank_breakdown.png": "no step ranges",
    }
    zeros = summary([rank(0, late_ms=0.0, wait_ms=0.0, exposed_comm_ms=0.0),
                     rank(1, late_ms=0.0, wait_ms=None, exposed_comm_ms=None)])  # fmt: skip
    assert reasons(zeros) == {
        "heatmap_lateness.png": "no rank waited for another",
        "heatmap_exposed_comm.png": "every step's exposed communication is 0 ms (or not measured)",
        # Nothing measured on a GPU (a CPU-only report's step is its CPU range): no empty chart.
        "rank_breakdown.png": "every part of every rank's steps is 0 ms (no GPU work or "
        "collective in the steps)",
    }
    busy = summary(
        [
            rank(n, compute_busy_ms=4.0, late_ms=0.0, wait_ms=0.0, exposed_comm_ms=0.0)
            for n in (0, 1)
        ]
    )
    assert reasons(busy)["rank_breakdown.png"] is None
    waited = summary([rank(0, late_ms=0.0, wait_ms=3.0, exposed_comm_ms=3.0), rank(1)], 0)
    assert reasons(waited)["heatmap_lateness.png"] == "no collective matched across ranks"
    calls = (NcclCall("r", "ncclAllReduce", None, "k", 0, 10),
             NcclCall("r", "ncclAllGather", 4096, "k", 0, 10))  # fmt: skip
    by_size = {k: v for k, v in reasons(summary([], sizes=1), calls).items() if "by_size" in k}
    assert by_size == {
        "nccl_ncclAllGather_by_size.png": "no call of known message size",
        "nccl_ncclAllReduce_by_size.png": None,
    }


def test_a_picture_not_drawn_is_removed_and_said(tmp_path: Path) -> None:
    (tmp_path / "rank_breakdown.png").write_bytes(b"an earlier run's")
    (tmp_path / "heatmap_lateness.png").write_bytes(b"an earlier run's")
    drawn, skipped = steps_plot.draw_all(summary([]), [], tmp_path, Plots(tmp_path))
    assert drawn == []
    assert skipped == [
        "not drawn: heatmap_lateness.png: lateness needs two ranks or more",
        "not drawn: heatmap_exposed_comm.png: no step ranges",
        "not drawn: rank_breakdown.png: no step ranges",
    ]
    assert list(tmp_path.iterdir()) == []
