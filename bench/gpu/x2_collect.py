"""What bench/gpu/x2.sh brought back from the 2-GPU machine, turned into test data and results.

Usage (on the CPU machine, from the repository root, nsysgen installed):
    python3 bench/gpu/x2_collect.py FILES_AT [--date YYYY-MM-DD]

FILES_AT is the folder the device tool put $OUT's files in (x2.json, x2-exports.tar.gz,
x2-stats.tar.gz, ablation-launch-nccl.json). Writes:

(a) tests/data/gpu/nccl17/: each trimmed export xz-compressed (<report>.sqlite.xz, a few hundred
    kB each; tests/analyze/read/test_steps_nccl.py decompresses them), nsys stats CSVs (nsys-stats/)
    and the CSVs of nsys's recipes (recipes/<recipe>/);
(b) bench/gpu/results/x2-DATE.json: the device's facts (x2.json), `nsysgen analyze` over each
    job (stragglers, per-rank medians, whether they are the planted ones), its agreement with nsys
    stats and the recipes, and issue 20's runs (ablate_launch.py --nccl);
and prints the tables for bench/gpu/RESULTS.md.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import lzma
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
import x2  # noqa: E402  (the jobs, the planted stragglers and their check)

DATA = REPO / "tests/data/gpu/nccl17"
RESULTS = HERE / "results"
MS = 1_000_000


def rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.read_text().splitlines()))


def unpack(files: Path, work: Path) -> None:
    for name in ("x2-exports.tar.gz", "x2-stats.tar.gz"):
        if (files / name).exists():
            with tarfile.open(files / name) as tar:
                tar.extractall(work, filter="data")


def test_data(work: Path, data: Path) -> list[Path]:
    """tests/data/gpu/nccl17 from scratch: compressed exports, stats and recipe CSVs."""
    shutil.rmtree(data, ignore_errors=True)
    (data / "nsys-stats").mkdir(parents=True)
    exports = sorted((work / "exports").glob("*.sqlite"))
    for export in exports:
        with lzma.open(data / f"{export.name}.xz", "wb", preset=9 | lzma.PRESET_EXTREME) as out:
            out.write(export.read_bytes())
    for stat in sorted((work / "nsys-stats").glob("*.csv")):
        shutil.copy(stat, data / "nsys-stats" / stat.name)
    for table in sorted((work / "recipes").glob("*/*.csv")):
        target = data / "recipes" / table.parent.name
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(table, target / table.name)
    return exports


def analyse(job: str, exports: list[Path], work: Path, data: Path) -> dict[str, Any]:
    """`nsysgen analyze` over one job's two trimmed exports, and its check."""
    folder = work / "jobs" / job
    folder.mkdir(parents=True)
    for export in exports:
        if export.name.startswith(f"{x2.job_name(job)}_"):
            shutil.copy(export, folder / export.name)
    out = work / "analysis" / job
    proc = subprocess.run(
        [sys.executable, "-m", "nsysgen", "analyze", str(folder), "--output", str(out), "--serial"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        return {"error": proc.stderr[-2000:]}
    summary = json.loads((out / "summary.json").read_text())
    judged = [s for s in range(x2.FIRST, x2.LAST + 1) if s != summary["first_step_ignored"]]
    return {
        "stragglers": summary["stragglers"],
        "check": x2.judge(job, summary["stragglers"], judged) or "planted stragglers named only",
        "collectives_matched": summary["collectives_matched"],
        "ranks": [
            {
                "rank": r["rank"],
                "report": r["report"],
                "device": r["device"],
                "medians_without_first_step": r["medians_without_first_step"],
                "totals": r["totals"],
                "steps": {
                    str(s["step"]): {k: s[k] for k in ("step_ms", "nccl_ms", "wait_ms", "late_ms")}
                    for s in r["steps"]
                },
                "agreement": agreement(r, data),
            }
            for r in summary["ranks"]
        ],
    }


def agreement(rank: dict[str, Any], data: Path) -> dict[str, Any]:
    """nsysgen's kernel totals and step times against nsys stats (the same report)."""
    stats = data / "nsys-stats" / rank["report"]
    kern_csv = Path(f"{stats}_cuda_gpu_kern_sum.csv")
    proj_csv = Path(f"{stats}_nvtx_gpu_proj_sum.csv")
    if not (kern_csv.exists() and proj_csv.exists()):
        return {"missing": [p.name for p in (kern_csv, proj_csv) if not p.exists()]}
    try:
        kern = rows(kern_csv)
        total_ms = sum(int(r["Total Time (ns)"]) for r in kern) / MS
        instances = sum(int(r["Instances"]) for r in kern)
        proj = {r["Range"].lstrip(":"): int(r["Total Proj Time (ns)"]) / MS for r in rows(proj_csv)}
    except (KeyError, ValueError) as error:
        return {"error": f"nsys stats CSVs not as expected: {error!r}"}
    steps = {s["step"]: s["step_ms"] for s in rank["steps"]}
    step_diffs = [abs(v / proj[f"step {s}"] - 1) for s, v in steps.items() if f"step {s}" in proj]
    return {
        "kernel_ms": [rank["totals"]["kernel_ms"], round(total_ms, 4)],
        "kernels": [rank["totals"]["kernels"], instances],
        "steps_compared": len(step_diffs),
        "max_step_rel_diff": max(step_diffs) if step_diffs else None,
    }


def recipes(work: Path) -> dict[str, Any]:
    """The recipes' CSV tables, as rows (their columns are nsys's, not checked here)."""
    found: dict[str, Any] = {}
    for table in sorted((work / "recipes").glob("*/*.csv")):
        found.setdefault(table.parent.name, {})[table.name] = rows(table)
    return found


def markdown(issue17: dict[str, Any], issue20: dict[str, Any]) -> str:
    lines = ["| run | stragglers (nsysgen analyze) | planted? |", "| --- | --- | --- |"]
    for job, result in issue17.items():
        found = "; ".join(
            f"rank {s['rank']} {s['kind']}, steps {', '.join(map(str, s['steps']))}, "
            f"mean {s['mean_lateness_ms']} ms"
            for s in result.get("stragglers", [])
        )
        check = result.get("check", result.get("error", "?"))
        lines.append(f"| {job} | {found or 'none'} | {check} |")
    lines += [
        "",
        "| recorded | runs | job step (ms), run medians | vs neither | rank 0 / rank 1 (ms) |",
        "| --- | --- | --- | --- | --- |",
    ]
    ddp = issue20.get("ddp_summary", {})
    for shape in (s for s in ("neither", "rank0", "both") if s in ddp):
        entry = ddp[shape]
        runs = ", ".join(f"{v:.2f}" for v in entry["run_medians_ms"])
        ranks = " / ".join(f"{v:.2f}" for v in entry.get("rank_median_ms", []))
        pct = entry.get("overhead_pct")
        change = "-" if pct is None else f"{pct:+.1f} %"
        lines.append(
            f"| {shape} | {entry['runs']} | {entry['median_job_step_ms']:.2f} ({runs}) | "
            f"{change} | {ranks} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", type=Path, help="the folder of the files $OUT brought back")
    parser.add_argument("--date", default=datetime.date.today().isoformat())
    parser.add_argument("--data", type=Path, default=DATA, help="(for dry runs) tests data")
    parser.add_argument("--results", type=Path, default=RESULTS, help="(for dry runs) results")
    args = parser.parse_args()
    device = json.loads((args.files / "x2.json").read_text())
    ablation_file = args.files / "ablation-launch-nccl.json"
    issue20 = json.loads(ablation_file.read_text()) if ablation_file.exists() else {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        unpack(args.files, work)
        exports = test_data(work, args.data)
        issue17 = {job: analyse(job, exports, work, args.data) for job in x2.JOBS}
        found_recipes = recipes(work)
    results = {
        "date": args.date,
        "machine": "nvidia-h200-x2",
        "device": device,
        "issue17": issue17,
        "issue17_recipes": found_recipes,
        "issue20": issue20,
    }
    target = args.results / f"x2-{args.date}.json"
    target.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    size = sum(p.stat().st_size for p in args.data.rglob("*") if p.is_file())
    print(f"wrote {args.data} ({size / 1e6:.2f} MB) and {target}")
    print(markdown(issue17, issue20))
    checks = [r.get("check") for r in issue17.values()]
    return 0 if all(c == "planted stragglers named only" for c in checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
