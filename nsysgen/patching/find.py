"""Finding the step loop of a training script, and the counter that numbers its steps.

A step is one optimizer step. The step loop is the innermost loop whose body reaches the
optimizer step, directly or through calls to functions and methods of the same file; loops
inside it (micro-batches of a gradient accumulation) are part of the step, and loops that only
reach `.backward()` are not steps. Evaluation loops reach no optimizer step, so they never count.

Steps are numbered the way the script numbers them: by the loop variable of `for step in
range(...)` (or `enumerate`, `tqdm(range(...))`, ...) when that loop runs once per run, else by
a counter the loop increments by one once per step (`iter_num += 1`, `self.step += 1`,
`state["step_count"] += 1`), read as it stands while the optimizer step runs; else nsysgen
counts optimizer steps itself, from 0, across epochs.
"""

from __future__ import annotations

import ast
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
_WRAPPERS = frozenset({"tqdm", "track", "progress", "progress_bar"})
_JUMPS = (ast.Continue, ast.Break, ast.Return, ast.Raise)
STEP, BACKWARD = "optimizer step", "backward"


class FindError(Exception):
    """No step loop or no counter could be told apart; `setting` is the fix to name."""

    def __init__(self, message: str, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting


@dataclass(frozen=True)
class StepSite:
    """Where a step ends: the end of the loop body, or a block that runs once per step."""

    block: Block | None  # None: every iteration of the step loop is one step
    when: str | None = (
        None  # the expression that says the step ended (`accelerator.sync_gradients`)
    )


@dataclass(frozen=True)
class StepLoop:
    node: Loop
    site: StepSite
    step: str | None  # the expression naming the step, or None: the helper counts steps
    counter: str = field(default="")  # how the step is numbered, in words (tests, README table)


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

    def callees(self, call: ast.Call) -> list[Function]:
        """The functions of this file that `call` may run."""
        func = call.func
        if isinstance(func, ast.Name):
            return self.functions.get(func.id, [])
        if not isinstance(func, ast.Attribute):
            return []
        if isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
            cls = self._class_of(self.function_of(call))
            return self._methods_of(cls, func.attr, set()) if cls is not None else []
        if func.attr in _FOREIGN_METHODS:
            return []
        return self.methods.get(func.attr, [])

    def is_optimizer_step(self, call: ast.Call) -> bool:
        func = call.func
        if not isinstance(func, ast.Attribute):
            return False
        if func.attr == "optimizer_step":  # torch_xla's xm.optimizer_step(optimizer)
            return True
        if func.attr != "step":
            return False
        receiver = func.value
        if _names_optimizer(_last_name(receiver)) or ast.unparse(receiver) in self.optimizers:
            return True
        # GradScaler: scaler.step(optimizer)
        return any(_names_optimizer(_last_name(arg)) for arg in call.args)

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
            elif isinstance(call.func, ast.Attribute) and call.func.attr == "backward":
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


# Where a step ends -------------------------------------------------------------------------


def _accumulate_context(statement: ast.With) -> str | None:
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


def locate_step(script: Script, block: Block, depth: int = 0) -> StepSite:
    """The block that runs once per optimizer step, when not every iteration steps.

    `if step % accumulation == 0: optimizer.step()` steps every few iterations: the step ends
    with that block. An `if` with an `else` is not accumulation; a `with`, a `try` or a call
    into the same file is looked through.
    """
    for statement in block:
        if STEP not in script.reaches(statement):
            continue
        if isinstance(statement, ast.If):
            # With an `else`, every iteration takes a branch that updates the model (an
            # optimizer in one, a hand-written update in the other): no accumulation.
            if statement.orelse:
                return StepSite(None)
            branch = statement.body
            inner = locate_step(script, branch, depth)
            return inner if inner.block is not None else StepSite(branch)
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            context = _accumulate_context(statement)  # type: ignore[arg-type]
            if context is not None:
                return StepSite(statement.body, f"{context}.sync_gradients")
            return locate_step(script, statement.body, depth)
        if isinstance(statement, ast.Try):
            return locate_step(script, statement.body, depth)
        if depth < 4 and not isinstance(statement, (ast.For, ast.While)):
            inner = _through_calls(script, statement, depth)
            if inner.block is not None:
                return inner
        return StepSite(None)
    return StepSite(None)


def _through_calls(script: Script, statement: ast.stmt, depth: int) -> StepSite:
    """The step site inside the functions of this file that `statement` calls."""
    if any(script.is_optimizer_step(call) for call in _direct_calls(statement)):
        return StepSite(None)
    for call in _direct_calls(statement):
        for callee in script.callees(call):
            if STEP in script.reaches(callee):
                inner = locate_step(script, callee.body, depth + 1)
                if inner.block is not None:
                    return inner
    return StepSite(None)


# The counter -------------------------------------------------------------------------------


def _flatten(script: Script, block: Block, depth: int = 0) -> list[ast.stmt]:
    """The statements that run once per pass over `block`, in order, looking into `with`,
    `try` and calls to functions of this file (where `self.step += 1` may live)."""
    out: list[ast.stmt] = []
    for statement in block:
        if isinstance(statement, (ast.With, ast.AsyncWith, ast.Try)):
            out += _flatten(script, statement.body, depth)
            continue
        out.append(statement)
        if depth < 3 and isinstance(statement, (ast.Expr, ast.Assign, ast.AnnAssign)):
            call = statement.value
            if isinstance(call, ast.Call):
                for callee in script.callees(call)[:1]:
                    out += _flatten(script, callee.body, depth + 1)
    return out


def _increment(statement: ast.stmt) -> ast.expr | None:
    """`x += 1` or `x = x + 1`: the x, else None."""
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
    if not (isinstance(value, ast.Constant) and type(value.value) is int and value.value == 1):
        return None
    return target if isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)) else None


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

    def ends_loop(name: str) -> bool:
        return ast.unparse(texts[name]) in stops

    # Prefer a name that says step or iteration, then the counter that ends the loop.
    for keep in (says_step, ends_loop):
        kept = [name for name in names if keep(name)]
        names = kept or names
        if len(names) == 1:
            return texts[names[0]]
    raise FindError(
        f"the step loop at line {loop.lineno} counts with several variables "
        f"({', '.join(names)}); set step_expr to the one that numbers steps",
        "step_expr",
    )


