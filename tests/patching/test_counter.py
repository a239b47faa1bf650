"""Counters that start again every epoch number no steps; the checkpointed one is taken over a
per-epoch one (nsysgen/patching/counter.py)."""

from __future__ import annotations

from nsysgen.patching import step_loop as f
from nsysgen.patching.patch import analyse
from tests.patching.test_find_shapes import marked, numbering, script

# 3. A per-epoch counter beside the checkpointed one ------------------------------------------

PER_EPOCH_COUNTER = script("""
    import torch


    class Trainer:
        def __init__(self, model, loader, epochs):
            self.model, self.loader, self.epochs = model, loader, epochs
            self.optimizer = torch.optim.AdamW(model.parameters())
            self.global_step = 0

        def train(self):
            for epoch in range(self.epochs):
                self.train_epoch(epoch)
                torch.save({"global_step": self.global_step}, "ckpt.pt")

        def train_epoch(self, epoch):
            self.step = 0
            for batch in self.loader:  # step loop
                loss = self.model(batch).sum()
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
                self.step += 1
                GLOBAL
                print(f"epoch {epoch} batch {self.step}")
""")


def test_a_counter_reset_every_epoch_numbers_no_steps() -> None:
    source = PER_EPOCH_COUNTER.replace("GLOBAL\n", "\n")
    found = analyse(source)
    assert numbering(found) == (
        marked(source),
        None,
        None,
        "train_epoch",
        f"{f.OPTIMIZER_COUNT} (self.step restarts every epoch)",
    )


def test_the_checkpointed_counter_is_taken_over_the_per_epoch_one() -> None:
    for name in ("global_step", "iteration"):
        source = PER_EPOCH_COUNTER.replace("GLOBAL", f"self.{name} += 1")
        source = source.replace("global_step", name)
        found = analyse(source)
        assert numbering(found)[1:] == (f"self.{name}", f"self.{name}", "train_epoch", f.COUNTER)


def test_a_reset_in_an_epoch_function_of_another_file_is_seen_too() -> None:
    source = PER_EPOCH_COUNTER.replace("GLOBAL\n", "\n")
    source = source.replace("                self.train_epoch(epoch)\n", "                pass\n")
    assert "restarts every epoch" in analyse(source).counter
