"""DDP-style script: epochs, and a global step that the inner loop counts itself."""
from __future__ import annotations

import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

if __name__ == "__main__":
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = DDP(torch.nn.Linear(512, 512).cuda(), device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    sampler_batches = [torch.randn(64, 512) for _ in range(20)]
    global_step = 0
    for epoch in range(3):
        for batch in sampler_batches:
            out = model(batch.cuda())
            loss = out.square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            global_step += 1
        print(f"epoch {epoch} done at step {global_step}")
    dist.destroy_process_group()
