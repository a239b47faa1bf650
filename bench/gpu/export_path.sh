#!/usr/bin/env bash
# Issue 26, GPU: nsysgen's own export path on a real nsys 2025.3.1 report of NCCL all-reduces.
# Records tests/workloads/nccl_allreduce.py (one rank: this machine lends one GPU) under nsys,
# then exports the report three ways and reads each with nsysgen's reader (analyze/report.py):
#   analyze  nsysgen analyze's export (analyze/read/export.py export_sqlite, the switch probed)
#   verify   the folder verifier's export (shipped/verify/tools.py export_sqlite), which analyze reuses
#            (both are nsysgen/reports/export.py's since issue 39: one export, one switch probe)
#   plain    `nsys export --type sqlite` without switches (what both did before)
# and counts, per export, the NCCL calls, those with a size, and those whose size came from
# NCCL's own NVTX payload (the program's "allreduce <bytes>" ranges left out of the reading).
# Usage (device, repository root): bash bench/gpu/export_path.sh DEBS  -> $OUT/export-path.json
set -euo pipefail
# shellcheck source=bench/gpu/nsys-env.sh
. "$(dirname "$0")/nsys-env.sh" "${1:?usage: export_path.sh DEBS}"
: "${OUT:=/tmp/out}"
work=/tmp/export-path && rm -rf "$work" && mkdir -p "$work" "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29561 \
  "$NSYS" profile -t cuda,nvtx -o "$work/nccl" --force-overwrite true \
  python3 tests/workloads/nccl_allreduce.py --iters=20 > "$work/profile.log" 2>&1
"$NSYS" --version
python3 - "$work" "$NSYS" > "$OUT/export-path.json" <<'PY'
import json, shutil, sqlite3, subprocess, sys
from pathlib import Path
sys.path.insert(0, ".")
from nsysgen.analyze.read.export import export_sqlite
from nsysgen.analyze.read.report import read_export
from nsysgen.reports.export import export_switches
from nsysgen.shipped.verify import tools as verify

work, nsys = Path(sys.argv[1]), sys.argv[2]
report = work / "nccl.nsys-rep"
made = {}
for way in ("analyze", "verify", "plain"):
    folder = work / way
    folder.mkdir()
    copy = folder / "r.nsys-rep"
    shutil.copy(report, copy)
    if way == "analyze":
        export = export_sqlite(copy, nsys, force=True)
    elif way == "verify":
        export, why = verify.export_sqlite(verify.Tools(nsys, None, None), copy)
        assert export is not None, why
    else:
        export = copy.with_suffix(".sqlite")
        subprocess.run([nsys, "export", "--type", "sqlite", "--force-overwrite", "true",
                        "--output", str(export), str(copy)], check=True, capture_output=True)
    with sqlite3.connect(export) as db:
        payloads = db.execute(
            "SELECT COUNT(*) FROM NVTX_EVENTS WHERE binaryData IS NOT NULL AND eventType IN (59, 60)"
        ).fetchone()[0]
        # The program's own "allreduce <bytes>" ranges renamed: sizes only from NCCL's payload.
        db.execute("UPDATE NVTX_EVENTS SET text = 'renamed' WHERE text LIKE 'allreduce %'")
        db.execute("UPDATE StringIds SET value = 'renamed' WHERE value LIKE 'allreduce %'")
    calls = read_export(export).calls
    sizes = {}
    for call in calls:
        sizes[str(call.size_bytes)] = sizes.get(str(call.size_bytes), 0) + 1
    made[way] = {"calls": len(calls), "sized": sum(c.size_bytes is not None for c in calls),
                 "ranges_with_payload": payloads, "calls_per_size": sizes,
                 "ops": sorted({c.op for c in calls})}
print(json.dumps({"switches": export_switches(nsys), "verify_switches": export_switches(nsys),
                  "exports": made}, indent=1, sort_keys=True))
PY
cat "$OUT/export-path.json"
tail -5 "$work/profile.log"
