"""GradScaler skips the optimizer step of iteration 4 (an inf loss)."""

import fake_cuda  # noqa: F401 - records CUDA/NVTX calls
import torch

model = torch.nn.Linear(8, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu")
for i in range(8):
    loss = model(torch.randn(4, 8)).sum() * (float("inf") if i == 4 else 1.0)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
