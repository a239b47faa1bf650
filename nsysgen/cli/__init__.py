"""Command line: parse arguments, run a verb, map errors to exit codes. No logic here.

Each verb's module is imported by the dispatch when that verb runs: `nsysgen analyze` and
`verify` start without Hydra, Jinja and the schemas (about 0.6 s of imports). The verbs live
in `nsysgen.cli.*`: args (the parse), help, compile, plan, folders (check, regenerate)."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsysgen import __version__
from nsysgen.cli.args import (
    _FLAGS,
    _SWITCHES,
    VERBS,
    Arguments,
    UsageError,
    parse_arguments,
)
from nsysgen.errors import EXIT_BUG, EXIT_INVALID, EXIT_OK, NsysgenError, close_flags

if TYPE_CHECKING:
    from nsysgen.config.compose import Composer

__all__ = ["_FLAGS", "_SWITCHES", "VERBS", "Arguments", "UsageError", "main", "run"]


def __getattr__(name: str) -> Any:
    """`nsysgen.cli.Composer` on first use (PEP 562); tests stand a shared one in for it."""
    if name == "Composer":
        from nsysgen.config.compose import Composer

        return Composer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run_completion(argv: Sequence[str]) -> int:
    from nsysgen.cli.help import verb_help

    if len(argv) == 1 and argv[0] in ("bash", "zsh"):
        from nsysgen.completion import completion_script

        print(completion_script(argv[0], VERBS, _FLAGS, _SWITCHES), end="")
        return EXIT_OK
    if len(argv) == 1 and argv[0] in ("-h", "--help"):
        print(verb_help("completion"))
        return EXIT_OK
    hint = close_flags(argv[0], ["--help"]) if len(argv) == 1 else ""
    raise UsageError(f"completion takes one shell: bash or zsh{hint}", "completion")


def run_show(args: Arguments, composer: Composer) -> int:
    from nsysgen.drivers.show import show_config

    print(show_config(composer.compose(args.overrides), with_keys=args.all), end="")
    return EXIT_OK


def run(argv: Sequence[str]) -> int:
    first = argv[0] if argv else ""
    if first in ("--version", "-V"):
        print(f"nsysgen {__version__}")
        return EXIT_OK
    if first == "analyze":
        from nsysgen.analyze.cli import run_analyze

        return run_analyze(argv[1:])
    if first == "verify":
        from nsysgen.verify_cli import run_verify

        return run_verify(argv[1:])
    if first == "completion":
        return run_completion(argv[1:])
    args = parse_arguments(argv)
    if args.help and (args.verb != "compile" or first == "compile"):
        from nsysgen.cli.help import verb_help

        print(verb_help(args.verb))
        return EXIT_OK
    if args.verb in ("check", "regenerate"):
        from nsysgen.cli.folders import run_check, run_regenerate

        return run_check(args) if args.verb == "check" else run_regenerate(args)
    # Looked up on the module, where tests may have stood another Composer in.
    composer_class: type[Composer] = sys.modules[__name__].Composer
    composer = composer_class([Path(d) for d in args.config_dirs])
    if args.help:
        from nsysgen.cli.help import help_text

        print(help_text(composer))
        return EXIT_OK
    if args.verb == "plan":
        from nsysgen.cli.plan import run_plan

        return run_plan(args, composer)
    if args.verb == "show":
        return run_show(args, composer)
    from nsysgen.cli.compile import run_compile

    return run_compile(args, composer)


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
