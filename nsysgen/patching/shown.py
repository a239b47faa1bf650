"""Whether nsysgen's step number is the one the script's own log shows.

A script's logs show which step they are about: a value labelled as a step (`step=`, a
TensorBoard global_step, `"Iteration {k}"`), a place among a total (`"[{i}/{n}]"`,
`"Iter[%3d/%3d]"`, `progress_bar(batch_idx, len(loader))`), or the index a logger counts when
the loop iterates it (`enumerate(metric_logger.log_every(loader, ...))`). Where the logs show
such places and nsysgen's number is none of them (an index within the epoch, a count of
micro-batches, environment frames, or a counter the log never shows), nsysgen's "step N" would
not be the step its log calls N: the compile asks for step_expr and names the numbers it found,
rather than number the steps in a way the log never shows.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, TypeGuard

from nsysgen.patching.counter import increment
from nsysgen.patching.hints import FindError
from nsysgen.patching.logged import (
    dict_steps,
    is_log_call,
    is_progress_call,
    position_arguments,
    step_arguments,
    text_of,
)
from nsysgen.patching.reading import global_index, targets
from nsysgen.patching.script import Script
from nsysgen.patching.step_loop import (
    COMPUTED,
    COUNTER,
    COUNTER_LOGGED,
    ENGINE_COUNTER_LOGGED,
    FUNCTIONS,
    LOGGED,
    Loop,
)
from nsysgen.patching.stream import Entry
from nsysgen.patching.syntax import Function, direct_calls, last_name

# The index a logger's iterator counts: the loop's index before the iteration reassigns it.
_COUNTED = "<the logger's count>"


@dataclass(frozen=True)
class Shown:
    line: int
    text: str  # the value as the log shows it, or _COUNTED
    why: str | None  # why it cannot number steps; None: it counts them


def _variables(node: ast.AST) -> set[str]:
    """What an expression reads, attribute chains whole: `self.epoch * n + self.iter` ->
    {"self.epoch", "n", "self.iter"} (not "self", which every method's value reads)."""
    found: set[str] = set()
    todo = [node]
    while todo:
        current = todo.pop()
        if isinstance(current, (ast.Attribute, ast.Subscript)) and isinstance(
            current.ctx, ast.Load
        ):
            found.add(ast.unparse(current))
            if isinstance(current, ast.Subscript):
                todo.append(current.slice)
            continue
        if isinstance(current, ast.Name):
            found.add(current.id)
        todo.extend(ast.iter_child_nodes(current))
    return found


def _assigned(node: ast.AST) -> set[str]:
    """What `node` and every statement inside it assign, as written."""
    return {text for inner in ast.walk(node) for text in targets(inner)}


def _templates(statements: list[ast.stmt]) -> dict[str, ast.expr]:
    """`log_str = f"| step {train_step} | ..."`: messages built before a log prints them."""
    return {
        statement.targets[0].id: statement.value
        for statement in statements
        if isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and isinstance(statement.value, (ast.JoinedStr, ast.BinOp, ast.Call, ast.Dict))
    }


def _places(
    call: ast.Call, templates: dict[str, ast.expr]
) -> tuple[list[ast.expr], list[ast.expr]]:
    """The values one call labels as a step, and those it shows as a place among a total,
    through the messages and metrics dicts built before it (`log_str = f"..."; print(log_str)`,
    `metrics["step"]`)."""
    if is_progress_call(call):
        return [], position_arguments(call)
    if not is_log_call(call):
        return [], []
    labelled, places = step_arguments(call), position_arguments(call)
    labelled += [v for a in call.args for node in ast.walk(a) for v in dict_steps(node)]
    used = {n.id for a in call.args for n in ast.walk(a) if isinstance(n, ast.Name)}
    for name in sorted(used & set(templates)):
        message = ast.Call(ast.Name("print", ast.Load()), [templates[name]], [])
        labelled += step_arguments(message)
        labelled += [v for node in ast.walk(templates[name]) for v in dict_steps(node)]
        places += position_arguments(message)
    return [_resolved(v, templates) for v in labelled], [_resolved(v, templates) for v in places]


def _index_of(loop: Loop | Function, stream: list[Entry]) -> set[str]:
    """The loop's index and the numbers the iteration works out from it by arithmetic
    (`update_idx = batch_idx // accum_steps`); not what a call returns from it (`correct +=
    predicted.eq(targets).sum()` is no place in the loop)."""
    found = targets(loop) if isinstance(loop, ast.For) else set()
    for entry in stream:
        statement = entry.statement
        if not isinstance(statement, (ast.Assign, ast.AugAssign)):
            continue
        calls = [c for c in ast.walk(statement.value) if isinstance(c, ast.Call)]
        if global_index(statement.value, found):
            continue  # `it = epoch * len(loader) + i` counts across epochs
        if all(last_name(c.func) == "len" for c in calls) and _variables(statement) & found:
            found |= _assigned(statement)
    return found


def _resolved(value: ast.expr, templates: dict[str, ast.expr]) -> ast.expr:
    """`metrics["step"]` of `metrics = {"step": state["step_count"], ...}`: the value held."""
    if not (isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name)):
        return value
    held, key = templates.get(value.value.id), value.slice
    if not isinstance(held, ast.Dict) or not isinstance(key, ast.Constant):
        return value
    for name, item in zip(held.keys, held.values, strict=True):
        if isinstance(name, ast.Constant) and name.value == key.value:
            return item
    return value


