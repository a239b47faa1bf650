#!/usr/bin/env bash
# Issue 26, GPU (nsys 2025.3.1): what nsysgen's answers cost on real reports of a size that
# matters, side by side with what users would run instead, in one run:
#   floor     `nsys export --type sqlite` with analyze's switches, each report in turn
#   tables    the same export of only the tables analyze reads (--tables)
#   arrowdir, parquetdir   nsys's other exporters, all tables
#   nsysgen   .nsys-rep -> summary.json: `nsysgen analyze` as users run it, on a fresh copy (in
#             one process: --serial; and on a local Dask cluster, one worker per report, beside
#             the floor in parallel); and its map alone, export and read timed apart
#   recipes   nsys recipe nccl_sum, nvtx_gpu_proj_sum, cuda_gpu_kern_sum on a fresh copy of the
#             same reports, in turn (the first one exports them, as a user's first recipe does)
# and whether analyze's reading of a --tables export equals that of a full one.
# The reports: REPORTS (3) runs of a stepped torch loop (NVTX "step N" ranges, 100 small kernels
# and two all-reduces of 1 and 16 MiB per step, one NCCL rank: the GPU is the machine's only one)
# for SECONDS (20) each.
# ONLY_NSYSGEN=1 leaves out the other exporters and the recipes. WHEELS: a folder of wheels of
# dask[distributed] for the machine's Python (the image has no Dask, and no network), installed
# into a scratch folder so that `nsysgen analyze` runs as users run it: on a local Dask cluster.
# Usage (device, repository root, DEBS: libdw1 and libelf1 .deb files):
#   [WHEELS=DIR] bash bench/gpu/bench26.sh DEBS   -> $OUT/bench26.json
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/gpu/nsys-env.sh
. "$here/nsys-env.sh" "${1:?usage: bench26.sh DEBS}"
: "${OUT:=/tmp/out}" "${REPORTS:=3}" "${SECONDS_EACH:=20}"
repo=$PWD
if [[ -n ${WHEELS:-} ]]; then
  python3 -m pip install -q --no-index --find-links "$WHEELS" --target /tmp/bench26-dask \
    'dask[distributed]'
  export PYTHONPATH=/tmp/bench26-dask${PYTHONPATH:+:$PYTHONPATH}
