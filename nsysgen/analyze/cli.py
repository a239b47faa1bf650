"""`nsysgen analyze`: its arguments, checks of its inputs, and what it prints."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from nsysgen.analyze import outdir, steps_cli
from nsysgen.analyze import record as analyze_record
from nsysgen.analyze.errors import AnalyzeError
from nsysgen.analyze.read import runs
from nsysgen.analyze.read.map import (
    Progress,
    Task,
    Where,
    map_reports,
    plan_tasks,
    result_key,
)
from nsysgen.analyze.read.nccl_tests import parse_nccl_tests_log
from nsysgen.analyze.read.runs import Run
from nsysgen.analyze.reduce import reduce
from nsysgen.analyze.render import console
from nsysgen.analyze.render.plot import preload as preload_matplotlib
from nsysgen.analyze.render.plot import require_matplotlib
from nsysgen.errors import EXIT_INVALID, close_flags
from nsysgen.textwidth import wrap


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nsysgen analyze",
        # Written out: argparse cannot break the placement group's alternatives, a line of 109.
        usage="%(prog)s REPORTS [--job-id ID] [--output DIR] [--nccl-tests-log F]\n"
        "    [--workers N | --scheduler-file FILE | --scheduler ADDRESS | --serial] [...]",
        epilog="examples:\n"
        "  nsysgen analyze /fsx/nsight-reports/fsdp-p4de\n"
        "  nsysgen analyze reports/job1234 --nccl-tests-log slurm-1234.out\n"
        "  nsysgen analyze reports --job-id 1234 --baseline old/analysis/summary.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="\n".join(
            wrap(
                "NCCL collectives in nsys reports: GPU kernel time per call, by message size, "
                "as CSV and one PNG per operation; per rank x step GPU figures, stragglers and "
                "a regression gate (summary.json); one self-contained report.html that opens "
                "with the verdict (who was late, who waited) and then its evidence.",
                78,
            )
        ),
    )
    parser.add_argument(
        "reports",
        type=Path,
        help="a run's folder of .nsys-rep/.sqlite, a report folder of runs (job<ID>/), or one file",
    )
    parser.add_argument(
        "--job-id",
        help="the run to read, of several (default: the newest); other runs are never mixed in",
    )
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
    return parser


def _output(args: argparse.Namespace, run: Run) -> Path:
    """The output folder, once every input is checked: a failure must not leave CSVs or fresh
    exports behind."""
    log = args.nccl_tests_log
    if log is not None and not log.is_file():
        raise AnalyzeError(f"--nccl-tests-log {log}: no such file")
    base = run.path if run.path.is_dir() else run.path.parent
    out: Path = args.output or base / "analysis"
    if out.exists() and not out.is_dir():
        raise AnalyzeError(f"--output {out}: exists and is not a folder")
    if args.workers < 0:
        raise AnalyzeError(f"--workers {args.workers}: must be at least 0 (0: one per core)")
    require_matplotlib()
    steps_cli.check_arguments(args)
    return out


def unknown_flag(parser: argparse.ArgumentParser, argv: Sequence[str]) -> None:
    """A misspelt flag, refused with the one meant: argparse (before Python 3.14) only says
    "unrecognized arguments". Prefixes of a flag are left to argparse, which takes them."""
    flags = list(parser._option_string_actions)  # noqa: SLF001 - argparse lists them nowhere else
    for word in argv:
        if word == "--":
            return
        name = word.partition("=")[0]
        if not name.startswith("--") or any(flag.startswith(name) for flag in flags):
            continue
        hint = close_flags(name, flags)
        if hint:
            raise AnalyzeError(f"analyze does not take {name}{hint}")


def run_analyze(argv: Sequence[str]) -> int:
    parser = _parser()
    unknown_flag(parser, argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        # --help (0) and argparse's usage errors (2) end here: an exit code, as every verb
        # returns, rather than an exception through main().
        return exc.code if isinstance(exc.code, int) else EXIT_INVALID
    run = runs.select(args.reports, args.job_id)
    out = _output(args, run)
    for note in run.notes:
        print(note)
    with outdir.locked(out):
        return _analyze(args, run, out)


def _analyze(args: argparse.Namespace, run: Run, out: Path) -> int:
    """The analysis into `out` (its lock held): replayed where nothing changed, else written
    into a fresh folder that replaces `out` whole once it is complete."""
    log = args.nccl_tests_log
    reference = parse_nccl_tests_log(log) if log is not None else {}
    tasks = plan_tasks(run.path, args.nsys, run.only)
    if all(task.cached is not None for task in tasks):
        replayed = analyze_record.replay(out, _run_key(args, tasks))
        if replayed is not None:
            lines, code = replayed
            for line in lines:
                print(line)
            return code
    where = Where(args.workers, args.scheduler_file, args.scheduler, args.serial)
    if any(task.cached is None for task in tasks):
        preload_matplotlib()  # plots follow new results; a cached run may need none
    reduced = map_reports(tasks, where, Progress(len(tasks)))
    with outdir.staged(out) as stage:
        outcome = reduce(reduced, steps_cli.options(args, reference, run.label()), stage)
        # The verdict first, notes and files after; files by the names they will have.
        lines = [line.replace(str(stage), str(out)) for line in console.order(outcome.lines)]
        if all(result_key(task) is not None for task in tasks):
            key = _run_key(args, tasks)
            analyze_record.save(stage, key, list(outcome.written), lines, outcome.code)
    for line in lines:
        print(line)
    return outcome.code


# Where the work runs does not change its results.
_PLACEMENT = ("workers", "scheduler_file", "scheduler", "serial", "nsys")


def _run_key(args: argparse.Namespace, tasks: list[Task]) -> str:
    options = {k: v for k, v in sorted(vars(args).items()) if k not in _PLACEMENT}
    keys = [result_key(task) for task in tasks]
    return analyze_record.run_key(keys, options, [args.nccl_tests_log, args.baseline])
