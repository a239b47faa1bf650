#!/usr/bin/env bash
# A real single-host Slurm for the tests: munged, slurmctld and two simulated slurmd nodes
# (node1, node2) with 8 fake GPUs each, all under one scratch directory. Nothing goes to /etc or
# /run; stop kills by PID (never by name), so other Slurm or munge processes on the host survive.
#   slurm.sh start BASE   -> prints the SLURM_CONF to export
#   slurm.sh stop BASE
set -euo pipefail

action=${1:?usage: slurm.sh start|stop BASE}
base=${2:?usage: slurm.sh start|stop BASE}
base=$(realpath -m "$base")
nodes=(node1 node2)
gpus=8

write_config() {
  local host
  host=$(hostname -s)
  mkdir -p "$base"/{etc,munge,state/ctld,log,run}
  for node in "${nodes[@]}"; do
    mkdir -p "$base/state/d-$node" "$base/tmp/$node" "$base/fakedev/$node"
    for ((i = 0; i < gpus; i++)); do
      # Character devices with NVIDIA's major number: a GRES File= must be a device.
      [ -e "$base/fakedev/$node/nvidia$i" ] || mknod "$base/fakedev/$node/nvidia$i" c 195 "$i"
    done
  done
  if [ ! -f "$base/munge/munge.key" ]; then
    dd if=/dev/urandom of="$base/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$base/munge/munge.key"
  fi
  chmod 755 "$base/munge"
  cat > "$base/etc/slurm.conf" <<CONF
ClusterName=nsysgentest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$base/munge/munge.socket.2
SlurmctldPort=${NSYSGEN_SLURMCTLD_PORT:-16817}
StateSaveLocation=$base/state/ctld
SlurmdSpoolDir=$base/state/d-%n
SlurmctldPidFile=$base/run/slurmctld.pid
SlurmdPidFile=$base/run/slurmd-%n.pid
SlurmctldLogFile=$base/log/slurmctld.log
SlurmdLogFile=$base/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
InactiveLimit=0
KillWait=5
MinJobAge=300
MailProg=/bin/true
TmpFS=$base/tmp/%n
GresTypes=gpu
NodeName=node[1-2] NodeHostname=$host NodeAddr=127.0.0.1 Port=[${NSYSGEN_SLURMD_PORTS:-17001-17002}] CPUs=8 RealMemory=4000 Gres=gpu:$gpus State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
  {
    echo "AutoDetect=off"
    for node in "${nodes[@]}"; do
      echo "NodeName=$node Name=gpu File=$base/fakedev/$node/nvidia[0-$((gpus - 1))]"
    done
  } > "$base/etc/gres.conf"
}

start() {
  write_config
  export SLURM_CONF="$base/etc/slurm.conf"
  munged --force --socket="$base/munge/munge.socket.2" --key-file="$base/munge/munge.key" \
    --pid-file="$base/run/munged.pid" --log-file="$base/log/munged.log" \
    --seed-file="$base/munge/munged.seed" 2>/dev/null
  slurmctld -c -f "$SLURM_CONF"
  for node in "${nodes[@]}"; do slurmd -f "$SLURM_CONF" -N "$node"; done
  for _ in $(seq 300); do
    if [ "$(sinfo -h -o %T 2>/dev/null | sort -u)" = idle ]; then
      echo "$SLURM_CONF"
      return 0
    fi
    sleep 0.1
  done
  echo "slurm.sh: nodes did not become idle in 30 s:" >&2
  sinfo >&2 || true
  tail -n 20 "$base"/log/*.log >&2 || true
  return 1
}

wait_gone() {  # wait up to 15 s for the PIDs to exit (zombies count as gone), then SIGKILL
  local pids=("$@") alive
  for _ in $(seq 150); do
    alive=()
    for pid in "${pids[@]}"; do
      state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo Z)
      [ "$state" = Z ] || alive+=("$pid")
    done
    [ "${#alive[@]}" -eq 0 ] && return 0
    sleep 0.1
  done
  kill -KILL "${alive[@]}" 2>/dev/null || true
}

stop_pids() {
  local pids=()
  for pid in "$@"; do
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
  done
  [ "${#pids[@]}" -eq 0 ] || wait_gone "${pids[@]}"
}

stop() {
  export SLURM_CONF="$base/etc/slurm.conf"
  if [ -f "$SLURM_CONF" ] && squeue -h >/dev/null 2>&1; then
    squeue -h -o %A | xargs -r scancel || true
    for _ in $(seq 100); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.1; done
  fi
  local stepds=()
  for comm in /proc/[0-9]*/comm; do
    [ "$(cat "$comm" 2>/dev/null)" = slurmstepd ] || continue
    pid_dir=${comm%/comm}
    case "$(readlink "$pid_dir/cwd" 2>/dev/null)" in "$base"/*) stepds+=("${pid_dir#/proc/}") ;; esac
  done
  stop_pids "${stepds[@]}"
  for node in "${nodes[@]}"; do stop_pids "$(cat "$base/run/slurmd-$node.pid" 2>/dev/null)"; done
  stop_pids "$(cat "$base/run/slurmctld.pid" 2>/dev/null)"
  stop_pids "$(cat "$base/run/munged.pid" 2>/dev/null)"
  rm -f "$base"/run/*.pid
}

case "$action" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: slurm.sh start|stop BASE" >&2; exit 2 ;;
esac
