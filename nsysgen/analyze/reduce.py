"""The reduce step of `nsysgen analyze`: every report's reduced tables (the map step's results,
nsysgen/analyze/read/map.py) to the answers across ranks: NCCL calls by message size (CSVs, one
picture per operation), per rank x step figures, stragglers, summary.json and its pictures,
and the `--baseline` gate. It writes files and returns what it found; it prints nothing (the
CLI prints the outcome, and the run record stores it)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

from nsysgen.analyze.errors import AnalyzeError
from nsysgen.analyze.judge import naming
from nsysgen.analyze.judge.fabric import Fabric
from nsysgen.analyze.judge.late_ranks import find
from nsysgen.analyze.judge.regress import WRONG_TYPES, compare, comparison, load, wrong_types
from nsysgen.analyze.judge.stragglers import Thresholds, measure
from nsysgen.analyze.judge.summary import build
from nsysgen.analyze.judge.summary_types import Summary
from nsysgen.analyze.read import expected
from nsysgen.analyze.read.nccl import human_size, summarise, write_csvs
from nsysgen.analyze.read.ranks import RankCollision, assign_ranks, comparable
from nsysgen.analyze.read.report import Reduced
from nsysgen.analyze.read.safe import op_file
from nsysgen.analyze.read.steps import RankTables
from nsysgen.analyze.render import html_report
from nsysgen.analyze.render.plot import Plots, plot_op
from nsysgen.analyze.render.steps_plot import draw_all
from nsysgen.analyze.render.summary_files import write
from nsysgen.errors import EXIT_DRIFT, EXIT_OK


@dataclass(frozen=True)
class Options:
    """What the reduction is asked: the thresholds, the job's world size and the baseline."""

    straggler_min_ms: float = 1.0
    straggler_min_percent: float = 25.0
    world_size: int | None = None
    pipeline_stages: int | None = None  # the job's; None: told apart by the collectives ran
    baseline: Path | None = None
    regression_threshold: float = 10.0
    regression_min_ms: float = 0.1
    # nccl-tests' own figures per size: (bytes, time in us, bus bandwidth in GB/s or None).
    reference: tuple[tuple[int, float, float | None], ...] = ()
    label: str = ""  # what the figures and summary.json show: job, run and report count
    fabric: Fabric | None = None  # the cluster's links (--cluster, or the run's contract)
    contract: Path | None = None  # the run contract beside the reports: the ranks it expects


@dataclass(frozen=True)
class Outcome:
    """What the reduction found, in the words `nsysgen analyze` prints, the files it wrote and
    the exit code (EXIT_DRIFT: a figure regressed against the baseline)."""

    lines: tuple[str, ...]
    written: tuple[Path, ...]
    code: int


def _against_contract(
    contract: Path | None, ranks: list[RankTables], named: bool
) -> tuple[dict[int, str], list[str]]:
    """(rank -> why, for each rank the run contract expects and no report holds; limits): a
    missing rank is named as not judged. Ranks numbered in report order (names without one)
    cannot be held against the contract."""
    if contract is None:
        return {}, []
    if not named:
        return {}, [f"reports named without their rank: not held against {contract}"]
    found = expected.compare(contract, {t.rank for t in ranks if t.rank is not None})
    if isinstance(found, str):
        return {}, [found]
    limits = []
    if found.unexpected:
        shown = naming.ranks_text(found.unexpected, total=len(found.unexpected))
        limits.append(f"{shown}: reports the run contract ({contract}) does not expect")
    return dict.fromkeys(found.missing, expected.NO_REPORT), limits


