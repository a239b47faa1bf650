"""What finding returns: the step loop, the block that runs once per optimizer step, the
accumulation forms and the ways steps are numbered, in the words plan and tests use.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from nsysgen.patching.syntax import Function

Loop = ast.For | ast.While


FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


Block = list[ast.stmt]


STEP, BACKWARD = "optimizer step", "backward"


# How the script accumulates gradients (StepLoop.accumulation): one of these, or
# f"{IN_BACKWARD}, else {form}" where the optimizer steps in backward only when so configured.
NO_ACCUMULATION = "none"


IF_BLOCK = "if block (step % n == 0)"


CONTINUE = "continue (skip until the boundary)"


ACCUMULATE = "accelerator.accumulate"


MICRO_LOOP = "micro-batch loop inside the step loop"


ENGINE = "engine steps every micro-batch (DeepSpeed)"


SYNC_GRADIENTS = "sync_gradients"


IN_BACKWARD = "optimizer in backward"


FORMS = (NO_ACCUMULATION, IF_BLOCK, CONTINUE, ACCUMULATE, MICRO_LOOP, ENGINE, SYNC_GRADIENTS)


ACCUMULATIONS = (
    *FORMS,
    IN_BACKWARD,
    *(f"{IN_BACKWARD}, else {form}" for form in FORMS if form != NO_ACCUMULATION),
)


# How steps are numbered (StepLoop.counter).
LOOP_VARIABLE = "loop variable"


COUNTER = "counter"


COUNTER_BEFORE = "counter, read after its increment"


COUNTER_LOGGED = "counter, logged after its increment"


ENGINE_COUNTER = "engine's global_steps"


ENGINE_COUNTER_LOGGED = "engine's global_steps, logged after its increment"


# DeepSpeed's pipeline engine runs a whole step in train_batch() and logs its global_steps.
ENGINE_BATCH = "the engine's global_steps + 1, as train_batch() logs the step"


OPTIMIZER_COUNT = "the optimizer's count of steps"


PARAMETER = "the step function's parameter"


LOGGED = "the number the script logs"


COMPUTED = "the iteration's number the script computes"


@dataclass(frozen=True)
class StepSite:
    """The block that runs once per optimizer step, when not every iteration of the loop steps."""

    block: Block | None  # None: every iteration of the step loop is one step
    when: str | None = (
        None  # the expression that says the step ended (`accelerator.sync_gradients`)
    )


@dataclass(frozen=True)
class StepLoop:
    """The step loop and how the script numbers its steps.

    step: an expression the loop can read at the top of every iteration that is the number the
        script logs for the step that iteration belongs to (constant across its micro-batches);
        patch mode gives it to open(). None: the helper numbers steps.
    at_step: an expression whose value, evaluated in the frame of the function `scope` while
        the optimizer step runs (also when that runs inside functions the loop calls: the
        helper walks up the stack to `scope`'s frame), is the number the script logs for this
        step. None: steps are numbered by the optimizer's own count.
    counter: how steps are numbered, in words (plan, tests, the README table).
    scope: the name of the function that holds the step loop, "<module>" at module level.
    node: the step loop; or, where a loop in another file calls this file's training step,
        the function that runs one step (patch mode opens a step at the top of its body).
    accumulation: the form of gradient accumulation found, one of ACCUMULATIONS.
    """

    node: Loop | Function
    site: StepSite
    step: str | None
    counter: str = field(default="")
    at_step: str | None = None
    scope: str = "<module>"
    accumulation: str = NO_ACCUMULATION
    optimizers: tuple[str, ...] = ()  # the optimizers the loop steps, as written
