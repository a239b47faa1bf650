#!/usr/bin/env bash
# GPU machine (nsys 2025.3.1): how fast `nsys export --type sqlite` reads reports of several sizes,
# and how fast nsysgen's analysis reduces each export (nsysgen.analyze.read.map.run_task, standard
# library only, run from the carried checkout), for the analysis-time estimate that `nsysgen
# plan` shows (nsysgen/profile/analysis_job.py).
# A torch loop of small kernels (a launch-bound training step's shape) is profiled for 2, 8 and
# 24 s (RUN_SECONDS: "2 8 24"); each report is exported once. Prints one JSON line per export;
# writes export-rate.json.
#   mkdir -p .cache/exp/debs && (cd .cache/exp/debs && apt-get download libdw1 libelf1)
#   cp bench/gpu/export_rate.sh bench/gpu/nsys-env.sh .cache/exp/ && run(carry=[.cache/exp], command=.cache/exp/export_rate.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/out}; mkdir -p "$out"
# shellcheck source=nsys-env.sh source-path=SCRIPTDIR
. "$here/nsys-env.sh" "$here/debs"
nsys=$NSYS
repo=$PWD
work=/tmp/export-rate && rm -rf "$work" && mkdir -p "$work" && cd "$work"
cat > loop.py <<'PY'
import sys, time, torch
x = torch.randn(256, 256, device="cuda")
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(100):
        x = torch.tanh(x @ x) * 0.5
    torch.cuda.synchronize()
PY
results=()
for seconds in ${RUN_SECONDS:-2 8 24}; do
  "$nsys" profile -t cuda,nvtx,osrt -o "r$seconds" --force-overwrite true python3 loop.py "$seconds" >/dev/null 2>&1
  line=$(PYTHONPATH=$repo python3 - "$nsys" "r$seconds" "$seconds" <<'PY'
import json, os, sqlite3, subprocess, sys, time
from pathlib import Path
from nsysgen.analyze.read.map import Task, run_task
nsys, name, seconds = sys.argv[1:]
start = time.perf_counter()
subprocess.run([nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "-o",
                f"{name}.sqlite", f"{name}.nsys-rep"], check=True, capture_output=True)
export_s = time.perf_counter() - start
start = time.perf_counter()
run_task(Task(Path(f"{name}.nsys-rep"), Path(f"{name}.sqlite"), None))
reduce_s = time.perf_counter() - start
kernels = sqlite3.connect(f"{name}.sqlite").execute(
    "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
print(json.dumps({"seconds": int(seconds), "report_bytes": os.path.getsize(f"{name}.nsys-rep"),
                  "sqlite_bytes": os.path.getsize(f"{name}.sqlite"), "kernels": kernels,
                  "export_s": round(export_s, 3), "reduce_s": round(reduce_s, 3)}))
PY
)
  echo "$line"
  results+=("$line")
done
(IFS=,; echo "[${results[*]}]") > "$out/export-rate.json"
nproc; uptime
