"""A script's own step limit read off its arguments (nsysgen/patching/step_args.py): argparse
flags in either spelling, Hydra overrides, the last one winning, and nothing guessed."""

from __future__ import annotations

import pytest

from nsysgen.patching.step_args import StepLimit, step_limit


@pytest.mark.parametrize(
    ("args", "limit"),
    [
        (["--max_steps=100"], StepLimit(100, 0, "--max_steps=100")),
        (["--lr", "1", "--train-iters", "50"], StepLimit(50, 3, "--train-iters 50")),
        (["trainer.max_steps=20"], StepLimit(20, 0, "trainer.max_steps=20")),
        (["++trainer.max_steps=20"], StepLimit(20, 0, "++trainer.max_steps=20")),
        (["--max_steps=5", "--max-steps=7"], StepLimit(7, 1, "--max-steps=7")),
    ],
)
def test_the_last_limit_is_read(args: list[str], limit: StepLimit) -> None:
    assert step_limit(args) == limit


@pytest.mark.parametrize(
    "args",
    [[], ["--max_steps=-1"], ["--max_steps=0"], ["--max_steps=ten"], ["--max_steps"],
     ["~trainer.max_steps=20"], ["--", "--max_steps=5"], ["--epochs=3"]],
)  # fmt: skip
def test_no_limit_is_guessed(args: list[str]) -> None:
    assert step_limit(args) is None
