#!/usr/bin/env bash
# Issue 16 GPU proof: nsysgen verify reading a 2025.3.1 report of a step window.
# On the CPU machine: `bench/gpu/verify.sh prepare DIR SRUN` compiles the issue-15 setup
# (bench/gpu/accum_train.py, capture=steps 20..24, auto-patched), copies the stand-in srun SRUN
# and the importer's libraries into DIR. On the GPU machine: `bash DIR/verify.sh run DIR` runs the
# generated job.sbatch under the stand-in srun, then the folder's own nsysgen-verify.py: on the
# job's reports (exit 0 expected), and on a copy without the report (exit 1 expected)
# -> $OUT/verify.json, $OUT/verify-complete.txt, $OUT/verify-missing.txt.
# For the CPU dry run (tests/bench/test_gpu_dry_runs_legacy.py; the device needs neither), the
# same in prepare and run: GPU_ROOT (/tmp/nsysgen-gpu), the device's "shared filesystem", and
# NSYS_HOST (/opt/nvidia/nsight-compute/2025.3.1/host), the bundle's host folder; WIDTH (2048),
# accum_train.py's layer width.
set -euo pipefail
mode=$1 dir=$(realpath -m "$2")
root=${GPU_ROOT:-/tmp/nsysgen-gpu}
host=${NSYS_HOST:-/opt/nvidia/nsight-compute/2025.3.1/host}
if [ "$mode" = prepare ]; then
  srun_standin=$3
  cd "$(dirname "$0")/../.."
  rm -rf "$dir" && mkdir -p "$dir/debs" "$dir/work/bench/gpu" "$dir/shim"
  python3 -m nsysgen cluster=local cluster.nodes=1 cluster.gpus_per_node=1 "cluster.shared_fs=$root" \
    "cluster.nsight_root=$host" nsight=2025.3.1 \
    workload=python workload.python.interpreter=python3 \
    "workload.python.script=$root/work/bench/gpu/accum_train.py" \
    "workload.python.args=[\"--steps=30\",\"--grad-accum-steps=4\",\"--width=${WIDTH:-2048}\"]" \
    capture=steps capture.step_method=patch capture.first_step=20 capture.last_step=24 capture.ranks=[0] \
    workload.python.source=bench/gpu/accum_train.py job.name=verify "output_dir=$dir/generated" >/dev/null
  cp bench/gpu/accum_train.py "$dir/work/bench/gpu/"
  git init -q "$dir/work" && git -C "$dir/work" apply "$dir/generated/verify/training-loop.patch"
  # The step helper beside the patched script (the patch adds none: the tree's one copy).
  cp "$dir/generated/nsysgen-site/nsysgen_window.py" "$dir/work/bench/gpu/"
  rm -rf "$dir/work/.git"
  (cd "$dir/debs" && apt-get download -qq libdw1 libelf1 2>/dev/null)
  cp bench/gpu/shim/scontrol "$srun_standin" "$dir/shim/" && chmod +x "$dir/shim/"*
  cp bench/gpu/verify.sh "$dir/"
  exit 0
fi
rm -rf "$root" && mkdir -p "$root" "${OUT:=/tmp/out}"
cp -r "$dir/generated" "$dir/work" "$root/"
for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$root/libs"; done
export LD_LIBRARY_PATH=$root/libs/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$dir/shim:$host/linux-desktop-glibc_2_11_3-x64:$PATH
mkdir -p "$root/logs"
status=0
NSYSGEN_DIR=$root/generated/verify NSYSGEN_LOG_DIR=$root/logs SLURM_JOB_ID=116 SLURM_JOB_NUM_NODES=1 \
  SLURM_JOB_NODELIST=gpunode1 SLURM_NTASKS_PER_NODE=1 bash "$root/generated/verify/job.sbatch" || status=$?
echo "job.sbatch exit $status"; tail -3 "$root"/logs/*.log || true
folder=$root/generated/verify
verifier=$root/generated/nsysgen-verify.py  # one verifier, above the setup folders
run=$root/nsight-reports/verify/job116      # the run's own folder
ls -la "$run"
code=0
python3 "$verifier" "$folder" --json > "$OUT/verify.json" || code=$?
python3 "$verifier" "$folder" > "$OUT/verify-complete.txt" || true
echo "verify exit $code"; cat "$OUT/verify-complete.txt"
mkdir -p "$root/missing" && cp -r "$run" "$root/missing/"
rm -f "$root"/missing/job116/*.nsys-rep
missing=0
python3 "$verifier" "$folder" --reports "$root/missing" > "$OUT/verify-missing.txt" || missing=$?
echo "verify (report removed) exit $missing"; cat "$OUT/verify-missing.txt"
cp "$run"/*.nsys-rep "$OUT/" 2>/dev/null || true
printf '{"job_status": %s, "verify_exit": %s, "verify_missing_exit": %s}\n' "$status" "$code" "$missing" > "$OUT/exits.json"
