"""Long fuzz run of the CLI (issue 12, item 3): the generator of scripts/fuzz_cli.py (which
tests/compile/test_fuzz.py runs), for longer.

    python bench/fuzz.py --cases 10000 --seed 1

Prints the number of cases, outcomes by exit code, the time taken, and every case that exits 3,
prints a traceback or "internal error", hangs, or changes the output folder after exit 2 -- each
minimised (overrides dropped one at a time while the same failure remains). Exits 1 when any
case fails, so the run can gate a release.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

# Run as a script from anywhere: scripts/ (which holds the generator) is beside bench/.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

from scripts.fuzz_cli import Case, Outcome, cases, new_scratch, run_case  # noqa: E402


def failure_kind(outcome: Outcome) -> str:
    """The failure class a minimisation must keep: the exit code and the error's first words."""
    first = outcome.err.strip().splitlines()[-1] if outcome.err.strip() else ""
    return f"{outcome.code}:{first[:60]}"


def minimise(case: Case, outcome: Outcome, scratch: Path) -> tuple[Case, Outcome]:
    """Drop overrides (then the verb and output_dir) while the same failure remains."""
    kind = failure_kind(outcome)
    changed = True
    while changed:
        changed = False
        candidates = [
            replace(case, overrides=case.overrides[:i] + case.overrides[i + 1 :])
            for i in range(len(case.overrides))
        ]
        if case.verb:
            candidates.append(replace(case, verb=()))
        if case.output_dir is not None:
            candidates.append(replace(case, output_dir=None))
        for candidate in candidates:
            result = run_case(candidate, scratch)
            if result.bad is not None and failure_kind(result) == kind:
                case, outcome, changed = candidate, result, True
                break
    return case, outcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    scratch = new_scratch(Path(tempfile.mkdtemp(prefix="nsysgen-fuzz-")))
    codes: collections.Counter[int] = collections.Counter()
    failures: list[tuple[Case, Outcome]] = []

    # Hypothesis only generates here (no shrinking: the property never raises); failures are
    # collected, all of them, and minimised afterwards.
    @seed(args.seed)
    @settings(
        max_examples=args.cases,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=cases())
    def explore(case: Case) -> None:
        outcome = run_case(case, scratch)
        codes[outcome.code] += 1
        if outcome.bad is not None:
            failures.append((case, outcome))

    start = time.monotonic()
    explore()
    elapsed = time.monotonic() - start
    total = sum(codes.values())
    print(f"cases: {total} (seed {args.seed}) in {elapsed:.1f} s ({total / elapsed:.0f}/s)")
    for code, count in sorted(codes.items()):
        label = "hang" if code == -1 else f"exit {code}"
        print(f"  {label}: {count}")
    print(f"failures: {len(failures)}")
    seen: set[str] = set()
    for case, outcome in failures:
        small, small_outcome = minimise(case, outcome, scratch)
        key = str(small)
        if key in seen:
            continue
        seen.add(key)
        print(f"- {small}\n    {small_outcome.bad}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
