"""Helpers analyze.sbatch runs around its Dask cluster: wait until the scheduler and every
worker are up, and shut the cluster down.

    python -m nsysgen.dask_cluster wait SCHEDULER_FILE WORKERS [TIMEOUT_S]
    python -m nsysgen.dask_cluster shutdown SCHEDULER_FILE
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

from nsysgen.errors import EXIT_INVALID, EXIT_OK

USAGE = "usage: python -m nsysgen.dask_cluster wait FILE WORKERS [TIMEOUT_S] | shutdown FILE"


def wait(scheduler_file: Path, workers: int, timeout_s: float) -> int:
    from distributed import Client

    deadline = time.monotonic() + timeout_s
    while not (scheduler_file.is_file() and scheduler_file.stat().st_size):
        if time.monotonic() > deadline:
            print(f"dask_cluster: no scheduler file {scheduler_file} after {timeout_s:g} s")
            return 1
        time.sleep(0.5)
    with Client(scheduler_file=str(scheduler_file), timeout=f"{timeout_s:g}s") as client:
        client.wait_for_workers(workers, timeout=max(1.0, deadline - time.monotonic()))
        info = client.scheduler_info()["workers"]
        hosts = sorted({str(w.get("host", "")) for w in info.values()})
        print(f"dask_cluster: {len(info)} worker(s) on {len(hosts)} host(s): {' '.join(hosts)}")
    return EXIT_OK


def shutdown(scheduler_file: Path) -> int:
    from distributed import Client

    with Client(scheduler_file=str(scheduler_file), timeout="30s") as client:
        client.shutdown()
    return EXIT_OK


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    if len(args) in (3, 4) and args[0] == "wait" and args[2].isdigit():
        timeout = float(args[3]) if len(args) == 4 else 300.0
        return wait(Path(args[1]), int(args[2]), timeout)
    if len(args) == 2 and args[0] == "shutdown":
        return shutdown(Path(args[1]))
    print(USAGE, file=sys.stderr)
    return EXIT_INVALID


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
