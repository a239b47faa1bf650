"""One export's read (nsysgen.analyze.read.report.read_export: every table the analysis reads, the
per-step figures, the collectives' landmarks) by today's code and by another checkout's, in one
run, alternating, best of N: the ratio a change of the reader costs, on the same files.

    python bench/bench_read_compare.py --baseline-code DIR [--repeat 5] [--json OUT] EXPORT...

Each measurement is a process of its own (imports excluded from the time: the reads only), so
the two checkouts never share a module. The GPU machine's bench/gpu/recipes39.sh measures the
whole analysis at 2,000 reports; this one isolates the reader, on any machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Run inside the measured checkout: reads every export once, prints the seconds.
TIMER = """
import sys, time
from pathlib import Path
try:
    from nsysgen.analyze.read.report import read_export
except ImportError:  # a checkout from before analyze/ was in stages
    from nsysgen.analyze.report import read_export
paths = [Path(p) for p in sys.argv[1:]]
start = time.perf_counter()
for path in paths:
    read_export(path, path.name)
print(time.perf_counter() - start)
"""


def once(code: Path, exports: list[str]) -> float:
    done = subprocess.run(
        [sys.executable, "-c", TIMER, *exports],
        env={"PYTHONPATH": str(code), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return float(done.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-code", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path)
    parser.add_argument("exports", nargs="+")
    args = parser.parse_args()
    today: list[float] = []
    baseline: list[float] = []
    for _ in range(args.repeat):
        baseline.append(once(args.baseline_code, args.exports))
        today.append(once(REPO, args.exports))
    result = {
        "exports": args.exports,
        "baseline_code": str(args.baseline_code),
        "baseline_best_s": round(min(baseline), 4),
        "today_best_s": round(min(today), 4),
        "ratio": round(min(today) / min(baseline), 3),
        "baseline_s": [round(t, 4) for t in baseline],
        "today_s": [round(t, 4) for t in today],
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
