"""A PyTorch-Ignite Engine (its own update function, SGD) over 10 batches for 3 epochs; each
iteration's `engine.state.iteration` printed when it completes (steps38 proof of issue 47,
window 10..14).

The evidence (proof.py): a mark before each optimizer step keyed by `engine.state.iteration`,
paired with the iteration printed at ITERATION_COMPLETED.
"""

from __future__ import annotations

from typing import Any

import proof
import torch
from ignite.engine import Engine, Events
from torch import nn

BATCH, BATCHES, EPOCHS = 32, 10, 3


def main() -> None:
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def update(engine: Engine, batch: torch.Tensor) -> float:
        x = batch.to(device)
        optimizer.zero_grad()
        loss = (model(x) - x).pow(2).mean()
        loss.backward()
        proof.mark(engine.state.iteration)
        optimizer.step()
        return float(loss.item())

    trainer = Engine(update)

    @trainer.on(Events.ITERATION_COMPLETED)
    def log(engine: Engine) -> Any:
        print(f"iteration {engine.state.iteration} loss {engine.state.output:.4f}")
        proof.log(engine.state.iteration, engine.state.iteration, "printed state.iteration")

    data = [torch.randn(BATCH, 64) for _ in range(BATCHES)]
    trainer.run(data, max_epochs=EPOCHS)
    print("ignite_loop: done, iteration", trainer.state.iteration)


if __name__ == "__main__":
    main()
