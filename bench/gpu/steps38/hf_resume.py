"""A Hugging Face Trainer (hf_trainer.py's tiny GPT-2) trained to step 20, saving a checkpoint
there, then resumed from it to step 40 (steps38 proof of issue 47, window 25..29).

    hf_resume.py --phase=first   the first run only: 20 steps, checkpoint-20 (run outside nsys)
    hf_resume.py                 resume to 40 from the checkpoint if the first run made one (a new
                                 process), else both runs here, one after the other (the same
                                 process: a second Trainer, a new optimizer)

The evidence is hf_trainer.py's: a mark keyed by `state.global_step` before each optimizer
step, paired in `on_log` with `state.log_history[-1]["step"]`, the number the Trainer logs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch
from hf_trainer import ACCUMULATION, BATCH, LENGTH, VOCAB, Proof, RandomTokens
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

FIRST, LAST = 20, 40


def trainer(max_steps: int, out: str) -> Trainer:
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=VOCAB, n_positions=LENGTH, n_embd=64, n_layer=2, n_head=2)
    args = TrainingArguments(
        output_dir=out,
        per_device_train_batch_size=BATCH,
        gradient_accumulation_steps=ACCUMULATION,
        max_steps=max_steps,
        learning_rate=1e-3,
        logging_steps=1,
        report_to=[],
        save_strategy="steps",
        save_steps=FIRST,
        disable_tqdm=True,
        dataloader_num_workers=0,
        seed=0,
    )
    data = RandomTokens(BATCH * ACCUMULATION * LAST)
    return Trainer(
        model=GPT2LMHeadModel(config), args=args, train_dataset=data, callbacks=[Proof()]
    )


def main() -> None:
    out = os.environ.get("PROOF_OUT", "hf-out")
    if "--phase=first" in sys.argv[1:]:
        trainer(FIRST, out).train()
        print("hf_resume: first run done, checkpoint", sorted(Path(out).glob("checkpoint-*")))
        return
    if not (Path(out) / f"checkpoint-{FIRST}").is_dir():
        trainer(FIRST, out).train()  # the same process: this run, then the resumed one
        print("hf_resume: first run done in this process")
    resumed = trainer(LAST, out)
    resumed.train(resume_from_checkpoint=True)
    print("hf_resume: done, global_step", resumed.state.global_step)


if __name__ == "__main__":
    main()
