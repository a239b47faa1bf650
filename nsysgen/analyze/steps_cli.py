"""The per rank x step part of `nsysgen analyze`: its options, and the run from SQLite exports to
summary.json, CSVs, pictures and the `--baseline` gate. Kept apart from cli.py so that the
per-report reduction (`report.read_export`) can be mapped over reports by another driver.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from nsysgen.analyze.nccl import AnalyzeError, NcclCall
from nsysgen.analyze.plot import Plots
from nsysgen.analyze.regress import compare, load
from nsysgen.analyze.steps import RankTables, assign_ranks
from nsysgen.analyze.steps_plot import draw_all
from nsysgen.analyze.stragglers import Thresholds, find, measure
from nsysgen.analyze.summary import build, write
from nsysgen.errors import EXIT_DRIFT, EXIT_OK


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("per rank x step analysis and regression gate")
    group.add_argument(
        "--baseline",
        type=Path,
        help="an earlier --output folder (or its summary.json): exit 1 if a figure regressed",
    )
    group.add_argument(
        "--regression-threshold",
        type=_positive,
        default=10.0,
        metavar="PERCENT",
        help="a step/exposed-comm time growing, or a bus bandwidth dropping, by more than this "
        "regresses (default: 10)",
    )
    group.add_argument(
        "--regression-min-ms",
        type=_positive,
        default=0.1,
        metavar="MS",
        help="time growth below this is never a regression (default: 0.1)",
    )
    group.add_argument(
        "--straggler-min-ms",
        type=_positive,
        default=1.0,
        metavar="MS",
        help="a rank is late on a step only if the others waited longer than this (default: 1)",
    )
    group.add_argument(
        "--straggler-min-percent",
        type=_positive,
        default=25.0,
        metavar="PERCENT",
        help="... and longer than this share of the step's median time (default: 25)",
    )
    group.add_argument(
        "--world-size",
        type=int,
        help="ranks in the job, for bus bandwidth (default: the ranks found in the reports)",
    )


def check_arguments(args: argparse.Namespace) -> None:
    """Input checks that must fail before anything is written."""
    if args.baseline is not None:
        load(args.baseline)
    if args.world_size is not None and args.world_size < 1:
        raise AnalyzeError(f"--world-size {args.world_size}: must be at least 1")


def run(
    args: argparse.Namespace,
    per_report: list[list[RankTables]],
    names: list[str],
    calls: list[NcclCall],
    out: Path,
    plots: Plots,
) -> tuple[list[Path], int]:
    """The reduction over reports: `per_report` holds each report's tables (the map step,
    nsysgen/analyze/map.py), `names` the reports' names in the same order; `plots` draws."""
    ranks = assign_ranks(per_report)
    thresholds = Thresholds(args.straggler_min_ms, args.straggler_min_percent / 100)
    lateness = measure(ranks)
    stragglers = find(ranks, lateness, thresholds)
    world = args.world_size or max(1, len(ranks))
    summary = build(ranks, lateness, stragglers, calls, thresholds, world, names)
    written = write(summary, out)
    written += draw_all(summary, calls, out, plots)
    stepped = [t for t in ranks if t.steps]
    steps = sorted({row.step for t in stepped for row in t.steps})
    if stepped:
        print(f"steps {steps[0]}..{steps[-1]} on {len(stepped)} rank(s); first step not judged")
    else:
        print("no step NVTX ranges ('step N') in the reports: no per-step figures")
    for s in stragglers:
        print(
            f"straggler: rank {s['rank']} ({s['kind']}) late on steps "
            f"{', '.join(map(str, s['steps']))} by {s['mean_lateness_ms']} ms on average"  # type: ignore[call-overload]
        )
    if stepped and not stragglers:
        print("stragglers: none above the threshold")
    code = EXIT_OK
    if args.baseline is not None:
        changes = compare(
            load(args.baseline), summary, args.regression_threshold / 100, args.regression_min_ms
        )
        regressed = [c for c in changes if c.regressed]
        print(
            f"baseline {args.baseline}: {len(changes)} figure(s) compared, {len(regressed)} "
            f"regressed beyond {args.regression_threshold:g} %"
        )
        for change in changes:
            if change.regressed:
                print(change.line())
        if not changes:
            print("warning: nothing in common with the baseline to compare")
        code = EXIT_DRIFT if regressed else EXIT_OK
    return written, code
