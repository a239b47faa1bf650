"""torch.distributed all-reduce over several message sizes, for NCCL analysis on a GPU machine.

Rank and world come from Slurm's variables (as the pyxis PyTorch hook sets them) or torchrun's.
Each size runs --iters all-reduces of float32 tensors; every size is an NVTX range
"allreduce <bytes>", and a JSON summary of sizes and call counts goes to --summary-out.
"""

import argparse
import json
import os
from pathlib import Path

import torch
import torch.distributed as dist

SIZES = [1 << 10, 1 << 16, 1 << 20, 1 << 24, 1 << 27]  # bytes: 1 KiB .. 128 MiB


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--summary-out", default="")
    args = parser.parse_args()
    rank = int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0")))
    world = int(os.environ.get("WORLD_SIZE", os.environ.get("SLURM_NTASKS", "1")))
    local = int(os.environ.get("LOCAL_RANK", os.environ.get("SLURM_LOCALID", "0")))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    counts = {}
    for size in SIZES:
        tensor = torch.ones(size // 4, device="cuda")
        dist.all_reduce(tensor)  # warm-up, outside the counted range
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(f"allreduce {size}")
        for _ in range(args.iters):
            dist.all_reduce(tensor)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        assert tensor[0].item() == world ** (args.iters + 1)
        counts[size] = args.iters + 1
    if args.summary_out and rank == 0:
        summary = {"world": world, "calls_per_size": counts}
        Path(args.summary_out).write_text(json.dumps(summary))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
