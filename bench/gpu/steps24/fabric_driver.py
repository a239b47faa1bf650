#!/usr/bin/env python3
"""Runs Lightning's "build your own trainer" (Fabric) on a small model and random data.

Usage: fabric_driver.py TRAINER.py [--epochs=N] [--batches=N] [--val-batches=N] [--accelerator=cuda]

TRAINER.py is the public trainer module (tests/training_scripts/corpus/
fabric_build_your_own_trainer.py, from Lightning-AI/pytorch-lightning
examples/fabric/build_your_own_trainer/trainer.py), imported from that path under its own file
name: the job names it as its script and this driver as its interpreter, so the step helper's
scope (the trainer's file and function) is the file that runs. Its upstream run.py trains on
MNIST, which cannot be downloaded on the GPU machine; this driver gives it a LightningModule of
its own instead (an MLP, cross-entropy, Adam; validation_step, so validation runs between
epochs) and random tensors. Lightning 2.6 dropped lightning.fabric.utilities.types.LRScheduler,
which the trainer's annotations name: the driver puts torch's LRScheduler there first.

The trainer's shape: `for batch_idx, batch in enumerate(...)` inside `train_loop` (called once
an epoch from `fit`), the forward and backward inside `optimizer.step(closure)` (through
Fabric's optimizer wrapper), `self.global_step` counting optimizer steps, validation and a
checkpoint between epochs. grad_accum_steps stays 1: with more, the trainer's
`global_step % grad_accum_steps` test never steps again after the first step.
"""

import argparse
import importlib.util
import sys
from pathlib import Path


def main() -> None:
    trainer_path = sys.argv[1]
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batches", type=int, default=8, help="training batches per epoch")
    parser.add_argument("--val-batches", type=int, default=2)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument(
        "--accelerator", default="cuda", help="cpu: the CPU rehearsal (cpu_check.py)"
    )
    args = parser.parse_args(sys.argv[2:])

    # The trainer's annotations name lightning.fabric.utilities.types.LRScheduler, which Lightning
    # 2.6 no longer has (the class definition fails): give it back, as torch's LRScheduler.
    import torch
    from lightning.fabric.utilities import types

    if not hasattr(types, "LRScheduler"):
        types.LRScheduler = torch.optim.lr_scheduler.LRScheduler
        print(
            "fabric_driver: lightning.fabric.utilities.types.LRScheduler set to torch's", flush=True
        )

    name = Path(trainer_path).stem
    spec = importlib.util.spec_from_file_location(name, trainer_path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)

    import lightning as L
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset

    classes = 10

    class Net(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            layers = []
            for _ in range(args.depth):
                layers += [torch.nn.Linear(args.width, args.width), torch.nn.GELU()]
            self.net = torch.nn.Sequential(*layers, torch.nn.Linear(args.width, classes))

        def forward(self, x):
            return self.net(x)

        def training_step(self, batch, batch_idx):
            x, y = batch
            return F.cross_entropy(self(x), y)

        def validation_step(self, batch, batch_idx):
            x, y = batch
            return F.cross_entropy(self(x), y)

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=1e-3)

    torch.manual_seed(0)

    def loader(batches: int) -> DataLoader:
        n = batches * args.batch_size
        data = TensorDataset(torch.randn(n, args.width), torch.randint(0, classes, (n,)))
        return DataLoader(data, batch_size=args.batch_size)

    trainer = module.MyCustomTrainer(
        accelerator=args.accelerator,
        devices=1,
        max_epochs=args.epochs,
        limit_val_batches=args.val_batches,
        checkpoint_dir=str(Path.cwd() / "checkpoints"),
    )
    trainer.fit(Net(), loader(args.batches), loader(args.val_batches))
    print(f"fabric_driver: done, global_step {trainer.global_step}, epochs {trainer.current_epoch}")


if __name__ == "__main__":
    main()
