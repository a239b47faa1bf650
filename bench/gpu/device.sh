#!/usr/bin/env bash
# Runs on the GPU machine, from the carried tree: sets up nsys 2025.3.1 from the Nsight Compute
# bundle (libdw fix) and runs bench/gpu/prove.py.
# For the CPU dry run (tests/bench/test_gpu_dry_runs_legacy.py): GPU_ROOT and NSYS_HOST as
# prepare.sh compiled them (defaults /tmp/nsysgen-gpu, /opt/nvidia/nsight-compute/2025.3.1/host).
set -euo pipefail
# The folder prepare.sh filled (carried to the device); another name when it cannot be device/.
dev=${NSYSGEN_DEVICE_DIR:-device}
export GPU_ROOT=${GPU_ROOT:-/tmp/nsysgen-gpu} NSYS_HOST=${NSYS_HOST:-/opt/nvidia/nsight-compute/2025.3.1/host}
root=$GPU_ROOT
export ABLATE_ROOT=$root ABLATE_NSYS=$NSYS_HOST/target-linux-x64/nsys  # ablate_launch.py's names
rm -rf "$root" && mkdir -p "$root" "${OUT:=/tmp/out}"
cp -r "$dev"/generated "$dev"/work "$root/"
libs=$root/libs
for deb in "$dev"/debs/*.deb; do dpkg -x "$deb" "$libs"; done
export LD_LIBRARY_PATH=$libs/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$NSYS_HOST/linux-desktop-glibc_2_11_3-x64:$PATH
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi -L
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.device_count())'
# `device.sh ablate|ablate-launch|overhead|envcheck|blobs` runs a later experiment
# (bench/gpu/ablate.py, ablate_launch.py, overhead.py, ...).
case "${1:-prove}" in
  ablate) python3 "$dev"/ablate.py ;;
  ablate-launch) python3 "$dev"/ablate_launch.py ;;
  overhead) python3 "$dev"/overhead.py ;;
  envcheck) python3 "$dev"/envcheck.py ;;
  blobs) python3 "$dev"/blobs.py ;;
  *) python3 "$dev"/prove.py ;;
esac
