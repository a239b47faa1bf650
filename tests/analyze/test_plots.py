"""The pictures of `nsysgen analyze`, drawn from real reports' exports (H200, nsys 2025.3.1):
nothing drawn outside the figure, no legend over the data, the series each must show, every
figure naming its job, run and report count, and a figure of zeros not drawn (with why)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from nsysgen.analyze.judge.fabric import NO_FABRIC
from nsysgen.analyze.judge.summary_types import Summary
from nsysgen.analyze.read.nccl import NcclCall
from nsysgen.analyze.render import steps_plot, views
from nsysgen.analyze.render.plot import durations_figure
from tests.analyze.synth_summary import summary as synthetic
from tests.conftest import REPO, RunCli

pytestmark = pytest.mark.slow
DATA = REPO / "tests" / "data" / "gpu"
# nccl-tests' table as srun --label writes it into the job log (sizes of the NCCL export).
LOG = "".join(
    f"0: {size:12d} {size // 4:12d} float sum -1 {time:8.2f} {size / time / 1e3:7.2f} "
    f"{bus:7.2f} 0 {time:8.2f} 1.0 1.0 0\n"
    for size, time, bus in [(1024, 14.2, 0.07), (1 << 20, 14.0, 74.9), (128 << 20, 470.1, 285.5)]
)


def analysed(tmp_path: Path, run_cli: RunCli, sources: list[tuple[Path, str]], *extra: str) -> Path:
    reports, out = tmp_path / "r", tmp_path / "out"
    reports.mkdir()
    for source, name in sources:
        shutil.copy(source, reports / name)
    result = run_cli("analyze", str(reports), "--serial", "--output", str(out), *extra)
    assert result.code == 0, result.err
    return out


def summary_and_calls(out: Path) -> tuple[Summary, list[NcclCall]]:
    summary = Summary.from_json(json.loads((out / "summary.json").read_text()))
    with (out / "nccl_calls.csv").open() as handle:
        calls = [
            NcclCall(r["report"], r["op"], int(r["size_bytes"]) if r["size_bytes"] else None,
                     r["kernel"], int(r["start_ns"]), round(float(r["duration_us"]) * 1000))
            for r in csv.DictReader(handle)
        ]  # fmt: skip
    return summary, calls


def check_layout(figure: Any, label: str) -> list[str]:
    """Every text inside the figure, no legend over an axes, the label under the title; the
    legend labels, for the series checks."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    # What is drawn (matplotlib's own bound of every visible artist) lies in the figure (in
    # inches: the tight box's unit).
    drawn = figure.get_tightbbox(renderer)
    width, height = figure.get_size_inches()
    assert drawn.x0 >= -0.01 and drawn.y0 >= -0.01, drawn
    assert drawn.x1 <= width + 0.01 and drawn.y1 <= height + 0.01, (drawn, width, height)
    labels = []
    for legend in figure.legends:
        extent = legend.get_window_extent(renderer)
        for axes in figure.axes:
            if axes.get_visible() and axes.get_label() != "<colorbar>":
                assert not extent.overlaps(axes.get_window_extent(renderer)), axes.get_title()
        labels += [t.get_text() for t in legend.get_texts()]
    assert all(not axes.get_legend() for axes in figure.axes), "a legend inside the axes"
    assert figure.get_suptitle().endswith(f"\n{label}")
    return labels


def test_nccl_figures_show_both_bandwidths_and_name_their_run(
    tmp_path: Path, run_cli: RunCli
) -> None:
    (tmp_path / "log").write_text(LOG)
    sources = [(DATA / "nccl-allreduce-blobs.sqlite", "ar_job7_rank0.sqlite")]
    out = analysed(tmp_path, run_cli, sources, "--world-size", "2",
                   "--nccl-tests-log", str(tmp_path / "log"))  # fmt: skip
    summary, calls = summary_and_calls(out)
    label = "job ar, run 7, 1 report(s)"
    assert summary.label == label
    sizes = steps_plot.sizes_figure("ncclAllReduce", calls, summary)
    assert check_layout(sizes, label) == [
        "median call (nsys report)",
        "bus bandwidth, nsysgen (2 ranks)",
        "bus bandwidth, nccl-tests log",
    ]
    spread = durations_figure("ncclAllReduce", calls, {1024: 14.2, 1 << 20: 14.0}, label)
    assert check_layout(spread, label) == ["nccl-tests' own time"]
    # No steps in an nccl-tests report: the per-step pictures are not drawn, and say why.
    reasons = {name: why for name, _, why in steps_plot.figures(summary, calls)}
    assert reasons["heatmap_lateness.png"] == "lateness needs two ranks or more"
    assert reasons["nccl_ncclAllReduce_by_size.png"] is None
    assert not (out / "heatmap_lateness.png").exists()


