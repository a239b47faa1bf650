"""Session fixtures for the real components: a local Slurm cluster and nsys 2023.4.4.

Both are owned by the project (tests/infra/): the Slurm cluster runs from a scratch directory
and is stopped by PID at the end of the session; nsys comes from Debian's non-free packages,
installed onto the test "shared filesystem" by the generated install-nsight.sh itself.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from nsysgen.cli import main

REPO = Path(__file__).resolve().parent.parent
INFRA = REPO / "tests" / "infra"
DEB_CACHE = REPO / ".cache" / "nsys-debs"


@dataclass(frozen=True)
class LocalCluster:
    shared_fs: Path  # the cluster's "shared filesystem": generated folders, nsys, reports
    env: dict[str, str]  # environment with SLURM_CONF for the Slurm client commands

    def compile(self, *overrides: str, sweep: bool = False) -> Path:
        """Compile a config for cluster=local with nsys 2023.4.4; returns the folder (`sweep`:
        the overrides hold a sweep, and the folder is its first point's, one level deeper)."""
        out = self.shared_fs / "jobs"
        name = next(o.split("=", 1)[1] for o in overrides if o.startswith("job.name="))
        code = main(
            [
                *(["-m"] if sweep else []),
                "cluster=local",
                f"cluster.shared_fs={self.shared_fs}",
                "nsight=2023.4.4",
                *overrides,
                f"output_dir={out}",
            ]
        )
        assert code == 0
        if sweep:
            return min(p.parent for p in (out / name).glob("*/job.sbatch"))
        return out / name

    def compile_program(self, name: str, program_args: list[str], *overrides: str) -> Path:
        """Compile job `name` running tests/workloads/nvtx_steps.py with `program_args`; each
        rank writes its marker into the folder's markers/ (which this creates)."""
        markers = self.shared_fs / "jobs" / name / "markers"
        folder = self.compile(
            *python_workload(self, *program_args, f"--marker-dir={markers}"),
            *overrides,
            f"job.name={name}",
            "job.time_limit_min=10",
        )
        markers.mkdir()
        return folder

    def submit(self, script: Path, *args: str, env: dict[str, str] | None = None) -> str:
        """`sbatch SCRIPT ARGS` from the script's folder, without waiting; the job id."""
        proc = subprocess.run(
            ["sbatch", "--parsable", script.name, *args],
            cwd=script.parent,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip().split(";")[0]

    def state(self, job_id: str) -> tuple[str, str]:
        """The job's (JobState, ExitCode), e.g. ("COMPLETED", "0:0"); ("GONE", "") once Slurm
        forgot it."""
        for _ in range(20):
            proc = subprocess.run(
                ["scontrol", "show", "job", job_id], env=self.env, capture_output=True, text=True
            )
            if proc.returncode == 0 or "Invalid job id" in proc.stderr:
                break
            # slurmctld did not answer in time (a loaded machine): ask again rather than take
            # the job for ended.
            time.sleep(0.5)
        else:
            raise AssertionError(f"scontrol show job {job_id}: {proc.stderr}")
        fields = dict(f.split("=", 1) for f in proc.stdout.split() if "=" in f)
        return fields.get("JobState", "GONE"), fields.get("ExitCode", "")

    def wait(self, job_id: str, timeout: float = 300) -> tuple[str, str]:
        """Poll until the job has ended (quicker than `sbatch --wait`, whose polls grow to tens
        of seconds); its final (JobState, ExitCode)."""
        deadline = time.monotonic() + timeout
        while True:
            state = self.state(job_id)
            if state[0] not in ACTIVE:
                return state
            assert time.monotonic() < deadline, f"job {job_id} still {state[0]} after {timeout} s"
            time.sleep(0.3)

    def sbatch_wait(
        self,
        folder: Path,
        timeout: int = 300,
        script: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> tuple[int, str, str]:
        """Submit job.sbatch from its folder, wait for it; returns (exit code, job id, log).

        A job still running after `timeout` is cancelled and counts as failed, so that the
        caller's assertion shows its log. A job whose log shows nsys 2023.4.4's own start-up
        fault (failed or not: nsys may exit 0 without running the program) runs once more from
        a clean slate (see NSYS_START_FAULTS); any other outcome, or that one twice, is returned
        as it is. `script`: another job script than the folder's job.sbatch (a user's own, run
        from its own folder, where its log goes), with `env` added to the submit's."""
        job_script = script or folder / "job.sbatch"
        for attempt in (1, 2):
            job_id = self.submit(job_script, env=env)
            state, exit_code = self._wait_or_cancel(job_id, timeout)
            code = int(exit_code.split(":")[0] or 0) or (0 if state == "COMPLETED" else 1)
            log = self.log(job_script.parent, job_id)
            # Whatever the exit code: nsys can exit 0 after losing its agent, the task's
            # program never having run.
            if attempt == 2 or not nsys_start_fault(log):
                return code, job_id, log
            self.clean_run(folder, job_id)
        raise AssertionError("unreachable")

    def _wait_or_cancel(self, job_id: str, timeout: float) -> tuple[str, str]:
        try:
            return self.wait(job_id, timeout)
        except AssertionError:
            subprocess.run(["scancel", job_id], env=self.env, check=False)
            self.wait(job_id, 60)
            return "TIMEOUT", "1:0"

    def clean_run(self, folder: Path, job_id: str | None = None) -> None:
        """Remove what a job of `folder` left: its reports (its run's folder, or every run's),
        rank markers and step barriers."""
        reports = Path(json.loads((folder / "nsysgen-expect.json").read_text())["report_dir"])
        shutil.rmtree(reports / f"job{job_id}" if job_id else reports, ignore_errors=True)
        shutil.rmtree(folder / "barriers", ignore_errors=True)
        for old in (folder / "markers").glob("rank*.json"):
            old.unlink()

    @staticmethod
    def log(folder: Path, job_id: str) -> str:
        """The job's output file in `folder` (#SBATCH --output=%x_%j.out), or ""."""
        logs = sorted(folder.glob(f"*_{job_id}.out"))
        text = logs[0].read_text() if logs else ""
        # Without nsys's progress bars ("[1/1] [==42%   ] name.nsys-rep", dozens a report), so
        # that a failed test's message shows the lines that matter.
        text = _PROGRESS.sub("", text)
        # Nor the lines that held only a bar (srun's "  13: " label and blanks).
        return "\n".join(line for line in text.splitlines() if not _BLANK.fullmatch(line))


_PROGRESS = re.compile(r"\[\d+/\d+\] \[[^\]]*\] [^\s[]*")
_BLANK = re.compile(r"\s*(\d+:)?\s*")

# nsys 2023.4.4 itself, 16 sessions on 2 cores, now and then ends a task before the program
# starts, saying one of these (each seen in about 1 of 10 full runs; the agent's connection
# reset by its peer once, on a loaded machine).
NSYS_START_FAULTS = (
    "End of file",
    "Local Endpoint is not available",
    "Internal reason: 'Connection reset by peer'",
)


def nsys_start_fault(log: str) -> bool:
    return any(fault in log for fault in NSYS_START_FAULTS)


# Job states of a job that has not ended yet.
ACTIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING"}


def job_processes(job_id: str) -> list[str]:
    """Processes that still run in Slurm job `job_id` (by SLURM_JOB_ID in their environment,
    which every process of its steps inherits): 'PID COMMAND LINE' each."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # gone meanwhile, or not ours to read
        if f"SLURM_JOB_ID={job_id}".encode() in environ and state != "Z":
            found.append(f"{proc.name} {cmdline.strip()}")
    return found


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    for tool in ("slurmctld", "slurmd", "munged", "sbatch"):
        assert shutil.which(tool), f"{tool} missing: run tests/infra/install-system-deps.sh"
    base = tmp_path_factory.mktemp("slurm")
    shared = tmp_path_factory.mktemp("shared")
    start = subprocess.run(
        [str(INFRA / "slurm.sh"), "start", str(base)], capture_output=True, text=True
    )
    assert start.returncode == 0, start.stdout + start.stderr
    env = {**os.environ, "SLURM_CONF": start.stdout.strip().splitlines()[-1]}
    try:
        yield LocalCluster(shared_fs=shared, env=env)
    finally:
        subprocess.run([str(INFRA / "slurm.sh"), "stop", str(base)], check=False)


@pytest.fixture(scope="session")
def nsys_2023(local_cluster: LocalCluster) -> Path:
    """nsys 2023.4.4 installed on the shared filesystem by the generated install script."""
    fetch = subprocess.run(
        [str(INFRA / "fetch-nsys.sh"), str(DEB_CACHE)], capture_output=True, text=True
    )
    assert fetch.returncode == 0, fetch.stdout + fetch.stderr
    folder = local_cluster.compile("workload=python", "job.name=install")
    debs = sorted(str(p) for p in DEB_CACHE.glob("*.deb"))
    install = subprocess.run(
        [str(folder / "install-nsight.sh"), *debs], capture_output=True, text=True
    )
    assert install.returncode == 0, install.stdout + install.stderr
    assert install.stdout.strip().endswith("2023.4.4.54-234433681190v0")
    nsys = (
        local_cluster.shared_fs
        / "nsight-systems"
        / "2023.4.4"
        / "usr/lib/x86_64-linux-gnu/nsight-systems/target-linux-x64/nsys"
    )
    assert os.access(nsys, os.X_OK)
    return nsys


def python_workload(cluster: LocalCluster, *args: str) -> list[str]:
    """Overrides that run tests/workloads/nvtx_steps.py from the shared filesystem."""
    script = cluster.shared_fs / "nvtx_steps.py"
    if not script.exists():
        shutil.copy(REPO / "tests" / "workloads" / "nvtx_steps.py", script)
    quoted = ",".join(f"'{a}'" for a in args)
    return [
        "workload=python",
        f"workload.python.interpreter={sys.executable}",
        f"workload.python.script={script}",
        f"workload.python.args=[{quoted}]",
    ]


@pytest.fixture
def real_nsys(request: pytest.FixtureRequest) -> Path:
    """A real nsys: $NSYS where it is set (an unpacked 2023.4.4, say), else the nsys 2023.4.4
    that the e2e tier installs."""
    given = os.environ.get("NSYS")
    if given:
        return Path(given)
    installed: Path = request.getfixturevalue("nsys_2023")
    return installed
