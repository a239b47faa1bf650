"""`nsysgen analyze`: its arguments, checks of its inputs, and what it prints."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from nsysgen.analyze import collect, human_size, parse_nccl_tests_log, summarise, write_csvs
from nsysgen.analyze_plot import plot_op
from nsysgen.errors import EXIT_OK


def run_analyze(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="nsysgen analyze",
        description=(
            "NCCL collectives in nsys reports: GPU kernel time per call, by message size, as CSV "
            "and one PNG per operation."
        ),
    )
    parser.add_argument("reports", type=Path, help="a folder of .nsys-rep/.sqlite, or one file")
    parser.add_argument("--nsys", help="nsys used to export .nsys-rep (default: $NSYS, PATH)")
    parser.add_argument("--output", type=Path, help="default: REPORTS/analysis")
    parser.add_argument(
        "--nccl-tests-log", type=Path, help="nccl-tests output: its times are drawn as lines"
    )
    args = parser.parse_args(argv)
    calls, reports = collect(args.reports, args.nsys)
    base = args.reports if args.reports.is_dir() else args.reports.parent
    out = args.output or base / "analysis"
    reference = parse_nccl_tests_log(args.nccl_tests_log) if args.nccl_tests_log else {}
    summary = summarise(calls)
    written = write_csvs(calls, summary, out)
    for op in sorted({c.op for c in calls}):
        written.append(plot_op(op, [c for c in calls if c.op == op], reference, out))
    if not calls:
        print(f"no NCCL kernels in {reports} report(s): nothing to plot")
    for row in summary:
        size = "unknown" if row.size_bytes is None else human_size(row.size_bytes)
        print(
            f"{row.op:<22} {size:>10} {row.calls:>6} calls  median {row.median_us:9.1f} us  "
            f"p90 {row.p90_us:9.1f} us"
        )
    for path in written:
        print(f"wrote {path}")
    return EXIT_OK
