"""A torch.compile'd optimizer step (AdamW)."""

import fake_cuda  # noqa: F401 - records CUDA/NVTX calls
import torch

model = torch.nn.Linear(8, 8)
optimizer = torch.optim.AdamW(model.parameters())


@torch.compile(backend="aot_eager")  # dynamo as on the GPU; no inductor code generation on CPU
def step() -> None:
    optimizer.step()


for _ in range(8):
    model(torch.randn(4, 8)).sum().backward()
    step()
    optimizer.zero_grad()
