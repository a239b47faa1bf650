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
`train_one_epoch`), both are None and steps are numbered by the optimizer's own count. A
DeepSpeed engine's `global_steps`, where the script reads it, is such a counter.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

Loop = ast.For | ast.While
Function = ast.FunctionDef | ast.AsyncFunctionDef
Block = list[ast.stmt]
# Method names that torch and the standard library use on their own objects: `model.train()`
# is not a call to a Trainer.train defined in the same file.
_FOREIGN_METHODS = frozenset(
    {"train", "eval", "step", "zero_grad", "backward", "forward", "to", "cuda", "cpu", "update",
     "item", "append", "extend", "state_dict", "load_state_dict", "get", "items", "keys"}
)  # fmt: skip
# Iterators whose loop variable counts iterations: `for step in range(...)`, `enumerate(...)`.
_COUNTING = frozenset({"range", "trange", "enumerate", "count"})
# Of those, the ones that count step numbers rather than batches of a data loader.
_NUMBERING = frozenset({"range", "trange", "count"})
_WRAPPERS = frozenset({"tqdm", "track", "progress", "progress_bar"})
# Calls that set up an optimizer that steps inside backward, from gradient hooks (torchtune's
# optimizer_in_bwd, torch.distributed.optim._apply_optimizer_in_backward).
_IN_BACKWARD_SETUPS = frozenset(
    {"register_optim_in_bwd_hooks", "OptimizerInBackward", "_apply_optimizer_in_backward",
     "apply_optimizer_in_backward"}
)  # fmt: skip
_GRAD_HOOKS = frozenset({"register_post_accumulate_grad_hook", "register_hook"})
# Words in an `if` test (or in what its names were assigned in the loop) that say the branch
# runs only at the boundary of a gradient accumulation: `is_accumulating`, `sync_gradients`,
# `is_gradient_accumulation_boundary()`, besides any `%`.
_GATE_WORDS = ("accum", "sync_gradients", "boundary")
_LOG_TOKENS = frozenset(
    {"log", "logs", "logger", "logging", "print", "report", "info", "debug", "warning", "metrics",
     "scalar", "scalars", "postfix", "description", "logkv", "logkvs"}
)  # fmt: skip
_NOT_LOGS = ("logit", "logical", "logsumexp", "log_softmax", "logaddexp", "log1p", "log2")
_JUMPS = (ast.Continue, ast.Break, ast.Return, ast.Raise)
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
OPTIMIZER_COUNT = "the optimizer's count of steps"


