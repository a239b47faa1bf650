"""EKS, sidecar and operator-1 (reports on the shared volume), with real nsys 2023.4.4: the
injected nsys command line run as the injector would in each pod of the job, against a folder
laid out as the volume and mounted as the pod spec mounts it (the kubelet's part: the volume's
sub-paths created, subPathExpr expanded with the container's env). Then fetch-reports.sh's own
helper-pod commands (BusyBox) copy the run, and the folder's verifier reads it.

Stand-ins, for what cannot run here: no Kubernetes (the kubelet's and the webhook's parts are
done by this test, from the generated files), and the program under nsys is a CPU program with
NVTX steps instead of torchrun (torch is not installed). Then the deadline comes while the window
is open: with the grace period nsysgen gives, nsys writes the report; with far too little, what
nsys had stays on the volume, where fetch-reports.sh and verify find it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from nsysgen.cli import main
from tests.conftest import REPO
from tests.k8s_checks import fetch_kubectl
from tests.realparts import nsys_start_fault

pytestmark = pytest.mark.e2e

# The deadline's SIGTERM, then SIGKILL after the grace period: enough for nsys to write a small
# report (nsysgen sizes it from the report estimate, 60 s at least), and far too little.
ENOUGH_S, TOO_LITTLE_S = 60.0, 0.3
WINDOW_S = 3.5  # capture.duration=3: the deadline comes once that much is captured

PLACEHOLDERS = {  # the 1.x injectors' name parts (EKS reference: observed expansions)
    "{PROCESS_NAME}": "python3",
    "{NVDT_PROCESS_NAME}": "python3",
    "%{CONTAINER_NAME}": "pytorch",
    "%{NVDT_CONTAINER_NAME}": "pytorch",
}


def _kubelet_mounts(spec: dict[str, Any], volume: Path, pod: str, scratch: Path) -> dict[str, Path]:
    """mountPath -> host folder for the training container, as the kubelet mounts it."""
    [container] = spec["containers"]
    env = {e["name"]: e for e in container["env"]}
    claims = {v["name"] for v in spec["volumes"] if "persistentVolumeClaim" in v}
    table = {}
    for mount in container["volumeMounts"]:
        if mount["name"] in claims:
            sub = mount.get("subPath", "")
            if "subPathExpr" in mount:

                def value(match: re.Match[str]) -> str:
                    item = env[match.group(1)]
                    if item.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == (
                        "metadata.name"
                    ):
                        return pod
                    return str(item["value"])

                sub = re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", value, mount["subPathExpr"])
            host = volume / sub
            host.mkdir(parents=True, exist_ok=True)  # the kubelet creates a sub-path
        else:
            host = scratch / pod / mount["name"]
            host.mkdir(parents=True, exist_ok=True)
        table[mount["mountPath"]] = host
    return table


def _host(path: str, table: dict[str, Path]) -> str:
    best = max((m for m in table if path == m or path.startswith(m + "/")), key=len)
    return str(table[best]) + path[len(best) :]


def _pod_command(
    devtool_args: str,
    pod: str,
    namespace: str,
    table: dict[str, Path],
    nsys: Path,
    program: list[str],
) -> list[str]:
    """The nsys command line the injector runs for the matched process of `pod`."""
    args = devtool_args
    for placeholder, value in {
        **PLACEHOLDERS,
        "%{POD_FULLNAME}": f"{namespace}_{pod}",
        "%{NVDT_POD_FULLNAME}": f"{namespace}_{pod}",
        "{TIMESTAMP}": str(int(time.time() * 1000)),
        "{UID}": "a1b2c3d4",
    }.items():
        args = args.replace(placeholder, value)
    words = args.split()  # the injector splits the string on whitespace
    words = [
        f"{w.split('=', 1)[0]}={_host(w.split('=', 1)[1], table)}"
        if w.startswith("--output=")
        else w
        for w in words
    ]
    return [str(nsys), *words, *program]


def _run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A pod's nsys run to its end; nsys 2023.4.4's own start-up faults get one more run, as
    in the Slurm tests (tests/realparts.py)."""
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    if nsys_start_fault(done.stdout + done.stderr):  # whatever the exit code, as there
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    return done


def _kill_pod(tmp: Path) -> None:
    """SIGKILL every process of the pod: those whose TMPDIR is the pod's (nsys, its daemon,
    the program), as the container's end kills them all."""
    mine = f"TMPDIR={tmp}".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if mine in environ:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(proc.name), signal.SIGKILL)


def _verify_names_the_cut_off_capture(log: str, pod: str) -> None:
    """Either the importer refused the cut-off capture, and verify names it where it lies, or
    (the kill came a little later, on a loaded machine) it converted it, and verify says so."""
    line = next(line for line in log.splitlines() if line.startswith("pod 0"))
    if "converted leftover" in log:
        assert " OK " in line and pod in line, log
    else:
        assert f".nsysgen/{pod}/" in line, log
        assert "only a .qdstrm" in log, log


