"""A small real PyTorch training loop for the GPU proofs (bench/gpu/).

The loop is a plain `for step in range(...)`, so nsysgen's training-loop patch finds it. Each
step's wall time (after a synchronize) goes to --timing-out, to compare runs with and without
nsys. Two shapes: `compute` (few long GEMMs) and `launch` (thousands of tiny kernels per step,
where profiling overhead shows).

--graph captures the whole step (forward, backward, optimizer) in one CUDA graph, so a step is
one launch instead of thousands: the remedy for a launch-bound loop that issue 20 measures.
--ddp wraps the model in DistributedDataParallel (RANK/WORLD_SIZE/MASTER_ADDR from the launcher):
NCCL when every rank has its own GPU, else gloo, since NCCL refuses two ranks on one GPU.
--allreduce=explicit replaces DDP by one all-reduce of the flattened gradients after backward,
inside an NVTX range "all_reduce gradients" (gloo: on a CPU copy, so the range spans the wait).
--delay-ms/--delay-rank/--delay-steps inject a straggler: that rank sleeps at the start of the
chosen steps (issue 17's straggler proof).
A "{rank}" in --timing-out becomes the rank, so that the ranks of one job write apart.
"""

import argparse
import json
import os
import time
from pathlib import Path

import torch


def build(shape: str, device: torch.device) -> tuple[torch.nn.Module, torch.Tensor]:
    if shape == "compute":
        model = torch.nn.Sequential(*[torch.nn.Linear(4096, 4096) for _ in range(8)])
        batch = torch.randn(64 * 1024, 4096)
        model, batch = model.to(device).to(torch.bfloat16), batch.to(device).to(torch.bfloat16)
    else:
        blocks = []
        for _ in range(48):
            blocks += [torch.nn.Linear(256, 256), torch.nn.GELU(), torch.nn.LayerNorm(256)]
        model = torch.nn.Sequential(*blocks).to(device)
        batch = torch.randn(32, 256, device=device)
    return model, batch


def eager_step(model: torch.nn.Module, batch: torch.Tensor, optimizer: torch.optim.Optimizer):
    loss = model(batch).float().pow(2).mean()
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()


def capture(model, batch, optimizer) -> torch.cuda.CUDAGraph:
    """PyTorch's whole-network capture: warm up on a side stream, then record one step."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            eager_step(model, batch, optimizer)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)  # grads are then allocated from the graph's pool
    with torch.cuda.graph(graph):
        model(batch).float().pow(2).mean().backward()
        optimizer.step()
    return graph


def all_reduce_gradients(model: torch.nn.Module, backend: str) -> None:
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    flat = torch.cat([g.flatten() for g in grads])
    with torch.cuda.nvtx.range("all_reduce gradients"):
        if backend == "gloo":
            host = flat.cpu()  # synchronizes, so the range holds the transfer and the wait
            torch.distributed.all_reduce(host)
            flat.copy_(host)
        else:
            torch.distributed.all_reduce(flat)
    flat /= torch.distributed.get_world_size()
    offset = 0
    for g in grads:
        g.copy_(flat[offset : offset + g.numel()].view_as(g))
        offset += g.numel()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", choices=["compute", "launch"], default="compute")
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--timing-out", default="")
    parser.add_argument("--graph", action="store_true")
    parser.add_argument("--ddp", action="store_true")
    parser.add_argument("--allreduce", choices=["ddp", "explicit"], default="ddp")
    parser.add_argument("--delay-ms", type=float, default=0.0)
    parser.add_argument("--delay-rank", type=int, default=-1)
    parser.add_argument("--delay-steps", default="all", help="'all' or a comma list")
    args = parser.parse_args()
    rank = int(os.environ.get("RANK", "0"))
    delayed = (
        set(range(args.steps))
        if args.delay_steps == "all"
        else {int(s) for s in args.delay_steps.split(",") if s}
    )
    torch.manual_seed(0)
    device, backend = torch.device("cuda"), ""
    if args.ddp:
        world, local = int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_RANK", "0"))
        device = torch.device("cuda", local % torch.cuda.device_count())
        torch.cuda.set_device(device)
        backend = "nccl" if torch.cuda.device_count() >= world else "gloo"
        # device_id binds NCCL eagerly; gloo takes no device.
        bind = {"device_id": device} if backend == "nccl" else {}
        torch.distributed.init_process_group(backend, **bind)
    model, batch = build(args.shape, device)
    explicit = args.ddp and args.allreduce == "explicit"
    if args.ddp and not explicit:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False, capturable=args.graph)
    graph = capture(model, batch, optimizer) if args.graph else None
    times, starts = [], []
    for step in range(args.steps):  # noqa: B007 - nsysgen's patch passes `step` on
        starts.append(time.time())
        start = time.perf_counter()
        if rank == args.delay_rank and step in delayed:
            time.sleep(args.delay_ms / 1000)
        if graph is not None:
            graph.replay()
        else:
            loss = model(batch).float().pow(2).mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if explicit:
                all_reduce_gradients(model, backend)
            optimizer.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    if args.timing_out:
        summary = {
            "shape": args.shape,
            "graph": args.graph,
            "backend": backend,
            "rank": rank,
            "step_seconds": times,
            "step_start_unix": starts,
        }
        Path(args.timing_out.replace("{rank}", str(rank))).write_text(json.dumps(summary))
    if args.ddp:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