class FindError(Exception):
    """No step loop or no counter could be told apart; `setting` is the fix to name."""

    def __init__(self, message: str, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting


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
    accumulation: the form of gradient accumulation found, one of ACCUMULATIONS.
    """

    node: Loop
    site: StepSite
    step: str | None
    counter: str = field(default="")
    at_step: str | None = None
    scope: str = "<module>"
    accumulation: str = NO_ACCUMULATION
    optimizers: tuple[str, ...] = ()  # the optimizers the loop steps, as written


def _direct_calls(node: ast.AST) -> Iterator[ast.Call]:
    """Calls inside `node`, not looking into nested functions, classes or lambdas."""
    todo = list(ast.iter_child_nodes(node))
    if isinstance(node, ast.Call):
        yield node
    while todo:
        child = todo.pop()
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(child, ast.Call):
            yield child
        todo.extend(ast.iter_child_nodes(child))


def _last_name(node: ast.expr) -> str:
    """`self.optimizer` -> "optimizer", `opts[0]` -> "opts": what a variable is called."""
    while isinstance(node, (ast.Subscript, ast.Call)):
        node = node.value if isinstance(node, ast.Subscript) else node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _names_optimizer(name: str) -> bool:
    lowered = name.lower()
    return "optim" in lowered or lowered.startswith("opt")


def _names_engine(name: str) -> bool:
    """`engine`, `model_engine`, `self.engine`: what DeepSpeed's examples call their engine."""
    lowered = name.lower()
    return lowered == "engine" or lowered.endswith("_engine")


def _deepspeed_engines(tree: ast.Module, optimizers: set[str]) -> set[str]:
    """`model_engine, optimizer, _, _ = deepspeed.initialize(...)`: {"model_engine"}, and the
    optimizer it returns goes into `optimizers`."""
    engines: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        if ast.unparse(node.value.func).split(".")[-2:] != ["deepspeed", "initialize"]:
            continue
        for target in node.targets:
            elements = target.elts if isinstance(target, ast.Tuple) else [target]
            engines.add(ast.unparse(elements[0]))
            if len(elements) > 1:
                optimizers.add(ast.unparse(elements[1]))
    return engines


class Script:
    """A parsed script: its functions, who calls whom, and what each reaches."""

    def __init__(self, tree: ast.Module, code: str) -> None:
        self.tree, self.code = tree, code
        self.parent: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
        self.functions: dict[str, list[Function]] = {}
        self.methods: dict[str, list[Function]] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                owner = self.parent[node]
                table = self.methods if isinstance(owner, ast.ClassDef) else self.functions
                table.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
        # Variables that hold an optimizer whatever they are called: `sgd = torch.optim.SGD(..)`.
        self.optimizers = {
            ast.unparse(target)
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            for target in node.targets
            if _names_optimizer(_last_name(node.value.func))
            or "optim" in ast.unparse(node.value.func).lower()
        }
        self.engines = _deepspeed_engines(tree, self.optimizers)
        self._reach: dict[ast.AST, frozenset[str]] = {}
        self.loops = [n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While))]
        self.loops.sort(key=lambda loop: (loop.lineno, loop.col_offset))

    # What a call is -------------------------------------------------------------------------

    def function_of(self, node: ast.AST) -> Function | None:
        """The function whose body holds `node` (None at module level)."""
        current = self.parent.get(node)
        while current is not None and not isinstance(
            current, (ast.FunctionDef, ast.AsyncFunctionDef)
        ):
            current = self.parent.get(current)
        return current

    def _class_of(self, function: Function | None) -> ast.ClassDef | None:
        owner = self.parent.get(function) if function is not None else None
        return owner if isinstance(owner, ast.ClassDef) else None

    def _methods_of(self, cls: ast.ClassDef, name: str, seen: set[str]) -> list[Function]:
        found = [
            item
            for item in cls.body
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == name
        ]
        if found or cls.name in seen:
            return found
        seen.add(cls.name)
        for base in cls.bases:  # a method inherited from a class of the same file
            if isinstance(base, ast.Name) and base.id in self.classes:
                found += self._methods_of(self.classes[base.id], name, seen)
        return found

    def _overrides(self, cls: ast.ClassDef, name: str) -> list[Function]:
        """`name` as the subclasses of `cls` in this file define it: `self.run_step()` in a base
        class runs the subclass's run_step."""
        found: list[Function] = []
        todo, seen = [cls.name], {cls.name}
        while todo:
            base = todo.pop()
            for sub in self.classes.values():
                bases = {b.id for b in sub.bases if isinstance(b, ast.Name)}
                if base in bases and sub.name not in seen:
                    seen.add(sub.name)
                    todo.append(sub.name)
                    found += [
                        item
                        for item in sub.body
                        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and item.name == name
                    ]
        return found

    def callees(self, call: ast.Call) -> list[Function]:
        """The functions of this file that `call` may run."""
        func = call.func
        if isinstance(func, ast.Name):
            return self.functions.get(func.id, [])
        if not isinstance(func, ast.Attribute):
            return []
        if isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
            cls = self._class_of(self.function_of(call))
            if cls is None:
                return []
            return self._methods_of(cls, func.attr, set()) + self._overrides(cls, func.attr)
        if func.attr in _FOREIGN_METHODS:
            return []
        return self.methods.get(func.attr, [])

    def is_engine(self, receiver: ast.expr) -> bool:
        return ast.unparse(receiver) in self.engines or _names_engine(_last_name(receiver))

    def is_engine_step(self, call: ast.Call) -> bool:
        """`model_engine.step()`: runs the optimizer step at accumulation boundaries only."""
        func = call.func
        return (
            isinstance(func, ast.Attribute) and func.attr == "step" and self.is_engine(func.value)
        )

    def is_optimizer_step(self, call: ast.Call) -> bool:
        func = call.func
        if not isinstance(func, ast.Attribute):
            return False
        if func.attr == "optimizer_step":  # torch_xla's xm.optimizer_step(optimizer)
            return True
        receiver = func.value
        if func.attr == "train_batch" and self.is_engine(receiver):
            return True  # DeepSpeed's pipeline engine: a whole step, micro-batches and all
        if func.attr != "step":
            return False
        if _names_optimizer(_last_name(receiver)) or ast.unparse(receiver) in self.optimizers:
            return True
        if self.is_engine(receiver):
            return True
        # GradScaler: scaler.step(optimizer)
        return any(_names_optimizer(_last_name(arg)) for arg in call.args)

    def is_backward(self, call: ast.Call) -> bool:
        """`.backward()`, and calls that run it: a pipeline schedule (ColossalAI's
        `booster.execute_pipeline`, DeepSpeed's `engine.train_batch`, Megatron's
        `forward_backward_func`)."""
        name = _last_name(call.func)
        if isinstance(call.func, ast.Attribute) and name in ("backward", "execute_pipeline"):
            return True
        if name == "train_batch" and isinstance(call.func, ast.Attribute):
            return self.is_engine(call.func.value)
        return "forward_backward" in name

    # What code reaches ----------------------------------------------------------------------

    def reaches(self, node: ast.AST) -> frozenset[str]:
        """STEP and/or BACKWARD, if running `node` may run them (following calls in the file)."""
        if node in self._reach:
            return self._reach[node]
        self._reach[node] = frozenset()  # a recursive call adds nothing new
        found: set[str] = set()
        for call in _direct_calls(node):
            if self.is_optimizer_step(call):
                found.add(STEP)
            if self.is_backward(call):
                found.add(BACKWARD)
            for callee in self.callees(call):
                found |= self.reaches(callee)
        self._reach[node] = frozenset(found)
        return self._reach[node]

    def reaches_block(self, block: Block, what: str = STEP) -> bool:
        return any(what in self.reaches(statement) for statement in block)

    def called_functions(self, node: ast.AST) -> set[Function]:
        """Every function of this file that running `node` may call, transitively."""
        found: set[Function] = set()
        todo = [node]
        while todo:
            for call in _direct_calls(todo.pop()):
                for callee in self.callees(call):
                    if callee not in found:
                        found.add(callee)
                        todo.append(callee)
        return found

    def encloses(self, outer: Loop, inner: Loop) -> bool:
        """`inner` runs inside `outer`: written in its body, or in a function it calls."""
        if outer is inner:
            return False
        called = self.called_functions(outer)
        node: ast.AST | None = inner
        while node is not None:
            if node is outer or node in called:
                return True
            node = self.parent.get(node)
        return False

    def runs_repeatedly(self, loop: Loop) -> bool:
        """The loop may start more than once per run (inside an epoch loop, say)."""
        seen: set[ast.AST] = set()
        todo: list[ast.AST] = [loop]
        while todo:
            node = self.parent.get(todo.pop())
            while node is not None and not isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef)
            ):
                if isinstance(node, (ast.For, ast.While)):
                    return True
                node = self.parent.get(node)
            if node is None or node in seen:
                continue
            seen.add(node)
            todo += [call for call in self._calls_of(node)]
        return False

    def _calls_of(self, function: ast.AST) -> list[ast.Call]:
        return [
            call
            for call in ast.walk(self.tree)
            if isinstance(call, ast.Call) and function in self.callees(call)
        ]

    def called_in_file(self, function: Function) -> bool:
        """This file calls `function`, or hands it to something that does (`mp.spawn(main)`,
        `fire.Fire(train)`); a function it never calls runs as often as another file says."""
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call):
                continue
            if _last_name(node.func) == function.name:
                return True
            for arg in [*node.args, *(keyword.value for keyword in node.keywords)]:
                if isinstance(arg, (ast.Name, ast.Attribute)) and _last_name(arg) == function.name:
                    return True
        return False

    def steps_in_backward(self) -> bool:
        """An optimizer steps from gradient hooks, inside backward (optimizer-in-backward)."""
        for call in ast.walk(self.tree):
            if not isinstance(call, ast.Call):
                continue
            name = _last_name(call.func)
            if name in _IN_BACKWARD_SETUPS:
                return True
            if name in _GRAD_HOOKS and call.args:
                hook = call.args[0]
                if isinstance(hook, ast.Lambda) and STEP in self.reaches(hook.body):
                    return True
                if isinstance(hook, ast.Name) and any(
                    STEP in self.reaches(function) for function in self.functions.get(hook.id, [])
                ):
                    return True
        return False

    def segment(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.code, node) or ast.unparse(node)