def _in_text(statements: list[ast.stmt]) -> set[str]:
    """Values written into any text of the iteration (`f"images/{batches_done}.png"`, a
    checkpoint's name): a number the script saves by."""
    found: set[str] = set()
    for statement in statements:
        for node in ast.walk(statement):
            if isinstance(node, ast.FormattedValue):
                found |= _variables(node.value)
            elif (
                isinstance(node, ast.BinOp)
                and isinstance(node.op, ast.Mod)
                and text_of(node.left) is not None
            ):
                found |= _variables(node.right)
    return found


class Places:
    """The step places an iteration's logs show, and the first one nsysgen's number is not."""

    def __init__(
        self,
        script: Script,
        loop: Loop | Function,
        stream: list[Entry],
        micro_index: bool,
        restarts: str | None,
    ) -> None:
        self.script, self.loop, self.stream = script, loop, stream
        self.changing = _assigned(loop) if not isinstance(loop, FUNCTIONS) else set()
        self.restarts = restarts  # why the loop's index starts again, as numbering says
        self.derived = _index_of(loop, stream)
        # The loop's own index, where the loop runs once per micro-batch.
        self.index = targets(loop) if isinstance(loop, ast.For) and micro_index else set()
        self.text = _in_text([entry.statement for entry in stream])
        self.logged = {  # what any log of the iteration shows, as written
            text
            for entry in stream
            for call in direct_calls(entry.statement)
            if is_log_call(call)
            for argument in [*call.args, *(k.value for k in call.keywords)]
            for text in _variables(argument)
        }
        self.micro = {  # counters that advance on iterations that do not step
            ast.unparse(target)
            for entry in stream
            if not entry.in_step
            and (target := increment(entry.statement)) is not None
        }  # fmt: skip

    def shown(self) -> list[Shown]:
        """Every step place shown; `why` is None for those that count steps."""
        found = self._counted()
        templates: dict[str, ast.expr] = {}
        for entry in self.stream:
            statement = entry.statement
            for call in direct_calls(statement):
                labelled, places = _places(call, templates)
                # Not `"[{epoch}/{epochs}]"`, nor `"({correct}/{total})"`.
                shown = [v for v in labelled if _variables(v) & self.changing]
                shown += [v for v in places if _variables(v) & self.derived]
                shown = [v for v in shown if not isinstance(v, (ast.Starred, ast.Dict))]
                for value in shown:
                    text = ast.unparse(value)  # one line, whatever the source's layout
                    found.append(Shown(call.lineno, text, self._why(value)))
            templates.update(_templates([statement]))
        return found + self._outer()

    def _counted(self) -> list[Shown]:
        """`for it, batch in enumerate(metric_logger.log_every(loader, 10, header))`: the
        logger prints the place of every batch among the loader's."""
        loop = self.loop
        if not isinstance(loop, ast.For) or not isinstance(loop.iter, ast.Call):
            return []
        if last_name(loop.iter.func) != "enumerate" or not loop.iter.args:
            return []
        inner = loop.iter.args[0]
        if not (isinstance(inner, ast.Call) and is_log_call(inner)):
            return []
        why = "counts the loader's batches from 0 on every pass over it"
        return [Shown(inner.lineno, _COUNTED, why)]

    def _why(self, value: ast.expr) -> str | None:
        """Why a shown value cannot number steps, or None where it counts them."""
        reads = _variables(value)
        micro = sorted(reads & self.micro)
        if micro:
            return f"counts micro-batches ({micro[0]} advances on batches that do not step)"
        if reads & self.index:
            return "counts micro-batches (the loop runs once per micro-batch)"
        if self.restarts is not None and reads & self.derived:
            # `epoch * len(loader) + i + 1` counts across epochs, whatever its index does.
            return None if global_index(value, self.derived) else self.restarts
        return None

    def _outer(self) -> list[Shown]:
        """Logs in a loop around the step loop, of a counter that loop advances itself
        (`global_step += args.num_envs` in the rollout, logged after the updates): one number
        for the several optimizer steps of that loop's iteration."""
        found: list[Shown] = []
        node = self.script.parent.get(self.loop)
        while node is not None and not isinstance(node, FUNCTIONS):
            if isinstance(node, (ast.For, ast.While)):
                advanced = {
                    ast.unparse(n.target)
                    for n in ast.walk(node)
                    if isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Add)
                }
                for call in direct_calls(node):
                    if not is_log_call(call) or self.script.encloses(self.loop, call):
                        continue
                    for value in step_arguments(call):
                        if _variables(value) & advanced:
                            why = f"numbers the iterations of the loop at line {node.lineno}"
                            found.append(Shown(call.lineno, ast.unparse(value), why))
            node = self.script.parent.get(node)
        return found

    def question(self, numbered: Numbered, offered: Iterable[str | None]) -> FindError | None:
        """The question to ask (None: none) where the logs show step places that cannot
        number steps and none of them is nsysgen's number; `offered`: more candidates."""
        if self._shows_number(numbered):
            return None
        places = self.shown()
        if any(self._is(place, numbered) for place in places):
            return None
        how = f"`{numbered.at_step}`" if numbered.at_step else "its own count of optimizer steps"
        # step_expr is read where numbered.step is (the loop's top, in patch mode).
        candidates = [f"`{numbered.step}`"] if numbered.step else []
        for suggested in offered:
            candidates += [suggested] if suggested and suggested not in candidates else []
        return ask(places, how, candidates)

    def _shows_number(self, numbered: Numbered) -> bool:
        """A log shows nsysgen's number whichever place it is: the number was taken from a
        log; its counter is in a log line, labelled or not (`global {step}`); or the script
        writes the number it computes into a text (`f"images/{batches_done}.png"`)."""
        counter, step, at_step = numbered.counter, numbered.step, numbered.at_step
        if counter == LOGGED:
            return True
        base = {text.removesuffix(" + 1") for text in (step, at_step) if text is not None}
        if counter.startswith(COUNTER) and base & self.logged:
            return True
        if counter == COMPUTED and at_step is not None:
            computed = ast.unparse(ast.parse(at_step, mode="eval").body)
            holders = {computed} | {
                ast.unparse(entry.statement.targets[0])
                for entry in self.stream
                if isinstance(entry.statement, ast.Assign)
                and len(entry.statement.targets) == 1
                and ast.unparse(entry.statement.value) == computed
            }  # `done = epoch * len(loader) + i` after the step: read as its expression
            return bool(holders & self.text)
        return False

    @staticmethod
    def _is(shown: Shown, numbered: Numbered) -> bool:
        """The place shown is nsysgen's number: the same expression, a counter logged after
        its increment (`global_step += 1; log(step=global_step)`, numbered `global_step +
        1`), or the quotient of one shown as a product (`global_step * accumulation_steps`)."""
        if shown.text == _COUNTED:
            return False
        texts = {text for text in (numbered.step, numbered.at_step) if text is not None}
        if numbered.counter.startswith((COUNTER_LOGGED, ENGINE_COUNTER_LOGGED)):
            texts |= {text.removesuffix(" + 1") for text in texts}
        normal = {ast.unparse(ast.parse(text, mode="eval").body) for text in texts}
        value = ast.parse(shown.text, mode="eval").body
        factors = [value.left, value.right] if _product(value) else []
        return any(ast.unparse(node) in normal for node in [value, *factors])


