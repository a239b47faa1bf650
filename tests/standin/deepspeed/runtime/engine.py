"""deepspeed.runtime.engine of the stand-in: `engine.step()` is called every micro-batch and
steps the optimizer at the accumulation boundary (`_take_model_step`), then increments
`global_steps`, which its `steps_per_print` line prints: the first optimizer step is step 1."""

from __future__ import annotations

from typing import Any

import torch


class DeepSpeedEngine:
    def __init__(self, model: Any, gradient_accumulation_steps: int = 1) -> None:
        self.module = model
        self.optimizer = torch.optim.Adam(model.parameters())
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.micro_steps = 0
        self.global_steps = 0

    def __call__(self, batch: Any) -> Any:
        return self.module(batch)

    def backward(self, loss: Any) -> None:
        loss.backward()

    def step(self) -> None:
        self.micro_steps += 1
        if self.micro_steps % self.gradient_accumulation_steps == 0:
            self._take_model_step()

    def _take_model_step(self) -> None:
        self.optimizer.step()
        self.global_steps += 1
        print("@@ log", self.global_steps, flush=True)  # step={self.global_steps}
