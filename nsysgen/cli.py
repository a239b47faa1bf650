"""Command line: parse arguments, run the pipeline, map errors to exit codes. No logic here."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nsysgen import __version__
from nsysgen.compose import GROUPS, Composer
from nsysgen.errors import EXIT_BUG, EXIT_INVALID, EXIT_OK, NsysgenError
from nsysgen.pipeline import compile_config
from nsysgen.write import write_folder

USAGE = "usage: nsysgen [--config-dir DIR]... [OVERRIDE ...]"


class UsageError(NsysgenError):
    def user_message(self) -> str:
        return f"error: {self}\n{USAGE}\nRun 'nsysgen --help' for the config groups and options."


@dataclass
class Arguments:
    config_dirs: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)
    help: bool = False


def parse_arguments(argv: Sequence[str]) -> Arguments:
    args = Arguments()
    words = list(argv)
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
            raise UsageError("sweeps (-m) are not available in this version")
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
        "recipes scripts, README). Overrides use Hydra's grammar: group=option, key=value.",
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
        "",
        "Exit codes: 0 ok, 2 invalid input, 3 internal error (a bug in nsysgen).",
    ]
    return "\n".join(lines)


def run(argv: Sequence[str]) -> int:
    args = parse_arguments(argv)
    composer = Composer([Path(d) for d in args.config_dirs])
    if args.help:
        print(help_text(composer))
        return EXIT_OK
    composed = composer.compose(args.overrides)
    compiled = compile_config(composed, args.config_dirs)
    folder = Path(compiled.config.output_dir) / compiled.folder
    statuses = write_folder(compiled.files, folder)
    counts = {s: sum(1 for f in statuses if f.status == s) for s in ("created", "updated")}
    changed = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "unchanged"
    print(f"{folder}: {len(statuses)} files ({changed})")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except NsysgenError as exc:
        print(exc.user_message(), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
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
