#!/usr/bin/env bash
# Runs on the GPU machine, from the carried tree: sets up nsys 2025.3.1 from the Nsight Compute
# bundle (libdw fix) and runs bench/gpu/prove.py.
set -euo pipefail
root=/tmp/nsysgen-gpu
rm -rf "$root" && mkdir -p "$root" "${OUT:=/tmp/out}"
cp -r device/generated device/work "$root/"
libs=$root/libs
for deb in device/debs/*.deb; do dpkg -x "$deb" "$libs"; done
export LD_LIBRARY_PATH=$libs/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=/opt/nvidia/nsight-compute/2025.3.1/host/linux-desktop-glibc_2_11_3-x64:$PATH
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi -L
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.device_count())'
# `device.sh ablate|overhead|envcheck|blobs` runs a later experiment (bench/gpu/ablate.py, overhead.py).
case "${1:-prove}" in
  ablate) python3 device/ablate.py ;;
  overhead) python3 device/overhead.py ;;
  envcheck) python3 device/envcheck.py ;;
  blobs) python3 device/blobs.py ;;
  *) python3 device/prove.py ;;
esac
