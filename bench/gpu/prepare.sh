#!/usr/bin/env bash
# Prepares the GPU proofs on this (CPU) machine: compiles every setup with nsysgen, patches the
# training scripts with the generated training-loop.patch (git apply), and fetches the two
# Debian libraries the Nsight Compute bundle's importer lacks.
# Everything lands in DIR (default device/, git-ignored), which the device run carries.
#   bench/gpu/prepare.sh && run(carry=[device], command="bench/gpu/device.sh")
# For the CPU dry run (tests/bench/test_gpu_dry_runs_legacy.py; the device needs none of them):
# GPU_ROOT (/tmp/nsysgen-gpu), the device's "shared filesystem", and NSYS_HOST
# (/opt/nvidia/nsight-compute/2025.3.1/host), the bundle's host folder, both compiled into the
# jobs (device.sh must get the same); NCCL_ITERS (20) and FSDP_WIDTH (2048), the programs' sizes.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$(realpath -m "${1:-device}")
rm -rf "$out" && mkdir -p "$out/debs" "$out/work"
gpu_root=${GPU_ROOT:-/tmp/nsysgen-gpu}       # the device's "shared filesystem"
cluster=(cluster=local cluster.nodes=1 cluster.gpus_per_node=2 "cluster.shared_fs=$gpu_root"
         "cluster.nsight_root=${NSYS_HOST:-/opt/nvidia/nsight-compute/2025.3.1/host}" nsight=2025.3.1)
python=(workload=python workload.python.interpreter=python3)
compile() { nsysgen "${cluster[@]}" "$@" "output_dir=$out/generated" >/dev/null; }

# Issue 6: the step window on a real loop, and the cost of profiling. One task on one GPU: a
# second task of the same job would share the GPU and slow every step.
# gpu_train.py has two loops (the CUDA-graph warm-up in capture() and the step loop): name it.
loop_line=$(grep -n 'for step in range(args.steps)' tests/workloads/gpu_train.py | cut -d: -f1)
for shape in compute launch; do
  args="workload.python.args=[\"--shape=$shape\",\"--steps=80\",\"--timing-out=$gpu_root/timing-$shape-\${job.name}.json\"]"
  common=("${python[@]}" "workload.python.script=$gpu_root/work/tests/workloads/gpu_train.py" "$args")
  compile "${common[@]}" cluster.gpus_per_node=1 capture=steps capture.step_method=patch \
    capture.first_step=40 capture.last_step=44 capture.ranks=[0] \
    workload.python.source=tests/workloads/gpu_train.py "workload.python.loop_line=$loop_line" \
    "job.name=steps-$shape"
  compile "${common[@]}" cluster.gpus_per_node=1 capture=window capture.delay=0 \
    capture.duration=0 capture.ranks=[0] "job.name=whole-$shape"
done
# Issue 8: NCCL all-reduces over several sizes, two ranks, rank 0 recorded.
compile "${python[@]}" "workload.python.script=$gpu_root/work/tests/workloads/nccl_allreduce.py" \
  "workload.python.args=[\"--iters=${NCCL_ITERS:-20}\",\"--summary-out=$gpu_root/nccl-summary.json\"]" \
  capture=window capture.delay=0 capture.duration=0 capture.ranks=[0] job.name=nccl-allreduce
# Issue 9: FSDP on two GPUs, one torchrun per node and one task per GPU, steps 10..14.
fsdp_args="workload.fsdp.args=[\"--max_steps=30\",\"--width=${FSDP_WIDTH:-2048}\"]"
fsdp_script="workload.fsdp.script=$gpu_root/work/tests/training_scripts/fsdp_train.py"
# Each also without GPU metrics (-nogm), in case the machine denies GPU counter access.
for metrics in true false; do
  suffix=$( [ "$metrics" = true ] || echo -nogm )
  for ranks in all '[0]'; do
    name=fsdp-node-$( [ "$ranks" = all ] && echo all || echo rank0 )$suffix
    compile workload=fsdp "$fsdp_script" "$fsdp_args" capture=steps capture.step_method=patch \
      capture.first_step=10 \
      capture.last_step=14 "capture.ranks=$ranks" "capture.gpu_metrics=$metrics" \
      workload.fsdp.source=tests/training_scripts/fsdp_train.py "job.name=$name"
  done
  compile "${python[@]}" "workload.python.script=$gpu_root/work/tests/training_scripts/fsdp_train.py" \
    "workload.python.args=[\"--max_steps=30\",\"--width=${FSDP_WIDTH:-2048}\"]" capture=steps \
    capture.step_method=patch capture.first_step=10 \
    capture.last_step=14 capture.ranks=all "capture.gpu_metrics=$metrics" \
    workload.python.source=tests/training_scripts/fsdp_train.py "job.name=fsdp-gpu-all$suffix"
done

# The scripts, patched with the generated patches (git apply, from a scratch repository).
git init -q "$out/work"
mkdir -p "$out/work/tests/workloads" "$out/work/tests/training_scripts"
cp tests/workloads/gpu_train.py tests/workloads/nccl_allreduce.py "$out/work/tests/workloads/"
cp tests/training_scripts/fsdp_train.py "$out/work/tests/training_scripts/"
git -C "$out/work" apply "$out/generated/steps-compute/training-loop.patch"
git -C "$out/work" apply "$out/generated/fsdp-node-all/training-loop.patch"
# The step helper beside the patched scripts (the patch adds none: the tree's one copy, which
# nsys-exec names; prove.py also runs the programs without it).
for dest in tests/workloads tests/training_scripts; do
  cp "$out/generated/nsysgen-site/nsysgen_window.py" "$out/work/$dest/"
done
rm -rf "$out/work/.git"

(cd "$out/debs" && apt-get download -qq libdw1 libelf1 2>/dev/null)
cp -r bench/gpu/shim bench/gpu/prove.py bench/gpu/ablate.py bench/gpu/ablate_launch.py \
  bench/gpu/check_results.py bench/gpu/overhead.py bench/gpu/envcheck.py bench/gpu/blobs.py \
  bench/gpu/device.sh "$out/"
du -sh "$out"
