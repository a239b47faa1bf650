"""How the script numbers its steps: the loop variable, a counter, an engine's global_steps,
the number it logs or computes, else the optimizer's own count.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from nsysgen.patching.accumulation import FoundSite
from nsysgen.patching.counter import (
    choose_counter,
    declares,
    increment,
    runs_per_epoch,
    step_parameters,
    where_logged,
    zeroes,
)
from nsysgen.patching.reading import Reading
from nsysgen.patching.script import Script
from nsysgen.patching.step_loop import (
    ACCUMULATE,
    BACKWARD,
    COMPUTED,
    CONTINUE,
    COUNTER,
    COUNTER_BEFORE,
    COUNTER_LOGGED,
    ENGINE,
    ENGINE_BATCH,
    ENGINE_COUNTER,
    ENGINE_COUNTER_LOGGED,
    FUNCTIONS,
    LOGGED,
    LOOP_VARIABLE,
    OPTIMIZER_COUNT,
    PARAMETER,
    STEP,
    Loop,
)
from nsysgen.patching.stream import Entry, iteration_stream
from nsysgen.patching.syntax import Function, last_name

# Iterators whose loop variable counts iterations: `for step in range(...)`, `enumerate(...)`.
_COUNTING = frozenset({"range", "trange", "enumerate", "count"})


# Of those, the ones that count step numbers rather than batches of a data loader.
_NUMBERING = frozenset({"range", "trange", "count"})


_WRAPPERS = frozenset({"tqdm", "track", "progress", "progress_bar"})


def _loop_variable(loop: ast.For) -> tuple[str, str] | None:
    """The loop variable that counts iterations and the iterator's name: `for step in
    range(...)`, `for i, batch in enumerate(...)`, `tqdm(range(...))`, `for self.iter in
    range(...)`, `for data, it in zip(loader, range(a, b))`."""
    iterator, target = _unwrapped(loop.iter), loop.target
    if isinstance(iterator, ast.Call) and last_name(iterator.func) == "zip":
        if not isinstance(target, ast.Tuple) or len(target.elts) != len(iterator.args):
            return None
        for argument, element in zip(iterator.args, target.elts, strict=True):
            inner = _unwrapped(argument)
            if isinstance(inner, ast.Call) and last_name(inner.func) in _NUMBERING:
                return _named(element, last_name(inner.func))
        return None
    if not isinstance(iterator, ast.Call) or last_name(iterator.func) not in _COUNTING:
        return None
    kind = last_name(iterator.func)
    if kind == "enumerate":
        if not isinstance(target, ast.Tuple) or not target.elts:
            return None
        target = target.elts[0]
    return _named(target, kind)


def _unwrapped(iterator: ast.expr) -> ast.expr:
    while (
        isinstance(iterator, ast.Call) and last_name(iterator.func) in _WRAPPERS and iterator.args
    ):
        iterator = iterator.args[0]
    return iterator


def _named(target: ast.expr, kind: str) -> tuple[str, str] | None:
    if isinstance(target, ast.Name):
        return target.id, kind
    if isinstance(target, ast.Attribute):
        return ast.unparse(target), kind
    return None


@dataclass(frozen=True)
class _Numbering:
    step: str | None
    at_step: str | None
    counter: str


class Numberer:
    def __init__(self, script: Script, loop: Loop | Function, found: FoundSite) -> None:
        self.script, self.loop, self.found = script, loop, found
        # A step function (no loop in this file) numbers steps in its own frame.
        self.function = loop if isinstance(loop, FUNCTIONS) else script.function_of(loop)
        self.stream = iteration_stream(script, loop.body, found.site, found.site.block is None)
        self.reset: list[str] = []  # counters left out: they start again every epoch

    def number(self) -> _Numbering:
        if isinstance(self.loop, FUNCTIONS):
            return self._number_function(self.loop)
        variable = _loop_variable(self.loop) if isinstance(self.loop, ast.For) else None
        restarts = self._restarts(variable)
        if variable is not None and not restarts:
            logged = self._logged_number(restarts=False) or self._batch_engine()
            # A counter the script logs wins over the loop's index beside it (`for batch in
            # range(n): ... global_step += 1; print(f"step {global_step}")`): its log is the
            # number people read.
            counted = None if logged else self._counter(logged_only=True)
            return logged or counted or _Numbering(variable[0], variable[0], LOOP_VARIABLE)
        found = self.found
        counted = self._counter() if found.form != ENGINE or found.site.block else None
        counted = counted or self._engine_counter() or self._logged_number(bool(restarts))
        counted = counted or self._batch_engine()
        if counted is not None:
            return counted
        if variable is None and not self.reset:
            return _Numbering(None, None, OPTIMIZER_COUNT)
        why = restarts if variable is not None else []
        why += [f"{name} restarts every epoch" for name in self.reset]
        return _Numbering(None, None, f"{OPTIMIZER_COUNT} ({'; '.join(why)})")

    def _restarts(self, variable: tuple[str, str] | None) -> list[str]:
        """Why the loop's index numbers no steps: it counts micro-batches, or starts again
        every epoch (an epoch loop around it, or a function run once per epoch)."""
        script, loop, function = self.script, self.loop, self.function
        why = ["the loop counts micro-batches"] if self.counts_micro_batches() else []
        if script.runs_repeatedly(loop):
            return [*why, "the loop's index restarts every epoch"]
        if variable is None or function is None or script.called_in_file(function):
            return why
        if variable[1] not in _NUMBERING:
            name = function.name
            why.append(f"the loop's index restarts whenever {name}, called from another file, runs")
        elif runs_per_epoch(function):
            # `def train_one_epoch(model, loader, step): for i in itertools.count():` counts
            # from 0 on every call; the caller's running count is the step's number.
            why.append(f"the loop's index restarts whenever {function.name} runs")
        return why

    def restarts(self) -> str | None:
        """Why the loop's index starts again from 0 during a run (every epoch, every call from
        another file), or None."""
        if isinstance(self.loop, FUNCTIONS):
            return None
        variable = _loop_variable(self.loop) if isinstance(self.loop, ast.For) else None
        why = [w for w in self._restarts(variable) if "micro-batches" not in w]
        return why[0].removeprefix("the loop's index ") if why else None

    def counts_micro_batches(self) -> bool:
        """The loop runs once per micro-batch: the optimizer steps on some iterations only."""
        found = self.found
        return found.site.block is not None or found.form in (ENGINE, CONTINUE, ACCUMULATE)

    def _number_function(self, function: Function) -> _Numbering:
        """A step function with no loop in this file (`def train_step(model, batch, step)`,
        called by a loop in another file): the step number it is given, else a counter it
        increments (an attribute or a global: its locals start anew every call)."""
        named = step_parameters(function)
        if len(named) == 1:
            return _Numbering(named[0], named[0], PARAMETER)
        counted = self._counter()
        if counted is not None:
            return counted
        why = f"{function.name} is called from another file"
        return _Numbering(None, None, f"{OPTIMIZER_COUNT} ({why})")

    def _stepping(self) -> int:
        """The entry where the optimizer steps (in backward, for optimizer-in-backward)."""
        for what in (STEP, BACKWARD):
            reaching = [
                i
                for i, entry in enumerate(self.stream)
                if what in self.script.reaches(entry.statement)
            ]
            plain = [i for i in reaching if not self.stream[i].expanded]
            if reaching:
                return (plain or reaching)[0]
        return len(self.stream)

    def _counter(self, logged_only: bool = False) -> _Numbering | None:
        """A counter the loop increments once a step (`logged_only`: only one it also logs)."""
        script, stream = self.script, self.stream
        increments: list[tuple[int, ast.expr]] = []
        for index, entry in enumerate(stream):
            target = increment(entry.statement, self.found.gate)
            # Once per step: in the step site, or `+= int(<the gate>)` anywhere in the loop.
            if target is None or not (entry.in_step or increment(entry.statement) is None):
                continue
            if isinstance(target, ast.Name) and not self._lasts(entry, target.id):
                continue  # a local of another function: not there to read in the loop's frame
            increments.append((index, target))
        kept = [target for _, target in increments if not self._restarts_every_epoch(target)]
        every = {script.segment(target) for _, target in increments}
        self.reset = sorted(every - {script.segment(target) for target in kept})
        counter = choose_counter(script, self.loop, kept)
        if counter is None:
            return None
        text = script.segment(counter)
        at = min(i for i, target in increments if script.segment(target) == text)
        stepping = self._stepping()
        logged = where_logged(stream, text, stepping, at, self.function)
        if logged_only and not (logged.before or logged.after):
            return None
        base = f"{text} + {logged.offset}" if logged.offset else text
        added = f" (logged as {base})" if logged.offset else ""
        if at < stepping:
            # Incremented before the optimizer step: at the loop's top, one less than at the step.
            return _Numbering(f"{base} + 1", base, COUNTER_BEFORE + added)
        if logged.after and not logged.before:
            return _Numbering(f"{base} + 1", f"{base} + 1", COUNTER_LOGGED + added)
        return _Numbering(base, base, COUNTER + added)

    def _logged_number(self, restarts: bool) -> _Numbering | None:
        """The step's number as the script logs it (`step=...`, `f"Iteration {k + 1}"`, a
        TensorBoard global_step) or, logged or not, computes it from the loop's index and the
        epoch (`batches_done = epoch * len(dataloader) + i`), read while the optimizer steps.
        Several different numbers: None, as none of them is the step's number for certain."""
        reading = Reading(self.script, self.loop, self.stream, self.function, self._stepping())
        variable = _loop_variable(self.loop) if isinstance(self.loop, ast.For) else None
        index = variable[0] if variable is not None else None
        for candidates, how in ((reading.logged(), LOGGED), (reading.computed(), COMPUTED)):
            kept = [c for c in candidates if reading.numbers(c, restarts, self.found.gate)]
            texts = {c.at_step for c in kept}
            bare = index is not None and index in texts and not reading.reassigned(index)
            if bare or len(texts) > 1:
                return None  # the loop's index as it is, or no single number
            if kept:
                chosen = kept[0]
                return _Numbering(chosen.at_step if chosen.top else None, chosen.at_step, how)
        return None

    def _lasts(self, entry: Entry, name: str) -> bool:
        """A counter variable `name` incremented at `entry` keeps its value from one step to the
        next where the helper reads it: a local of the loop's function, or a global; not a
        local of a step function, which starts anew every call."""
        if declares(entry.function, name):
            return True
        return entry.function is self.function and not isinstance(self.loop, FUNCTIONS)

    def _restarts_every_epoch(self, target: ast.expr) -> bool:
        """`self.step = 0` where every epoch runs it (in an epoch loop around the step loop, or
        before the loop in a function run once per epoch): a per-epoch count, not the step's
        number, however the script names it."""
        script, loop, text = self.script, self.loop, ast.unparse(target)
        for node in ast.walk(script.tree):
            if not zeroes(node, text) or script.encloses(loop, node) or loop is node:
                continue
            outer = [other for other in script.loops if other is not loop]
            if any(script.encloses(o, node) and script.encloses(o, loop) for o in outer):
                return True
            function = script.function_of(node)
            if function is self.function and function is not None and runs_per_epoch(function):
                return not script.called_in_file(function)  # else an epoch loop shows it
        return False

    def _batch_engine(self) -> _Numbering | None:
        """`engine.train_batch()`: DeepSpeed's pipeline engine runs the whole step and logs it
        by its global_steps, incremented after the optimizer step (runtime/pipe/engine.py):
        the step under way is global_steps + 1, the number its log gives it."""
        for node in ast.walk(self.loop):
            func = node.func if isinstance(node, ast.Call) else None
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "train_batch"
                and self.script.is_engine(func.value)
            ):
                text = f"{ast.unparse(func.value)}.global_steps + 1"
                return _Numbering(text, text, ENGINE_BATCH)
        return None

    def _engine_counter(self) -> _Numbering | None:
        """`model_engine.global_steps`, DeepSpeed's count of optimizer steps, incremented after
        each one (deepspeed/runtime/engine.py, _take_model_step), when the script reads it."""
        script = self.script
        for node in ast.walk(script.tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "global_steps"
                and script.is_engine(node.value)
            ):
                text = ast.unparse(node)
                stepping = self._stepping()
                logged = where_logged(self.stream, text, stepping, stepping, self.function)
                if logged.after and not logged.before:
                    return _Numbering(f"{text} + 1", f"{text} + 1", ENGINE_COUNTER_LOGGED)
                return _Numbering(text, text, ENGINE_COUNTER)
        return None
