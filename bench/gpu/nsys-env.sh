# shellcheck shell=bash
# Sourced by the GPU-machine scripts (efa_probe.sh, export_rate.sh): nsys 2025.3.1 from the
# Nsight Compute bundle, with the two Debian libraries its importer lacks (reference: the
# libdw fix). Usage: . nsys-env.sh DEBS   (DEBS: a folder with libdw1 and libelf1 .deb files)
# Sets NSYS_HOST (the bundle's host folder; an NSYS_HOST already set is kept: the CPU dry runs
# of tests/bench/ point it at a stand-in bundle) and NSYS (its nsys).
nsys_env_libs=/tmp/nsys-env-libs
for deb in "${1:?usage: . nsys-env.sh DEBS}"/*.deb; do dpkg -x "$deb" "$nsys_env_libs"; done
export LD_LIBRARY_PATH=$nsys_env_libs/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
NSYS_HOST=${NSYS_HOST:-/opt/nvidia/nsight-compute/2025.3.1/host}
export PATH=$NSYS_HOST/linux-desktop-glibc_2_11_3-x64:$PATH
export NSYS_HOST NSYS=$NSYS_HOST/target-linux-x64/nsys
