"""How steps are numbered where the loop's index does not number them: an index that restarts
whenever an epoch function runs, a micro-batch index (nsysgen/patching/numbering.py)."""

from __future__ import annotations

from nsysgen.patching import step_loop as f
from nsysgen.patching.patch import analyse
from tests.patching.test_find_shapes import marked, numbering, script

# 1. An index that restarts on every call of an epoch function --------------------------------

EPOCH_FUNCTION = script("""
    import itertools


    def train_one_epoch(model, optimizer, data_iter, epoch, step):
        for i in itertools.count():  # step loop
            batch = next(data_iter, None)
            if batch is None:
                break
            loss = model(batch).sum()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            if i % 100 == 0:
                print(f"epoch {epoch} step {step + i}")
        return step + i
""")


def test_an_index_that_restarts_every_call_is_no_step_number() -> None:
    # The function is given the caller's running count: its own index starts at 0 every epoch.
    silent = EPOCH_FUNCTION.replace("        if i % 100 == 0:\n", "").replace(
        '            print(f"epoch {epoch} step {step + i}")\n', ""
    )
    found = analyse(silent)
    assert numbering(found) == (
        marked(silent),
        None,
        None,
        "train_one_epoch",
        f"{f.OPTIMIZER_COUNT} (the loop's index restarts whenever train_one_epoch runs)",
    )


def test_the_number_it_logs_with_the_callers_count_numbers_steps() -> None:
    found = analyse(EPOCH_FUNCTION)
    line = marked(EPOCH_FUNCTION)
    assert numbering(found) == (line, "step + i", "step + i", "train_one_epoch", f.LOGGED)


def test_a_start_offset_is_no_running_count() -> None:
    # `start_step` says where the run starts: the function runs once, its index numbers steps.
    source = EPOCH_FUNCTION.replace("epoch, step)", "epoch_count, start_step)")
    source = source.replace("train_one_epoch", "train").replace("{step + i}", "{i}")
    source = source.replace("{epoch}", "{epoch_count}")
    assert numbering(analyse(source))[1:] == ("i", "i", "train", f.LOOP_VARIABLE)


# 2. A micro-batch index, the step logged as index // accumulation ----------------------------

MICRO_BATCHES = script("""
    import torch

    model = torch.nn.Linear(4, 4)
    optimizer = torch.optim.AdamW(model.parameters())
    accum_freq, batches = 3, 12
    for epoch in range(2):
        for i, batch in enumerate(range(batches)):  # step loop
            i_accum = i // accum_freq
            step = (batches // accum_freq) * epoch + i_accum
            loss = model(batch) / accum_freq
            loss.backward()
            if (i + 1) % accum_freq != 0:
                continue
            optimizer.step()
            optimizer.zero_grad()
            print("@@ log", step)
            writer.add_scalar("train/loss", loss.item(), step)
""")


def test_a_step_computed_from_a_micro_batch_index_numbers_steps() -> None:
    found = analyse(MICRO_BATCHES)
    assert numbering(found) == (marked(MICRO_BATCHES), None, "step", "<module>", f.LOGGED)
    assert found.accumulation == f.CONTINUE


# 2. A counter the script prints, beside the loop's index ---------------------------------------

PRINTED_COUNTER = """\
import torch

model = torch.nn.Linear(4, 4)
opt = torch.optim.AdamW(model.parameters())
global_step = 0
for {index} in range(100):
    loss = model(torch.randn(2, 4)).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
    global_step += 1
    {log}
"""


def test_a_counter_the_script_prints_wins_over_the_loops_index() -> None:
    """The printed counter is the number people read: `batch` (or `_`) is one below it."""
    for index in ("batch", "_"):
        found = analyse(PRINTED_COUNTER.format(index=index, log='print(f"step {global_step}")'))
        assert (found.step, found.at_step) == ("global_step + 1", "global_step + 1"), index
    # Not logged: the loop's index numbers the steps, as before.
    silent = analyse(PRINTED_COUNTER.format(index="batch", log="pass"))
    assert (silent.step, silent.at_step, silent.counter) == ("batch", "batch", f.LOOP_VARIABLE)


# 3. A micro-batch counter the optimizer step's gate tests ---------------------------------------

GATED_BY_COUNTER = """\
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
nb, last_opt_step, accumulate = 100, -1, 4
for epoch in range(10):
    for i, imgs in enumerate(loader):
        ni = i + nb * epoch
        if ni <= 1000:
            accumulate = max(1, round(64 / 16))  # grows during warm-up
        loss = model(imgs).sum()
        loss.backward()
        if ni - last_opt_step >= accumulate:
            optimizer.step()
            optimizer.zero_grad()
            last_opt_step = ni
        print(f"{epoch} {ni}")
"""


def test_a_counter_the_gate_tests_counts_micro_batches_not_steps() -> None:
    """YOLOv5's shape: `ni` advances by `accumulate` per optimizer step, so it never numbers
    steps; nothing else does, so the optimizer's own count numbers them."""
    found = analyse(GATED_BY_COUNTER)
    assert (found.step, found.at_step) == (None, None)
    assert found.counter.startswith(f.OPTIMIZER_COUNT), found.counter


# 4. An optimizer wrapper's own counter ---------------------------------------------------------

WRAPPER_COUNTER = """\
class Trainer:
    def train(self, data):
        for i, batch in enumerate(data):
            step = self.optim.training_step  # 1-based, restored on resume
            loss = self.model(batch).sum()
            loss.backward()
            self.optim.step()
            self.optim.zero_grad()
            if step % 10 == 0:
                print(f"step {step} loss {loss.item()}")
"""


def test_an_optimizer_wrappers_own_counter_that_the_script_logs_numbers_steps() -> None:
    found = analyse(WRAPPER_COUNTER)
    assert (found.at_step, found.counter) == ("step", f.LOGGED)


# 5. DeepSpeed's pipeline engine: train_batch() runs and logs the step --------------------------

PIPELINE = """\
import deepspeed


def train_pipe(args, net, trainset):
    engine, _, _, _ = deepspeed.initialize(
        args=args, model=net, model_parameters=net.parameters(), training_data=trainset
    )
    for step in range(args.steps):
        loss = engine.train_batch()
"""


def test_a_pipeline_engines_train_batch_is_numbered_as_its_log_prints_it() -> None:
    """DeepSpeed prints `steps: N` by its global_steps, one above the loop's `step`."""
    found = analyse(PIPELINE)
    assert (found.step, found.at_step) == ("engine.global_steps + 1",) * 2
    assert found.counter == f.ENGINE_BATCH
