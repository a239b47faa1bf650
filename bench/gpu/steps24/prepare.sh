#!/usr/bin/env bash
# Prepares the step-helper proof on three public training scripts (runs on the CPU machine):
# compiles with nsysgen, for each script, a zero-patch setup (capture.step_method=hook: the
# script unmodified, nsysgen's sitecustomize on PYTHONPATH) and a patch setup
# (capture.step_method=patch: the generated training-loop.patch applied with git apply to a
# copy), lays the scripts out as the device will run them, and fetches the two Debian libraries
# the Nsight Compute bundle's importer lacks. Everything lands in DIR (default device/steps24,
# git-ignored), which the device run carries:
#   bench/gpu/steps24/prepare.sh && run(carry=["device/steps24"],
#                                      command="bash device/steps24/device.sh device/steps24")
# The scripts (sources and licenses in tests/training_scripts/corpus/corpus.json):
#   nanogpt  karpathy/nanoGPT train.py (MIT), gradient accumulation 4, steps 10..14, 1 process
#   ddp      pytorch/examples ddp-tutorial-series/multigpu_torchrun.py (BSD-3), torchrun, 2 ranks
#            on the one GPU: unmodified but for backend "nccl" -> "gloo" and the GPU index
#            (LOCAL_RANK % device count), steps 3..5, both ranks recorded
#   fabric   Lightning-AI build_your_own_trainer/trainer.py (Apache-2.0), a trainer class whose
#            forward runs inside optimizer.step(closure), epochs of 8 steps with validation and a
#            checkpoint between them; driven by bench/gpu/steps24/fabric_driver.py; steps 6..10
#            (the window spans the end of epoch 0)
# Environment (for the CPU dry run, tests/bench/test_gpu_dry_runs.py; the device needs neither):
#   STEPS24_ROOT (/tmp/nsysgen-gpu): the device's "shared filesystem", compiled into the jobs
#   STEPS24_NSIGHT_ROOT (/opt/nvidia/nsight-compute/2025.3.1/host): the nsys bundle's host folder
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../.."
out=${1:-device/steps24}
case "$out" in /*) ;; *) out=$PWD/$out ;; esac
rm -rf "$out" && mkdir -p "$out/debs" "$out/work" "$out/generated"
root=${STEPS24_ROOT:-/tmp/nsysgen-gpu}  # the device's "shared filesystem" (device.sh copies work/ there)
nsight_root=${STEPS24_NSIGHT_ROOT:-/opt/nvidia/nsight-compute/2025.3.1/host}
corpus=tests/training_scripts/corpus
cluster=(cluster=local cluster.nodes=1 cluster.gpus_per_node=1 "cluster.shared_fs=$root"
         "cluster.nsight_root=$nsight_root" nsight=2025.3.1)
nsysgen=nsysgen
command -v nsysgen > /dev/null || nsysgen=$PWD/.venv/bin/nsysgen   # not activated: the project's venv
compile() { # NAME ARGS...: one setup into $out/generated/NAME (nsysgen's summary into NAME.txt)
  local name=$1
  shift
  "$nsysgen" "${cluster[@]}" "$@" "job.name=$name" "output_dir=$out/generated" > "$out/generated/$name.txt"
}

# Where each setup's scripts live on the device: work/<setup>/<the repository path of source>,
# so that workload.<kind>.script ends with workload.<kind>.source (lint NSG015) and the helper's
# NSYSGEN_PROFILE_STEP_SCOPE names the file that runs.
nanogpt_args='["--dataset='$root'/data/rand","--n_layer=2","--n_head=2","--n_embd=128",'\
'"--block_size=64","--batch_size=8","--gradient_accumulation_steps=4","--max_iters=30",'\
'"--eval_interval=100000","--eval_iters=2","--log_interval=1","--compile=False",'\
'"--always_save_checkpoint=False","--out_dir=out"]'
ddp_args='["1","1","--batch_size=32"]'   # 1 epoch (2048 samples / 2 ranks / 32 = 32 steps), save every epoch
fabric_args='["--epochs=3","--batches=8","--val-batches=2"]'
for method in hook patch; do
  compile "nanogpt-$method" workload=python workload.python.interpreter=python3 \
    "workload.python.script=$root/work/nanogpt-$method/$corpus/nanogpt_train.py" \
    "workload.python.args=$nanogpt_args" "workload.python.source=$corpus/nanogpt_train.py" \
    capture=steps capture.first_step=10 capture.last_step=14 capture.ranks=[0] \
    "capture.step_method=$method"
  # One torchrun per node (2 workers), one nsys session for the node: both ranks recorded.
  compile "ddp-$method" workload=fsdp cluster.gpus_per_node=2 \
    "workload.fsdp.script=$root/work/ddp-$method/$corpus/pt_ddp_multigpu_torchrun.py" \
    "workload.fsdp.args=$ddp_args" "workload.fsdp.source=$corpus/pt_ddp_multigpu_torchrun.py" \
    capture=steps capture.first_step=3 capture.last_step=5 capture.ranks=all \
    "capture.step_method=$method"
  # The trainer is a module: the job names it as the script and the driver as its interpreter
  # (`fabric_driver.py TRAINER.py ARGS`), which imports it from that path.
  compile "fabric-$method" workload=python "workload.python.interpreter=$root/work/fabric_driver.py" \
    "workload.python.script=$root/work/fabric-$method/$corpus/fabric_build_your_own_trainer.py" \
    "workload.python.args=$fabric_args" \
    "workload.python.source=$corpus/fabric_build_your_own_trainer.py" \
    capture=steps capture.first_step=6 capture.last_step=10 capture.ranks=[0] \
    "capture.step_method=$method"
done

# The scripts: hook setups run them unmodified, patch setups the copy the generated patch made.
# One scratch tree per script; the step helper goes beside each patched script (the patch adds
# none: the tree's one copy, which nsys-exec names; the timing runs start the programs without it).
declare -A script=([nanogpt]=nanogpt_train.py [ddp]=pt_ddp_multigpu_torchrun.py
                    [fabric]=fabric_build_your_own_trainer.py)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for name in nanogpt ddp fabric; do
  git init -q "$scratch/$name"
  mkdir -p "$scratch/$name/$corpus" "$out/work/$name-hook/$corpus" "$out/work/$name-patch/$corpus"
  cp "$corpus/${script[$name]}" "$scratch/$name/$corpus/"
  git -C "$scratch/$name" apply --check "$out/generated/$name-patch/training-loop.patch"
  git -C "$scratch/$name" apply "$out/generated/$name-patch/training-loop.patch"
  cp "$scratch/$name/$corpus"/*.py "$out/generated/nsysgen-site/nsysgen_window.py" \
    "$out/work/$name-patch/$corpus/"
done
for method in hook patch; do
  from=$corpus
  [ "$method" = patch ] && from=$scratch/nanogpt/$corpus
  cp "$from/nanogpt_train.py" "$out/work/nanogpt-$method/$corpus/"
  # The scripts' companions, kept here unreformatted as *.py.upstream (ruff checks bench/).
  cp "$here/nanogpt/model.py.upstream" "$out/work/nanogpt-$method/$corpus/model.py"
  cp "$here/nanogpt/configurator.py.upstream" "$out/work/nanogpt-$method/$corpus/configurator.py"
  [ "$method" = patch ] && from=$scratch/ddp/$corpus
  cp "$from/pt_ddp_multigpu_torchrun.py" "$out/work/ddp-$method/$corpus/"
  cp "$here/ddp/datautils.py.upstream" "$out/work/ddp-$method/$corpus/datautils.py"
  [ "$method" = patch ] && from=$scratch/fabric/$corpus
  cp "$from/fabric_build_your_own_trainer.py" "$out/work/fabric-$method/$corpus/"
  # Two ranks on one GPU: gloo (NCCL refuses two ranks on one device) and GPU LOCAL_RANK % count.
  ddp=$out/work/ddp-$method/$corpus/pt_ddp_multigpu_torchrun.py
  [ "$(grep -c 'init_process_group(backend="nccl")' "$ddp")" = 1 ]
  [ "$(grep -c 'int(os.environ\["LOCAL_RANK"\])' "$ddp")" = 2 ]
  sed -i -e 's/init_process_group(backend="nccl")/init_process_group(backend="gloo")/' \
    -e 's/int(os.environ\["LOCAL_RANK"\])/(int(os.environ["LOCAL_RANK"]) % torch.cuda.device_count())/' "$ddp"
  [ "$(grep -c 'backend="gloo"' "$ddp")" = 1 ]
  [ "$(grep -c '% torch.cuda.device_count())' "$ddp")" = 2 ]
done
# What the copies differ by, for the results: the patch (patch setups) and the two DDP lines.
for name in nanogpt ddp fabric; do
  for method in hook patch; do
    diff -u "$corpus/${script[$name]}" "$out/work/$name-$method/$corpus/${script[$name]}" \
      > "$out/generated/$name-$method.diff" || true
  done
done
cp "$here/fabric_driver.py" "$out/work/"
chmod +x "$out/work/fabric_driver.py"

# What device.sh must run with: the root and the nsys bundle the jobs were compiled for.
printf 'root=%q\nNSYS_HOST=%q\n' "$root" "$nsight_root" > "$out/settings.sh"
# One verifier for the tree, above the setup folders (the generated scripts find it there).
[ -f "$out/generated/nsysgen-verify.py" ]

(cd "$out/debs" && apt-get download -qq libdw1 libelf1 2>/dev/null)
ls "$out"/debs/libdw1_*.deb "$out"/debs/libelf1_*.deb > /dev/null
cp -r bench/gpu/shim "$out/"
cp bench/gpu/nsys-env.sh "$here/device.sh" "$here/count.py" "$here/summarize.py" \
  "$here/hookcost.py" "$out/"
# nanoGPT's arguments, one a line, for the cost runs of device.sh (the same run without nsys).
python3 -c 'import json, sys; print("\n".join(json.loads(sys.argv[1])))' "$nanogpt_args" \
  > "$out/nanogpt-args.txt"
for file in "$out"/work/*/"$corpus"/*.py "$out/work/fabric_driver.py"; do
  python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$file"
done
du -sh "$out"
