#!/usr/bin/env bash
# Prepares the step-number proof on five framework-driven training programs (runs on the CPU
# machine): compiles with nsysgen, for each program, a zero-patch setup (capture=steps,
# capture.step_method=hook: the program unmodified, nsysgen's sitecustomize on PYTHONPATH through
# the generated job.sbatch and nsys-exec), lays the programs out as the device will run them, and
# fetches the two Debian libraries the Nsight Compute bundle's importer lacks. Everything lands in
# DIR (default device/steps38, git-ignored), which the device run carries:
#   bench/gpu/steps38/prepare.sh && run(carry=["device/steps38"],
#                                      command="bash device/steps38/device.sh device/steps38")
# The programs (bench/gpu/steps38/, each with proof.py beside it):
#   hf-trainer          hf_trainer.py: transformers Trainer, tiny GPT-2, accumulation 4, 10..14
#   lightning-trainer   lightning_trainer.py: lightning Trainer, accumulation 2, CSVLogger, 10..14
#   accelerate-loop     accelerate_loop.py: no_trainer-style loop, accumulation 2, 10..14,
#                       compiled with workload.python.source (nsysgen reads completed_steps)
#   gan-two-optimizers  gan_two_optimizers.py: D then G each iteration, 10..14, no source (two
#                       optimizer steps a training step, learned at run time)
#   compiled-graphs     compiled_graphs.py: torch.compile(mode="reduce-overhead"), eager AdamW, 20..24
# and issue 47's shapes (windows inside the second half of the run):
#   hf-resume-new       hf_resume.py: a Trainer resumed from checkpoint-20 to 40 in a new process
#                       (device.sh runs the first 20 steps before the job, outside nsys), 25..29
#   hf-resume-same      hf_resume.py: both runs in the job's process (a second Trainer), 25..29
#   two-phase           two_phase.py: a new AdamW after 20 steps, no source, 25..29
#   two-phase-source    two_phase.py with workload.python.source (nsysgen reads global_step)
#   lightning-gan       lightning_gan.py: manual optimization, 2 optimizers a batch, 10..14
#   ignite-loop         ignite_loop.py: an Ignite Engine, state.iteration, 10..14 (Ignite, pure
#                       Python, travels in pylib/ for a device without it)
#   epoch-index         epochs.py: logs each step's place in its epoch; the compile asks for
#                       step_expr (its question kept in generated/epoch-index-asked.txt) and the
#                       setup answers `epoch * len(loader) + i`, 14..17 across two epochs
# Environment (for the CPU dry run, tests/bench/test_gpu_dry_runs.py; the device needs neither):
#   STEPS38_ROOT (/tmp/nsysgen-steps38): the device's "shared filesystem", compiled into the jobs
#   STEPS38_NSIGHT_ROOT (/opt/nvidia/nsight-compute/2025.3.1/host): the nsys bundle's host folder
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../.."
out=${1:-device/steps38}
case "$out" in /*) ;; *) out=$PWD/$out ;; esac
root=${STEPS38_ROOT:-/tmp/nsysgen-steps38}
nsight_root=${STEPS38_NSIGHT_ROOT:-/opt/nvidia/nsight-compute/2025.3.1/host}
rm -rf "$out" && mkdir -p "$out/debs" "$out/work" "$out/generated"
rel=bench/gpu/steps38   # the programs' repository folder, kept under work/<setup>/ (lint NSG015)
cluster=(cluster=local cluster.nodes=1 cluster.gpus_per_node=1 "cluster.shared_fs=$root"
         "cluster.nsight_root=$nsight_root" nsight=2025.3.1)
nsysgen=nsysgen
command -v nsysgen > /dev/null || nsysgen=$PWD/.venv/bin/nsysgen   # not activated: the project's venv

# setup, program, first step, last step, optimizer steps a training step (what check.py expects),
# whether nsysgen reads the program (workload.python.source; "answer": and the step_expr below,
# which it asks for), the arguments of a plain run of the program before its job (device.sh;
# "-": none)
setups="hf-trainer hf_trainer.py 10 14 1 no -
lightning-trainer lightning_trainer.py 10 14 1 no -
accelerate-loop accelerate_loop.py 10 14 1 yes -
gan-two-optimizers gan_two_optimizers.py 10 14 2 no -
compiled-graphs compiled_graphs.py 20 24 1 no -
hf-resume-new hf_resume.py 25 29 1 no --phase=first
hf-resume-same hf_resume.py 25 29 1 no -
two-phase two_phase.py 25 29 1 no -
two-phase-source two_phase.py 25 29 1 yes -
lightning-gan lightning_gan.py 10 14 2 no -
ignite-loop ignite_loop.py 10 14 1 no -
epoch-index epochs.py 14 17 1 answer -"
answer="workload.python.step_expr='epoch * len(loader) + i'"
echo "$setups" > "$out/setups.txt"
while read -r name program first last _per_step source _pre; do
  work=$out/work/$name/$rel
  mkdir -p "$work"
  cp "$here/$program" "$here/proof.py" "$work/"
  case "$program" in hf_resume.py) cp "$here/hf_trainer.py" "$work/" ;; esac  # its Trainer parts
  args=()
  [ "$source" != no ] && args+=("workload.python.source=$rel/$program")
  if [ "$source" = answer ]; then
    # The question first: without step_expr the compile refuses (exit 2) and says why.
    status=0
    "$nsysgen" "${cluster[@]}" workload=python "${args[@]}" \
      "workload.python.script=$root/work/$name/$rel/$program" capture=steps \
      capture.step_method=hook "capture.first_step=$first" "capture.last_step=$last" \
      "job.name=$name" "output_dir=$out/asked" 2> "$out/generated/$name-asked.txt" || status=$?
    [ "$status" = 2 ] && grep -q 'set step_expr' "$out/generated/$name-asked.txt"
    args+=("$answer")
  fi
  # nsysgen's own summary (method, how it numbers the steps) goes into NAME.txt for the results.
  "$nsysgen" "${cluster[@]}" workload=python workload.python.interpreter=python3 \
    "workload.python.script=$root/work/$name/$rel/$program" "${args[@]}" \
    capture=steps capture.step_method=hook capture.ranks=[0] \
    "capture.first_step=$first" "capture.last_step=$last" \
    "job.name=$name" "output_dir=$out/generated" > "$out/generated/$name.txt"
  python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$work/$program"
done <<< "$setups"
# The folders the device reads: the generated tree (one verifier above the setups), its jobs.
[ -f "$out/generated/nsysgen-verify.py" ]
while read -r name _rest; do
  [ -f "$out/generated/$name/job.sbatch" ]
  [ -x "$out/generated/$name/nsys-exec" ]
  [ -f "$out/generated/nsysgen-site/sitecustomize.py" ]
done <<< "$setups"
printf 'root=%q\nNSYS_HOST=%q\n' "$root" "$nsight_root" > "$out/settings.sh"

(cd "$out/debs" && apt-get download -qq libdw1 libelf1 2>/dev/null)
ls "$out"/debs/libdw1_*.deb "$out"/debs/libelf1_*.deb > /dev/null
cp -r bench/gpu/shim "$out/"
# Ignite for ignite-loop: pure Python, copied from this Python's (device.sh puts it last on the
# jobs' PYTHONPATH, so an Ignite the device has wins).
mkdir -p "$out/pylib"
ignite=$(python3 -c 'import ignite, os; print(os.path.dirname(ignite.__file__))')
cp -r "$ignite" "$out/pylib/" && find "$out/pylib" -name __pycache__ -prune -exec rm -rf {} +
cp bench/gpu/nsys-env.sh "$here/device.sh" "$here/check.py" "$here/summarize.py" "$out/"
du -sh "$out"
