"""Numbers the script logs or computes: 1-based numbers computed only when logging, a global
number from the epoch and the index, a number assigned after several optimizer steps read as
its expression (nsysgen/patching/reading.py)."""

from __future__ import annotations

import pytest

from nsysgen.patching import step_loop as f
from nsysgen.patching.patch import PatchError, analyse
from tests.patching.test_find_shapes import marked, numbering, script

# 4. 1-based numbers the script computes only when it logs ------------------------------------

LBFGS = script("""
    import torch

    optimizer = torch.optim.LBFGS(model.parameters(), lr=0.1)
    for k in range(50):  # step loop
        def closure():
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            return loss

        loss = optimizer.step(closure)
        LOG
""")


@pytest.mark.parametrize(
    "log",
    [
        'print(f"Iteration {k + 1}, loss {loss.item():.4f}")',
        'print("Iteration %d loss %f" % (k + 1, loss.item()))',
        'logger.info("Iteration {} loss {}".format(k + 1, loss.item()))',
        'logger.info("iteration %d: loss %f", k + 1, loss.item())',
        'wandb.log({"loss": loss.item()}, step=k + 1)',
    ],
)
def test_a_closure_optimizers_iteration_is_numbered_as_logged(log: str) -> None:
    source = LBFGS.replace("LOG", log)
    assert numbering(analyse(source)) == (marked(source), "k + 1", "k + 1", "<module>", f.LOGGED)


@pytest.mark.parametrize(
    "log",
    [
        'print(f"Iteration {k}, loss {loss.item():.4f}")',  # the index itself
        'print(f"epoch {k + 1}, loss {loss.item():.4f}")',  # not labelled as a step
        'print(f"Iteration {k + 1}"); print(f"step {k + 2}")',  # two numbers: no guess
    ],
)
def test_the_loop_variable_stays_unless_a_log_says_otherwise(log: str) -> None:
    source = LBFGS.replace("LOG", log)
    assert numbering(analyse(source))[1:4] == ("k", "k", "<module>")


def test_a_global_number_computed_only_when_logging_numbers_steps() -> None:
    # The TensorBoard step of PyTorch's "Training with PyTorch" tutorial (and DLRM's log_iter).
    source = script("""
        def train_one_epoch(epoch_index, tb_writer):
            for i, data in enumerate(training_loader):  # step loop
                inputs, labels = data
                optimizer.zero_grad()
                loss = loss_fn(model(inputs), labels)
                loss.backward()
                optimizer.step()
                if i % 1000 == 999:
                    print('  batch {} loss: {}'.format(i + 1, loss.item()))
                    tb_x = epoch_index * len(training_loader) + i + 1
                    tb_writer.add_scalar('Loss/train', loss.item(), tb_x)

        for epoch in range(EPOCHS):
            train_one_epoch(epoch, writer)
    """)
    expected = "epoch_index * len(training_loader) + i + 1"
    found = analyse(source)
    assert numbering(found) == (marked(source), expected, expected, "train_one_epoch", f.LOGGED)


def test_a_per_epoch_number_is_no_step_number() -> None:
    # `i + 1` restarts every epoch: it numbers no steps, and as the log shows it, no count of
    # nsysgen's would be the step the log calls N: the compile asks, with a number to set.
    source = script("""
        for epoch in range(3):
            for i, batch in enumerate(loader):  # step loop
                model(batch).sum().backward()
                optimizer.step()
                print(f"epoch {epoch} step {i + 1}")
    """)
    with pytest.raises(PatchError) as asked:
        analyse(source)
    assert asked.value.setting == "step_expr"
    assert str(asked.value) == (
        "the script's log shows each step as `i + 1` (line 5), which restarts every epoch; "
        "nsysgen would number steps by its own count of optimizer steps, so its step N would not "
        "be the step the log calls N; set step_expr to the number to count steps by (candidates: "
        "`epoch * len(loader) + i`)"
    )
    answered = analyse(source, None, "epoch * len(loader) + i")
    assert numbering(answered)[1:3] == ("epoch * len(loader) + i", "epoch * len(loader) + i")
    unlogged = source.replace('print(f"epoch {epoch} step {i + 1}")', 'print(f"loss {loss}")')
    assert numbering(analyse(unlogged))[1:3] == (None, None)


# 5. Several optimizers, the iteration's number assigned after the steps ----------------------

CYCLEGAN = script("""
    import torch

    model = torch.nn.Linear(4, 4)
    optimizer_G = torch.optim.Adam(model.parameters())
    optimizer_D_A = torch.optim.Adam(model.parameters())
    optimizer_D_B = torch.optim.Adam(model.parameters())
    dataloader = range(4)
    for epoch in range(3):
        for i, batch in enumerate(dataloader):  # step loop
            model(batch).backward()
            optimizer_G.step()
            model(batch).backward()
            optimizer_D_A.step()
            model(batch).backward()
            optimizer_D_B.step()
            batches_done = epoch * len(dataloader) + i
            print("@@ log", batches_done)
""")


def test_a_number_assigned_after_several_optimizer_steps_is_read_as_its_expression() -> None:
    expected = "epoch * len(dataloader) + i"
    found = analyse(CYCLEGAN)
    assert numbering(found) == (marked(CYCLEGAN), expected, expected, "<module>", f.COMPUTED)


def test_a_number_changed_between_the_step_and_its_log_is_not_taken() -> None:
    source = CYCLEGAN.replace("        batches_done =", "        i = i + 0\n        bd =")
    source = source.replace('@@ log", batches_done', '@@ log", bd')
    assert numbering(analyse(source))[1:3] == (None, None)


def test_the_step_a_run_starts_from_plus_the_index_numbers_steps() -> None:
    # stylegan2's `i = idx + args.start_iter`: the number it names checkpoints by, on resume too.
    source = script("""
        for idx in pbar:  # step loop
            i = idx + args.start_iter
            model(batch).sum().backward()
            optimizer.step()
            torch.save(model, f"checkpoint/{str(i).zfill(6)}.pt")
    """)
    assert numbering(analyse(source))[1:] == (None, "i", "<module>", f.COMPUTED)
    plain = source.replace("idx + args.start_iter", "idx + args.batch_size")
    assert numbering(analyse(plain))[1:3] == (None, None)