# The step loop -----------------------------------------------------------------------------


def _where(script: Script, loop: Loop) -> str:
    function = script.function_of(loop)
    return f"line {loop.lineno}" + (f" (in {function.name})" if function else "")


def find_step_loop(script: Script, loop_line: int | None) -> Loop:
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
    innermost = [
        loop for loop in candidates if not any(script.encloses(loop, other) for other in candidates)
    ]
    hint = "set loop_line to the line of the step loop's `for` or `while`"
    if not innermost:
        raise FindError(
            "found no training loop (a for or while loop that reaches .backward() or an "
            f"optimizer's .step(), directly or through functions of this file); {hint}",
            "loop_line",
        )
    if len(innermost) > 1:
        where = ", ".join(_where(script, loop) for loop in innermost)
        raise FindError(f"found several step loops: {where}; {hint}", "loop_line")
    return innermost[0]


# Where a step ends, and how gradients accumulate -----------------------------------------------


@dataclass(frozen=True)
class _Site:
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


def _has_gate_words(node: ast.AST) -> bool:
    text = ast.unparse(node).lower()
    return any(word in text for word in _GATE_WORDS) or any(
        isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(node)
    )


class _Locator:
    """Finds the block that runs once per optimizer step, and the accumulation form."""

    def __init__(self, script: Script, loop: Loop) -> None:
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
        if _has_gate_words(test):
            return True
        names = {ast.unparse(n) for n in ast.walk(test) if isinstance(n, (ast.Name, ast.Attribute))}
        return any(
            _has_gate_words(value) for name in names for value in self.assigned.get(name, [])
        )

    def locate(self, block: Block, depth: int = 0, backward: bool = False) -> _Site:
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
                    return _Site(StepSite(rest), CONTINUE, skip)
                continue
            return self._stepping(statement, depth, backward)
        return _Site(StepSite(None))

    def _stepping(self, statement: ast.stmt, depth: int, backward: bool) -> _Site:
        """The site of the first statement of a block that reaches the optimizer step."""
        if isinstance(statement, ast.If):
            return self._branch(statement, depth, backward)
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            context = _accumulate_context(statement)
            if context is not None:
                return _Site(StepSite(statement.body, f"{context}.sync_gradients"), ACCUMULATE)
            return self.locate(statement.body, depth, backward)
        if isinstance(statement, ast.Try):
            return self.locate(statement.body, depth, backward)
        if isinstance(statement, (ast.For, ast.While)):
            return _Site(StepSite(None))
        return self._call(statement, depth, backward)

    def _branch(self, statement: ast.If, depth: int, backward: bool) -> _Site:
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
                    return _Site(StepSite(statement.body), ENGINE, test)
                return _Site(StepSite(None), ENGINE if engine else NO_ACCUMULATION)
            branch = statement.body if body else statement.orelse
            if engine:
                return _Site(StepSite(branch), ENGINE, test)
            form = SYNC_GRADIENTS if "sync_gradients" in test else IF_BLOCK
            return _Site(StepSite(branch), form, test if body else f"not ({test})")
        for branch in (statement.body, statement.orelse):
            if script.reaches_block(branch):
                inner = self.locate(branch, depth, backward)
                if inner.site.block is not None or inner.form != NO_ACCUMULATION:
                    return inner
        return _Site(StepSite(None))

    def _call(self, statement: ast.stmt, depth: int, backward: bool) -> _Site:
        """A statement that steps: an engine's step, or a call into this file that may hold
        the step site."""
        script = self.script
        calls = list(_direct_calls(statement))
        if any(script.is_engine_step(call) for call in calls):
            return _Site(StepSite(None), ENGINE)
        if depth < 4 and not any(script.is_optimizer_step(call) for call in calls):
            for call in calls:
                for callee in script.callees(call):
                    if STEP in script.reaches(callee):
                        inner = self.locate(callee.body, depth + 1, backward)
                        if inner.site.block is not None or inner.form != NO_ACCUMULATION:
                            return inner
        return _Site(StepSite(None))

    def _engine_steps(self, node: ast.AST) -> bool:
        return any(self.script.is_engine_step(call) for call in _direct_calls(node))