@pytest.mark.parametrize("injector", ["sidecar", "operator-1"])
def test_injected_nsys_writes_where_fetch_reports_and_verify_look(
    tmp_path: Path, nsys_2023: Path, injector: str
) -> None:
    busybox = shutil.which("busybox")
    assert busybox, "BusyBox missing: run tests/infra/install-system-deps.sh"
    out = tmp_path / "out"
    job = "inj"
    assert (
        main(
            [
                "target=eks",
                "workload=fsdp",
                "workload.container_image=registry.example.com/fsdp:1",
                f"target.injector={injector}",
                "target.job=pytorchjob",
                "nsight=2023.4.4",
                "capture.trace=[nvtx]",
                "capture.ranks=all",  # both pods labelled: Master and Worker record
                "capture.delay=1",
                "capture.duration=3",
                f"job.name={job}",
                f"output_dir={out}",
            ]
        )
        == 0
    )
    folder = out / job
    values = yaml.safe_load((folder / "values-injector.yaml").read_text())
    manifest = yaml.safe_load((folder / "pytorchjob.yaml").read_text())
    namespace = manifest["metadata"]["namespace"]
    volume = tmp_path / "volume"  # the PVC's root, mounted at /fsx
    program = [sys.executable, str(REPO / "tests/workloads/nvtx_steps.py"), "--idle"]
    program += ["--steps", "60", "--step-seconds", "0.1", f"--marker-dir={tmp_path / 'm'}"]
    pods = {"Master": f"{job}-master-0", "Worker": f"{job}-worker-0"}

    def run_pod(kind: str, grace: float | None = None) -> subprocess.CompletedProcess[str]:
        spec = manifest["spec"]["pytorchReplicaSpecs"][kind]["template"]["spec"]
        table = _kubelet_mounts(spec, volume, pods[kind], tmp_path / "emptydirs")
        env = {e["name"]: e.get("value", "") for e in spec["containers"][0]["env"]}
        args = values["profile"]["devtoolArgs"]
        if grace is not None:  # a window still open at the deadline
            args = args.replace("--duration=3", "--duration=120")
        command = _pod_command(args, pods[kind], namespace, table, nsys_2023, program)
        # The program's rank (it reads Slurm's variable), as torchrun's would be node-wide.
        rank = str(list(pods).index(kind))
        proc_env = {**os.environ, "TMPDIR": _host(env["TMPDIR"], table), "SLURM_PROCID": rank}
        if grace is None:
            return _run(command, proc_env)
        child = subprocess.Popen(command, env=proc_env, start_new_session=True)
        tmp = Path(proc_env["TMPDIR"])
        deadline = time.monotonic() + 60
        while not list(tmp.glob("*.qdstrm")) and time.monotonic() < deadline:
            time.sleep(0.2)  # until nsys captures
        time.sleep(WINDOW_S)  # the window's length, as asked, before the deadline comes
        # The deadline: SIGTERM to the container's first process (nsys), on which nsys stops
        # and writes; the grace period's end: SIGKILL to every process of the pod.
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            _kill_pod(tmp)
            child.wait()
        return subprocess.CompletedProcess(command, -9, "", "")

    reports = volume / "nsight-reports" / job
    assert not reports.exists()  # nothing made it but the pods' mounts
    for kind in pods:
        done = run_pod(kind)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    written = sorted(p.name for p in reports.glob("*.nsys-rep"))
    assert [n.split("_")[2] for n in written] == [namespace, namespace], written
    assert [n.split("_")[3] for n in written] == [pods["Master"], pods["Worker"]], written

    # fetch-reports.sh: the helper pod's commands under BusyBox, the volume at its /fsx.
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kubectl").write_text(fetch_kubectl(busybox, created, volume))
    (bin_dir / "kubectl").chmod(0o755)
    importer = nsys_2023.parent.parent / "host-linux-x64" / "QdstrmImporter"
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "NSYS": str(nsys_2023),
        "QDSTRM_IMPORTER": str(importer),
    }
    dest = tmp_path / "fetched"

    def fetch() -> tuple[int, str]:
        done = subprocess.run(
            ["bash", str(folder / "fetch-reports.sh"), str(dest)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        return done.returncode, done.stdout + done.stderr

    code, log = fetch()
    assert code == 0, log
    [run] = dest.iterdir()
    assert sorted(p.name for p in run.glob("*.nsys-rep")) == written, log
    assert "verify: complete: 2 of 2 reports ok" in log, log

    # The deadline while the window is open. With the grace period nsysgen gives, nsys writes
    # the report before SIGKILL: on the volume, verified.
    def rerun(grace: float) -> str:
        for report in reports.glob("*.nsys-rep"):
            report.unlink()
        # Moved aside, not deleted: a previous pod's nsys daemon may still tidy its files.
        (reports / ".nsysgen").rename(tmp_path / f"old-nsysgen-{grace}")
        shutil.rmtree(dest)
        run_pod("Master", grace=grace)
        run_pod("Worker")
        return fetch()[1]

    log = rerun(ENOUGH_S)
    assert "verify: complete: 2 of 2 reports ok" in log, log
    # Too little: SIGKILL while nsys writes. What it had stays in the pod's folder on the volume
    # (not in an emptyDir gone with the pod); fetch-reports.sh copies it and verify finds it by
    # the pod's name. nsys 2023.4.4's importer refuses a .qdstrm cut off this early, which
    # verify says, naming the cause.
    log = rerun(TOO_LITTLE_S)
    left = sorted(reports.glob(".nsysgen/*/*.qdstrm"))
    assert [p.parent.name for p in left] == [pods["Master"]], log
    [run] = dest.iterdir()
    assert len(list(run.glob(f".nsysgen/{pods['Master']}/*.qdstrm"))) == 1, log
    _verify_names_the_cut_off_capture(log, pods["Master"])
    assert "nsys was killed while capturing or writing" in log or "converted" in log, log
