"""The step loop: the innermost loop that trains (or the loop around it that trains on its own
every iteration too), or the step function another file's loop calls, and the optimizers it
steps.
"""

from __future__ import annotations

import ast

from nsysgen.patching.hints import LOOP_HINT, NO_LOOP, FindError, LibraryLoopError
from nsysgen.patching.library import library_loop
from nsysgen.patching.optimizer_calls import names_optimizer
from nsysgen.patching.script import Script
from nsysgen.patching.step_loop import BACKWARD, STEP, Loop
from nsysgen.patching.syntax import Function, direct_calls, last_name


def _where(script: Script, loop: Loop) -> str:
    function = script.function_of(loop)
    return f"line {loop.lineno}" + (f" (in {function.name})" if function else "")


def _replays(script: Script, loop: Loop) -> bool:
    return any(script.replays_backward(call) for call in direct_calls(loop))


def find_step_loop(script: Script, loop_line: int | None) -> Loop | None:
    """The step loop: the one at `loop_line`, else the innermost loop that trains; None when
    no loop of this file trains."""
    loops = script.loops
    if loop_line is not None:
        chosen = [loop for loop in loops if loop.lineno == loop_line]
        if not chosen:
            lines = ", ".join(str(loop.lineno) for loop in loops) or "none"
            raise FindError(
                f"no for/while loop starts at line {loop_line} (loops start at lines: {lines})",
                "loop_line",
            )
        return chosen[0]
    reach = {loop: script.reaches_block(loop.body, STEP) for loop in loops}
    back = {loop: script.reaches_block(loop.body, BACKWARD) for loop in loops}
    # Loops that reach both are training steps; `for opt in optimizers: opt.step()` is not. A
    # script that shows only one of the two (its optimizer lives in another file, say) falls
    # back to loops that reach that one.
    candidates = [loop for loop in loops if reach[loop] and back[loop]]
    candidates = candidates or [loop for loop in loops if reach[loop]]
    candidates = candidates or [loop for loop in loops if back[loop]]
    # A CUDA graph's replays are the training; the eager iterations before its capture only
    # warm it up (PyTorch's CUDA graphs notes).
    replaying = [loop for loop in candidates if _replays(script, loop)]
    candidates = replaying or candidates
    innermost = [
        loop for loop in candidates if not any(script.encloses(loop, other) for other in candidates)
    ]
    if not innermost:
        return None
    if len(innermost) > 1:
        where = ", ".join(_where(script, loop) for loop in innermost)
        # The step may be an iteration of a loop around them (a step function that runs
        # micro-batches in a loop of its own, a PPO update's epochs): name those too.
        outer = [loop for loop in candidates if loop not in innermost]
        around = f"; loops around them: {', '.join(_where(script, loop) for loop in outer)}"
        raise FindError(
            f"found several step loops: {where}{around if outer else ''}; {LOOP_HINT}",
            "loop_line",
        )
    return _owner(script, innermost[0], candidates)


def _owner(script: Script, inner: Loop, candidates: list[Loop]) -> Loop:
    """The outermost loop that owns a training step: a loop around `inner` that also runs a
    backward and an optimizer step of its own, outside `inner`, takes a step every iteration,
    and `inner` is part of it (an RL loop's delayed policy updates in `for _ in
    range(policy_frequency)`). An epoch loop around the step loop runs none of its own."""
    chosen = inner
    for outer in sorted(candidates, key=lambda loop: loop.lineno, reverse=True):
        if outer is chosen or not script.encloses(outer, chosen):
            continue
        own = _outside(script, outer.body, chosen)
        if script.reaches_block(own, STEP) and script.reaches_block(own, BACKWARD):
            chosen = outer
    return chosen


def _outside(script: Script, block: list[ast.stmt], inner: Loop) -> list[ast.stmt]:
    """The statements of `block` that are not `inner` and hold no part of it, looking into the
    blocks that hold it (an RL loop's `if global_step > learning_starts:` holds its critic's
    step beside the delayed policy loop)."""
    found: list[ast.stmt] = []
    for statement in block:
        if statement is inner:
            continue
        if not script.encloses(statement, inner):
            found.append(statement)
            continue
        for field in ("body", "orelse", "finalbody"):
            inside = getattr(statement, field, None)
            if isinstance(inside, list):
                found += _outside(script, [s for s in inside if isinstance(s, ast.stmt)], inner)
        for handler in getattr(statement, "handlers", []) or []:
            found += _outside(script, handler.body, inner)
    return found


