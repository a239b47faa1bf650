#!/usr/bin/env bash
# The step-helper proof on the GPU machine (from the repository root, with $OUT), on what
# bench/gpu/steps24/prepare.sh put into DIR (default device/steps24):
#   bash device/steps24/device.sh device/steps24
# 1. nsys 2025.3.1 of the Nsight Compute bundle, with the importer's libdw fix; the stand-in srun.
# 2. The six generated jobs (nanogpt, ddp, fabric x hook, patch), each job.sbatch unmodified
#    under the stand-in srun, from its script's folder, three at a time (hook, then patch).
# 3. The generated tree's nsysgen-verify.py (one above the setup folders, where recipes.sh finds
#    it) on each setup's run (its reports are in job<ID>/ of the setup's report folder; verify
#    exports each to SQLite), then count.py on each export: per "step N" range, the helper's
#    optimizer-step marks, optimizer kernels and forward kernels launched inside it.
# 4. The helper's cost: nanoGPT without nsys, plain and with the zero-patch helper armed on a
#    window that never opens (hooks on every step, no capture), alternated, RUNS each, from
#    nanoGPT's own "iter N: ... time X ms" lines; and hookcost.py (the hooks alone).
# -> $OUT/steps24.json (summary) and $OUT/steps24.tar.gz (logs, verify output, counts, small
#    SQLite exports and reports).
# Environment: RUNS (3), COST_ITERS (200), DEADLINE_S (450: later cost runs are skipped past it),
# SCRIPTS ("nanogpt ddp fabric": the scripts whose two setups run), NSYSGEN_DRY_RUN (set by the
# CPU dry run, tests/bench/test_gpu_dry_runs.py: /etc/hosts is left alone; the test machine's
# names gpunode1 through tests/infra/install-system-deps.sh).
set -uo pipefail
dir=$(cd "${1:-device/steps24}" && pwd)
root=/tmp/nsysgen-gpu
# shellcheck source=/dev/null
[ -f "$dir/settings.sh" ] && . "$dir/settings.sh"   # root and NSYS_HOST, as prepare.sh compiled them
export NSYS_HOST
: "${OUT:=/tmp/out}" "${RUNS:=3}" "${COST_ITERS:=200}" "${DEADLINE_S:=450}"
: "${SCRIPTS:=nanogpt ddp fabric}"
res=$root/steps24
corpus=tests/training_scripts/corpus
rm -rf "$root" && mkdir -p "$root" "$OUT" "$res/cost"
cp -r "$dir/generated" "$dir/work" "$root/"
chmod +x "$root/work/fabric_driver.py" "$dir"/shim/*
# shellcheck source=bench/gpu/nsys-env.sh
. "$dir/nsys-env.sh" "$dir/debs"
export QDSTRM_IMPORTER=$NSYS_HOST/linux-desktop-glibc_2_11_3-x64/QdstrmImporter
export PATH=$dir/shim:$PATH
# The stand-in scontrol names the node as the job's node list does; torchrun's rendezvous then
# connects to that name, which a real cluster's DNS resolves (here: to this machine).
if [ -z "${NSYSGEN_DRY_RUN:-}" ]; then
  getent hosts gpunode1 > /dev/null || echo '127.0.0.1 gpunode1' >> /etc/hosts
fi
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
say() { echo "[steps24 $((SECONDS))s] $*"; }
pack() { # the summary and the tarball as they stand (again after each phase: a run cut short
  # by the device's limit still brings back what it did)
  rm -rf "$res/generated" && cp -r "$root/generated" "$res/generated"
  rm -rf "$res/generated/nsysgen-site" "$res/generated/nsysgen-verify.py"
  python3 "$dir/summarize.py" "$res" > "$OUT/steps24.json"
  cp "$OUT/steps24.json" "$res/"
  tar -C "$root" -czf "$OUT/steps24.tar.gz" steps24
  # At most 16 MiB a file comes back: drop the reports, then the exports, if too large.
  local drop
  for drop in '*.nsys-rep' '*.sqlite'; do
    [ "$(stat -c %s "$OUT/steps24.tar.gz")" -lt 15000000 ] && break
    find "$res" -path '*/reports/*' -name "$drop" -delete
    tar -C "$root" -czf "$OUT/steps24.tar.gz" steps24
  done
  say "packed: $(stat -c %s "$OUT/steps24.tar.gz") bytes"
}

{
  nvidia-smi -L
  python3 -V
  python3 -c 'import torch, numpy; print("torch", torch.__version__, torch.version.cuda, torch.cuda.device_count(), "numpy", numpy.__version__)'
  python3 -c 'import lightning, lightning_utilities; print("lightning", lightning.__version__, "lightning_utilities", lightning_utilities.__version__)'
  "$NSYS" --version
  echo "importer libraries not found: $(ldd "$QDSTRM_IMPORTER" | grep -c 'not found')"
} > "$res/env.txt" 2>&1
cat "$res/env.txt"

# nanoGPT's data: random GPT-2 token ids (no meta.pkl: the vocabulary stays 50304).
python3 - "$root/data/rand" <<'EOF'
import os, sys
import numpy as np
folder = sys.argv[1]
os.makedirs(folder, exist_ok=True)
rng = np.random.default_rng(0)
rng.integers(0, 50257, 1_000_000, dtype=np.uint16).tofile(os.path.join(folder, "train.bin"))
rng.integers(0, 50257, 100_000, dtype=np.uint16).tofile(os.path.join(folder, "val.bin"))
EOF

run_job() { # SETUP JOB_ID: its job.sbatch under the stand-in srun, from its script's folder
  local setup=$1 id=$2 logs=$res/$1/logs t0=$SECONDS status=0
  mkdir -p "$logs"
  echo "$id" > "$res/$setup/job.id"
  (cd "$root/work/$setup/$corpus" && rm -rf snapshot.pt checkpoints out &&
    NSYSGEN_DIR=$root/generated/$setup NSYSGEN_LOG_DIR=$logs SLURM_JOB_ID=$id \
    SLURM_JOB_NUM_NODES=1 SLURM_JOB_NODELIST=gpunode1 SLURM_NTASKS_PER_NODE=1 \
    timeout -k 10 150 bash "$root/generated/$setup/job.sbatch") > "$logs/job.out" 2>&1 || status=$?
  printf '{"status": %s, "wall_s": %s}\n' "$status" "$((SECONDS - t0))" > "$res/$setup/job.json"
  say "$setup: job.sbatch exit $status in $((SECONDS - t0)) s"
}

check_setup() { # SETUP COUNT_ARGS...: verify, export (if verify did not), count each report
  local setup=$1 folder=$root/generated/$1 out=$res/$1 rc=0 id
  shift
  id=$(cat "$out/job.id" 2> /dev/null) || return 0
  local reports=$root/nsight-reports/$setup/job$id
  mkdir -p "$out/reports"
  timeout 150 python3 "$root/generated/nsysgen-verify.py" "$folder" --job-id "$id" --json \
    > "$out/verify.json" 2> "$out/verify.err" || rc=$?
  echo "$rc" > "$out/verify.rc"
  timeout 60 python3 "$root/generated/nsysgen-verify.py" "$folder" --job-id "$id" \
    > "$out/verify.txt" 2>&1
  ls -la "$reports" > "$out/reports.txt" 2>&1
  for rep in "$reports"/*.nsys-rep; do
    [ -f "$rep" ] || continue
    local base=${rep%.nsys-rep}
    if [ ! -f "$base.sqlite" ]; then
      timeout 90 "$NSYS" export --type sqlite --force-overwrite true --output "$base.sqlite" "$rep" \
        > "$out/export-$(basename "$base").log" 2>&1
    fi
    [ -f "$base.sqlite" ] || continue
    python3 "$dir/count.py" "$base.sqlite" "$@" > "$out/count-$(basename "$base").json" \
      2> "$out/count-$(basename "$base").err"
    # Small files travel back: exports under 5 MB, reports under 2 MB.
    [ "$(stat -c %s "$base.sqlite")" -lt 5000000 ] && cp "$base.sqlite" "$out/reports/"
    [ "$(stat -c %s "$rep")" -lt 2000000 ] && cp "$rep" "$out/reports/"
  done
  say "$setup: verify exit $rc"
}

nanogpt=(--optimizer adam --forward nll_loss_forward --expect-marks 1 --expect-forwards 4
         --expect-steps 10..14)
ddp=(--optimizer multi_tensor_apply --forward 'softmax_warp_forward|SoftMaxForward'
     --expect-marks 1 --expect-forwards 1 --expect-steps 3..5)
# The zero-patch helper begins step N when step N-1's optimizer step ends: its step 8 also
# holds epoch 0's validation (2 batches, 2 more forwards) and checkpoint.
fabric_hook=(--optimizer multi_tensor_apply --forward nll_loss_forward --expect-marks 1
             --expect-forwards "1,8=3" --expect-steps 6..10)
fabric_patch=(--optimizer multi_tensor_apply --forward nll_loss_forward --expect-marks 1
              --expect-forwards 1 --expect-steps 6..10)

wanted() { case " $SCRIPTS " in *" $1 "*) return 0 ;; esac; return 1; }

id=2400
for method in hook patch; do
  for name in nanogpt ddp fabric; do
    id=$((id + 1))
    wanted "$name" || continue
    run_job "$name-$method" "$id" &
  done
  wait
done
pack
wanted nanogpt && check_setup nanogpt-hook "${nanogpt[@]}" &
wanted nanogpt && check_setup nanogpt-patch "${nanogpt[@]}" &
wanted ddp && check_setup ddp-hook "${ddp[@]}" &
wait
wanted ddp && check_setup ddp-patch "${ddp[@]}" &
wanted fabric && check_setup fabric-hook "${fabric_hook[@]}" &
wanted fabric && check_setup fabric-patch "${fabric_patch[@]}" &
wait
pack

# The helper's cost, alone on the GPU, without nsys. none: no nsysgen at all; helper: the
# zero-patch helper armed (the nanogpt-hook job's variables) on a window that never opens.
mapfile -t nanogpt_args < "$dir/nanogpt-args.txt"
cost_env() { # LABEL SCOPE: the environment of one cost run
  env_args=(env -u PYTHONPATH -u RANK -u LOCAL_RANK -u WORLD_SIZE -u NSYSGEN_PROFILE_FIRST_STEP)
  if [ "$1" = helper ]; then
    env_args+=("PYTHONPATH=$root/generated/nsysgen-site"
               NSYSGEN_PROFILE_FIRST_STEP=1000000 NSYSGEN_PROFILE_LAST_STEP=1000004
               NSYSGEN_PROFILE_RANKS=0 NSYSGEN_PROFILE_STEP_EXPR=iter_num
               "NSYSGEN_PROFILE_STEP_SCOPE=$2")
  fi
}
for ((run = 1; run <= RUNS; run++)); do
  for label in none helper; do
    if [ "$SECONDS" -gt "$DEADLINE_S" ]; then say "deadline: cost run $label-$run skipped"; continue; fi
    cost_env "$label" 'nanogpt_train.py:<module>'
    (cd "$root/work/nanogpt-hook/$corpus" &&
      timeout 150 "${env_args[@]}" python3 nanogpt_train.py "${nanogpt_args[@]}" \
        "--max_iters=$COST_ITERS") > "$res/cost/nanogpt-$label-$run.log" 2>&1
    say "cost nanogpt $label run $run: exit $?"
  done
done
for ((run = 1; run <= RUNS; run++)); do
  for label in none helper; do
    if [ "$SECONDS" -gt "$DEADLINE_S" ]; then say "deadline: hookcost $label-$run skipped"; continue; fi
    cost_env "$label" 'hookcost.py:<module>'
    (cd "$dir" && timeout 60 "${env_args[@]}" python3 hookcost.py 2000 7) \
      > "$res/cost/hookcost-$label-$run.log" 2>&1
    say "hookcost $label run $run: exit $?"
  done
done

pack
ls -la "$OUT"
python3 - "$OUT/steps24.json" <<'EOF'
import json, sys
data = json.load(open(sys.argv[1]))
for name, setup in data["setups"].items():
    print(name, "job", setup.get("job_status"), "verify", setup.get("verify_exit"),
          "count ok", setup.get("count_ok"))
    for proc, row in setup.get("steps", {}).items():
        print("   ", proc, "steps", row["steps"], "marks", row["marks"], "optimizer",
              row["optimizer_kernels"], "forward", row["forward_kernels"], row["problems"])
print("cost", json.dumps(data.get("cost"), indent=None)[:1500])
EOF
say "all done"
