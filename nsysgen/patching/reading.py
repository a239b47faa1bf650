"""The number one iteration logs or computes (`step=...`, `epoch * len(loader) + i`), as the
loop's function holds it while the optimizer steps.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TypeGuard

from nsysgen.patching.counter import step_parameters
from nsysgen.patching.logged import is_log_call, step_arguments
from nsysgen.patching.loop import stepped_optimizers
from nsysgen.patching.script import Script
from nsysgen.patching.step_loop import Loop
from nsysgen.patching.stream import Entry
from nsysgen.patching.syntax import Function, direct_calls, names_in


@dataclass(frozen=True)
class _Candidate:
    at_step: str  # the expression, read in the loop's frame while the optimizer steps
    value: ast.expr  # what it holds (a variable's assigned value)
    top: bool  # the same expression reads the same number at the top of the iteration


def _texts(node: ast.AST) -> set[str]:
    """The variables an expression reads, attributes as written: {"epoch", "self.local_step"}."""
    return names_in(node) | {ast.unparse(n) for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def targets(node: ast.AST) -> set[str]:
    """What a statement assigns: `x = ...`, `x += 1`, `for x in ...`, as written."""
    found: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        found = node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
        found = [node.target]
    texts: set[str] = set()
    for target in found:
        elements = target.elts if isinstance(target, ast.Tuple) else [target]
        texts |= {ast.unparse(element) for element in elements}
    return texts


def _assigns(statement: ast.stmt, text: str) -> TypeGuard[ast.Assign]:
    """`text = ...`, the only target."""
    return isinstance(statement, ast.Assign) and targets(statement) == {text}


def _has_division(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Div, ast.FloorDiv))
        for n in ast.walk(node)
    )


def _has_product(node: ast.AST) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult) for n in ast.walk(node))


# Words that name where a run starts (`args.start_iter`, `resume_step`): an offset to an index.
_START_WORDS = ("start", "resume", "begin", "init", "offset")


def global_index(value: ast.expr, iterating: set[str]) -> bool:
    """`epoch * len(loader) + i`, `nbatches * k + j + 1`, `self.epoch * n + self.local_step`:
    an epoch offset (a product of values fixed during the epoch) plus the loop's index; or
    the step a run starts from plus the index (`i = idx + args.start_iter`)."""
    terms: list[ast.expr] = []
    todo = [value]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            todo += [node.left, node.right]
        else:
            terms.append(node)
    products = [t for t in terms if isinstance(t, ast.BinOp) and isinstance(t.op, ast.Mult)]
    indices = [t for t in terms if ast.unparse(t) in iterating]
    constants = [t for t in terms if isinstance(t, ast.Constant) and type(t.value) is int]
    starts = [
        t
        for t in terms
        if isinstance(t, (ast.Name, ast.Attribute))
        and ast.unparse(t) not in iterating
        and any(word in ast.unparse(t).lower() for word in _START_WORDS)
    ]
    if len(starts) == 1 and len(indices) == 1 and len(terms) == 2:
        return True
    return (
        len(products) == 1
        and len(indices) == 1
        and len(terms) == len(products) + len(indices) + len(constants)
        and not _texts(products[0]) & iterating
    )


class Reading:
    """The numbers one iteration logs or computes, besides counters, as the loop's function
    holds them while the optimizer steps."""

    def __init__(
        self,
        script: Script,
        loop: Loop | Function,
        stream: list[Entry],
        function: Function | None,
        stepping: int,
    ) -> None:
        self.script, self.loop, self.function, self.stepping = script, loop, function, stepping
        self.own = [(i, e.statement) for i, e in enumerate(stream) if e.function is function]
        self.in_loop = {t for node in ast.walk(loop) for t in targets(node)}
        self.loop_targets = targets(loop) if isinstance(loop, ast.For) else set()
        self.iterating = set(self.loop_targets)  # and what the iteration derives from them
        self.stepped = set(stepped_optimizers(script, loop))  # the optimizers it steps
        for index, statement in self.own:
            if index < stepping and _texts(statement) & self.iterating:
                self.iterating |= targets(statement)

    def logged(self) -> list[_Candidate]:
        """What the logs after the optimizer step label as the step's number."""
        found: list[_Candidate] = []
        for index, statement in self.own:
            if index <= self.stepping:
                continue
            for call in direct_calls(statement):
                for argument in step_arguments(call) if is_log_call(call) else []:
                    candidate = self._resolve(argument, index)
                    found += [candidate] if candidate is not None else []
        return found

    def computed(self) -> list[_Candidate]:
        """`name = <epoch offset> + <index>` in the iteration, before or after the step."""
        found: list[_Candidate] = []
        for index, statement in self.own:
            if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
                continue
            if not global_index(statement.value, self.iterating):
                continue
            if index < self.stepping:
                found.append(_Candidate(ast.unparse(statement.targets[0]), statement.value, False))
            elif self._unchanged(statement.value, index):
                found.append(self._expression(statement.value))
        return found

    def numbers(self, candidate: _Candidate, restarts: bool, gate: str | None = None) -> bool:
        """It changes every iteration, and, where the loop's index restarts every epoch, it
        counts across epochs (an epoch offset, or the caller's running count). A number the
        optimizer step's gate tests (`if ni - last_opt_step >= accumulate:`) counts the
        micro-batches the gate lets through several of a step, unless it divides them into
        steps (`step // accumulate`)."""
        value = candidate.value
        if isinstance(value, ast.Attribute) and ast.unparse(value.value) in self.stepped:
            # An optimizer wrapper's own count (`self.optim.training_step`): it advances as the
            # optimizer steps, across epochs and resumes.
            return True
        reads = _texts(value)
        if not reads & self.iterating:
            return False
        tested = _texts(ast.parse(gate, mode="eval").body) if gate else set()
        if candidate.at_step in tested and not _has_division(candidate.value):
            return False
        if not restarts:
            return True
        function = self.function
        running = set(step_parameters(function)) if function else set()
        return _has_product(candidate.value) or bool(reads & running)

    def reassigned(self, name: str) -> bool:
        """`it = len(loader) * epoch + it`: the iteration gives the loop variable a new value."""
        return any(name in targets(statement) for _, statement in self.own)

    def _resolve(self, argument: ast.expr, at: int) -> _Candidate | None:
        """A logged value as the loop's frame holds it while the optimizer steps: a variable
        assigned before the step as itself, one assigned after it as its expression."""
        text = ast.unparse(argument)
        carriers = [
            (index, statement)
            for index, statement in self.own
            if index < at and _assigns(statement, text)
        ]
        if carriers:
            index, carrier = carriers[-1]
            if index < self.stepping:
                return _Candidate(text, carrier.value, False)
            at, argument = index, carrier.value
        return self._expression(argument) if self._unchanged(argument, at) else None

    def _unchanged(self, expression: ast.expr, at: int) -> bool:
        """Nothing `expression` reads is assigned between the optimizer step and `at`."""
        reads = _texts(expression)
        return not any(
            targets(statement) & reads
            for index, statement in self.own
            if self.stepping < index < at
        )

    def _expression(self, expression: ast.expr) -> _Candidate:
        text = self.script.segment(expression)
        text = text if "\n" not in text else ast.unparse(expression)
        top = not (_texts(expression) & (self.in_loop - self.loop_targets))
        return _Candidate(text, expression, top)
