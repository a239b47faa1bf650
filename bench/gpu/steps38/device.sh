#!/usr/bin/env bash
# The step-number proof on the GPU machine (from the repository root, with $OUT), on what
# bench/gpu/steps38/prepare.sh put into DIR (default device/steps38):
#   bash device/steps38/device.sh device/steps38
# 1. nsys 2025.3.1 of the Nsight Compute bundle, with the importer's libdw fix; the stand-in srun.
# 2. The five generated jobs (zero-patch, capture=steps, rank 0 recorded), each job.sbatch
#    unmodified under the stand-in srun, from its program's folder, all five at once; each
#    program writes its own evidence (proof.py): NVTX marks before its optimizer steps and
#    PROOF_LOG, the step number its framework logged for each.
# 3. The generated tree's nsysgen-verify.py (one above the setup folders) on each setup (it
#    exports the run's reports to SQLite), then check.py on each export with that setup's
#    PROOF_LOG: per "step N" range, the optimizer steps inside and the numbers the framework
#    logged for them, which must all be N.
# -> $OUT/steps38.json (summary) and $OUT/steps38.tar.gz (logs, proof logs, verify output,
#    checks, small SQLite exports and reports; under 15 MB).
# Environment: DEADLINE_S (480: no job or check starts past it, and jobs are cut to end before
# it), JOB_TIMEOUT_S (300), SETUPS (all five: the names of setups.txt to run).
set -uo pipefail
dir=$(cd "${1:-device/steps38}" && pwd)
: "${OUT:=/tmp/out}" "${DEADLINE_S:=480}" "${JOB_TIMEOUT_S:=300}"
# shellcheck source=/dev/null
. "$dir/settings.sh"   # root (the jobs' shared filesystem) and NSYS_HOST, as prepare.sh compiled them
: "${root:?settings.sh names no root}"
: "${SETUPS:=$(cut -d' ' -f1 "$dir/setups.txt" | tr '\n' ' ')}"
res=$root/steps38
rel=bench/gpu/steps38
rm -rf "$root" && mkdir -p "$root" "$OUT" "$res"
cp -r "$dir/generated" "$dir/work" "$root/"
chmod +x "$dir"/shim/*
export NSYS_HOST
# shellcheck source=bench/gpu/nsys-env.sh
. "$dir/nsys-env.sh" "$dir/debs"
export QDSTRM_IMPORTER=$NSYS_HOST/linux-desktop-glibc_2_11_3-x64/QdstrmImporter
export PATH=$dir/shim:$PATH
# No network on the device: the Hugging Face libraries must not ask the hub for anything.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export PYTHONUNBUFFERED=1
say() { echo "[steps38 $((SECONDS))s] $*"; }
left() { echo $((DEADLINE_S - SECONDS)); }
pack() { # the summary and the tarball as they stand (again after each phase: a run cut short
  # by the device's limit still brings back what it did)
  rm -rf "$res/generated" && cp -r "$root/generated" "$res/generated"
  rm -rf "$res/generated/nsysgen-site" "$res/generated/nsysgen-verify.py"
  python3 "$dir/summarize.py" "$res" "$dir/setups.txt" > "$OUT/steps38.json"
  cp "$OUT/steps38.json" "$res/"
  tar -C "$root" -czf "$OUT/steps38.tar.gz" steps38
  # At most 16 MiB a file comes back: drop the reports, then the exports, if too large.
  local drop
  for drop in '*.nsys-rep' '*.sqlite'; do
    [ "$(stat -c %s "$OUT/steps38.tar.gz")" -lt 15000000 ] && break
    find "$res" -path '*/reports/*' -name "$drop" -delete
    tar -C "$root" -czf "$OUT/steps38.tar.gz" steps38
  done
  say "packed: $(stat -c %s "$OUT/steps38.tar.gz") bytes"
}
wanted() { case " $SETUPS " in *" $1 "*) return 0 ;; esac; return 1; }

{
  nvidia-smi -L
  python3 -V
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())'
  python3 -c 'import transformers; print("transformers", transformers.__version__)'
  python3 -c 'import lightning; print("lightning", lightning.__version__)'
  python3 -c 'import accelerate; print("accelerate", accelerate.__version__)'
  PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$dir/pylib python3 -c 'import ignite; print("ignite", ignite.__version__, ignite.__file__)'
  python3 -c 'from transformers import TrainerCallback as C; print("on_pre_optimizer_step", hasattr(C, "on_pre_optimizer_step"))'
  "$NSYS" --version
  echo "importer libraries not found: $(ldd "$QDSTRM_IMPORTER" 2>&1 | grep -c 'not found')"
} > "$res/env.txt" 2>&1
cat "$res/env.txt"
say "phase env: done"

run_job() { # SETUP PROGRAM JOB_ID PRE: its job.sbatch under the stand-in srun, from its program's
  # folder; PRE ("-": none): the arguments of a plain run of the program first (no nsys, no
  # nsysgen: a run before the profiled one, as a checkpoint's first run)
  local setup=$1 program=$2 id=$3 pre=$4 out=$res/$1 t0=$SECONDS status=0 limit
  mkdir -p "$out/logs" "$out/framework"
  if [ "$pre" != - ]; then
    (cd "$root/work/$setup/$rel" && PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$dir/pylib \
      PROOF_LOG=$out/proof-pre.jsonl PROOF_OUT=$out/framework \
      timeout -k 10 "$JOB_TIMEOUT_S" python3 "$program" "$pre") > "$out/logs/pre.out" 2>&1 ||
      say "$setup: the run before the job exited $?"
  fi
  limit=$(left)
  [ "$limit" -gt "$JOB_TIMEOUT_S" ] && limit=$JOB_TIMEOUT_S
  if [ "$limit" -lt 30 ]; then
    say "$setup: deadline, job not started"
    printf '{"status": null, "skipped": "deadline"}\n' > "$out/job.json"
    return
  fi
  echo "$id" > "$out/job.id"
  # Its own MASTER_PORT (the stand-in srun passes it on): the Hugging Face libraries start a
  # process group of one under Slurm's rank variables, and the jobs run side by side.
  (cd "$root/work/$setup/$rel" &&
    PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$dir/pylib \
    MASTER_PORT=$((29600 + id % 100)) PROOF_LOG=$out/proof.jsonl PROOF_OUT=$out/framework \
    NSYSGEN_DIR=$root/generated/$setup NSYSGEN_LOG_DIR=$out/logs SLURM_JOB_ID=$id \
    SLURM_JOB_NUM_NODES=1 SLURM_JOB_NODELIST=gpunode1 SLURM_NTASKS_PER_NODE=1 \
    timeout -k 10 "$limit" bash "$root/generated/$setup/job.sbatch") > "$out/logs/job.out" 2>&1 ||
    status=$?
  printf '{"status": %s, "wall_s": %s, "program": "%s"}\n' "$status" "$((SECONDS - t0))" \
    "$program" > "$out/job.json"
  say "$setup: job.sbatch exit $status in $((SECONDS - t0)) s"
}

check_setup() { # SETUP PER_STEP FIRST LAST: verify (it exports), then check.py on each export
  local setup=$1 per_step=$2 first=$3 last=$4 out=$res/$1 rc=0 id
  id=$(cat "$out/job.id" 2> /dev/null) || return 0
  local reports=$root/nsight-reports/$setup/job$id
  if [ "$(left)" -lt 20 ]; then say "$setup: deadline, not checked"; return; fi
  mkdir -p "$out/reports"
  timeout 120 python3 "$root/generated/nsysgen-verify.py" "$root/generated/$setup" --job-id "$id" --json \
    > "$out/verify.json" 2> "$out/verify.err" || rc=$?
  echo "$rc" > "$out/verify.rc"
  timeout 60 python3 "$root/generated/nsysgen-verify.py" "$root/generated/$setup" --job-id "$id" \
    > "$out/verify.txt" 2>&1
  ls -la "$reports" > "$out/reports.txt" 2>&1
  for rep in "$reports"/*.nsys-rep; do
    [ -f "$rep" ] || continue
    local base=${rep%.nsys-rep} name
    name=$(basename "$base")
    if [ ! -f "$base.sqlite" ]; then  # verify exports what it checks; a report it skipped
      timeout 90 "$NSYS" export --type sqlite --force-overwrite true --output "$base.sqlite" \
        "$rep" > "$out/export-$name.log" 2>&1
    fi
    [ -f "$base.sqlite" ] || continue
    python3 "$dir/check.py" "$base.sqlite" "$out/proof.jsonl" --per-step "$per_step" \
      --expect-steps "$first..$last" > "$out/check-$name.json" 2> "$out/check-$name.err"
    echo "$?" > "$out/check-$name.rc"
    # Small files travel back: exports under 5 MB, reports under 2 MB.
    [ "$(stat -c %s "$base.sqlite")" -lt 5000000 ] && cp "$base.sqlite" "$out/reports/"
    [ "$(stat -c %s "$rep")" -lt 2000000 ] && cp "$rep" "$out/reports/"
  done
  say "$setup: verify exit $rc"
}

id=3800
while read -r name program _first _last _per_step _source pre; do
  id=$((id + 1))
  wanted "$name" && run_job "$name" "$program" "$id" "$pre" < /dev/null &
done < "$dir/setups.txt"
wait
say "phase jobs: done"
pack
while read -r name _program first last per_step _source _pre; do
  wanted "$name" && check_setup "$name" "$per_step" "$first" "$last" < /dev/null &
done < "$dir/setups.txt"
wait
say "phase checks: done"
pack
ls -la "$OUT"
python3 - "$OUT/steps38.json" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
print("versions", data.get("versions"))
for name, setup in data["setups"].items():
    print(name, "job", setup.get("job_status"), "verify", setup.get("verify_exit"),
          "ok", setup.get("ok"), "steps", setup.get("steps"))
    for row in setup.get("ranges", []):
        print("   step", row["step"], "keys", row["keys"], "logged", row["logged"], row["problems"])
    for line in setup.get("helper_said", [])[:4]:
        print("   ", line)
print("all ok:", data.get("ok"))
PY
say "all done"
