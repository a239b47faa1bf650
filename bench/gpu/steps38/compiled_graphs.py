"""A model compiled with torch.compile(mode="reduce-overhead") (CUDA graphs on a GPU) and an eager
AdamW, 40 steps of `for step in range(40)`, each printed as `step N` (steps38 proof, window
20..24: after the compile's warm-up and graph capture).

The evidence (proof.py): a mark before each optimizer step keyed by `step`, paired with the
number printed for it (the same).
"""

from __future__ import annotations

import proof
import torch
from torch import nn

WIDTH, BATCH = 256, 64


def main() -> None:
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(
        nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, WIDTH), nn.GELU(),
        nn.Linear(WIDTH, 1),
    ).to(device)  # fmt: skip
    model = torch.compile(model, mode="reduce-overhead")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(40):
        # Each iteration is a new step for the CUDA graphs' memory (their outputs are reused).
        torch.compiler.cudagraph_mark_step_begin()
        x = torch.randn(BATCH, WIDTH, device=device)
        loss = model(x).square().mean()
        loss.backward()
        proof.mark(step)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"step {step} loss {loss.item():.4f}")
        proof.log(step, step, "printed step")
    print("compiled_graphs: done")


if __name__ == "__main__":
    main()
