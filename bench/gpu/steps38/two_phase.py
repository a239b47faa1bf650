"""A plain loop in two phases: 20 steps with one AdamW, then a new AdamW at a lower learning rate
(a second phase, as after unfreezing layers) for 20 more; `global_step += 1` after each optimizer
step, then printed (steps38 proof of issue 47, window 25..29: inside the second phase).

The evidence (proof.py): a mark before each optimizer step keyed by `global_step` (the steps
done), paired with the `step {global_step}` printed right after it.
"""

from __future__ import annotations

import proof
import torch
from torch import nn

PHASES, STEPS, BATCH = (1e-3, 3e-4), 20, 32


def main() -> None:
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64)).to(device)
    global_step = 0
    for phase, lr in enumerate(PHASES):
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr)  # made anew each phase
        for _batch in range(STEPS):
            x = torch.randn(BATCH, 64, device=device)
            loss = (model(x) - x).pow(2).mean()
            loss.backward()
            proof.mark(global_step)
            optimizer.step()
            optimizer.zero_grad()
            global_step += 1
            print(f"phase {phase} step {global_step} loss {loss.item():.4f}")
            proof.log(global_step - 1, global_step, "printed step")


if __name__ == "__main__":
    main()
