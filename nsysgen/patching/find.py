"""Finding the step loop of a training script, and how the script numbers its steps.

A step is one optimizer step. The step loop is the innermost loop whose body reaches the
optimizer step, directly or through calls to functions and methods of the same file (a method
of a base class reaches what its subclasses of the same file override it with); loops inside it
(micro-batches of a gradient accumulation) are part of the step, and loops that only reach
`.backward()` are not steps. Evaluation loops reach no optimizer step, so they never count. A
DeepSpeed engine's `engine.step()` is an optimizer step that accumulates inside the engine, and
`booster.execute_pipeline(...)` (ColossalAI) or `engine.train_batch()` run the backward.

The step starts at the top of an iteration of the step loop (patch mode opens it there) and ends
when the optimizer steps (the step helper sees that at run time). What this module finds is how
the script numbers its steps, so that nsysgen's "step N" is what the script logs as step N:

- `StepLoop.step` names the step at the top of an iteration: the loop variable of `for step in
  range(...)` (also `enumerate`, `tqdm(range(...))`, `zip(loader, range(a, b))`, `for self.step
  in ...`) when that loop runs once per run and every iteration steps, else a counter the loop
  increments by one once per optimizer step (`iter_num += 1`, `self.step += 1`,
  `state["step_count"] += 1`, `global_step += 1` in `if accelerator.sync_gradients:`).
- `StepLoop.at_step` is the same number read while the optimizer step runs, in the frame of the
  function `StepLoop.scope` (the step helper walks up the stack to it).

A counter incremented before the optimizer step is one more at the step than at the loop's top.
One incremented after it and logged only after that (`global_step += 1; print(global_step)`, the
Hugging Face style) numbers the step by its value after the increment: one more than it reads
while the optimizer steps. A counter logged with an offset (`logkv("step", self.step +
self.resume_step)`) numbers by that sum. Without a loop variable or counter that numbers
optimizer steps (an index that counts micro-batches or restarts every epoch does not; neither
does the index of a loop over a data loader in a function this file never calls, such as
`train_one_epoch`, nor that of `itertools.count()` in a function given the caller's running
`step`), both are None and steps are numbered by the optimizer's own count. A DeepSpeed engine's
`global_steps`, where the script reads it, is such a counter. A counter set to 0 every epoch
(`self.step = 0` before the loop of an epoch function) numbers no steps either.

Where neither the loop's index nor a counter numbers steps, or where the script logs another
number than its index, the step's number is what the script logs or computes: a value its logs
label as a step (`step=`, a TensorBoard global_step, `f"Iteration {k + 1}"`), or an epoch offset
plus the index (`batches_done = epoch * len(dataloader) + i`, `nbatches * k + j + 1`), read as
the variable where it is set before the optimizer step and as its expression where it is set
after (the GAN's number assigned after its three optimizer steps). Several such numbers: none.

No loop of the file trains: a function that runs a whole step and that the file never calls is
the unit (`def train_step(batch, ..., iteration)`, called by another file's loop), numbered by
its step parameter; a loop that calls a step function passed in as a parameter trains
(`train_epoch(_train_step, ...)`). A loop that a library runs (`Trainer(...).train()`,
Lightning's `Trainer(...).fit(...)`, nsysgen.patching.library) is reported as such
(LibraryLoopError), and an optimizer step captured into a CUDA graph is refused
(nsysgen.patching.graphs): its replays run no optimizer step the helper can see.
"""

from __future__ import annotations

import ast

from nsysgen.patching.accumulation import Locator
from nsysgen.patching.candidates import quotient, suggestion
from nsysgen.patching.graphs import captured_step, capturing_functions
from nsysgen.patching.hints import FindError
from nsysgen.patching.loop import find_step_loop, stepped_optimizers, without_loop
from nsysgen.patching.numbering import Numberer
from nsysgen.patching.script import Script
from nsysgen.patching.shown import Places
from nsysgen.patching.step_loop import (
    FUNCTIONS,
    IN_BACKWARD,
    MICRO_LOOP,
    NO_ACCUMULATION,
    STEP,
    Loop,
    StepLoop,
)
from nsysgen.patching.stream import micro_loop
from nsysgen.patching.syntax import Function

# The jobs, one module each: the parsed script and its calls (script.py, optimizer_calls.py),
# the step loop (loop.py), where a step ends and how gradients accumulate (accumulation.py),
# the iteration as it runs (stream.py), counters and where they are logged (counter.py), the
# numbers an iteration logs or computes (reading.py), how steps are numbered (numbering.py),
# what finding returns (step_loop.py) and what it says when it cannot decide (hints.py).


def find(tree: ast.Module, code: str, loop_line: int | None, step_expr: str | None) -> StepLoop:
    script = Script(tree, code)
    capturing = capturing_functions(tree)

    def calls_capture(block: list[ast.stmt]) -> bool:
        called = {f.name for statement in block for f in script.called_functions(statement)}
        return bool(called & capturing)

    refusal = captured_step(
        tree, lambda statement: STEP in script.reaches(statement), script.reaches_block,
        calls_capture,
    )  # fmt: skip
    if refusal is not None:
        raise FindError(refusal)
    loop: Loop | Function | None = find_step_loop(script, loop_line)
    if loop is None:
        loop = without_loop(script)
    found = Locator(script, loop).locate(loop.body)
    function = loop if isinstance(loop, FUNCTIONS) else script.function_of(loop)
    scope = function.name if function is not None else "<module>"
    numberer = Numberer(script, loop, found)
    form = found.form
    if form == NO_ACCUMULATION and micro_loop(script, numberer.stream):
        form = MICRO_LOOP
    if script.steps_in_backward():
        reached = script.reaches_block(loop.body)
        form = f"{IN_BACKWARD}, else {form}" if reached and form != NO_ACCUMULATION else IN_BACKWARD
    optimizers = stepped_optimizers(script, loop)
    if step_expr is not None:
        return StepLoop(
            loop, found.site, step_expr, "step_expr", step_expr, scope, form, optimizers
        )
    numbered = numberer.number()
    micro = numberer.counts_micro_batches()
    reading = Places(script, loop, numberer.stream, micro, numberer.restarts())
    offered = (
        suggestion(script, loop, micro),
        quotient(numberer.stream, reading.micro, found.gate),
    )
    question = reading.question(numbered, offered)
    if question is not None:
        raise question
    return StepLoop(
        loop, found.site, numbered.step, numbered.counter, numbered.at_step, scope, form, optimizers
    )
