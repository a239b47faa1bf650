"""The command line of nsysgen verify and of the shipped nsysgen-verify.py."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from nsysgen.reports.contract import EXPECT_FILE
from nsysgen.shipped.verify.choice import select_run
from nsysgen.shipped.verify.job import verify
from nsysgen.shipped.verify.model import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    BadInput,
)
from nsysgen.shipped.verify.output import as_json, as_table
from nsysgen.shipped.verify.setup import load_expect


def main(argv: Sequence[str] | None = None, prog: str = "nsysgen-verify.py") -> int:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Check that a profiled job's reports are all there and hold what was asked.",
        epilog=(
            f"examples:\n  {prog} generated/fsdp-p4de\n"
            f"  {prog} generated/fsdp-p4de --job-id 1234 --json\n\n"
            "Exit codes: 0 complete, 1 missing or wrong reports, 2 bad input."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "folder",
        type=Path,
        nargs="?",
        metavar="FOLDER",
        help=f"the compiled setup folder (holding {EXPECT_FILE})",
    )
    parser.add_argument("--reports", type=Path, help="report folder (default: the setup's)")
    parser.add_argument("--job-id", help="the run to check (default: the newest)")
    parser.add_argument("--nsys", help="nsys to read reports with (default: $NSYS, the setup's)")
    parser.add_argument("--importer", help="QdstrmImporter (default: $QDSTRM_IMPORTER, setup's)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--run-folder",
        action="store_true",
        help="print the folder of the run that would be checked (the newest, or --job-id's) "
        "and exit: what recipes.sh and analyze.sbatch read",
    )
    parser.add_argument(
        "--presence-only",
        action="store_true",
        help="without nsys: check only that every report is there, named right and not empty",
    )
    # FOLDER is required, but parsed as optional so that its absence is refused in verify's own
    # words (what a setup folder is), not argparse's; the usage shows it as required.
    parser.usage = parser.format_usage().removeprefix("usage: ").replace("[FOLDER]", "FOLDER")
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:
        return EXIT_OK if stop.code == 0 else EXIT_BAD_INPUT
    folder = args.folder
    try:
        expect = load_expect(folder)
        report_dir = args.reports or Path(expect["report_dir"])
        if args.run_folder:
            print(select_run(expect, report_dir, args.job_id).folder)
            return EXIT_OK
        result = verify(
            expect,
            report_dir,
            args.job_id,
            args.nsys,
            args.importer,
            folder,
            args.presence_only,
        )
    except BadInput as error:
        print(f"verify: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(as_json(result) if args.json else as_table(result))
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
