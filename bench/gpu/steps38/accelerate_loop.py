"""An accelerate training loop in the style of Hugging Face's `no_trainer` examples: 2 batches an
optimizer step (`accelerator.accumulate`), the counter `completed_steps` incremented after the
optimizer step and printed after the increment, 30 steps (steps38 proof, window 10..14; compiled
with workload.python.source naming this file, so nsysgen reads this counter).

The evidence (proof.py): a mark before each optimizer step that really steps (the gradients
sync), keyed by `completed_steps`, paired with the number printed for that step (one more).
"""

from __future__ import annotations

import proof
import torch
import torch.nn.functional as F
from accelerate import Accelerator
from torch import nn

BATCH, MAX_TRAIN_STEPS = 8, 30


def main() -> None:
    accelerator = Accelerator(gradient_accumulation_steps=2)
    torch.manual_seed(0)
    count = BATCH * 2 * (MAX_TRAIN_STEPS + 10)
    data = torch.utils.data.TensorDataset(torch.randn(count, 32), torch.randn(count, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=True)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    lr_scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)
    model, optimizer, loader, lr_scheduler = accelerator.prepare(
        model, optimizer, loader, lr_scheduler
    )
    completed_steps = 0
    model.train()
    for step, batch in enumerate(loader):  # noqa: B007 - the no_trainer examples' loop, as written
        with accelerator.accumulate(model):
            x, y = batch
            loss = F.mse_loss(model(x), y)
            accelerator.backward(loss)
            if accelerator.sync_gradients:
                proof.mark(completed_steps)
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()
        if accelerator.sync_gradients:
            completed_steps += 1
            print(f"step {completed_steps} loss {loss.item():.4f}")
            proof.log(completed_steps - 1, completed_steps, "printed step")
        if completed_steps >= MAX_TRAIN_STEPS:
            break
    print("accelerate_loop: done, completed_steps", completed_steps)


if __name__ == "__main__":
    main()
