#!/usr/bin/env bash
# Issue 15 GPU proof. On the CPU machine: `bench/gpu/accum.sh prepare DIR` compiles a setup for
# bench/gpu/accum_train.py (capture=steps 20..24, no loop_line), patches the script with the
# generated training-loop.patch (git apply) and fetches the importer's libraries into DIR.
# On the GPU machine: `bash DIR/accum.sh run DIR` runs the generated job.sbatch under the
# stand-in srun and checks the report (accum_check.py) -> $OUT/accum.json.
# For the CPU dry run (tests/bench/test_gpu_dry_runs_legacy.py; the device needs neither), the
# same in prepare and run: GPU_ROOT (/tmp/nsysgen-gpu), the device's "shared filesystem", and
# NSYS_HOST (/opt/nvidia/nsight-compute/2025.3.1/host), the bundle's host folder; WIDTH (2048),
# accum_train.py's layer width.
set -euo pipefail
mode=$1 dir=$(realpath -m "$2")
root=${GPU_ROOT:-/tmp/nsysgen-gpu}
export NSYS_HOST=${NSYS_HOST:-/opt/nvidia/nsight-compute/2025.3.1/host}
if [ "$mode" = prepare ]; then
  cd "$(dirname "$0")/../.."
  rm -rf "$dir" && mkdir -p "$dir/debs" "$dir/work/bench/gpu"
  nsysgen cluster=local cluster.nodes=1 cluster.gpus_per_node=1 "cluster.shared_fs=$root" \
    "cluster.nsight_root=$NSYS_HOST" nsight=2025.3.1 \
    workload=python workload.python.interpreter=python3 \
    "workload.python.script=$root/work/bench/gpu/accum_train.py" \
    "workload.python.args=[\"--steps=30\",\"--grad-accum-steps=4\",\"--width=${WIDTH:-2048}\"]" \
    capture=steps capture.step_method=patch capture.first_step=20 capture.last_step=24 capture.ranks=[0] \
    workload.python.source=bench/gpu/accum_train.py job.name=accum "output_dir=$dir/generated" >/dev/null
  cp bench/gpu/accum_train.py "$dir/work/bench/gpu/"
  git init -q "$dir/work" && git -C "$dir/work" apply "$dir/generated/accum/training-loop.patch"
  # The step helper beside the patched script (the patch adds none: the tree's one copy).
  cp "$dir/generated/nsysgen-site/nsysgen_window.py" "$dir/work/bench/gpu/"
  rm -rf "$dir/work/.git"
  (cd "$dir/debs" && apt-get download -qq libdw1 libelf1 2>/dev/null)
  cp -r bench/gpu/shim bench/gpu/accum.sh bench/gpu/accum_check.py "$dir/"
  exit 0
fi
rm -rf "$root" && mkdir -p "$root" "${OUT:=/tmp/out}"
cp -r "$dir/generated" "$dir/work" "$root/"
for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$root/libs"; done
export LD_LIBRARY_PATH=$root/libs/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$dir/shim:$NSYS_HOST/linux-desktop-glibc_2_11_3-x64:$PATH
mkdir -p "$root/logs"
status=0
NSYSGEN_DIR=$root/generated/accum NSYSGEN_LOG_DIR=$root/logs SLURM_JOB_ID=115 SLURM_JOB_NUM_NODES=1 \
  SLURM_JOB_NODELIST=gpunode1 SLURM_NTASKS_PER_NODE=1 bash "$root/generated/accum/job.sbatch" || status=$?
echo "job.sbatch exit $status"; tail -5 "$root"/logs/*.log || true
python3 "$dir/accum_check.py" "$root" "$status"