fi
work=/tmp/bench26 && rm -rf "$work" && mkdir -p "$work/reports" "$OUT"
cat > "$work/stepped.py" <<'PY'
import os, sys, time
import torch
import torch.distributed as dist
dist.init_process_group("nccl", rank=0, world_size=1)
x = torch.randn(256, 256, device="cuda")
buffers = [torch.ones(n // 4, device="cuda") for n in (1 << 20, 1 << 24)]
end, step = time.time() + float(sys.argv[1]), 0
while time.time() < end:
    torch.cuda.nvtx.range_push(f"step {step}")
    for _ in range(100):
        x = torch.tanh(x @ x) * 0.5
    for b in buffers:
        dist.all_reduce(b)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    step += 1
dist.destroy_process_group()
PY
export MASTER_ADDR=127.0.0.1 MASTER_PORT=29571
for i in $(seq 0 $((REPORTS - 1))); do
  "$NSYS" profile -t cuda,nvtx -o "$work/reports/bench_job7_rank$i" --force-overwrite true \
    python3 "$work/stepped.py" "$SECONDS_EACH" > "$work/profile$i.log" 2>&1
done
"$NSYS" --version
PYTHONPATH=$repo${PYTHONPATH:+:$PYTHONPATH} python3 - "$work" "$NSYS" > "$OUT/bench26.json" <<'PY'
import importlib.util, json, os, shutil, subprocess, sys, time
from pathlib import Path
from nsysgen.reports.export import export_switches
from concurrent.futures import ThreadPoolExecutor
from nsysgen.analyze.read import map as analyze_map
from nsysgen.analyze.read.map import Progress, Where, map_reports, plan_tasks
from nsysgen.analyze.read.report import read_export

work, nsys = Path(sys.argv[1]), sys.argv[2]
reports = sorted((work / "reports").glob("*.nsys-rep"))
TABLES = ("^CUPTI_ACTIVITY_KIND_KERNEL$,^CUPTI_ACTIVITY_KIND_RUNTIME$,^CUPTI_ACTIVITY_KIND_MEMCPY$,"
          "^CUPTI_ACTIVITY_KIND_MEMSET$,^NVTX_EVENTS$,^NVTX_PAYLOAD_SCHEMA.*,^StringIds$")
result = {"reports": len(reports), "report_bytes": [r.stat().st_size for r in reports],
          "switches": list(export_switches(nsys)), "cores": os.cpu_count(), "seconds": {}}


def timed(name, fn):
    start = time.perf_counter()
    value = fn()
    result["seconds"][name] = round(time.perf_counter() - start, 2)
    return value


def export(kind, extra, suffix):
    folder = work / kind
    folder.mkdir()
    outs = []
    for report in reports:
        target = folder / (report.stem + suffix)
        subprocess.run([nsys, "export", "--type", kind.split("-")[0], "--force-overwrite", "true",
                        *export_switches(nsys), *extra, "--output", str(target), str(report)],
                       check=True, capture_output=True)
        outs.append(target)
    return outs


full = timed("floor: nsys export sqlite", lambda: export("sqlite", [], ".sqlite"))
others = os.environ.get("ONLY_NSYSGEN") != "1"  # ONLY_NSYSGEN=1: the floor and nsysgen only
if others:
    part = timed("nsys export sqlite --tables",
                 lambda: export("sqlite-tables", ["--tables", TABLES], ".sqlite"))
    timed("nsys export arrowdir", lambda: export("arrowdir", [], ""))
    timed("nsys export parquetdir", lambda: export("parquetdir", [], ""))
    result["export_bytes"] = {"sqlite": sum(p.stat().st_size for p in full),
                              "sqlite --tables": sum(p.stat().st_size for p in part)}
    same = [read_export(a, r.stem) == read_export(b, r.stem) for a, b, r in zip(full, part, reports)]
    result["tables_export_reads_equal"] = all(same)
result["steps_per_report"] = [len(t.steps) for r in full for t in read_export(r).tables]
result["nccl_calls_per_report"] = [len(read_export(r).calls) for r in full]

def fresh(name):
    folder = work / name
    folder.mkdir()
    for report in reports:
        shutil.copy(report, folder)
    return folder


def cli(name, *extra):
    """`nsysgen analyze` as users run it, on a fresh copy (no export, no cache)."""
    folder = fresh(name)
    proc = timed(f"nsysgen analyze {' '.join(extra)}", lambda: subprocess.run(
        [sys.executable, "-m", "nsysgen", "analyze", str(folder), "--nsys", nsys,
         "--world-size", "1", *extra], capture_output=True, text=True))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads((folder / "analysis" / "summary.json").read_text())


result["plots_drawn"] = importlib.util.find_spec("matplotlib") is not None
result["dask"] = importlib.util.find_spec("distributed") is not None
summary = cli("nsysgen-serial", "--serial")
result["nsysgen_ranks"], result["nsysgen_steps"] = len(summary["ranks"]), sum(
    len(r["steps"]) for r in summary["ranks"])
# Where the serial run's time goes: the same map in this process, its export and read timed.
phases = {"export": 0.0, "read": 0.0}
real_export, real_read = analyze_map.export_sqlite, analyze_map.read_export
def export_timed(*a, **k):
    start = time.perf_counter(); out = real_export(*a, **k)
    phases["export"] += time.perf_counter() - start; return out
def read_timed(*a, **k):
    start = time.perf_counter(); out = real_read(*a, **k)
    phases["read"] += time.perf_counter() - start; return out
analyze_map.export_sqlite, analyze_map.read_export = export_timed, read_timed
folder = fresh("nsysgen-phases")
tasks = plan_tasks(folder, nsys)
timed("nsysgen map (in turn, one export ahead)", lambda: map_reports(tasks, Where(serial=True), Progress(len(tasks))))
analyze_map.export_sqlite, analyze_map.read_export = real_export, real_read
result["nsysgen_map_phases_s"] = {k: round(v, 2) for k, v in phases.items()}
# In parallel, beside the floor in parallel: every report's export at once.
def exports_at_once():
    folder = work / "sqlite-parallel"
    folder.mkdir()
    with ThreadPoolExecutor(len(reports)) as pool:
        list(pool.map(lambda r: subprocess.run(
            [nsys, "export", "--type", "sqlite", "--force-overwrite", "true",
             *export_switches(nsys), "--output", str(folder / (r.stem + ".sqlite")), str(r)],
            check=True, capture_output=True), reports))
timed("floor in parallel: every export at once", exports_at_once)
if result["dask"]:
    cli("nsysgen-parallel", "--workers", str(len(reports)))

# nsys's own recipes, on another fresh copy, in turn.
recipes = fresh("recipes")
for recipe in ("nccl_sum", "nvtx_gpu_proj_sum", "cuda_gpu_kern_sum") if others else ():
    proc = timed(f"nsys recipe {recipe}", lambda: subprocess.run(
        [nsys, "recipe", recipe, "--input", str(recipes), "--output", str(work / f"out-{recipe}"),
         "--force-overwrite"], capture_output=True, text=True))
    result.setdefault("recipe_exit", {})[recipe] = proc.returncode
    if proc.returncode:
        result.setdefault("recipe_errors", {})[recipe] = (proc.stdout + proc.stderr)[-600:]
s = result["seconds"]
floor = s["floor: nsys export sqlite"]
result["ratios_to_floor"] = {k: round(v / floor, 2) for k, v in s.items()}
result["recipes_total_s"] = round(sum(v for k, v in s.items() if k.startswith("nsys recipe")), 2)
print(json.dumps(result, indent=1, sort_keys=True))
PY
cat "$OUT/bench26.json"
nproc
