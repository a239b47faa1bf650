"""A small real PyTorch training loop for the GPU proofs (bench/gpu/).

The loop is a plain `for step in range(...)`, so nsysgen's training-loop patch finds it. Each
step's wall time (after a synchronize) goes to --timing-out, to compare runs with and without
nsys. Two shapes: `compute` (few long GEMMs) and `launch` (thousands of tiny kernels per step,
where profiling overhead shows).
"""

import argparse
import json
import time
from pathlib import Path

import torch


def build(shape: str) -> tuple[torch.nn.Module, torch.Tensor]:
    if shape == "compute":
        model = torch.nn.Sequential(*[torch.nn.Linear(4096, 4096) for _ in range(8)])
        batch = torch.randn(64 * 1024, 4096)
        model, batch = model.cuda().to(torch.bfloat16), batch.cuda().to(torch.bfloat16)
    else:
        blocks = []
        for _ in range(48):
            blocks += [torch.nn.Linear(256, 256), torch.nn.GELU(), torch.nn.LayerNorm(256)]
        model = torch.nn.Sequential(*blocks).cuda()
        batch = torch.randn(32, 256, device="cuda")
    return model, batch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", choices=["compute", "launch"], default="compute")
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--timing-out", default="")
    args = parser.parse_args()
    torch.manual_seed(0)
    model, batch = build(args.shape)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)
    times = []
    for step in range(args.steps):  # noqa: B007 - nsysgen's patch passes `step` on
        start = time.perf_counter()
        loss = model(batch).float().pow(2).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    if args.timing_out:
        Path(args.timing_out).write_text(json.dumps({"shape": args.shape, "step_seconds": times}))


if __name__ == "__main__":
    main()
