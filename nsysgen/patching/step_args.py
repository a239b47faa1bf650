"""A training script's own step limit, read off the arguments nsysgen passes it.

`step_limit` takes a list of argument strings as a workload block holds them (argparse-style
flags such as `--max_steps=100` or `--train-iters 100`, or Hydra overrides such as
`trainer.max_steps=100`) and returns the step limit they set, if any. It depends on nothing else
in nsysgen, so a workload kind or a lint can use it without an import cycle.

What a limit means is an assumption, the one capture.first_step/last_step make: steps are
numbered from 0, so a run of N steps runs steps 0..N-1 and ends before step N.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# Flag names (after `--`, `-` and `_` alike) that set how many steps a run does.
STEP_FLAGS = frozenset(
    {"max_steps", "train_iters", "num_steps", "steps", "max_iters", "total_steps"}
)
# Hydra override keys that do (NeMo, Megatron Bridge), with or without a leading + or ++.
STEP_KEYS = frozenset({"trainer.max_steps", "train.train_iters"})

_COUNT = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class StepLimit:
    steps: int  # the run does steps 0..steps-1
    index: int  # of the element that holds the number
    text: str  # the argument as written: "--max_steps=100", "--max-steps 100", "key=100"


def step_limit(args: Sequence[str]) -> StepLimit | None:
    """The step limit the last max-steps style argument in args sets; None when there is none,
    or when the last one sets no positive whole number (-1, 0 or null mean "no limit" to most
    scripts, and a value nsysgen cannot read is not guessed at). Arguments after `--` are
    positional, not flags."""
    last: tuple[int, str, str | None] | None = None  # (index, text, value)
    for index, arg in enumerate(args):
        if arg == "--":
            break
        if arg.startswith("--"):
            name, equals, value = arg[2:].partition("=")
            if name.replace("-", "_") not in STEP_FLAGS:
                continue
            if equals:
                last = (index, arg, value)
            elif index + 1 < len(args):
                last = (index + 1, f"{arg} {args[index + 1]}", args[index + 1])
            else:
                last = (index, arg, None)
            continue
        key, equals, value = arg.lstrip("+~").partition("=")
        if key in STEP_KEYS:
            # `~key` deletes the key: no limit nsysgen can see.
            last = (index, arg, value if equals and not arg.startswith("~") else None)
    if last is None:
        return None
    index, text, number = last
    if number is None or not _COUNT.fullmatch(number) or int(number) <= 0:
        return None
    return StepLimit(int(number), index, text)
