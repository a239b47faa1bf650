"""Counters that number steps: increments by one per optimizer step, counters reset every
epoch, step parameters, and where the script logs a counter (before or after its increment).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from nsysgen.patching.hints import FindError
from nsysgen.patching.logged import is_log_call, offset, shows
from nsysgen.patching.script import Script
from nsysgen.patching.step_loop import Loop
from nsysgen.patching.stream import Entry
from nsysgen.patching.syntax import Function, direct_calls, last_name, parameters


def increment(statement: ast.stmt, gate: str | None = None) -> ast.expr | None:
    """`x += 1` or `x = x + 1` (or `x += int(<gate>)`): the x, else None."""
    target: ast.expr
    if isinstance(statement, ast.AugAssign) and isinstance(statement.op, ast.Add):
        value, target = statement.value, statement.target
    elif (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.value, ast.BinOp)
        and isinstance(statement.value.op, ast.Add)
        and ast.unparse(statement.value.left) == ast.unparse(statement.targets[0])
    ):
        value, target = statement.value.right, statement.targets[0]
    else:
        return None
    one = isinstance(value, ast.Constant) and type(value.value) is int and value.value == 1
    # `self.global_step += int(should_optim_step)`: one per optimizer step (Lightning Fabric).
    flag = (
        gate is not None
        and isinstance(value, ast.Call)
        and last_name(value.func) == "int"
        and len(value.args) == 1
        and ast.unparse(value.args[0]) == gate
    )
    if not (one or flag):
        return None
    return target if isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)) else None


def zeroes(node: ast.AST, text: str) -> bool:
    """`text = 0` (or any number), alone or in a tuple assignment."""
    if not isinstance(node, ast.Assign):
        return False
    for target in node.targets:
        pairs = [(target, node.value)]
        if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
            pairs = list(zip(target.elts, node.value.elts, strict=False))
        for one, value in pairs:
            if ast.unparse(one) == text and isinstance(value, ast.Constant):
                return isinstance(value.value, int)
    return False


_ITERATION_NAMES = frozenset(
    {"it", "i_iter", "iter_num", "iter_idx", "global_iter", "cur_iter", "curr_iter"}
)


def _says_step_number(name: str) -> bool:
    """`step`, `global_step`, `iteration`, `it`, `iter_num`: a parameter that holds the step's
    number; not `max_steps`, `num_iters`, `steps_per_epoch` (limits and sizes)."""
    lowered = name.lower().strip("_")
    if lowered in _ITERATION_NAMES:
        return True
    words = lowered.split("_")
    if words[0] in ("max", "num", "n", "total") or lowered.endswith("s") or "per" in words:
        return False
    if {"start", "resume", "init", "first", "last"} & set(words):
        return False  # where a run starts or ends, not the step in progress
    # `iter` alone names iterators too (`data_iter`, `train_iter`), and `step_fn` a function.
    while len(words) > 1 and words[-1] in ("idx", "num", "count", "no", "id", "index"):
        words.pop()
    return words[-1] in ("step", "iteration")


def step_parameters(function: Function) -> list[str]:
    """The parameters that hold a step's number: named so (`step`, `global_step`, `iteration`)
    and not called (`train_step(batch)` is a function)."""
    called = {call.func.id for call in direct_calls(function) if isinstance(call.func, ast.Name)}
    return [name for name in parameters(function) if _says_step_number(name) and name not in called]


def runs_per_epoch(function: Function) -> bool:
    """`def train_one_epoch(...)`, or a function given the caller's running step count: runs
    once per epoch, so what it starts from 0 starts again every epoch."""
    return "epoch" in function.name.lower() or bool(step_parameters(function))


def declares(function: Function | None, name: str) -> bool:
    """`global name` or `nonlocal name` in `function`: the name outlives its frame."""
    return function is not None and any(
        isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names
        for node in ast.walk(function)
    )


def _stop_tests(loop: Loop | Function) -> list[ast.expr]:
    """Conditions that end the loop: the while test, `if ...: break`."""
    tests: list[ast.expr] = [loop.test] if isinstance(loop, ast.While) else []
    for node in ast.walk(loop):
        if isinstance(node, ast.If) and any(
            isinstance(s, (ast.Break, ast.Return)) for s in node.body
        ):
            tests.append(node.test)
    return tests


def choose_counter(script: Script, loop: Loop | Function, found: list[ast.expr]) -> ast.expr | None:
    texts = {script.segment(target): target for target in found}
    names = sorted(texts)
    if len(names) <= 1:
        return texts[names[0]] if names else None
    stops = {ast.unparse(node) for test in _stop_tests(loop) for node in ast.walk(test)}

    def says_step(name: str) -> bool:
        return any(word in name.lower() for word in ("step", "iter"))

    def says_global(name: str) -> bool:
        return "global" in name.lower()

    def ends_loop(name: str) -> bool:
        return ast.unparse(texts[name]) in stops

    # `log_steps = 0` after each log: a count since the last log, not of steps.
    reset = {
        ast.unparse(target)
        for node in ast.walk(loop)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
    }

    def kept_going(name: str) -> bool:
        return ast.unparse(texts[name]) not in reset

    # Prefer a counter the loop never sets back, then a name that says step or iteration, then
    # global, then the counter that ends the loop.
    for keep in (kept_going, says_step, says_global, ends_loop):
        kept = [name for name in names if keep(name)]
        names = kept or names
        if len(names) == 1:
            return texts[names[0]]
    raise FindError(
        f"the step loop at line {loop.lineno} counts with several variables "
        f"({', '.join(names)}); set step_expr to the one that numbers steps",
        "step_expr",
    )


@dataclass(frozen=True)
class _Logged:
    before: bool  # some log shows the counter after the optimizer step, before its increment
    after: bool  # some log shows it after its increment
    offset: str | None  # `logkv("step", self.step + self.resume_step)`: the offset added


def where_logged(
    stream: list[Entry], text: str, stepping: int, increment: int, function: Function | None
) -> _Logged:
    """Where the iteration logs the counter `text` after the optimizer step (the entry
    `stepping`): before or after its increment (the entry `increment`). Logs before the
    optimizer step (an evaluation at the top of the loop) report the step about to run."""
    counter = ast.parse(text, mode="eval").body
    text = ast.unparse(counter)  # as ast.unparse writes the uses
    texts = {text}
    carriers: dict[str, int] = {}  # names that hold the counter as it was at their assignment
    before = after = False
    found_offset: str | None = None
    for index, entry in enumerate(stream):
        statement = entry.statement
        if (
            isinstance(counter, ast.Name)
            and entry.function is not function
            and not declares(entry.function, counter.id)
        ):
            continue  # `iteration` in a function the loop calls is that function's own
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and not isinstance(statement.targets[0], ast.Tuple)
            and shows(statement.value, texts, set(carriers))
            and ast.unparse(statement.targets[0]) != text
        ):
            carriers[ast.unparse(statement.targets[0])] = index
        for call in direct_calls(statement):
            if not is_log_call(call):
                continue
            arguments = [*call.args, *(keyword.value for keyword in call.keywords)]
            for argument in arguments:
                if not shows(argument, texts, set(carriers)):
                    continue
                at = min(
                    [index]
                    + [
                        where
                        for name, where in carriers.items()
                        if name in {ast.unparse(n) for n in ast.walk(argument)}
                    ]
                )
                before = before or stepping <= at < increment
                after = after or at > increment
            added = offset(call, text)
            if added is not None and added.isdigit() and not stepping <= index < increment:
                added = None  # a constant counts only where the counter is not incremented yet
            found_offset = found_offset or added
    return _Logged(before, after, found_offset)
