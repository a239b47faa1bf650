"""The per rank x step options of `nsysgen analyze` (thresholds, world size, the `--baseline`
gate): their arguments, their checks before anything is written, and the reduction's Options."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from nsysgen.analyze.errors import AnalyzeError
from nsysgen.analyze.judge import fabric
from nsysgen.analyze.judge.regress import load
from nsysgen.analyze.read import expected
from nsysgen.analyze.reduce import Options


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):  # nan would turn every comparison off (a gate that passes all)
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0: {text!r}")
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
        help="a rank is late on a step only if its share of the step's critical path beyond "
        "the ranks on time is longer than this (default: 1)",
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
    group.add_argument(
        "--pipeline-stages",
        type=int,
        metavar="N",
        help="the job's pipeline stages, ranks in contiguous blocks of world/N (Megatron's and "
        "torchtitan's order): ranks are judged among their own stage's peers (default: told "
        "apart by the collectives each rank ran, where they differ)",
    )
    group.add_argument(
        "--cluster",
        metavar="NAME|FILE.yaml",
        help="the cluster whose NVLink and EFA figures NCCL bus bandwidth is held against: a "
        "conf/cluster name (p5, p4de, ...), a cluster YAML file, or a compiled setup's "
        "nsysgen-expect.json (default: the one beside the reports, if any)",
    )


def check_arguments(args: argparse.Namespace) -> None:
    """Input checks that must fail before anything is written."""
    if args.baseline is not None:
        load(args.baseline)
    if args.world_size is not None and args.world_size < 1:
        raise AnalyzeError(f"--world-size {args.world_size}: must be at least 1")
    if args.pipeline_stages is not None and args.pipeline_stages < 1:
        raise AnalyzeError(f"--pipeline-stages {args.pipeline_stages}: must be at least 1")
    if args.cluster is not None:
        fabric.from_cluster(args.cluster)


def _fabric(args: argparse.Namespace) -> fabric.Fabric | None:
    """--cluster's fabric, else the one the run's contract (nsysgen-expect.json) names."""
    if args.cluster is not None:
        return fabric.from_cluster(args.cluster)
    return fabric.from_expect(args.reports)


def options(
    args: argparse.Namespace,
    reference: dict[int, tuple[float, float | None]],
    label: str = "",
) -> Options:
    """The reduction's options from the parsed arguments (and the nccl-tests log's times, and
    what the figures name as their source)."""
    return Options(
        label=label,
        straggler_min_ms=args.straggler_min_ms,
        straggler_min_percent=args.straggler_min_percent,
        world_size=args.world_size,
        pipeline_stages=args.pipeline_stages,
        baseline=args.baseline,
        regression_threshold=args.regression_threshold,
        regression_min_ms=args.regression_min_ms,
        reference=tuple((size, *figures) for size, figures in sorted(reference.items())),
        fabric=_fabric(args),
        contract=expected.beside(args.reports),
    )
