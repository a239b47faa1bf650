"""FSDP-style training script: a train() function with the loop over enumerate(dataloader)."""

import argparse
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.utils.data import DataLoader, TensorDataset


def build_model(width: int) -> torch.nn.Module:
    layers = [torch.nn.Linear(width, width) for _ in range(4)]
    return torch.nn.Sequential(*layers)


def train(model, loader, optimizer, max_steps, log_every=10):
    model.train()
    for batch_idx, (inputs, targets) in enumerate(loader):
        if batch_idx >= max_steps:
            break
        inputs, targets = inputs.cuda(), targets.cuda()
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        model.clip_grad_norm_(1.0)
        optimizer.step()
        if batch_idx % log_every == 0 and dist.get_rank() == 0:
            print(f"step {batch_idx} loss {loss.item():.4f}")


def evaluate(model, loader):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for inputs, targets in loader:
            total += torch.nn.functional.mse_loss(model(inputs.cuda()), targets.cuda()).item()
    return total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max_steps", type=int, default=100)
    parser.add_argument("--width", type=int, default=1024)
    args = parser.parse_args()
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    model = FSDP(build_model(args.width).cuda())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    data = TensorDataset(torch.randn(4096, args.width), torch.randn(4096, args.width))
    loader = DataLoader(data, batch_size=32)
    train(model, loader, optimizer, args.max_steps)
    print("eval", evaluate(model, loader))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
