"""Helpers analyze.sbatch runs around its Dask cluster: start a worker named after its Slurm
node, wait until the scheduler and every node's workers are up, and shut the cluster down.

    python -m nsysgen.dask_cluster worker [DASK WORKER OPTIONS...]
    python -m nsysgen.dask_cluster wait SCHEDULER_FILE NODES WORKERS_PER_NODE [TIMEOUT_S]
    python -m nsysgen.dask_cluster address SCHEDULER_FILE
    python -m nsysgen.dask_cluster shutdown SCHEDULER_FILE

`worker` becomes `dask worker --name NODE OPTIONS` (exec, no process left in between), NODE
being the Slurm node it runs on (SLURMD_NODENAME, else the host name); with `--nworkers N`,
Dask names the workers NODE-0 .. NODE-(N-1). `wait` counts running workers per node on the
scheduler itself (a few numbers and names come back, whatever the cluster's size) and fails
unless every node of the allocation has all of its workers. `address` prints the scheduler's
address, for clients that take no scheduler file: `nsys recipe --mode dask-futures` connects to
DASK_SCHEDULER_ADDRESS (nsys 2023.4.4 turns every NSYS_DASK_* string, a scheduler file
included, into True).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nsysgen.errors import EXIT_INVALID, EXIT_OK

USAGE = (
    "usage: python -m nsysgen.dask_cluster worker [DASK WORKER OPTIONS...] | "
    "wait FILE NODES WORKERS_PER_NODE [TIMEOUT_S] | address FILE | shutdown FILE"
)
# Node names `wait` prints: the allocation's first ones (its size is printed in full).
NAMES_SHOWN = 16


def node_name() -> str:
    """The Slurm node this process runs on (several simulated nodes may share a host)."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


def worker(options: Sequence[str]) -> int:
    """exec `dask worker --name NODE OPTIONS` in this process."""
    argv = [sys.executable, "-m", "distributed.cli.dask_worker", "--name", node_name(), *options]
    os.execv(sys.executable, argv)
    return EXIT_INVALID  # not reached: execv raises OSError or does not return


@dataclass(frozen=True)
class Census:
    workers: int  # running workers
    nodes: int  # nodes with at least one running worker
    names: list[str]  # the first NAMES_SHOWN of those nodes, sorted


def node_of(worker_name: object, workers_per_node: int) -> str:
    """The node of a worker that `worker` started: its name, less Dask's -i with N > 1."""
    name = str(worker_name)
    return (name.rpartition("-")[0] or name) if workers_per_node > 1 else name


def census(dask_scheduler: Any, workers_per_node: int) -> Census:
    """Runs on the scheduler (Client.run_on_scheduler): running workers and their nodes."""
    running = [ws for ws in dask_scheduler.workers.values() if ws.status.name == "running"]
    nodes = sorted({node_of(ws.name, workers_per_node) for ws in running})
    return Census(len(running), len(nodes), nodes[:NAMES_SHOWN])


def _describe(found: Census) -> str:
    more = " ..." if found.nodes > len(found.names) else ""
    return f"{found.workers} worker(s) on {found.nodes} node(s): {' '.join(found.names)}{more}"


def wait(scheduler_file: Path, nodes: int, workers_per_node: int, timeout_s: float) -> int:
    from distributed import Client

    deadline = time.monotonic() + timeout_s
    while not (scheduler_file.is_file() and scheduler_file.stat().st_size):
        if time.monotonic() > deadline:
            print(f"dask_cluster: no scheduler file {scheduler_file} after {timeout_s:g} s")
            return 1
        time.sleep(0.5)
    wanted = nodes * workers_per_node
    with Client(scheduler_file=str(scheduler_file), timeout=f"{timeout_s:g}s") as client:
        while True:
            found: Census = client.run_on_scheduler(census, workers_per_node=workers_per_node)
            if found.workers >= wanted and found.nodes >= nodes:
                print(f"dask_cluster: {_describe(found)}", flush=True)
                return EXIT_OK
            if time.monotonic() > deadline:
                print(
                    f"dask_cluster: after {timeout_s:g} s, {_describe(found)}; expected "
                    f"{wanted} worker(s) on {nodes} node(s)",
                    flush=True,
                )
                return 1
            time.sleep(1.0)


def address(scheduler_file: Path) -> int:
    try:
        print(json.loads(scheduler_file.read_text())["address"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"dask_cluster: no scheduler address in {scheduler_file}: {error}", file=sys.stderr)
        return 1
    return EXIT_OK


def tasks_done(dask_scheduler: Any) -> dict[str, int]:
    """Runs on the scheduler: how many tasks of each kind (key prefix) finished on it."""
    return {
        name: prefix.state_counts["memory"]
        for name, prefix in dask_scheduler.task_prefixes.items()
        if prefix.state_counts["memory"]
    }


async def close_nannies(dask_scheduler: Any, timeout_s: float = 30.0) -> None:
    """Runs on the scheduler: every nanny stops its worker and closes (a nanny closes the
    connection before it answers: that is its answer). Bounded in time: on a very large
    cluster the scheduler's own shutdown closes the workers left."""
    import asyncio

    async def close(address: str) -> None:
        with contextlib.suppress(OSError):
            await dask_scheduler.rpc(address).terminate(reason="nsysgen-shutdown")

    nannies = [ws.nanny for ws in list(dask_scheduler.workers.values()) if ws.nanny]
    with contextlib.suppress(asyncio.TimeoutError):  # TimeoutError's alias since 3.11
        await asyncio.wait_for(
            asyncio.gather(*(close(address) for address in nannies)), timeout=timeout_s
        )


def shutdown(scheduler_file: Path) -> int:
    """Close the workers and the scheduler; 1 when there is no scheduler to ask."""
    if not scheduler_file.is_file():
        print(f"dask_cluster: no scheduler file {scheduler_file}: no scheduler to shut down")
        return 1
    from distributed import Client

    try:
        with Client(scheduler_file=str(scheduler_file), timeout="30s") as client:
            # Workers closed by their nanny stop cleanly; closed by the scheduler, a worker
            # process races its nanny and logs "Worker process died unexpectedly".
            done: dict[str, int] = client.run_on_scheduler(tasks_done)
            listed = ", ".join(f"{name} {count}" for name, count in sorted(done.items()))
            print(f"dask_cluster: tasks done: {listed or 'none'}", flush=True)
            client.run_on_scheduler(close_nannies)
            client.shutdown()
    except (OSError, TimeoutError) as error:
        print(f"dask_cluster: no scheduler to shut down at {scheduler_file}: {error}")
        return 1
    return EXIT_OK


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    if args[:1] == ["worker"]:
        return worker(args[1:])
    if len(args) in (4, 5) and args[0] == "wait" and args[2].isdigit() and args[3].isdigit():
        timeout = float(args[4]) if len(args) == 5 else 300.0
        return wait(Path(args[1]), int(args[2]), int(args[3]), timeout)
    if len(args) == 2 and args[0] == "address":
        return address(Path(args[1]))
    if len(args) == 2 and args[0] == "shutdown":
        return shutdown(Path(args[1]))
    print(USAGE, file=sys.stderr)
    return EXIT_INVALID


if __name__ == "__main__":
    # Run as nsysgen.analyze.dask_cluster, not __main__: `census` then travels to the scheduler by
    # reference, as a function of the installed package.
    from nsysgen.analyze.dask_cluster import main as _main

    raise SystemExit(_main(sys.argv[1:]))