def _skip_test(statement: ast.stmt, depth: int) -> str | None:
    """`if (i + 1) % n != 0: continue` (or `return`, in a function the loop calls): the test."""
    jump = ast.Return if depth else ast.Continue
    if (
        isinstance(statement, ast.If)
        and not statement.orelse
        and isinstance(statement.body[-1], jump)
        and _has_gate_words(statement.test)
    ):
        return ast.unparse(statement.test)
    return None


def _micro_loop(script: Script, stream: list[_Entry]) -> bool:
    """A loop inside the step that runs backward but no optimizer step: micro-batches."""
    return any(
        isinstance(entry.statement, (ast.For, ast.While))
        and BACKWARD in script.reaches(entry.statement)
        and STEP not in script.reaches(entry.statement)
        for entry in stream
        if entry.in_step
    )


# The iteration as it runs ------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    statement: ast.stmt
    in_step: bool  # runs once per optimizer step (in the step site, or synced with it)
    expanded: bool  # a call whose callee's statements follow it in the stream
    function: Function | None  # the function the statement is written in


def _stream(
    script: Script, block: Block, site: StepSite, in_step: bool, depth: int = 0
) -> list[_Entry]:
    """The statements of one pass over `block` in the order they run, looking into `with`,
    `try`, both branches of an `if` and calls to functions of this file (where `self.step += 1`
    may live), but not into inner loops. A statement is `in_step` when it runs once per
    optimizer step: inside the step site, or inside `if accelerator.sync_gradients:`."""
    site_ids = {id(statement) for statement in site.block or []}
    out: list[_Entry] = []
    for statement in block:
        now = in_step or id(statement) in site_ids
        if isinstance(statement, (ast.With, ast.AsyncWith, ast.Try)):
            inner = statement.body + (statement.finalbody if isinstance(statement, ast.Try) else [])
            out += _stream(script, inner, site, now, depth)
            continue
        if isinstance(statement, ast.If):
            test = ast.unparse(statement.test)
            if "sync_gradients" in test:
                out += _stream(script, statement.body, site, True, depth)
                out += _stream(script, statement.orelse, site, False, depth)
                continue
            # A branch taken at some iterations only (`if step % 100 == 0:`) does not run once
            # per step, unless it is the step site; a branch on a setting runs with the rest.
            gated = _has_gate_words(statement.test)
            for branch in (statement.body, statement.orelse):
                if branch and isinstance(branch[-1], _JUMPS) and branch is not site.block:
                    continue  # `if torch.isnan(loss): step += 1; continue`: skips the step
                keep = now and not gated or branch is site.block
                out += _stream(script, branch, site, keep, depth)
            continue
        callee = _callee(script, statement) if depth < 3 else None
        out.append(_Entry(statement, now, callee is not None, script.function_of(statement)))
        if callee is not None:
            out += _stream(script, callee.body, site, now, depth + 1)
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


