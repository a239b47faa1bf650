"""Command line: parse arguments, run the pipeline, map errors to exit codes. No logic here."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nsysgen import __version__
from nsysgen.analyze_cli import run_analyze
from nsysgen.build import FolderResult, build_single, build_sweep
from nsysgen.check import check_output, render_report
from nsysgen.compose import GROUPS, Composer
from nsysgen.errors import EXIT_BUG, EXIT_DRIFT, EXIT_INVALID, EXIT_OK, NsysgenError
from nsysgen.pipeline import build_config
from nsysgen.plan_report import as_json, as_table
from nsysgen.verify_cli import run_verify

USAGE = """usage: nsysgen [--config-dir DIR]... [-m] [OVERRIDE ...]
       nsysgen plan [--json] [--config-dir DIR]... [OVERRIDE ...]
       nsysgen check [output_dir=DIR]
       nsysgen analyze REPORTS [--nsys NSYS] [--output DIR] [--nccl-tests-log FILE]
       nsysgen verify FOLDER [--reports DIR] [--job-id ID] [--json]"""


class UsageError(NsysgenError):
    def user_message(self) -> str:
        return f"error: {self}\n{USAGE}\nRun 'nsysgen --help' for the config groups and options."


@dataclass
class Arguments:
    config_dirs: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)
    help: bool = False
    multirun: bool = False
    json: bool = False
    command: str = "compile"


def parse_arguments(argv: Sequence[str]) -> Arguments:
    args = Arguments()
    words = list(argv)
    if words and words[0] in ("check", "plan"):
        args.command = words.pop(0)
    while words:
        word = words.pop(0)
        if word in ("-h", "--help"):
            args.help = True
        elif word == "--config-dir":
            if not words:
                raise UsageError("--config-dir needs a directory")
            args.config_dirs.append(words.pop(0))
        elif word.startswith("--config-dir="):
            args.config_dirs.append(word.split("=", 1)[1])
        elif word in ("-m", "--multirun"):
            args.multirun = True
        elif word == "--json" and args.command == "plan":
            args.json = True
        elif word.startswith("-") and not word.startswith(("--", "~")) or word.startswith("--"):
            raise UsageError(f"unknown option {word}")
        else:
            args.overrides.append(word)
    return args


def help_text(composer: Composer) -> str:
    defaults = composer.compose([]).choices
    lines = [
        f"nsysgen {__version__}: compile Nsight Systems profiling setups for distributed training.",
        "",
        USAGE,
        "",
        "Compiles one config into OUTPUT_DIR/<job.name>/ (sbatch, nsys wrapper, install and",
        "recipes scripts, README, manifest). Overrides use Hydra's grammar: group=option,",
        "key=value. With -m, a sweep: every point goes to OUTPUT_DIR/<job.name>/<point>/.",
        "`nsysgen check` recompiles every folder under OUTPUT_DIR from its manifest and exits 1",
        "on any difference. `nsysgen plan` shows what a profile will do (ranks, reports, sizes,",
        "lints) and writes nothing.",
        "",
        "Config groups (* = default):",
    ]
    for group in GROUPS:
        options = [
            f"{option}*" if defaults.get(group) == option else option
            for option in composer.group_options(group)
        ]
        lines.append(f"  {group + ':':<11} {', '.join(options)}")
    lines += [
        "",
        "Settings:",
        "  output_dir=DIR          where folders go (default: generated)",
        "  job.name=NAME           folder, Slurm job and report name prefix",
        "  job.time_limit_min=N    job time limit; capture windows must end before it",
        "  capture.ranks=[0,8] | one_per_node | all",
        "",
        "Options:",
        "  --config-dir DIR        your own config tree; its options replace packaged ones",
        "                          of the same name (repeat it: the first directory wins)",
        "",
        "Examples:",
        "  nsysgen",
        "  nsysgen experiment=fsdp-p4de",
        "  nsysgen workload=nccl cluster=p4de capture=window capture.delay=5",
        "  nsysgen -m capture.delay=30,60,90 capture.duration=30,60",
        "  nsysgen -m 'capture.delay=range(30,91,30)' cluster=p4de,p5",
        "  nsysgen -m capture.delay+capture.duration=30:60,90:30     (paired values)",
        "  nsysgen check",
        "  nsysgen plan cluster=p5 cluster.nodes=1000 capture.ranks=one_per_node",
        "",
        "Exit codes: 0 ok, 1 check found differences, 2 invalid input, 3 internal error (a bug).",
    ]
    return "\n".join(lines)


def _summary(results: list[FolderResult]) -> str:
    counts: dict[str, int] = {}
    for result in results:
        for status in result.statuses:
            counts[status.status] = counts.get(status.status, 0) + 1
    changed = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()) if s != "identical")
    return changed or "unchanged"


def run_check(args: Arguments) -> int:
    output_dir = Path("generated")
    for word in args.overrides:
        if not word.startswith("output_dir="):
            raise UsageError(f"check takes only output_dir=DIR, not {word}")
        output_dir = Path(word.split("=", 1)[1])
    report = check_output(output_dir)
    print(render_report(report, output_dir))
    return EXIT_DRIFT if report.findings else EXIT_OK


def run_plan(args: Arguments, composer: Composer) -> int:
    config, plan, findings = build_config(
        composer.compose(args.overrides), stop_on_lint_errors=False
    )
    print((as_json if args.json else as_table)(config, plan, findings))
    return EXIT_INVALID if any(f.severity == "error" for f in findings) else EXIT_OK


def print_warnings(results: list[FolderResult]) -> None:
    seen = set()
    for result in results:
        for warning in result.warnings:
            line = (
                f"warning: {warning.path}: [{warning.lint}] {warning.message} (fix: {warning.fix})"
            )
            if line not in seen:
                seen.add(line)
                print(line, file=sys.stderr)


def run(argv: Sequence[str]) -> int:
    if argv and argv[0] == "analyze":
        return run_analyze(argv[1:])
    if argv and argv[0] == "verify":
        return run_verify(argv[1:])
    args = parse_arguments(argv)
    if args.command == "check":
        return run_check(args)
    composer = Composer([Path(d) for d in args.config_dirs])
    if args.command == "plan":
        return run_plan(args, composer)
    if args.help:
        print(help_text(composer))
        return EXIT_OK
    if args.multirun:
        sweep = build_sweep(composer, args.overrides, args.config_dirs)
        print_warnings(sweep.folders)
        files = sum(len(r.statuses) for r in sweep.folders)
        print(
            f"{sweep.root}: {sweep.points} sweep points, {files} files ({_summary(sweep.folders)})"
        )
        return EXIT_OK
    result = build_single(composer, args.overrides, args.config_dirs)
    print_warnings([result])
    print(f"{result.folder}: {len(result.statuses)} files ({_summary([result])})")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except NsysgenError as exc:
        print(exc.user_message(), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`nsysgen plan | head -1`): not an error of nsysgen's. Point
        # stdout at /dev/null so that the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception:  # noqa: BLE001 - anything else is a bug in nsysgen, reported as such
        if os.environ.get("NSYSGEN_DEBUG"):
            traceback.print_exc()
        else:
            exc_type, exc_value = sys.exc_info()[:2]
            name = exc_type.__name__ if exc_type else "Exception"
            print(
                f"nsysgen: internal error ({name}: {exc_value}). This is a bug in nsysgen;"
                " rerun with NSYSGEN_DEBUG=1 for the traceback and report it.",
                file=sys.stderr,
            )
        return EXIT_BUG
    return EXIT_INVALID  # pragma: no cover
