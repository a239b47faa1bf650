"""nsysgen.dask_cluster, what analyze.sbatch runs around its Dask cluster: workers named after
their Slurm node, the wait that fails unless every node has its workers, the shutdown."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from nsysgen.analyze import dask_cluster
from nsysgen.analyze.dask_cluster import Census, census, node_of


def scheduler(*names: str, stopped: tuple[str, ...] = ()) -> SimpleNamespace:
    """A stand-in for the scheduler census() runs on: workers by name and status."""

    def worker(name: str, status: str) -> SimpleNamespace:
        return SimpleNamespace(name=name, status=SimpleNamespace(name=status))

    workers = [worker(n, "running") for n in names] + [worker(n, "closing") for n in stopped]
    return SimpleNamespace(workers={f"tcp://w{i}": w for i, w in enumerate(workers)})


def test_nodes_are_counted_from_worker_names() -> None:
    # Dask names the workers of `--name NODE --nworkers N` NODE-0..NODE-(N-1); node names
    # may hold dashes themselves.
    assert node_of("p5-dy-gpu-12-0", 2) == "p5-dy-gpu-12"
    assert node_of("p5-dy-gpu-12", 1) == "p5-dy-gpu-12"
    found = census(scheduler("node1-0", "node1-1", "node2-1", stopped=("node3-0",)), 2)
    assert found == Census(3, 2, ["node1", "node2"])
    many = census(scheduler(*(f"n{i:03d}" for i in range(40))), 1)
    assert (many.workers, many.nodes, len(many.names)) == (40, 40, dask_cluster.NAMES_SHOWN)


def test_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in ([], ["wait", "f"], ["wait", "f", "2"], ["wait", "f", "x", "2"], ["nope"]):
        assert dask_cluster.main(argv) == 2
    assert "usage: python -m nsysgen.dask_cluster" in capsys.readouterr().err


def helper(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """python -m nsysgen.dask_cluster ARGS, its output read by communicate()."""
    return subprocess.Popen(
        [sys.executable, "-m", "nsysgen.dask_cluster", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def run(*args: str, timeout: float = 180) -> tuple[int, str]:
    process = helper(*args)
    out, _ = process.communicate(timeout=timeout)
    return process.returncode, out


def start(*args: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A long-running process whose output the test does not read."""
    return subprocess.Popen([sys.executable, "-m", *args], env=env, stdout=subprocess.DEVNULL)


@pytest.mark.e2e
def test_wait_names_the_missing_node_and_shutdown_ends_everything(tmp_path: Path) -> None:
    file = tmp_path / "scheduler.json"
    assert run("shutdown", str(file))[0] == 1  # no scheduler yet
    assert run("address", str(file))[0] == 1
    env = {**os.environ, "DASK_LOGGING__DISTRIBUTED": "error"}
    scheduler_cmd = ["distributed.cli.dask_scheduler", "--scheduler-file", str(file),
                     "--port", "0", "--no-dashboard"]  # fmt: skip
    started = [start(*scheduler_cmd, env=env)]
    worker = ["nsysgen.dask_cluster", "worker", "--scheduler-file", str(file), "--nworkers", "2",
              "--nthreads", "1", "--no-dashboard"]  # fmt: skip
    try:
        started.append(start(*worker, env={**env, "SLURMD_NODENAME": "node1"}))
        assert run("wait", str(file), "1", "2", "120") == (
            0, "dask_cluster: 2 worker(s) on 1 node(s): node1\n"
        )  # fmt: skip
        code, out = run("wait", str(file), "2", "2", "3")
        assert code == 1, out
        assert out.strip().endswith(
            "2 worker(s) on 1 node(s): node1; expected 4 worker(s) on 2 node(s)"
        ), out
        started.append(start(*worker, env={**env, "SLURMD_NODENAME": "node2"}))
        code, out = run("wait", str(file), "2", "2", "120")
        assert (code, out) == (0, "dask_cluster: 4 worker(s) on 2 node(s): node1 node2\n")
        code, address = run("address", str(file))
        assert code == 0 and address.startswith("tcp://"), address
        assert run("shutdown", str(file)) == (0, "dask_cluster: tasks done: none\n")
        # The scheduler and both `dask worker`s (the helper exec'd into them) end on their own.
        deadline = time.monotonic() + 60
        while any(p.poll() is None for p in started) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert [p.poll() for p in started] == [0, 0, 0]
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
                process.wait()
