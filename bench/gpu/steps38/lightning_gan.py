"""A Lightning GAN with manual optimization and two optimizers (D, then G, each batch); a
CSVLogger writing every batch; 30 batches (steps38 proof of issue 47, window 10..14).
`trainer.global_step` counts both optimizers' steps (2 a batch); the logger's step counts
batches, and that is the number the run's log gives.

The evidence (proof.py): a mark before each optimizer step keyed `<batch>D` / `<batch>G`;
training_step logs the batch index as `proof_key`, so each row of metrics.csv pairs it with the
`step` Lightning logged.
"""

from __future__ import annotations

import os

import lightning as L
import proof
import torch
import torch.nn.functional as F
from lightning.pytorch.loggers import CSVLogger
from torch import nn

BATCH, BATCHES, WIDTH = 16, 30, 32


class GAN(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.automatic_optimization = False
        self.g = nn.Sequential(nn.Linear(WIDTH, 64), nn.ReLU(), nn.Linear(64, WIDTH))
        self.d = nn.Sequential(nn.Linear(WIDTH, 64), nn.ReLU(), nn.Linear(64, 1))

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> None:
        (real,) = batch
        opt_d, opt_g = self.optimizers()  # type: ignore[misc]
        fake = self.g(torch.randn_like(real))
        ones = torch.ones(len(real), 1, device=self.device)
        loss_d = F.binary_cross_entropy_with_logits(
            self.d(real), ones
        ) + F.binary_cross_entropy_with_logits(self.d(fake.detach()), 0 * ones)
        opt_d.zero_grad()
        self.manual_backward(loss_d)
        proof.mark(f"{batch_idx}D")
        opt_d.step()
        loss_g = F.binary_cross_entropy_with_logits(self.d(fake), ones)
        opt_g.zero_grad()
        self.manual_backward(loss_g)
        proof.mark(f"{batch_idx}G")
        opt_g.step()
        self.log_dict({"loss_d": loss_d, "loss_g": loss_g, "proof_key": float(batch_idx)})

    def configure_optimizers(self) -> tuple[torch.optim.Optimizer, torch.optim.Optimizer]:
        return torch.optim.Adam(self.d.parameters()), torch.optim.Adam(self.g.parameters())


def main() -> None:
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(BATCH * BATCHES, WIDTH))
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, num_workers=0)
    logger = CSVLogger(os.environ.get("PROOF_OUT", "lightning-out"), name="proof", version=0)
    trainer = L.Trainer(
        max_epochs=1,
        logger=logger,
        log_every_n_steps=1,
        enable_checkpointing=False,
        limit_val_batches=0,
        num_sanity_val_steps=0,
        enable_progress_bar=False,
        enable_model_summary=False,
        devices=1,
    )
    trainer.fit(GAN(), loader)
    logger.save()
    pairs = proof.logged_pairs(logger.log_dir)
    for key, step in sorted(pairs):
        for which in "DG":
            proof.log(f"{key}{which}", step, "metrics.csv step")
    print("lightning_gan: done, global_step", trainer.global_step, "pairs", len(pairs))


if __name__ == "__main__":
    main()
