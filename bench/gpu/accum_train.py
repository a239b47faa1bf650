"""Gradient accumulation written the way nanoGPT, build-nanogpt and llm.c write it (issue 15):
`for step in range(...)` with a micro-batch loop inside, the optimizer step once per step.
The script marks its own micro-batches and optimizer steps with NVTX ranges ("micro k",
"optimizer step") so the report shows what each "step N" range of the patch holds."""

import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--grad-accum-steps", type=int, default=4)
parser.add_argument("--width", type=int, default=2048)  # smaller for the CPU dry runs
args = parser.parse_args()

torch.manual_seed(0)
width = args.width
model = torch.nn.Sequential(
    *[torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.GELU()) for _ in range(8)]
).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
grad_accum_steps = args.grad_accum_steps

for step in range(args.steps):
    optimizer.zero_grad(set_to_none=True)
    loss_accum = 0.0
    for micro_step in range(grad_accum_steps):
        torch.cuda.nvtx.range_push(f"micro {micro_step}")
        x = torch.randn(256, width, device="cuda")
        loss = model(x).square().mean() / grad_accum_steps
        loss_accum += loss.detach()
        loss.backward()
        torch.cuda.nvtx.range_pop()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    torch.cuda.nvtx.range_push("optimizer step")
    optimizer.step()
    torch.cuda.nvtx.range_pop()
    if step % 10 == 0:
        print(f"step {step} loss {float(loss_accum):.5f}")
