"""transformers.trainer of the stand-in: `_inner_training_loop`'s order of events, from
transformers' trainer.py: every update step runs its micro-batches (forward, backward), then
`self.optimizer.step()`, then `self.state.global_step += 1`, then the log, which records
`{"step": self.state.global_step}`: the first optimizer step is logged as step 1."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import torch


class TrainingArguments:
    def __init__(self, max_steps: int = 10, gradient_accumulation_steps: int = 1) -> None:
        self.max_steps = max_steps
        self.gradient_accumulation_steps = gradient_accumulation_steps


class TrainerCallback:
    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        pass


class Trainer:
    def __init__(self, model: Any, args: TrainingArguments) -> None:
        self.model, self.args = model, args
        self.optimizer = torch.optim.AdamW(model.parameters())
        self.state = SimpleNamespace(global_step=0)
        self.callbacks: list[TrainerCallback] = []

    def add_callback(self, callback: TrainerCallback) -> None:
        self.callbacks.append(callback)

    def train(self) -> None:
        self._inner_training_loop()

    def _inner_training_loop(self) -> None:
        while self.state.global_step < self.args.max_steps:
            for callback in self.callbacks:  # on_step_begin: before the step's micro-batches
                callback.on_step_begin(self.args, self.state, None)
            for micro in range(self.args.gradient_accumulation_steps):
                self.training_step(micro)
            self.optimizer.step()
            self.state.global_step += 1
            self.log()

    def training_step(self, micro: int) -> None:
        self.model(micro).backward()

    def log(self) -> None:
        print("@@ log", self.state.global_step, flush=True)