def test_step_figures_show_the_late_rank_and_skip_zeros(tmp_path: Path, run_cli: RunCli) -> None:
    sources = [(p, p.name) for p in sorted((DATA / "steps17").glob("s17-hiccup_*.sqlite"))]
    out = analysed(tmp_path, run_cli, sources)
    summary, calls = summary_and_calls(out)
    label = "job s17-hiccup, run 3, 2 report(s)"
    late = steps_plot.lateness_figure(summary)
    check_layout(late, label)
    titles = [axes.get_title() for axes in late.axes if axes.get_label() != "<colorbar>"]
    assert titles[:2] == [
        "late: its share of the step's critical path (ms)",
        "wait: the time it lost waiting for the late (ms)",
    ]
    # The late cell is the straggler's: rank 0's step 14 (the device run's planted hiccup).
    image = late.axes[0].images[0].get_array()
    steps = sorted({s["step"] for s in summary.ranks[0]["steps"]})
    row, column = divmod(int(image.argmax()), len(steps))
    assert (summary.ranks[row]["rank"], steps[column]) == (0, 14)
    bars = steps_plot.breakdown_figure(summary)
    # Waiting for the late peer is its own part, never GPU idle; parts no rank has are left out.
    parts = check_layout(bars, label)
    assert {"compute", "waiting for peers", "GPU idle"} <= set(parts), parts
    assert parts == [name for name in views.PART_LABELS.values() if name in parts]
    # Its exposed communication is 0 ms everywhere: that heatmap is not drawn, and why is said.
    assert not (out / "heatmap_exposed_comm.png").exists()
    assert (out / "heatmap_lateness.png").is_file() and (out / "rank_breakdown.png").is_file()
    reasons = {name: why for name, _, why in steps_plot.figures(summary, calls)}
    assert reasons["heatmap_exposed_comm.png"] == (
        "every step's exposed communication is 0 ms (or not measured)"
    )


def test_what_cannot_be_computed_is_said_not_printed_as_a_number(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """One rank's report and no world size: no bus bandwidth (busbw_GBps empty), and the output
    and summary.json say why; with the job's world size, the bandwidth and what the recorded
    ranks can and cannot show."""
    sources = [(DATA / "nccl-allreduce-blobs.sqlite", "ar_job7_rank0.sqlite")]
    reports, out = tmp_path / "r", tmp_path / "out"
    reports.mkdir()
    for source, name in sources:
        shutil.copy(source, reports / name)
    alone = run_cli("analyze", str(reports), "--serial", "--output", str(out))
    assert alone.code == 0, alone.err
    summary = json.loads((out / "summary.json").read_text())
    assert {row["busbw_GBps"] for row in summary["nccl_by_size"]} == {None}
    # Without --cluster there is no fabric to hold the sizes against, and that is said too.
    assert summary["limits"] == [
        "bus bandwidth not computed: one rank known (pass --world-size, the job's rank count); "
        "algbw_GBps is per call",
        NO_FABRIC,
    ]
    assert f"limit: {summary['limits'][0]}" in alone.out.splitlines()
    known = run_cli("analyze", str(reports), "--serial", "--output", str(out), "--world-size", "16")
    summary = json.loads((out / "summary.json").read_text())
    assert all(row["busbw_GBps"] for row in summary["nccl_by_size"]), known.out
    assert summary["limits"] == [
        "1 of 16 ranks recorded: stragglers and per-step figures are among those only (a rank "
        "not recorded can be late unseen)",
        "bandwidth of 105 of 105 sized NCCL call(s) from their whole kernel time: not matched "
        "across ranks (one rank recorded, outside the step ranges, or past the collectives every "
        "rank issued in the step), so a wait for a late peer stays in their transfer_median_us "
        "and transfer_busbw_GBps",
        NO_FABRIC,
    ]


def test_figures_of_1024_ranks_show_the_latest_ranks_and_spreads_not_a_bar_each() -> None:
    """From 64 ranks on: the lateness heatmaps hold the 16 latest ranks (the planted straggler
    first) over each step's median, p90 and max across ranks; the breakdown five bars."""
    summary = Summary.from_json(synthetic(ranks=1024, late=700))
    label = "job big, run 9, 1024 report(s)"
    late = steps_plot.lateness_figure(summary)
    assert check_layout(late, label) == ["max", "p90", "median"]
    heat = late.axes[0].images[0].get_array()
    assert heat.shape == (16, 20)
    assert late.axes[0].get_yticklabels()[0].get_text() == "700"
    exposed = steps_plot.exposed_figure(summary)
    assert check_layout(exposed, label) == ["max", "p90", "median"]
    assert not exposed.axes[0].images  # lines per step, no heatmap of 1,024 rows
    bars = steps_plot.breakdown_figure(summary)
    check_layout(bars, label)
    assert len(bars.axes[0].get_xticklabels()) == 5
