"""Check the reports of one profiled job against what its setup promised.

Standard library only: nsysgen assembles this program (nsysgen/shipped/verify/, with the
report-side facts it shares with `nsysgen analyze`, nsysgen/reports/) into one script, written at
the top of every generated tree as nsysgen-verify.py (nsysgen/shipped/assemble.py), so that
recipes.sh and fetch-reports.sh can check reports on a cluster or laptop where nsysgen is not
installed (`python3 nsysgen-verify.py`). `nsysgen verify` runs the same code. What to expect
comes from nsysgen-expect.json in the folder, which nsysgen writes from the same plan that
`nsysgen plan` shows.

Exit codes: 0 every expected report is there and holds what was asked; 1 something is missing or
wrong (a table says what, per rank, and the likely cause); 2 bad input.
"""

from __future__ import annotations

from nsysgen.reports.contract import EXPECT_FILE, EXPECT_FORMAT, Expect
from nsysgen.shipped.verify.checks import _check_traced, check_contents
from nsysgen.shipped.verify.choice import Run, select_run
from nsysgen.shipped.verify.cli import main
from nsysgen.shipped.verify.contents import Contents, read_contents
from nsysgen.shipped.verify.job import verify
from nsysgen.shipped.verify.model import (
    ANY,
    EXIT_BAD_INPUT,
    EXIT_INCOMPLETE,
    EXIT_OK,
    TOKEN,
    BadInput,
    Finding,
    Numbering,
    Result,
)
from nsysgen.shipped.verify.names import expand_parts, expected_reports, name_regex
from nsysgen.shipped.verify.output import as_json, as_table
from nsysgen.shipped.verify.report import _state_dirs
from nsysgen.shipped.verify.setup import load_expect

# The docstring above is the shipped file's. nsysgen writes this package, with the report-side
# modules it shares with `nsysgen analyze`, as ONE standard-library file (shipped/assemble.py):
# these modules in this order, each after the ones it imports.
PARTS = (
    "nsysgen.reports.contract",
    "nsysgen.reports.export",
    "nsysgen.reports.runs",
    "model",
    "setup",
    "names",
    "choice",
    "tools",
    "contents",
    "optimizer",
    "steps",
    "checks",
    "report",
    "job",
    "output",
    "cli",
)

__all__ = [
    "ANY",
    "EXIT_BAD_INPUT",
    "EXIT_INCOMPLETE",
    "EXIT_OK",
    "EXPECT_FILE",
    "EXPECT_FORMAT",
    "TOKEN",
    "BadInput",
    "Contents",
    "Expect",
    "Finding",
    "Numbering",
    "Result",
    "Run",
    "_check_traced",
    "_state_dirs",
    "as_json",
    "as_table",
    "check_contents",
    "expand_parts",
    "expected_reports",
    "load_expect",
    "main",
    "name_regex",
    "read_contents",
    "select_run",
    "verify",
]