def _increment(statement: ast.stmt, gate: str | None = None) -> ast.expr | None:
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
        and _last_name(value.func) == "int"
        and len(value.args) == 1
        and ast.unparse(value.args[0]) == gate
    )
    if not (one or flag):
        return None
    return target if isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)) else None


def _declares(function: Function | None, name: str) -> bool:
    """`global name` or `nonlocal name` in `function`: the name outlives its frame."""
    return function is not None and any(
        isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names
        for node in ast.walk(function)
    )


def _stop_tests(loop: Loop) -> list[ast.expr]:
    """Conditions that end the loop: the while test, `if ...: break`."""
    tests: list[ast.expr] = [loop.test] if isinstance(loop, ast.While) else []
    for node in ast.walk(loop):
        if isinstance(node, ast.If) and any(
            isinstance(s, (ast.Break, ast.Return)) for s in node.body
        ):
            tests.append(node.test)
    return tests


def _choose_counter(script: Script, loop: Loop, found: list[ast.expr]) -> ast.expr | None:
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

    # Prefer a name that says step or iteration, then global, then the counter that ends the loop.
    for keep in (says_step, says_global, ends_loop):
        kept = [name for name in names if keep(name)]
        names = kept or names
        if len(names) == 1:
            return texts[names[0]]
    raise FindError(
        f"the step loop at line {loop.lineno} counts with several variables "
        f"({', '.join(names)}); set step_expr to the one that numbers steps",
        "step_expr",
    )