def reduce(reduced: list[Reduced], options: Options, out: Path) -> Outcome:
    """Every report's tables (in report order) to the analysis in `out`."""
    lines: list[str] = []
    calls = [call for result in reduced for call in result.calls]
    summary = summarise(calls)
    written = write_csvs(calls, summary, out)
    plots = Plots(out)
    reference = {size: time_us for size, time_us, _ in options.reference}
    for op in sorted({c.op for c in calls}):
        op_calls = [c for c in calls if c.op == op]
        durations = plots.draw(
            op_file(op, "durations"),
            [op, op_calls, sorted(reference.items()), options.label],
            partial(plot_op, op, op_calls, reference, out, options.label),
        )
        assert durations is not None
        written.append(durations)
    kernels = sum(t.nccl_kernels_total for r in reduced for t in r.tables)
    if not calls and kernels:
        # The kernels are there, the ranges that name their collectives are not.
        lines.append(
            f"{kernels:,} NCCL kernels in {len(reduced)} report(s), but no NCCL call read: the "
            "per-call tables need NCCL's NVTX ranges and the CUDA runtime calls in each export "
            "(nsys --trace=cuda,nvtx); nothing to plot"
        )
    elif not calls:
        lines.append(f"no NCCL kernels in {len(reduced)} report(s): nothing to plot")
    for row in summary:
        size = "unknown" if row.size_bytes is None else human_size(row.size_bytes)
        lines.append(
            f"{row.op:<22} {size:>10} {row.calls:>6} calls  median {row.median_us:9.1f} us  "
            f"p90 {row.p90_us:9.1f} us"
        )
    named = all(t.rank is not None for r in reduced for t in r.tables)
    try:
        ranks = assign_ranks([r.tables for r in reduced])
    except RankCollision as error:
        raise AnalyzeError(str(error)) from None
    absent, contract_limits = _against_contract(options.contract, ranks, named)
    thresholds = Thresholds(options.straggler_min_ms, options.straggler_min_percent / 100)
    judged = comparable(ranks)  # a rank without kernels is named, never judged
    # The pipeline's blocks of ranks are the job's: every rank counts, judged, without kernels
    # or without a report (a block would shift with each one left out).
    layout_world = options.world_size or max(
        len(ranks) + len(absent), 1 + max((t.rank or 0 for t in ranks), default=0)
    )
    lateness = measure(judged, thresholds, options.pipeline_stages, layout_world)
    stragglers = find(judged, lateness, thresholds)
    world = options.world_size or max(1, len(ranks))
    names = [r.name for r in reduced]
    given = options.world_size is not None
    steps_summary = build(
        ranks, lateness, stragglers, calls, thresholds, world, names, given, options.label,
        options.reference, options.fabric, absent,
    )  # fmt: skip
    steps_summary.limits += contract_limits
    compared, code = _compare(steps_summary, options)
    lines.append(f"verdict: {steps_summary.verdict['text']}")
    lines += [
        f"flagged: {row['op']} {row['size']}: {row['flag']}"
        for row in steps_summary.nccl_by_size
        if row["flag"]
    ]
    rows = steps_summary.nccl_by_size
    corrected = sum(row["calls"] - row["calls_not_corrected"] for row in rows)
    if corrected:
        lines.append(
            f"bandwidth from transfer time: the wait for the last peer taken out of {corrected} "
            f"of {sum(row['calls'] for row in rows)} sized NCCL call(s) (nccl_bandwidth.csv)"
        )
    lines += [f"limit: {text}" for text in steps_summary.limits]
    written += write(steps_summary, out)
    drawn, skipped = draw_all(steps_summary, calls, out, plots)
    written += drawn
    lines += skipped
    stepped = [t for t in ranks if t.steps]
    steps = sorted({row.step for t in stepped for row in t.steps})
    if stepped:
        lines.append(
            f"steps {steps[0]}..{steps[-1]} on {len(stepped)} rank(s); "
            + (
                "first and last step not judged (the window's open and close pause the "
                "recorded ranks)"
                if len(steps) >= 3
                else "first step not judged"
            )
        )
    else:
        lines.append("no step NVTX ranges ('step N') in the reports: no per-step figures")
    for s in stragglers:
        lines.append(
            f"straggler: rank {s['rank']} ({s['kind']}) late on "
            f"step{'s' if len(s['steps']) > 1 else ''} {naming.steps_text(s['steps'])} "
            f"by {s['mean_lateness_ms']:.1f} ms on average"
        )
    if stepped and not stragglers:
        lines.append("stragglers: none above the threshold")
    lines += compared
    plots.save()
    written.append(html_report.write(steps_summary, options, lines, written, out))
    lines += [f"wrote {path}" for path in written]
    return Outcome(tuple(lines), tuple(written), code)


def _compare(summary: Summary, options: Options) -> tuple[list[str], int]:
    """The --baseline comparison (into the summary's baseline), its lines and exit code."""
    if options.baseline is None:
        return [], EXIT_OK
    baseline = load(options.baseline)
    try:
        changes = compare(
            baseline, summary, options.regression_threshold / 100, options.regression_min_ms
        )
    except WRONG_TYPES as error:
        raise AnalyzeError(wrong_types(options.baseline, error)) from None
    found = comparison(changes, summary, options.baseline, options.regression_threshold)
    summary.baseline = dict(found)
    regressed = [c for c in changes if c.regressed]
    lines = [
        f"regression: {found['text']}",
        f"baseline {options.baseline}: {len(changes)} figure(s) compared, {len(regressed)} "
        f"regressed beyond {options.regression_threshold:g} %",
    ]
    # The regressed figures, and those that grew only by waiting for a late peer.
    lines += [change.line() for change in changes if change.regressed or change.note]
    if not changes:
        lines.append("warning: nothing in common with the baseline to compare")
    return lines, EXIT_DRIFT if regressed else EXIT_OK
