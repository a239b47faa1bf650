"""Shapes from the unseen corpus (tests/training_scripts/unseen/) that nsysgen numbered unlike
the scripts' logs, cut down to what decides them."""

from __future__ import annotations

import textwrap

import pytest

from nsysgen.patching.patch import PatchError, analyse

RL_WARM_UP = """\
import torch

model = torch.nn.Linear(4, 4)
q_optimizer = torch.optim.Adam(model.parameters())
actor_optimizer = torch.optim.Adam(model.parameters())
for global_step in range(1000):
    act = model(global_step)
    if global_step > 100:
        q_loss = model(global_step)
        q_optimizer.zero_grad()
        q_loss.backward()
        q_optimizer.step()
        if global_step % 2 == 0:
            for _ in range(2):
                actor_loss = model(global_step)
                actor_optimizer.zero_grad()
                actor_loss.backward()
                actor_optimizer.step()
        if global_step % 100 == 0:
            writer.add_scalar("losses/q", q_loss.item(), global_step)
"""


def test_an_rl_loop_gated_by_its_warm_up_owns_the_step() -> None:
    """The critic steps in the outer loop's body, inside `if global_step > learning_starts:`
    beside the delayed policy loop: the outer loop is the step loop, numbered global_step."""
    found = analyse(RL_WARM_UP)
    assert (found.node.lineno, found.at_step) == (6, "global_step")


def loop(body: str) -> str:
    return (
        "import torch\n\nmodel = torch.nn.Linear(4, 4)\n"
        "optimizer = torch.optim.AdamW(model.parameters())\n"
        "global_step = 0\n"
        "for epoch in range(3):\n"
        "    for i, batch in enumerate(loader):\n" + textwrap.indent(textwrap.dedent(body), " " * 8)
    )


def test_a_counter_logged_plus_one_before_its_increment_is_numbered_so() -> None:
    found = analyse(
        loop("""\
        model(batch).backward()
        optimizer.step()
        accelerator.log(logs, step=global_step + 1)
        global_step += 1
        """)
    )
    assert found.at_step == "global_step + 1"


def test_a_constant_logged_after_the_increment_adds_nothing() -> None:
    found = analyse(
        loop("""\
        model(batch).backward()
        optimizer.step()
        global_step += 1
        accelerator.log(logs, step=global_step)
        """)
    )
    assert found.at_step == "global_step + 1"


def test_a_count_set_back_after_each_log_is_not_the_step_counter() -> None:
    """`log_steps` counts steps since the last log (set back to 0 there); `train_steps` goes on."""
    found = analyse(
        loop("""\
        model(batch).backward()
        optimizer.step()
        log_steps += 1
        train_steps += 1
        if train_steps % 100 == 0:
            logger.info(f"(step={train_steps:07d}) {log_steps}")
            log_steps = 0
        """)
    )
    assert found.at_step == "train_steps + 1"


def test_where_no_loop_visibly_trains_the_question_names_the_loops() -> None:
    """The step runs in another file (a loss scaler's wrapper): loop_line is asked for, with the
    file's loops as candidates, and the one given is taken."""
    source = textwrap.dedent("""\
        from utils import scaler_step

        def train_one_epoch(model, loader):
            for idx, batch in enumerate(loader):
                loss = model(batch)
                scaler_step(loss)

        def main():
            for epoch in range(10):
                train_one_epoch(model, loader)
        """)
    with pytest.raises(PatchError) as asked:
        analyse(source)
    assert asked.value.setting == "loop_line"
    assert "(loops of this file: line 4 (in train_one_epoch), line 9 (in main))" in str(asked.value)
    assert analyse(source, loop_line=4).node.lineno == 4


def test_a_file_without_loops_points_to_the_file_that_has_it() -> None:
    with pytest.raises(PatchError, match="this file has no loop: the training loop is in another"):
        analyse("import torch\nmodel = torch.nn.Linear(2, 2)\n")
