"""The iteration as it runs: the statements of one pass over the loop's body, in order, through
calls of the same file, each marked whether it runs once per optimizer step.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from nsysgen.patching.accumulation import has_gate_words
from nsysgen.patching.script import Script
from nsysgen.patching.step_loop import BACKWARD, STEP, Block, StepSite
from nsysgen.patching.syntax import Function

_JUMPS = (ast.Continue, ast.Break, ast.Return, ast.Raise)


@dataclass(frozen=True)
class Entry:
    statement: ast.stmt
    in_step: bool  # runs once per optimizer step (in the step site, or synced with it)
    expanded: bool  # a call whose callee's statements follow it in the stream
    function: Function | None  # the function the statement is written in


def iteration_stream(
    script: Script, block: Block, site: StepSite, in_step: bool, depth: int = 0
) -> list[Entry]:
    """The statements of one pass over `block` in the order they run, looking into `with`,
    `try`, both branches of an `if` and calls to functions of this file (where `self.step += 1`
    may live), but not into inner loops. A statement is `in_step` when it runs once per
    optimizer step: inside the step site, or inside `if accelerator.sync_gradients:`."""
    site_ids = {id(statement) for statement in site.block or []}
    out: list[Entry] = []
    for statement in block:
        now = in_step or id(statement) in site_ids
        if isinstance(statement, (ast.With, ast.AsyncWith, ast.Try)):
            inner = statement.body + (statement.finalbody if isinstance(statement, ast.Try) else [])
            out += iteration_stream(script, inner, site, now, depth)
            continue
        if isinstance(statement, ast.If):
            test = ast.unparse(statement.test)
            if "sync_gradients" in test:
                out += iteration_stream(script, statement.body, site, True, depth)
                out += iteration_stream(script, statement.orelse, site, False, depth)
                continue
            # A branch taken at some iterations only (`if step % 100 == 0:`) does not run once
            # per step, unless it is the step site; a branch on a setting runs with the rest.
            gated = has_gate_words(statement.test)
            off = script.switched_off(statement.test)
            for branch in (statement.body, statement.orelse):
                if off and branch is statement.body:
                    continue  # `if Tensorboard:` with `Tensorboard = False`: never runs
                if branch and isinstance(branch[-1], _JUMPS) and branch is not site.block:
                    continue  # `if torch.isnan(loss): step += 1; continue`: skips the step
                keep = now and not gated or branch is site.block
                out += iteration_stream(script, branch, site, keep, depth)
            continue
        callee = _callee(script, statement) if depth < 3 else None
        out.append(Entry(statement, now, callee is not None, script.function_of(statement)))
        if callee is not None:
            out += iteration_stream(script, callee.body, site, now, depth + 1)
    return out


def _callee(script: Script, statement: ast.stmt) -> Function | None:
    if isinstance(statement, (ast.Expr, ast.Assign, ast.AnnAssign)) and isinstance(
        statement.value, ast.Call
    ):
        callees = script.callees(statement.value)
        # A base class's `run_step` that raises NotImplementedError, or the override that steps.
        stepping = [callee for callee in callees if STEP in script.reaches(callee)]
        return (stepping or callees)[0] if callees else None
    return None


def micro_loop(script: Script, stream: list[Entry]) -> bool:
    """A loop inside the step that runs backward but no optimizer step: micro-batches."""
    return any(
        isinstance(entry.statement, (ast.For, ast.While))
        and BACKWARD in script.reaches(entry.statement)
        and STEP not in script.reaches(entry.statement)
        for entry in stream
        if entry.in_step
    )
