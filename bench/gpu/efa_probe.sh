#!/usr/bin/env bash
# GPU machine (nsys 2025.3.1): where verify finds EFA counters and NeMo's steps in a report.
# 1. A fake EFA sysfs tree that nic_sampler accepts (each file it asks for is added), counters
#    bumped 20 times a second; nsys profile --enable efa_metrics,-efa-sysfs=<tree>; the tables
#    that hold the samples. Without ports/1/state, nic_sampler exits 1 ("Plugin exited with
#    code 1." in DIAGNOSTIC_EVENT) and the report holds no sample.
# 2. A torch loop that opens a cudaProfilerApi window with emit_nvtx as NeMo's nsys_profile
#    does with gen_shape=true: the NVTX names of its optimizer steps.
# Trimmed exports of both are tests/data/gpu/*-2025.3.1.sqlite.
#   mkdir -p .cache/efa/debs && (cd .cache/efa/debs && apt-get download libdw1 libelf1)
#   cp bench/gpu/efa_probe.sh bench/gpu/nsys-env.sh .cache/efa/ && run(carry=[.cache/efa], command=.cache/efa/efa_probe.sh)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/out}; mkdir -p "$out"
# shellcheck source=nsys-env.sh source-path=SCRIPTDIR
. "$here/nsys-env.sh" "$here/debs"
PLUG=$NSYS_HOST/target-linux-x64/plugins/efa_metrics
exec > >(tee "$out/log.txt") 2>&1
fake=/tmp/fakeib
names="rdma_read_bytes rdma_read_resp_bytes rdma_read_wrs rdma_write_bytes rdma_write_recv_bytes rdma_write_wrs recv_bytes recv_wrs rx_bytes rx_drops rx_pkts send_bytes send_wrs tx_bytes tx_pkts lifespan"
for dev in rdmap16s27 rdmap32s27; do
  d=$fake/$dev/ports/1/hw_counters; mkdir -p "$d"
  echo "4: ACTIVE" > "$fake/$dev/ports/1/state"
  echo "5: LinkUp" > "$fake/$dev/ports/1/phys_state"
  echo "100 Gb/sec (4X EDR)" > "$fake/$dev/ports/1/rate"
  echo "Unspecified" > "$fake/$dev/ports/1/link_layer"
  echo "1: CA" > "$fake/$dev/node_type"
  for n in $names; do echo 0 > "$d/$n"; done
done
for try in $(seq 1 25); do
  msg=$(timeout 2 "$PLUG/nic_sampler" -efa-sysfs "$fake" -print 2>&1 | head -5)
  echo "try $try: $msg" | head -3
  missing=$(echo "$msg" | grep -o 'open [^:]*: no such file or directory' | head -1 | sed 's/^open //; s/: no such.*//')
  [ -n "$missing" ] || break
  for dev in rdmap16s27 rdmap32s27; do
    p=${missing//rdmap16s27/$dev}; p=${p//rdmap32s27/$dev}
    mkdir -p "$(dirname "$p")"; [ -e "$p" ] || echo 0 > "$p"
  done
done
find "$fake" -type f | sort | head -80
( i=0; while true; do i=$((i+1)); for dev in rdmap16s27 rdmap32s27; do for f in "$fake/$dev"/ports/1/hw_counters/*; do echo $((i*1000)) > "$f"; done; done; sleep 0.05; done ) &
bumper=$!
cat > /tmp/efa_prog.py <<'PY'
import time, torch
x = torch.randn(1024, 1024, device="cuda")
end = time.time() + 3
while time.time() < end:
    y = x @ x
torch.cuda.synchronize()
PY
cd /tmp || exit 1
"$NSYS" profile -t cuda,nvtx --enable "efa_metrics,-efa-sysfs=$fake" -o /tmp/efa2 --force-overwrite true python3 /tmp/efa_prog.py 2>&1 | grep -v '%' | tail -5
"$NSYS" profile -t cuda,nvtx -o /tmp/base2 --force-overwrite true python3 /tmp/efa_prog.py 2>&1 | grep -v '%' | tail -2
kill $bumper
for r in efa2 base2; do "$NSYS" export --type sqlite --force-overwrite true -o "/tmp/$r.sqlite" "/tmp/$r.nsys-rep" >/dev/null 2>&1; done
python3 - <<'PY'
import sqlite3
def tables(p):
    db = sqlite3.connect(p)
    return db, {n: db.execute(f'select count(*) from "{n}"').fetchone()[0] for (n,) in db.execute("select name from sqlite_master where type='table'")}
db, efa = tables("/tmp/efa2.sqlite")
_, base = tables("/tmp/base2.sqlite")
for n, c in sorted(efa.items()):
    if c and not base.get(n):
        cols = [r[1] for r in db.execute(f'pragma table_info("{n}")')]
        print("NEW", n, c, cols)
        for r in db.execute(f'select * from "{n}" limit 4'): print("    ", str(r)[:400])
for r in db.execute("select text from DIAGNOSTIC_EVENT where text like '%lugin%'"): print("DIAG", r[0][:200])
for n in ("NVTX_EVENTS", "StringIds"):
    print(n, efa.get(n), base.get(n))
try:
    for r in db.execute("select * from NVTX_EVENTS limit 5"): print("   NVTX", str(r)[:300])
except Exception as e: print(e)
PY
echo "== nemo-like emit_nvtx optimizer step"
cat > /tmp/opt_prog.py <<'PY'
import torch
m = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024)).cuda()
opt = torch.optim.AdamW(m.parameters(), fused=True)
x = torch.randn(64, 1024, device="cuda")
ctx = None
for step in range(8):
    if step == 3:
        torch.cuda.cudart().cudaProfilerStart()
        ctx = torch.autograd.profiler.emit_nvtx(record_shapes=True); ctx.__enter__()
    loss = m(x).sum(); loss.backward(); opt.step(); opt.zero_grad()
    if step == 5:
        ctx.__exit__(None, None, None); torch.cuda.cudart().cudaProfilerStop()
torch.cuda.synchronize()
PY
"$NSYS" profile -t cuda,nvtx --capture-range=cudaProfilerApi --capture-range-end=stop -o /tmp/opt --force-overwrite true python3 /tmp/opt_prog.py 2>&1 | tail -3
"$NSYS" export --type sqlite --force-overwrite true -o /tmp/opt.sqlite /tmp/opt.nsys-rep 2>&1 | tail -1
python3 - /tmp/opt.sqlite <<'PY'
import sqlite3, sys, collections
db = sqlite3.connect(sys.argv[1])
rows = db.execute("select coalesce(e.text, s.value), e.eventType, e.domainId from NVTX_EVENTS e left join StringIds s on e.textId = s.id").fetchall()
c = collections.Counter((str(r[0]).split(',')[0], r[1]) for r in rows)
print("distinct", len(c))
for k, v in c.most_common(40): print(" ", v, k)
for r in rows:
    if r[0] and "ptimizer" in str(r[0]): print("  OPT", r)
PY
cp /tmp/efa2.sqlite /tmp/opt.sqlite "$out/"