# What the script logs ----------------------------------------------------------------------


def _is_log_call(call: ast.Call) -> bool:
    """print, logger.info, wandb.log, accelerator.log, writer.add_scalar, set_postfix,
    set_description, training_log, report_step_metrics, print_rank_0, ..."""
    name = _last_name(call.func).lower()
    if not name or name.startswith(_NOT_LOGS):
        return False
    return name.startswith("log") or bool(set(re.split(r"_+", name)) & _LOG_TOKENS)


def _shows(expr: ast.expr, texts: set[str], carriers: set[str]) -> bool:
    """`expr` shows the value of one of `texts` as it is: an f-string field, an argument of
    str.format or %, a dict value, `metrics["step"]` of a dict that holds it."""
    if ast.unparse(expr) in texts or ast.unparse(expr) in carriers:
        return True
    if isinstance(expr, ast.Subscript):
        return ast.unparse(expr.value) in carriers
    children: list[ast.expr] = []
    if isinstance(expr, ast.JoinedStr):
        children = expr.values
    elif isinstance(expr, ast.FormattedValue):
        children = [expr.value]
    elif isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        children = expr.elts
    elif isinstance(expr, ast.Dict):
        children = [value for value in expr.values if value is not None]
    elif isinstance(expr, ast.Starred):
        children = [expr.value]
    elif isinstance(expr, ast.Call) and _last_name(expr.func) in ("format", "str", "int", "dict"):
        children = [*expr.args, *(keyword.value for keyword in expr.keywords)]
    elif (
        isinstance(expr, ast.BinOp)
        and isinstance(expr.op, ast.Mod)
        and isinstance(expr.left, ast.Constant)
        and isinstance(expr.left.value, str)
    ):
        children = [expr.right]
    return any(_shows(child, texts, carriers) for child in children)


@dataclass(frozen=True)
class _Logged:
    before: bool  # some log shows the counter after the optimizer step, before its increment
    after: bool  # some log shows it after its increment
    offset: str | None  # `logkv("step", self.step + self.resume_step)`: the offset added


