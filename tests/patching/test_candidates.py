"""What the compile offers where it asks for step_expr (nsysgen/patching/candidates.py): the
epoch and the index within it, from an epoch loop around the step loop, the function's epoch
parameter or the object's own epoch loop; a DeepSpeed engine's count; the quotient of a logged
count of micro-batches."""

from __future__ import annotations

import pytest

from nsysgen.patching.patch import PatchError, analyse
from tests.patching.test_find_shapes import script


def offered(source: str) -> str:
    with pytest.raises(PatchError) as error:
        analyse(source)
    assert error.value.setting == "step_expr"
    text = str(error.value)
    return text[text.index("(candidates: ") :] if "(candidates: " in text else ""


def test_the_epoch_and_the_index_within_it() -> None:
    around = script("""
        for epoch in range(3):
            for i, batch in enumerate(loader):
                model(batch).sum().backward()
                optimizer.step()
                print(f"[{i}/{len(loader)}]")
    """)
    assert offered(around) == "(candidates: `epoch * len(loader) + i`)"
    parameter = script("""
        def train(model, loader, optimizer, epoch):
            for i, batch in enumerate(metric_logger.log_every(loader, 10)):
                model(batch).sum().backward()
                optimizer.step()
    """)
    assert offered(parameter) == (
        "(candidates: `epoch * len(loader) + i` (where epoch counts from 0))"
    )
    attribute = script("""
        class Trainer:
            def train_in_epoch(self):
                for self.epoch in range(self.start_epoch, self.max_epoch):
                    self.train_in_iter()

            def train_in_iter(self):
                for self.iter in range(self.max_iter):
                    self.model(self.batch()).sum().backward()
                    self.optimizer.step()
                    logger.info("iter: {}/{}".format(self.iter + 1, self.max_iter))
    """)
    assert offered(attribute) == (
        "(candidates: `self.epoch * self.max_iter + self.iter` (where self.epoch counts from 0))"
    )


def test_a_deepspeed_engines_count() -> None:
    source = script("""
        model, optimizer, _, _ = deepspeed.initialize(model=net, config=config)
        for step, batch in enumerate(loader):
            loss = model(batch)
            model.backward(loss)
            model.step()
            writer.add_scalar("loss", loss, step)
    """)
    assert (
        offered(source)
        == "(candidates: `model.global_steps` (DeepSpeed's count of optimizer steps))"
    )


def test_the_quotient_of_a_logged_count_of_micro_batches() -> None:
    source = script("""
        train_step = 0
        for batch in loader:
            model(batch).sum().backward()
            train_step += 1
            is_update = train_step % args.grad_acc == 0
            if is_update:
                optimizer.step()
                print(f"step {train_step}")
    """)
    assert offered(source) == (
        "(candidates: `train_step // args.grad_acc` (read while the optimizer steps))"
    )
