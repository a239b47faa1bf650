"""A launcher in torchrun's place (torch is not installed here): starts --nproc_per_node
workers of SCRIPT with torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, from the Slurm
task's node index), waits for them, and fails if one fails."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nproc_per_node", type=int, required=True)
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    node = int(os.environ.get("SLURM_NODEID", "0"))
    nodes = int(os.environ.get("SLURM_NNODES", "1"))
    workers = []
    for local in range(args.nproc_per_node):
        env = {
            **os.environ,
            "RANK": str(node * args.nproc_per_node + local),
            "LOCAL_RANK": str(local),
            "WORLD_SIZE": str(nodes * args.nproc_per_node),
        }
        command = [sys.executable, args.script, *args.args]
        workers.append(subprocess.Popen(command, env=env))
    codes = [worker.wait() for worker in workers]
    return max(codes, default=0)


if __name__ == "__main__":
    raise SystemExit(main())
