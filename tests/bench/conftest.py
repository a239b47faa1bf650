"""The GPU dry runs start torchrun jobs on the one node their stand-in srun and scontrol name,
gpunode1, as bench/gpu does on the GPU machine. Two facts of the host they need:

- torchrun's rendezvous connects to that name, which a cluster's DNS resolves; here /etc/hosts
  must (tests/infra/install-system-deps.sh adds it), else the jobs fail after minutes with "The
  connection to the C10d store has failed": the tests say so at once instead;
- the generated sbatch files rendezvous on the workload's fixed port (29500, as on a cluster):
  two dry runs on one host at once (pytest-xdist, or two checkouts tested side by side) would
  share it, so they take turns through a lock on the host.
"""

from __future__ import annotations

import fcntl
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

NODE = "gpunode1"
PORT_USERS = {"test_gpu_dry_runs", "test_gpu_dry_runs_legacy"}
LOCK = Path(tempfile.gettempdir()) / "nsysgen-tests-rdzv-29500.lock"


def node_resolves(name: str = NODE) -> bool:
    try:
        socket.getaddrinfo(name, None)
    except OSError:
        return False
    return True


@pytest.fixture(autouse=True)
def one_rendezvous_at_a_time(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.module.__name__.rpartition(".")[2] not in PORT_USERS:
        yield
        return
    if not node_resolves():
        pytest.fail(
            f"{NODE} does not resolve on this host: the dry runs' torchrun jobs rendezvous there "
            f"(tests/infra/install-system-deps.sh adds '127.0.0.1 {NODE}' to /etc/hosts)"
        )
    with LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield
