"""lightning.pytorch.trainer.trainer of the stand-in: automatic optimization as Lightning 2.x's
loops order it. The training step's forward and backward run inside the optimizer's step (the
closure); `global_step` counts the optimizer steps completed, so it is N while step N runs; the
loggers then write the step's metrics at step N (`_batches_that_stepped`, incremented after)."""

from __future__ import annotations

from typing import Any

import torch


class _EpochLoop:
    _batches_that_stepped = 0


class _FitLoop:
    def __init__(self) -> None:
        self.epoch_loop = _EpochLoop()


class Trainer:
    def __init__(self, max_steps: int = 10) -> None:
        self.max_steps = max_steps
        self.global_step = 0
        self.callbacks: list[Any] = []
        self.fit_loop = _FitLoop()

    def fit(self, module: Any) -> None:
        optimizer = torch.optim.Adam(module.parameters())
        batch = 0
        while self.global_step < self.max_steps:
            for callback in self.callbacks:
                callback.on_train_batch_start(self, module, batch, batch)

            def closure(batch: int = batch) -> None:
                module(batch).backward()

            optimizer.step(closure)
            self.global_step += 1  # optim_progress.optimizer.step.increment_completed()
            stepped = self.fit_loop.epoch_loop
            print("@@ log", stepped._batches_that_stepped, flush=True)  # the logger's step
            stepped._batches_that_stepped += 1  # after the batch (on_advance_end)
            batch += 1
