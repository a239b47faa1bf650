"""A Lightning Trainer on a tiny MLP and random data: 2 batches an optimizer step, a CSVLogger
writing every step, 30 steps, no checkpoint, no validation (steps38 proof, window 10..14).

The evidence (proof.py): a mark before each optimizer step keyed by `trainer.global_step`
(`Callback.on_before_optimizer_step`); training_step logs that same value as `proof_key`, so
that after the run each row of the CSVLogger's metrics.csv pairs a key with the `step` Lightning
logged for it.
"""

from __future__ import annotations

import os

import lightning as L
import proof
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import CSVLogger
from torch import nn

BATCH, ACCUMULATION, STEPS = 8, 2, 30


class Tiny(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = F.mse_loss(self.net(x), y)
        self.log("loss", loss)
        self.log("proof_key", float(self.trainer.global_step))
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


class Proof(Callback):
    def on_before_optimizer_step(
        self, trainer: L.Trainer, pl_module: L.LightningModule, optimizer: torch.optim.Optimizer
    ) -> None:
        proof.mark(trainer.global_step)


def main() -> None:
    torch.manual_seed(0)
    count = BATCH * ACCUMULATION * (STEPS + 10)  # one epoch: no epoch boundary in the run
    data = torch.utils.data.TensorDataset(torch.randn(count, 32), torch.randn(count, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, num_workers=0)
    logger = CSVLogger(os.environ.get("PROOF_OUT", "lightning-out"), name="proof", version=0)
    trainer = L.Trainer(
        max_steps=STEPS,
        accumulate_grad_batches=ACCUMULATION,
        logger=logger,
        callbacks=[Proof()],
        log_every_n_steps=1,
        enable_checkpointing=False,
        limit_val_batches=0,
        num_sanity_val_steps=0,
        enable_progress_bar=False,
        enable_model_summary=False,
        devices=1,
    )
    trainer.fit(Tiny(), loader)
    logger.save()
    pairs = proof.logged_pairs(logger.log_dir)
    for key, step in sorted(pairs):
        proof.log(key, step, "metrics.csv step")
    print("lightning_trainer: done, global_step", trainer.global_step, "pairs", len(pairs))


if __name__ == "__main__":
    main()
