"""A loop over epochs that logs each step by its place in the epoch (`epoch 1 [6/8]`), as many
example scripts do (steps38 proof of issue 47, window 14..17: across the boundary of epochs 1
and 2). nsysgen cannot count steps by a number that restarts every epoch, so the compile asks
for step_expr; the setup answers `epoch * len(loader) + i`, the place across the run.

The evidence (proof.py): a mark before each optimizer step keyed by the epoch and the index
(`1:6`), paired with the number the answer gives that step, epoch * len(loader) + i.
"""

from __future__ import annotations

import proof
import torch
from torch import nn

EPOCHS, BATCHES, BATCH = 4, 8, 32


def main() -> None:
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = [torch.randn(BATCH, 64, device=device) for _ in range(BATCHES)]
    for epoch in range(EPOCHS):
        for i, x in enumerate(loader):
            loss = (model(x) - x).pow(2).mean()
            loss.backward()
            proof.mark(f"{epoch}:{i}")
            optimizer.step()
            optimizer.zero_grad()
            print(f"epoch {epoch} [{i}/{len(loader)}] loss {loss.item():.4f}")
            proof.log(f"{epoch}:{i}", epoch * len(loader) + i, "epoch * len(loader) + i")


if __name__ == "__main__":
    main()