def _logged(
    stream: list[_Entry], text: str, stepping: int, increment: int, function: Function | None
) -> _Logged:
    """Where the iteration logs the counter `text` after the optimizer step (the entry
    `stepping`): before or after its increment (the entry `increment`). Logs before the
    optimizer step (an evaluation at the top of the loop) report the step about to run."""
    counter = ast.parse(text, mode="eval").body
    text = ast.unparse(counter)  # as ast.unparse writes the uses
    texts = {text}
    carriers: dict[str, int] = {}  # names that hold the counter as it was at their assignment
    before = after = False
    offset: str | None = None
    for index, entry in enumerate(stream):
        statement = entry.statement
        if (
            isinstance(counter, ast.Name)
            and entry.function is not function
            and not _declares(entry.function, counter.id)
        ):
            continue  # `iteration` in a function the loop calls is that function's own
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and not isinstance(statement.targets[0], ast.Tuple)
            and _shows(statement.value, texts, set(carriers))
            and ast.unparse(statement.targets[0]) != text
        ):
            carriers[ast.unparse(statement.targets[0])] = index
        for call in _direct_calls(statement):
            if not _is_log_call(call):
                continue
            arguments = [*call.args, *(keyword.value for keyword in call.keywords)]
            for argument in arguments:
                if not _shows(argument, texts, set(carriers)):
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
            offset = offset or _offset(call, text)
    return _Logged(before, after, offset)


def _offset(call: ast.Call, text: str) -> str | None:
    """`logkv("step", self.step + self.resume_step)`, `log(..., step=it + start)`: the term
    the script adds to the counter when it logs the step number."""
    labelled: list[ast.expr] = [
        keyword.value
        for keyword in call.keywords
        if keyword.arg and ("step" in keyword.arg or "iter" in keyword.arg)
    ]
    for label, value in zip(call.args, call.args[1:], strict=False):
        text_label = label.value if isinstance(label, ast.Constant) else None
        if isinstance(text_label, str) and ("step" in text_label or "iter" in text_label):
            labelled.append(value)
    for value in labelled:
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            left, right = ast.unparse(value.left), ast.unparse(value.right)
            other = value.right if left == text else value.left if right == text else None
            if isinstance(other, (ast.Name, ast.Attribute)) and text not in ast.unparse(other):
                return ast.unparse(other)
    return None


# The numbering -----------------------------------------------------------------------------


def _loop_variable(loop: ast.For) -> tuple[str, str] | None:
    """The loop variable that counts iterations and the iterator's name: `for step in
    range(...)`, `for i, batch in enumerate(...)`, `tqdm(range(...))`, `for self.iter in
    range(...)`, `for data, it in zip(loader, range(a, b))`."""
    iterator, target = _unwrapped(loop.iter), loop.target
    if isinstance(iterator, ast.Call) and _last_name(iterator.func) == "zip":
        if not isinstance(target, ast.Tuple) or len(target.elts) != len(iterator.args):
            return None
        for argument, element in zip(iterator.args, target.elts, strict=True):
            inner = _unwrapped(argument)
            if isinstance(inner, ast.Call) and _last_name(inner.func) in _NUMBERING:
                return _named(element, _last_name(inner.func))
        return None
    if not isinstance(iterator, ast.Call) or _last_name(iterator.func) not in _COUNTING:
        return None
    kind = _last_name(iterator.func)
    if kind == "enumerate":
        if not isinstance(target, ast.Tuple) or not target.elts:
            return None
        target = target.elts[0]
    return _named(target, kind)


