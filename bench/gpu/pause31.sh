#!/usr/bin/env bash
# Issue 31, GPU (nsys 2025.3.1): the pause at a capture window's open and close, against the
# window's length, for a launch-bound and a compute-bound loop (bench/gpu/pause_loop.py), RUNS
# runs each, under the nsys flags nsysgen generates for a windowed capture (cudaProfilerApi,
# --capture-range-end=stop). Each run leaves one JSON line: the loop's step times and call times,
# the report's bytes, and nsys's whole run time.
# VARIANTS picks the trace options on top of that (what capture.trace, capture.sample and
# capture.gpu_metrics add): base (cuda,nvtx, no sampling), osrt (+ OS runtime calls), sampling
# (CPU sampling and context switches of the process tree), gpu-metrics (every GPU's counters),
# async (base, but the report written after the window with 2026.x's repeat:1:async).
# Usage (device, repository root, DEBS: libdw1 and libelf1 .deb files):
#   MODES="launch compute" WINDOWS="0.5 2 8 20" RUNS=3 VARIANTS=base bash bench/gpu/pause31.sh DEBS
#   -> $OUT/pause31.jsonl
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/gpu/nsys-env.sh
. "$here/nsys-env.sh" "${1:?usage: pause31.sh DEBS}"
: "${OUT:=/tmp/out}" "${MODES:=launch compute}" "${WINDOWS:=0.5 2 8 20}" "${RUNS:=3}"
: "${VARIANTS:=base}"
work=/tmp/pause31 && rm -rf "$work" && mkdir -p "$work" "$OUT"
"$NSYS" --version
variant_args() {
  case $1 in
    base) echo "--trace=cuda,nvtx --sample=none --cpuctxsw=none --capture-range-end=stop" ;;
    osrt) echo "--trace=cuda,nvtx,osrt --sample=none --cpuctxsw=none --capture-range-end=stop" ;;
    sampling) echo "--trace=cuda,nvtx --sample=process-tree --cpuctxsw=process-tree" \
      "--capture-range-end=stop" ;;
    gpu-metrics) echo "--trace=cuda,nvtx --sample=none --cpuctxsw=none" \
      "--gpu-metrics-devices=all --capture-range-end=stop" ;;
    # Documented for 2026.x; 2025.3.1's help does not list it. With repeat, look for the
    # report under another name before trusting report_bytes.
    async) echo "--trace=cuda,nvtx --sample=none --cpuctxsw=none --capture-range-end=repeat:1:async" ;;
    *) echo "pause31.sh: unknown variant $1" >&2 && exit 2 ;;
  esac
}
for variant in $VARIANTS; do variant_args "$variant" > /dev/null; done  # a typo stops here
for variant in $VARIANTS; do
  flags=$(variant_args "$variant")
  read -r -a options <<< "$flags"
  for mode in $MODES; do
    for window in $WINDOWS; do
      for run in $(seq 1 "$RUNS"); do
        name=$variant-$mode-$window-$run
        start=$(date +%s.%N)
        "$NSYS" profile "${options[@]}" \
          --capture-range=cudaProfilerApi --cuda-event-trace=false \
          --force-overwrite=true --output="$work/$name" \
          python3 "$here/pause_loop.py" "$mode" "$window" "$work/$name.json" \
          > "$work/$name.log" 2>&1 || echo "$name: nsys exited $?"
        end=$(date +%s.%N)
        python3 - "$work/$name.json" "$work/$name.nsys-rep" "$start" "$end" "$run" "$variant" \
          >> "$OUT/pause31.jsonl" <<'PY' || echo "$name: the loop left no record (its log below)"
import json, os, sys
record = json.load(open(sys.argv[1]))
record["report_bytes"] = os.path.getsize(sys.argv[2]) if os.path.exists(sys.argv[2]) else None
record["nsys_wall_s"] = round(float(sys.argv[4]) - float(sys.argv[3]), 2)
record["run"] = int(sys.argv[5])
record["variant"] = sys.argv[6]
print(json.dumps(record))
PY
        rm -f "$work/$name.nsys-rep"
        echo "$name done: $(tail -c 300 "$work/$name.log" | tr '\n' ' ')"
      done
    done
  done
done