class Numbered(Protocol):
    """How numbering decided to number the steps (nsysgen/patching/numbering.py)."""

    @property
    def step(self) -> str | None: ...
    @property
    def at_step(self) -> str | None: ...
    @property
    def counter(self) -> str: ...


def _product(node: ast.expr) -> TypeGuard[ast.BinOp]:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)


def ask(places: list[Shown], numbered: str, candidates: list[str]) -> FindError | None:
    """The question to ask where the logs show step places that cannot number steps, and
    none is nsysgen's number (`places`: those that disagree with it)."""
    unusable = [place for place in places if place.why is not None]
    if not unusable:
        return None  # numbers that count steps too: numbering chose among them already
    first = unusable[0]
    what = "the index its logger counts" if first.text == _COUNTED else f"`{first.text}`"
    others = sorted({p.line for p in unusable[1:]} - {first.line})
    more = f" and {len(others) - 3} more" if len(others) > 3 else ""
    also = f", also line {', '.join(map(str, others[:3]))}{more}" if others else ""
    named = f" (candidates: {', '.join(candidates)})" if candidates else ""
    return FindError(
        f"the script's log shows each step as {what} (line {first.line}{also}), which "
        f"{first.why}; nsysgen would number steps by {numbered}, so its step N would not be "
        f"the step the log calls N; set step_expr to the number to count steps by{named}",
        "step_expr",
    )
