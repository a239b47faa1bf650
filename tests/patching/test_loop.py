"""The step function: passed in as a parameter and followed, passed in from another file, numbered
by its step parameter, else by the optimizer (nsysgen/patching/loop.py)."""

from __future__ import annotations

import textwrap

import pytest

from nsysgen.patching import step_loop as f
from nsysgen.patching.patch import PatchError, analyse
from nsysgen.patching.syntax import Function
from tests.patching.test_find_shapes import marked, numbering, script

# 7. The step function passed in; the counter a parameter --------------------------------------

PASSED_IN = script("""
    def train_step(model, optimizer, batch, step):
        loss = model(batch).sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"step {step}: loss {loss.item()}")


    def train(model, optimizer, loader, step_fn):
        global_step = 0
        for batch in loader:  # step loop
            step_fn(model, optimizer, batch, global_step)
            global_step += 1


    train(model, optimizer, loader, train_step)
""")


def test_a_step_function_passed_in_is_followed() -> None:
    found = analyse(PASSED_IN)
    assert numbering(found) == (marked(PASSED_IN), "global_step", "global_step", "train", f.COUNTER)
    assert found.optimizers == ("optimizer",)
    by_keyword = PASSED_IN.replace("loader, train_step)", "loader, step_fn=train_step)")
    assert analyse(by_keyword).optimizers == ("optimizer",)


def test_a_step_function_passed_in_from_another_file_is_a_step() -> None:
    # No caller here: the parameter's name says it runs a training step.
    source = PASSED_IN.split("\n\n\n")[1] + "\n"
    found = analyse(source)
    assert numbering(found) == (marked(source), "global_step", "global_step", "train", f.COUNTER)
    assert found.optimizers == ()
    with pytest.raises(PatchError, match="found no training loop"):
        analyse(source.replace("step_fn", "callback"))


def test_a_step_function_with_the_counter_as_a_parameter_numbers_by_it() -> None:
    source = PASSED_IN.split("\n\n\n", 1)[0] + "\n"
    found = analyse(source)
    assert isinstance(found.node, Function)
    assert numbering(found) == (1, "step", "step", "train_step", f.PARAMETER)
    method = "class Model:\n" + textwrap.indent(source.replace("(model,", "(self,"), "    ")
    assert numbering(analyse(method)) == (2, "step", "step", "train_step", f.PARAMETER)


def test_a_step_function_without_a_counter_numbers_by_the_optimizer() -> None:
    source = script("""
        class CycleGANModel:
            def optimize_parameters(self):
                self.forward()
                self.optimizer_G.zero_grad()
                self.backward_G()
                self.optimizer_G.step()
                self.optimizer_D.zero_grad()
                self.backward_D()
                self.optimizer_D.step()

            def backward_G(self):
                self.loss_G.backward()

            def backward_D(self):
                self.loss_D.backward()
    """)
    found = analyse(source)
    assert numbering(found)[1:] == (
        None,
        None,
        "optimize_parameters",
        f"{f.OPTIMIZER_COUNT} (optimize_parameters is called from another file)",
    )
    assert found.optimizers == ("self.optimizer_G", "self.optimizer_D")


def test_a_local_counter_of_a_step_function_numbers_nothing() -> None:
    # Its locals start anew every call; an attribute lasts.
    source = script("""
        def train_step(model, optimizer, batch):
            count = 0
            model(batch).sum().backward()
            optimizer.step()
            count += 1
    """)
    assert analyse(source).at_step is None
    assert analyse(source.replace("count", "model.updates")).at_step == "model.updates"


RL_LOOP = """\
import torch

model = torch.nn.Linear(4, 4)
q_optimizer = torch.optim.Adam(model.parameters())
actor_optimizer = torch.optim.Adam(model.parameters())
for global_step in range(1000):
    q_loss = model(torch.randn(2, 4)).sum()
    q_loss.backward()
    q_optimizer.step()
    q_optimizer.zero_grad()
    if global_step % 2 == 0:  # delayed policy updates
        for _ in range(2):
            actor_loss = model(torch.randn(2, 4)).sum()
            actor_loss.backward()
            actor_optimizer.step()
            actor_optimizer.zero_grad()
    if global_step % 100 == 0:
        print("SPS", global_step)
"""


def test_the_step_loop_is_the_outermost_that_trains_every_iteration() -> None:
    """An RL loop (CleanRL's TD3 shape): the outer loop trains the critic every iteration, the
    inner loop is the actor's delayed updates inside that step, not the step loop."""
    found = analyse(RL_LOOP)
    assert (found.node.lineno, found.step, found.counter) == (6, "global_step", f.LOOP_VARIABLE)
    assert found.optimizers == ("q_optimizer", "actor_optimizer")
    # An epoch loop around the step loop runs no backward and step of its own: not the owner.
    epochs = "for epoch in range(3):\n" + textwrap.indent(RL_LOOP.split("\n", 5)[5], "    ")
    nested = analyse(RL_LOOP.split("for global_step")[0] + epochs.replace("\n    \n", "\n\n"))
    assert nested.node.lineno == 7  # for global_step (its index restarts every epoch)


def test_several_step_loops_name_the_loops_around_them() -> None:
    source = script("""
        def train_step(batches):
            for batch in batches:
                model(batch).sum().backward()
                optimizer.step()

        def evaluate(batches):
            for batch in batches:
                model(batch).sum().backward()
                optimizer.step()

        while iteration < train_iters:
            train_step(next(loader))
            iteration += 1
    """)
    with pytest.raises(PatchError) as error:
        analyse(source)
    assert str(error.value) == (
        "found several step loops: line 2 (in train_step), line 7 (in evaluate); loops around "
        "them: line 11; set loop_line to the line of the step loop's `for` or `while`"
    )
    assert analyse(source, 11).node.lineno == 11