def _counted(script: Script, loop: Loop, site: StepSite) -> tuple[str | None, str]:
    """The expression that numbers the step at the top of an iteration, and how, in words."""
    repeated = script.runs_repeatedly(loop)
    if site.block is None and isinstance(loop, ast.For) and not repeated:
        variable = _loop_variable(loop)
        if variable is not None:
            return variable, "loop variable"
    block = site.block if site.block is not None else loop.body
    statements = _flatten(script, block)
    increments = [(i, target) for i, s in enumerate(statements) if (target := _increment(s))]
    counter = _choose_counter(script, loop, [target for _, target in increments])
    if counter is None:
        return None, "nsysgen's count of optimizer steps"
    text = script.segment(counter)
    at = min(i for i, target in increments if script.segment(target) == text)
    stepping = [i for i, s in enumerate(statements) if STEP in script.reaches(s)]
    # Read the counter as it stands while the optimizer step runs: that is what the script logs
    # next to the step. Incremented before the step, it is one more than at the loop's top.
    if stepping and at < stepping[0]:
        return f"{text} + 1", "counter, read after its increment"
    return text, "counter"


def _loop_variable(loop: ast.For) -> str | None:
    """`for step in range(...)`, `for i, batch in enumerate(...)`, `tqdm(range(...))` -> name."""
    iterator, target = loop.iter, loop.target
    while (
        isinstance(iterator, ast.Call) and _last_name(iterator.func) in _WRAPPERS and iterator.args
    ):
        iterator = iterator.args[0]
    if not isinstance(iterator, ast.Call) or _last_name(iterator.func) not in _COUNTING:
        return None
    if _last_name(iterator.func) == "enumerate":
        if not isinstance(target, ast.Tuple) or not target.elts:
            return None
        target = target.elts[0]
    return target.id if isinstance(target, ast.Name) else None


def find(tree: ast.Module, code: str, loop_line: int | None, step_expr: str | None) -> StepLoop:
    script = Script(tree, code)
    loop = find_step_loop(script, loop_line)
    site = locate_step(script, loop.body)
    if step_expr is not None:
        return StepLoop(loop, site, step_expr, "step_expr")
    step, how = _counted(script, loop, site)
    return StepLoop(loop, site, step, how)
