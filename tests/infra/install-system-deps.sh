#!/usr/bin/env bash
# Installs the system packages the test suite runs for real: Slurm + munge (local cluster),
# ShellCheck (generated scripts), zsh (its completion is tested), libssh-dev (QdstrmImporter of the unpacked nsys 2023.4.4),
# BusyBox (what fetch-reports.sh runs in its helper pod, the busybox image's shell and tools),
# kubectl (its offline strategic merge patch: how Kubeflow Trainer merges runtimePatches),
# chromium (analyze's report.html is opened in it headless, driven by Playwright through its
# executable_path: Playwright's own browser download cannot be reached here); and names the
# GPU dry runs' stand-in node (gpunode1) in /etc/hosts.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
missing=()
for cmd_pkg in slurmctld:slurm-wlm munged:munge shellcheck:shellcheck zsh:zsh busybox:busybox kubectl:kubernetes-client chromium:chromium; do
  command -v "${cmd_pkg%%:*}" >/dev/null 2>&1 || missing+=("${cmd_pkg#*:}")
done
[ -e /usr/lib/x86_64-linux-gnu/libssh.so ] || missing+=(libssh-dev)
if [ "${#missing[@]}" -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The GPU proofs' dry runs (tests/bench) run generated torchrun jobs on the one node their stand-in
# srun and scontrol name, gpunode1, as bench/gpu does on the GPU machine: torchrun's rendezvous
# connects to that name, which a cluster's DNS resolves; here /etc/hosts does.
getent hosts gpunode1 >/dev/null || echo '127.0.0.1 gpunode1' >> /etc/hosts
echo "system deps ok: $(slurmctld -V) munge $(munged --version 2>&1 | head -1) $(shellcheck --version | sed -n 2p)"
