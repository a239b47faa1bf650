"""Long fuzz run of `nsysgen analyze` on hostile and damaged report folders (issue 48): the
generator of scripts/fuzz_reports.py, for more seeds.

    python bench/fuzz_reports.py --cases 5000 [--first 0]

Prints the number of cases, the outcomes by exit code, the time taken, and every failing case
(exit other than 0 or 2, a traceback, a file written outside --output) with its damages; its
folder is kept under the scratch folder. Exits 1 when any case fails.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.fuzz_reports import base, one  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--first", type=int, default=0, help="the first seed")
    parser.add_argument("--scratch", type=Path, default=None)
    args = parser.parse_args()
    scratch = args.scratch or Path(tempfile.mkdtemp(prefix="nsysgen-fuzz-reports-"))
    folder = base(scratch / "base")
    started, codes, failed = time.monotonic(), collections.Counter[int](), 0
    for seed in range(args.first, args.first + args.cases):
        outcome, why = one(folder, scratch / "cases", seed)
        codes[outcome.code] += 1
        if why is not None:
            failed += 1
            print(f"seed {seed}: {why}; {outcome.damages}; {(outcome.err or outcome.out)[-300:]}")
    seconds = time.monotonic() - started
    shown = ", ".join(f"exit {code}: {count}" for code, count in sorted(codes.items()))
    print(f"{args.cases} cases in {seconds:.0f} s ({shown}); {failed} failed; scratch {scratch}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