def _unwrapped(iterator: ast.expr) -> ast.expr:
    while (
        isinstance(iterator, ast.Call) and _last_name(iterator.func) in _WRAPPERS and iterator.args
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


class _Numberer:
    def __init__(self, script: Script, loop: Loop, found: _Site) -> None:
        self.script, self.loop, self.found = script, loop, found
        self.function = script.function_of(loop)
        self.stream = _stream(script, loop.body, found.site, found.site.block is None)

    def number(self) -> _Numbering:
        script, loop, found = self.script, self.loop, self.found
        micro = found.site.block is not None or found.form in (ENGINE, CONTINUE, ACCUMULATE)
        repeated = script.runs_repeatedly(loop)
        variable = _loop_variable(loop) if isinstance(loop, ast.For) else None
        elsewhere = (
            variable is not None
            and variable[1] not in _NUMBERING
            and self.function is not None
            and not script.called_in_file(self.function)
        )
        if variable is not None and not (micro or repeated or elsewhere):
            return _Numbering(variable[0], variable[0], LOOP_VARIABLE)
        counted = self._counter() if found.form != ENGINE or found.site.block else None
        counted = counted or self._engine_counter()
        if counted is not None:
            return counted
        if variable is None:
            return _Numbering(None, None, OPTIMIZER_COUNT)
        why = ["the loop counts micro-batches"] if micro else []
        if repeated:
            why.append("the loop's index restarts every epoch")
        elif elsewhere and self.function is not None:
            name = self.function.name
            why.append(f"the loop's index restarts whenever {name}, called from another file, runs")
        return _Numbering(None, None, f"{OPTIMIZER_COUNT} ({'; '.join(why)})")

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

    def _counter(self) -> _Numbering | None:
        script, stream = self.script, self.stream
        increments: list[tuple[int, ast.expr]] = []
        for index, entry in enumerate(stream):
            target = _increment(entry.statement, self.found.gate)
            # Once per step: in the step site, or `+= int(<the gate>)` anywhere in the loop.
            if target is None or not (entry.in_step or _increment(entry.statement) is None):
                continue
            if (
                isinstance(target, ast.Name)
                and entry.function is not self.function
                and not _declares(entry.function, target.id)
            ):
                continue  # a local of another function: not there to read in the loop's frame
            increments.append((index, target))
        counter = _choose_counter(script, self.loop, [target for _, target in increments])
        if counter is None:
            return None
        text = script.segment(counter)
        at = min(i for i, target in increments if script.segment(target) == text)
        stepping = self._stepping()
        logged = _logged(stream, text, stepping, at, self.function)
        base = f"{text} + {logged.offset}" if logged.offset else text
        offset = f" (logged as {base})" if logged.offset else ""
        if at < stepping:
            # Incremented before the optimizer step: at the loop's top, one less than at the step.
            return _Numbering(f"{base} + 1", base, COUNTER_BEFORE + offset)
        if logged.after and not logged.before:
            return _Numbering(f"{base} + 1", f"{base} + 1", COUNTER_LOGGED + offset)
        return _Numbering(base, base, COUNTER + offset)

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
                logged = _logged(self.stream, text, stepping, stepping, self.function)
                if logged.after and not logged.before:
                    return _Numbering(f"{text} + 1", f"{text} + 1", ENGINE_COUNTER_LOGGED)
                return _Numbering(text, text, ENGINE_COUNTER)
        return None


def find(tree: ast.Module, code: str, loop_line: int | None, step_expr: str | None) -> StepLoop:
    script = Script(tree, code)
    loop = find_step_loop(script, loop_line)
    found = _Locator(script, loop).locate(loop.body)
    function = script.function_of(loop)
    scope = function.name if function is not None else "<module>"
    numberer = _Numberer(script, loop, found)
    form = found.form
    if form == NO_ACCUMULATION and _micro_loop(script, numberer.stream):
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
    return StepLoop(
        loop, found.site, numbered.step, numbered.counter, numbered.at_step, scope, form, optimizers
    )


def stepped_optimizers(script: Script, loop: Loop) -> tuple[str, ...]:
    """The optimizers the loop's body steps, as written (`optimizerD`, `opt_g`), in order: more
    than one means several optimizer steps per iteration (a GAN, Muon plus AdamW)."""
    found: list[tuple[int, str]] = []
    for node in [loop, *script.called_functions(loop)]:
        for call in _direct_calls(node):
            if script.is_optimizer_step(call) and isinstance(call.func, ast.Attribute):
                receiver = call.func.value
                if call.args and not _names_optimizer(_last_name(receiver)):
                    receiver = call.args[0]  # scaler.step(optimizer)
                found.append((call.lineno, ast.unparse(receiver)))
    seen: list[str] = []
    for _, name in sorted(found):
        if name not in seen:
            seen.append(name)
    return tuple(seen)
