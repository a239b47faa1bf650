"""`nsysgen check` and `nsysgen regenerate`: the verbs over committed output folders."""

from __future__ import annotations

from pathlib import Path

from nsysgen.cli.args import Arguments, UsageError
from nsysgen.drivers.check import check_output, render_report
from nsysgen.drivers.regenerate import regenerate_output, render
from nsysgen.errors import EXIT_DRIFT, EXIT_OK


def _output_dir(args: Arguments) -> Path:
    output_dir = Path("generated")
    for word in args.overrides:
        if not word.startswith("output_dir="):
            raise UsageError(f"{args.verb} takes only output_dir=DIR, not {word}", args.verb)
        output_dir = Path(word.split("=", 1)[1])
    return output_dir


def run_check(args: Arguments) -> int:

    output_dir = _output_dir(args)
    report = check_output(output_dir)
    print(render_report(report, output_dir))
    return EXIT_DRIFT if report.findings else EXIT_OK


def run_regenerate(args: Arguments) -> int:

    output_dir = _output_dir(args)
    report = regenerate_output(output_dir, args.force)
    print(render(report, output_dir))
    return EXIT_DRIFT if report.kept or report.failed else EXIT_OK
