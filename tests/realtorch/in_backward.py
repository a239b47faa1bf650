"""Optimizer-in-backward: per-parameter optimizers stepped from gradient hooks (torchtune)."""

import fake_cuda  # noqa: F401 - records CUDA/NVTX calls
import torch

model = torch.nn.Linear(8, 8)
optimizers = {p: torch.optim.SGD([p], lr=0.1) for p in model.parameters()}
for p in model.parameters():
    p.register_post_accumulate_grad_hook(lambda q: optimizers[q].step())
for _ in range(6):
    model(torch.randn(4, 8)).sum().backward()
