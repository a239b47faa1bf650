"""`nsysgen analyze`: its arguments, checks of its inputs, and what it prints."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from nsysgen.analyze import record as analyze_record
from nsysgen.analyze import steps_cli
from nsysgen.analyze.map import (
    Progress,
    Task,
    Where,
    map_reports,
    plan_tasks,
    result_key,
)
from nsysgen.analyze.nccl import (
    AnalyzeError,
    human_size,
    parse_nccl_tests_log,
    summarise,
    write_csvs,
)
from nsysgen.analyze.plot import Plots, plot_op, require_matplotlib
from nsysgen.analyze.report import Reduced
from nsysgen.errors import EXIT_INVALID


def run_analyze(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="nsysgen analyze",
        description=(
            "NCCL collectives in nsys reports: GPU kernel time per call, by message size, as CSV "
            "and one PNG per operation; per rank x step GPU figures, stragglers and a "
            "regression gate (summary.json)."
        ),
    )
    parser.add_argument("reports", type=Path, help="a folder of .nsys-rep/.sqlite, or one file")
    parser.add_argument("--nsys", help="nsys used to export .nsys-rep (default: $NSYS, PATH)")
    parser.add_argument("--output", type=Path, help="default: REPORTS/analysis")
    parser.add_argument(
        "--nccl-tests-log", type=Path, help="nccl-tests output: its times are drawn as lines"
    )
    placement = parser.add_argument_group(
        "where reports are analysed (one task per report: export, then per-rank tables)"
    )
    spread = placement.add_mutually_exclusive_group()
    spread.add_argument(
        "--workers",
        type=int,
        default=0,
        help="workers of the local Dask cluster (default: one per core, at most one per "
        "report; with one, the reports are analysed in this process)",
    )
    spread.add_argument(
        "--scheduler-file",
        type=Path,
        help="a running Dask scheduler's file (dask scheduler "
        "--scheduler-file), e.g. the one analyze.sbatch starts",
    )
    spread.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler")
    spread.add_argument(
        "--serial", action="store_true", help="analyse every report in this process, no Dask"
    )
    steps_cli.add_arguments(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        # --help (0) and argparse's usage errors (2) end here: an exit code, as every verb
        # returns, rather than an exception through main().
        return exc.code if isinstance(exc.code, int) else EXIT_INVALID
    # Every input and the optional plotting dependency are checked first: a failure must not
    # leave CSVs or fresh exports behind.
    if not args.reports.exists():
        raise AnalyzeError(f"{args.reports}: no such file or folder")
    log = args.nccl_tests_log
    if log is not None and not log.is_file():
        raise AnalyzeError(f"--nccl-tests-log {log}: no such file")
    base = args.reports if args.reports.is_dir() else args.reports.parent
    out = args.output or base / "analysis"
    if out.exists() and not out.is_dir():
        raise AnalyzeError(f"--output {out}: exists and is not a folder")
    if args.workers < 0:
        raise AnalyzeError(f"--workers {args.workers}: must be at least 0 (0: one per core)")
    require_matplotlib()
    steps_cli.check_arguments(args)
    reference = parse_nccl_tests_log(log) if log is not None else {}
    tasks = plan_tasks(args.reports, args.nsys)
    if all(task.cached is not None for task in tasks):
        replayed = analyze_record.replay(out, _run_key(args, tasks))
        if replayed is not None:
            lines, code = replayed
            for line in lines:
                print(line)
            return code
    where = Where(args.workers, args.scheduler_file, args.scheduler, args.serial)
    reduced = map_reports(tasks, where, Progress(len(tasks)))
    with analyze_record.captured() as lines:
        written, code = _report(args, reduced, reference, out)
    if all(result_key(task) is not None for task in tasks):
        analyze_record.save(out, _run_key(args, tasks), written, lines, code)
    return code


# Where the work runs does not change its results.
_PLACEMENT = ("workers", "scheduler_file", "scheduler", "serial", "nsys")


def _run_key(args: argparse.Namespace, tasks: list[Task]) -> str:
    options = {k: v for k, v in sorted(vars(args).items()) if k not in _PLACEMENT}
    keys = [result_key(task) for task in tasks]
    return analyze_record.run_key(keys, options, [args.nccl_tests_log, args.baseline])


def _report(
    args: argparse.Namespace, reduced: list[Reduced], reference: dict[int, float], out: Path
) -> tuple[list[Path], int]:
    """Everything after the map: NCCL tables and pictures, then the per rank x step analysis."""
    calls = [call for result in reduced for call in result.calls]
    reports = len(reduced)
    summary = summarise(calls)
    written = write_csvs(calls, summary, out)
    plots = Plots(out)
    for op in sorted({c.op for c in calls}):
        op_calls = [c for c in calls if c.op == op]
        drawn = plots.draw(
            f"nccl_{op}_durations.png",
            [op, op_calls, sorted(reference.items())],
            partial(plot_op, op, op_calls, reference, out),
        )
        assert drawn is not None
        written.append(drawn)
    if not calls:
        print(f"no NCCL kernels in {reports} report(s): nothing to plot")
    for row in summary:
        size = "unknown" if row.size_bytes is None else human_size(row.size_bytes)
        print(
            f"{row.op:<22} {size:>10} {row.calls:>6} calls  median {row.median_us:9.1f} us  "
            f"p90 {row.p90_us:9.1f} us"
        )
    step_files, code = steps_cli.run(
        args, [r.tables for r in reduced], [r.name for r in reduced], calls, out, plots
    )
    plots.save()
    for path in written + step_files:
        print(f"wrote {path}")
    return written + step_files, code
