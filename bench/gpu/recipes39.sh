#!/usr/bin/env bash
# Issue 39, GPU machine (nsys 2025.3.1): `nsysgen analyze` side by side with nsys's recipes
# nccl_sum, nvtx_gpu_proj_sum and cuda_gpu_kern_sum on the same real reports, repeated to the
# largest set that fits the disk and BUDGET_S (bench/gpu/recipes39.py says how), and the floor of
# exporting them one after another. One JSON of results: $OUT/recipes39.json.
# At most about 6 minutes: N is chosen for BUDGET_S=200 s of measured runs on the machine's
# cores (N=COUNT fixes it instead), each command is cut at 150 s and any left after DEADLINE_S
# (330 s) is not run (the JSON says so).
# WHEELS: a folder of wheels of dask[distributed] (and psutil) for the machine's Python (the image
# has no Dask, and no network), installed into a scratch folder so that `nsysgen analyze` runs
# as users run it, on a local Dask cluster; without it, analyze runs --serial and says so.
# Usage (device, repository root; DEBS: libdw1 and libelf1 .deb files, optional: export and
# recipe do not need the importer):
#   [WHEELS=DIR] [N=COUNT | MAX_N=500] [BUDGET_S=200] [DEADLINE_S=330] [BASELINE_CODE=DIR] \
#     bash bench/gpu/recipes39.sh [DEBS]
# BASELINE_CODE: an older checkout of nsysgen (its nsysgen/, conf/, schemas/), whose analyze is
# timed in turn with this one's over the same exports (recipes39.py's `against`).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [[ -n ${1:-} ]]; then
  # shellcheck source=bench/gpu/nsys-env.sh
  . "$here/nsys-env.sh" "$1"
else
  NSYS_HOST=${NSYS_HOST:-/opt/nvidia/nsight-compute/2025.3.1/host}
  NSYS=${NSYS:-$NSYS_HOST/target-linux-x64/nsys}
fi
: "${OUT:=/tmp/out}" "${N:=0}" "${MAX_N:=500}" "${BUDGET_S:=200}" "${DEADLINE_S:=330}"
: "${WORK:=/tmp/recipes39}"
repo=$PWD
if [[ -n ${WHEELS:-} ]]; then
  python3 -m pip install -q --no-index --find-links "$WHEELS" --target "$WORK-dask" \
    'dask[distributed]'
  export PYTHONPATH=$WORK-dask${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$repo${PYTHONPATH:+:$PYTHONPATH}
rm -rf "$WORK" && mkdir -p "$WORK" "$OUT"
"$NSYS" --version
df -h "$WORK" | tail -1
python3 "$here/recipes39.py" --nsys "$NSYS" --work "$WORK" --n "$N" --max-n "$MAX_N" \
  --budget-s "$BUDGET_S" --deadline-s "$DEADLINE_S" \
  ${BASELINE_CODE:+--baseline-code "$BASELINE_CODE"} > "$OUT/recipes39.json"
cat "$OUT/recipes39.json"
rm -rf "$WORK"
