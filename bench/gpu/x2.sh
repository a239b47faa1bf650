#!/usr/bin/env bash
# Issues 17 and 20 on two H200s with NCCL (the nvidia-h200-x2 machine), in one device call.
#
# On the CPU machine: `bench/gpu/x2.sh prepare DIR` compiles the three issue-17 jobs
# (bench/gpu/x2.py overrides: capture=steps, ranks=all, 2 tasks on one node), patches
# tests/workloads/gpu_train.py with the generated training-loop.patch (git apply), fetches the
# libraries the Nsight Compute bundle's importer lacks, and copies what runs on the device into
# DIR. DIR must be a git-ignored folder of the checkout the device tool sends (.cache/x2).
#
# On the GPU machine, from the repository root, with carry=[DIR]: `bash DIR/x2.sh run DIR`
#   1. issue 17 (x2.py run): the jobs clean / slow / hiccup through the stand-in srun, each
#      report exported, trimmed, nsys stats and recipes, packed;
#   2. issue 20 (ablate_launch.py --nccl): DDP on 2 GPUs, neither / rank 0 / both ranks under
#      nsys, up to 4 rounds, for as long as the deadline allows.
# Everything ends within X2_DEADLINE_S (default 465 s) of the start. Back in $OUT: x2.log,
# x2.json, x2-exports.tar.gz, x2-stats.tar.gz, x2-reports.tar, ablation-launch-nccl.json.
# Then, on the CPU machine: python3 bench/gpu/x2_collect.py FILES_AT (tests data, results).
# For the CPU dry run (tests/bench/test_gpu_dry_runs_legacy.py; the device needs neither), the
# same in prepare and run: X2_ROOT (/tmp/nsysgen-gpu), the device's "shared filesystem", compiled
# into the jobs; NSYS_HOST (/opt/nvidia/nsight-compute/2025.3.1/host), the bundle's host folder
# (as nsys-env.sh names it). X2_JOB_TIMEOUT_S (75): the limit of each issue-17 job.
set -euo pipefail
mode=${1:?usage: x2.sh prepare|run DIR} dir=${2:?usage: x2.sh prepare|run DIR}
export X2_ROOT=${X2_ROOT:-/tmp/nsysgen-gpu} # the device's "shared filesystem" (x2.py's ROOT)
export NSYS_HOST=${NSYS_HOST:-/opt/nvidia/nsight-compute/2025.3.1/host}
root=$X2_ROOT nsys=$NSYS_HOST/target-linux-x64/nsys

prepare() {
  dir=$(realpath -m "$dir")
  cd "$(dirname "$0")/../.."
  rm -rf "$dir" && mkdir -p "$dir/debs" "$dir/work/tests/workloads"
  local job text overrides
  for job in $(python3 bench/gpu/x2.py jobs); do
    text=$(python3 bench/gpu/x2.py overrides "$job")
    mapfile -t overrides <<<"$text"
    nsysgen "${overrides[@]}" "output_dir=$dir/generated" >/dev/null
  done
  # The jobs differ in the program's arguments only: one patch serves them all.
  for job in slow hiccup; do
    cmp "$dir/generated/x2-clean/training-loop.patch" "$dir/generated/x2-$job/training-loop.patch"
  done
  cp tests/workloads/gpu_train.py "$dir/work/tests/workloads/"
  git init -q "$dir/work"
  git -C "$dir/work" apply "$dir/generated/x2-clean/training-loop.patch"
  # The step helper beside the patched script (the patch adds none: the tree's one copy).
  cp "$dir/generated/nsysgen-site/nsysgen_window.py" "$dir/work/tests/workloads/"
  rm -rf "$dir/work/.git"
  (cd "$dir/debs" && apt-get download -qq libdw1 libelf1 2>/dev/null)
  ls "$dir"/debs/libdw1_*.deb "$dir"/debs/libelf1_*.deb >/dev/null
  cp -r bench/gpu/shim bench/gpu/x2.sh bench/gpu/x2.py bench/gpu/prove.py \
    bench/gpu/ablate_launch.py "$dir/"
  du -sh "$dir"
}

run() {
  local start=$SECONDS deadline=${X2_DEADLINE_S:-465} status17=0 status20=skipped left
  rm -rf "$root" && mkdir -p "$root"
  cp -r "$dir/generated" "$dir/work" "$root/"
  chmod +x "$dir"/shim/* "$root"/generated/*/nsys-exec
  for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$root/libs"; done
  export LD_LIBRARY_PATH=$root/libs/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PATH=$NSYS_HOST/linux-desktop-glibc_2_11_3-x64:$PATH
  # NVLink multicast stays off on the shared machines (device KINDS.md).
  export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
  export PYTHONUNBUFFERED=1
  nvidia-smi -L
  python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.device_count(), "GPUs")'
  # Issue 17 first (the data); its own deadline leaves issue 20 at least 230 s.
  X2_REPO=$PWD X2_NSYS=$nsys X2_DEADLINE_S=$((deadline - 240)) X2_JOB_TIMEOUT_S=${X2_JOB_TIMEOUT_S:-75} \
    timeout -k 10 $((deadline - 230)) python3 "$dir/x2.py" run || status17=$?
  left=$((deadline - (SECONDS - start) - 10))
  if [ "$left" -ge 60 ]; then
    status20=0
    ABLATE_ROOT=$root ABLATE_NSYS=$nsys ABLATE_WRAPPER=generated/x2-clean/nsys-exec WARMUP=0 DEADLINE_S=$left \
      timeout -k 10 $((left + 20)) python3 "$dir/ablate_launch.py" --nccl || status20=$?
  fi
  echo "x2: issue 17 exit $status17, issue 20 exit $status20, $((SECONDS - start)) s"
  ls -la "$OUT"
  [ "$status17" = 0 ] && [ "$status20" = 0 ]
}

case "$mode" in
  prepare) prepare ;;
  run)
    export OUT=${OUT:-/tmp/out}
    mkdir -p "$OUT"
    run 2>&1 | tee "$OUT/x2.log"
    ;;
  *) echo "usage: x2.sh prepare|run DIR" >&2 && exit 2 ;;
esac
