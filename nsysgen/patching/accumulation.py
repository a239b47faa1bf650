"""Where a step ends, and how gradients accumulate: the block that runs once per optimizer
step (an `if` on the boundary, a `continue` before it, `accelerator.accumulate`, an engine).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from nsysgen.patching.script import Script
from nsysgen.patching.step_loop import (
    ACCUMULATE,
    BACKWARD,
    CONTINUE,
    ENGINE,
    IF_BLOCK,
    NO_ACCUMULATION,
    STEP,
    SYNC_GRADIENTS,
    Block,
    Loop,
    StepSite,
)
from nsysgen.patching.syntax import Function, direct_calls

# Words in an `if` test (or in what its names were assigned in the loop) that say the branch
# runs only at the boundary of a gradient accumulation: `is_accumulating`, `sync_gradients`,
# `is_gradient_accumulation_boundary()`, besides any `%`.
_GATE_WORDS = ("accum", "sync_gradients", "boundary")


@dataclass(frozen=True)
class FoundSite:
    site: StepSite
    form: str = NO_ACCUMULATION
    gate: str | None = None  # the `if` test that lets the optimizer step, as written


def _accumulate_context(statement: ast.With | ast.AsyncWith) -> str | None:
    """`with accelerator.accumulate(model):` -> "accelerator": the step ends on its syncs."""
    for item in statement.items:
        call = item.context_expr
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "accumulate"
        ):
            return ast.unparse(call.func.value)
    return None


def has_gate_words(node: ast.AST) -> bool:
    text = ast.unparse(node).lower()
    return any(word in text for word in _GATE_WORDS) or any(
        isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(node)
    )


class Locator:
    """Finds the block that runs once per optimizer step, and the accumulation form."""

    def __init__(self, script: Script, loop: Loop | Function) -> None:
        self.script, self.loop = script, loop
        # What names are assigned in the loop body (`is_accumulating = i % n != 0`), per name.
        self.assigned: dict[str, list[ast.expr]] = {}
        for node in ast.walk(loop):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self.assigned.setdefault(ast.unparse(target), []).append(node.value)

    def gates(self, test: ast.expr) -> bool:
        """The test lets only accumulation boundaries through (`(i + 1) % n == 0`,
        `not is_accumulating`, `engine.is_gradient_accumulation_boundary()`); a test on a
        setting (`if use_amp:`, `if not self._optimizer_in_bwd:`) does not."""
        if has_gate_words(test):
            return True
        names = {ast.unparse(n) for n in ast.walk(test) if isinstance(n, (ast.Name, ast.Attribute))}
        return any(has_gate_words(value) for name in names for value in self.assigned.get(name, []))

    def locate(self, block: Block, depth: int = 0, backward: bool = False) -> FoundSite:
        """The site in `block`; `backward`: the step's backward ran before the block."""
        script = self.script
        for index, statement in enumerate(block):
            reach = script.reaches(statement)
            if STEP not in reach:
                backward = backward or BACKWARD in reach
                rest = block[index + 1 :]
                skip = _skip_test(statement, depth) if backward else None
                if skip is not None and script.reaches_block(rest):
                    # loss.backward(); if (i + 1) % n != 0: continue; optimizer.step()
                    return FoundSite(StepSite(rest), CONTINUE, skip)
                continue
            return self._stepping(statement, depth, backward)
        return FoundSite(StepSite(None))

    def _stepping(self, statement: ast.stmt, depth: int, backward: bool) -> FoundSite:
        """The site of the first statement of a block that reaches the optimizer step."""
        if isinstance(statement, ast.If):
            return self._branch(statement, depth, backward)
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            context = _accumulate_context(statement)
            if context is not None:
                return FoundSite(StepSite(statement.body, f"{context}.sync_gradients"), ACCUMULATE)
            return self.locate(statement.body, depth, backward)
        if isinstance(statement, ast.Try):
            return self.locate(statement.body, depth, backward)
        if isinstance(statement, (ast.For, ast.While)):
            return FoundSite(StepSite(None))
        return self._call(statement, depth, backward)

    def _branch(self, statement: ast.If, depth: int, backward: bool) -> FoundSite:
        """`if (i + 1) % n == 0: optimizer.step()`: that branch is the step; an `if` on a
        setting (`if use_amp:`) is looked through."""
        script = self.script
        body = script.reaches_block(statement.body)
        orelse = script.reaches_block(statement.orelse)
        test = ast.unparse(statement.test)
        if self.gates(statement.test):
            engine = self._engine_steps(statement)
            if body and orelse:
                # Both branches step: no accumulation, unless an engine steps in both and the
                # test names the boundary (DeepSpeed examples do their bookkeeping there).
                if engine and "boundary" in test.lower():
                    return FoundSite(StepSite(statement.body), ENGINE, test)
                return FoundSite(StepSite(None), ENGINE if engine else NO_ACCUMULATION)
            branch = statement.body if body else statement.orelse
            if engine:
                return FoundSite(StepSite(branch), ENGINE, test)
            form = SYNC_GRADIENTS if "sync_gradients" in test else IF_BLOCK
            return FoundSite(StepSite(branch), form, test if body else f"not ({test})")
        for branch in (statement.body, statement.orelse):
            if script.reaches_block(branch):
                inner = self.locate(branch, depth, backward)
                if inner.site.block is not None or inner.form != NO_ACCUMULATION:
                    return inner
        return FoundSite(StepSite(None))

    def _call(self, statement: ast.stmt, depth: int, backward: bool) -> FoundSite:
        """A statement that steps: an engine's step, or a call into this file that may hold
        the step site."""
        script = self.script
        calls = list(direct_calls(statement))
        if any(script.is_engine_step(call) for call in calls):
            return FoundSite(StepSite(None), ENGINE)
        if depth < 4 and not any(script.is_optimizer_step(call) for call in calls):
            for call in calls:
                for callee in script.callees(call):
                    if STEP in script.reaches(callee):
                        inner = self.locate(callee.body, depth + 1, backward)
                        if inner.site.block is not None or inner.form != NO_ACCUMULATION:
                            return inner
        return FoundSite(StepSite(None))

    def _engine_steps(self, node: ast.AST) -> bool:
        return any(self.script.is_engine_step(call) for call in direct_calls(node))


def _skip_test(statement: ast.stmt, depth: int) -> str | None:
    """`if (i + 1) % n != 0: continue` (or `return`, in a function the loop calls): the test."""
    jump = ast.Return if depth else ast.Continue
    if (
        isinstance(statement, ast.If)
        and not statement.orelse
        and isinstance(statement.body[-1], jump)
        and has_gate_words(statement.test)
    ):
        return ast.unparse(statement.test)
    return None
