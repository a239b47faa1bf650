"""A Hugging Face Trainer on a tiny GPT-2 (2 layers, 64 wide) and random tokens: 4 micro-batches an
optimizer step, logging every step, 30 steps, nothing saved (steps38 proof, window 10..14).

The evidence (proof.py): a mark before each optimizer step keyed by `state.global_step` (the
callback `on_pre_optimizer_step`, or a wrapper around the optimizer's step on a transformers
without it), and in `on_log` that key paired with `state.log_history[-1]["step"]`, the number
the Trainer logs for the optimizer step.
"""

from __future__ import annotations

import os
from typing import Any

import proof
import torch
from transformers import (
    GPT2Config,
    GPT2LMHeadModel,
    Trainer,
    TrainerCallback,
    TrainerControl,
    TrainerState,
    TrainingArguments,
)

VOCAB, LENGTH, BATCH, ACCUMULATION, STEPS = 512, 32, 8, 4, 30


class RandomTokens(torch.utils.data.Dataset[dict[str, torch.Tensor]]):
    def __init__(self, count: int) -> None:
        generator = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, VOCAB, (count, LENGTH), generator=generator)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.ids[index], "labels": self.ids[index]}


class Proof(TrainerCallback):
    """Marks each optimizer step with the Trainer's global step and pairs it with its log."""

    def __init__(self) -> None:
        self.key: int | None = None
        self.state: TrainerState | None = None

    def on_pre_optimizer_step(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        self.key = state.global_step
        proof.mark(self.key)

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        self.state = state
        if hasattr(TrainerCallback, "on_pre_optimizer_step"):
            return
        # An older transformers: the same mark from a wrapper around the optimizer's step.
        optimizer = kw["optimizer"]
        step = optimizer.step

        def marked(*args: Any, **kwargs: Any) -> Any:
            assert self.state is not None
            self.key = self.state.global_step
            proof.mark(self.key)
            return step(*args, **kwargs)

        optimizer.step = marked

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, float] | None = None,
        **kw: Any,
    ) -> None:
        # The per-step logs (with the loss); the end-of-training summary repeats the last step.
        if self.key is not None and "loss" in (logs or {}):
            proof.log(self.key, state.log_history[-1]["step"], "state.log_history[-1]['step']")


def main() -> None:
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=VOCAB, n_positions=LENGTH, n_embd=64, n_layer=2, n_head=2)
    model = GPT2LMHeadModel(config)
    args = TrainingArguments(
        output_dir=os.environ.get("PROOF_OUT", "hf-out"),
        per_device_train_batch_size=BATCH,
        gradient_accumulation_steps=ACCUMULATION,
        max_steps=STEPS,
        learning_rate=1e-3,
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        disable_tqdm=True,
        dataloader_num_workers=0,
        seed=0,
    )
    data = RandomTokens(BATCH * ACCUMULATION * STEPS)
    trainer = Trainer(model=model, args=args, train_dataset=data, callbacks=[Proof()])
    trainer.train()
    print("hf_trainer: done, global_step", trainer.state.global_step)


if __name__ == "__main__":
    main()