def without_loop(script: Script) -> Function:
    """No loop of this file trains: a library's loop (refused here, with what runs it), or a
    step function that a loop in another file calls, else the question for loop_line."""
    library = library_loop(script.tree, script.code)
    if library is not None:
        raise LibraryLoopError(library)
    function = step_function(script)
    if function is None:
        raise FindError(f"{NO_LOOP}; {LOOP_HINT}{_candidates(script)}", "loop_line")
    return function


CANDIDATES = 4  # loops named where none trains visibly


def _candidates(script: Script) -> str:
    """Where no loop visibly trains (its step runs in another file: a loss scaler's wrapper, a
    trainer's method), the loops that may: those that call out of this file, the outermost
    first, so that the question names answers (never a dead end)."""
    loops = [
        node
        for node in ast.walk(script.tree)
        if isinstance(node, ast.For | ast.While) and any(True for _ in direct_calls(node))
    ]
    if not loops:
        return " (this file has no loop: the training loop is in another file; set "\
            "workload.<kind>.source to that file)"  # fmt: skip
    # A loop that calls a method its class inherits from another file's base class (trl's
    # `PPOTrainer.step`, in a `class CustomPPOTrainer(PPOTrainer)`) runs the step there: first.
    inherited = {id(loop): _inherited_call(script, loop) for loop in loops}
    loops.sort(key=lambda loop: (inherited[id(loop)] is None, loop.lineno))
    named = ", ".join(
        _where(script, loop) + (f" calls {inherited[id(loop)]}" if inherited[id(loop)] else "")
        for loop in loops[:CANDIDATES]
    )
    more = f" and {len(loops) - CANDIDATES} more" if len(loops) > CANDIDATES else ""
    several = (
        "; where one iteration runs several optimizer steps (a PPO update's epochs and "
        "mini-batches), also set capture.optimizer_steps to how many"
        if any(inherited.values())
        else ""
    )
    return f" (loops of this file: {named}{more}){several}"


def _inherited_call(script: Script, loop: ast.AST) -> str | None:
    """`self.step(...)` in a method of `class Custom(PPOTrainer)` where this file defines no
    `step` for it: "self.step(), which PPOTrainer of another file defines"."""
    function = script.function_of(loop)
    owner = script.parent.get(function) if function is not None else None
    if not isinstance(owner, ast.ClassDef):
        return None
    bases = [ast.unparse(base) for base in owner.bases if ast.unparse(base) not in script.classes]
    own = {
        node.name
        for node in owner.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    for call in sorted(direct_calls(loop), key=lambda call: (call.lineno, call.col_offset)):
        func = call.func
        if (
            bases
            and isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
            and func.attr not in own
            and any(word in func.attr.lower() for word in _STEP_WORDS)
        ):
            return f"self.{func.attr}(), which {' or '.join(bases)} of another file defines"
    return None


# What a method that runs a training step is called (`step`, `train_step`, `update_policy`).
_STEP_WORDS = ("step", "train", "update", "optim")


def step_function(script: Script) -> Function | None:
    """The one function of this file that runs a whole training step (backward and optimizer
    step) and that this file never calls: another file's loop calls it once per step."""
    every = [*script.functions.values(), *script.methods.values()]
    found = [
        function
        for functions in every
        for function in functions
        if {STEP, BACKWARD} <= script.reaches(function) and not script.called_in_file(function)
    ]
    return found[0] if len(found) == 1 else None


def stepped_optimizers(script: Script, loop: Loop | Function) -> tuple[str, ...]:
    """The optimizers the loop's body steps, as written (`optimizerD`, `opt_g`), in order: more
    than one means several optimizer steps per iteration (a GAN, Muon plus AdamW)."""
    found: list[tuple[int, str]] = []
    for node in [loop, *script.called_functions(loop)]:
        for call in direct_calls(node):
            if script.is_optimizer_step(call) and isinstance(call.func, ast.Attribute):
                receiver = call.func.value
                if call.args and not names_optimizer(last_name(receiver)):
                    receiver = call.args[0]  # scaler.step(optimizer)
                found.append((call.lineno, ast.unparse(receiver)))
    seen: list[str] = []
    for _, name in sorted(found):
        if name not in seen:
            seen.append(name)
    return tuple(seen)
