"""A parsed script: its functions, who calls whom, which calls are optimizer steps and
backwards, and what each statement reaches through calls of the same file.
"""

from __future__ import annotations

import ast
from functools import cached_property

from nsysgen.patching.graphs import captures
from nsysgen.patching.optimizer_calls import (
    GRAD_HOOKS,
    IN_BACKWARD_SETUPS,
    builds_optimizer,
    deepspeed_engines,
    names_engine,
    names_optimizer,
    says_not_optimizer,
)
from nsysgen.patching.step_loop import BACKWARD, STEP, Block, Loop
from nsysgen.patching.syntax import Function, direct_calls, last_name, parameters

# Method names that torch and the standard library use on their own objects: `model.train()`
# is not a call to a Trainer.train defined in the same file.
_FOREIGN_METHODS = frozenset(
    {"train", "eval", "step", "zero_grad", "backward", "forward", "to", "cuda", "cpu", "update",
     "item", "append", "extend", "state_dict", "load_state_dict", "get", "items", "keys"}
)  # fmt: skip


def _argument(call: ast.Call, name: str, position: int) -> ast.expr | None:
    """The argument `call` passes as the parameter `name`, at `position` if positional."""
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    arguments = call.args
    if 0 <= position < len(arguments) and not any(
        isinstance(a, ast.Starred) for a in arguments[: position + 1]
    ):
        return arguments[position]
    return None


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
            if builds_optimizer(node.value) and not says_not_optimizer(ast.unparse(target))
        }
        self.engines = deepspeed_engines(tree, self.optimizers)
        self.captures = captures(tree)
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
            return self.functions.get(func.id) or self.passed_in(call)
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

    def passed_in(self, call: ast.Call) -> list[Function]:
        """`step_fn(batch)` where step_fn is a parameter: the functions of this file that the
        callers of the enclosing function pass as that parameter (`train(model, train_step)`)."""
        function = self.function_of(call)
        if not isinstance(call.func, ast.Name) or function is None:
            return []
        names = parameters(function)
        if call.func.id not in names:
            return []
        position = names.index(call.func.id)
        if isinstance(self.parent.get(function), ast.ClassDef) and names[:1] in (["self"], ["cls"]):
            position -= 1  # `obj.train(...)` passes self itself
        found: list[Function] = []
        for site in ast.walk(self.tree):
            if isinstance(site, ast.Call) and last_name(site.func) == function.name:
                argument = _argument(site, call.func.id, position)
                name = last_name(argument) if argument is not None else ""
                found += self.functions.get(name, []) + self.methods.get(name, [])
        return found

    def calls_step_parameter(self, call: ast.Call) -> bool:
        """`_train_step(batch, ..., iteration)` where `_train_step` is a parameter that no caller
        in this file fills: a training step passed in from another file (its name says so)."""
        func = call.func
        if not isinstance(func, ast.Name) or func.id in self.functions:
            return False
        function = self.function_of(call)
        return (
            function is not None
            and func.id in parameters(function)
            and "step" in func.id.lower()
            and not self.passed_in(call)
        )

    def replays_backward(self, call: ast.Call) -> bool:
        """`g.replay()` of a CUDA graph that captured a backward (but no optimizer step)."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr == "replay"):
            return False
        graph = ast.unparse(func.value)
        return any(
            capture.graph == graph and self.reaches_block(capture.body, BACKWARD)
            for capture in self.captures
        )

    def is_engine(self, receiver: ast.expr) -> bool:
        return ast.unparse(receiver) in self.engines or names_engine(last_name(receiver))

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
        name = last_name(receiver)
        if names_optimizer(name) or ast.unparse(receiver) in self.optimizers:
            return True
        if self.is_engine(receiver):
            return True
        if says_not_optimizer(name) and "scaler" not in name.lower():
            return False  # lr_scheduler.step(), ema.step(): not an optimizer, whatever its args
        # GradScaler: scaler.step(optimizer)
        return any(names_optimizer(last_name(arg)) for arg in call.args)

    def is_backward(self, call: ast.Call) -> bool:
        """`.backward()`, and calls that run it: a pipeline schedule (ColossalAI's
        `booster.execute_pipeline`, DeepSpeed's `engine.train_batch`, Megatron's
        `forward_backward_func`)."""
        name = last_name(call.func)
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
        for call in direct_calls(node):
            if self.is_optimizer_step(call):
                found.add(STEP)
            if self.is_backward(call) or self.replays_backward(call):
                found.add(BACKWARD)
            if self.calls_step_parameter(call):
                found |= {STEP, BACKWARD}
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
            for call in direct_calls(todo.pop()):
                for callee in self.callees(call):
                    if callee not in found:
                        found.add(callee)
                        todo.append(callee)
        return found

    def encloses(self, outer: ast.AST, inner: ast.AST) -> bool:
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

    def runs_repeatedly(self, loop: Loop | Function) -> bool:
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
            if last_name(node.func) == function.name:
                return True
            for arg in [*node.args, *(keyword.value for keyword in node.keywords)]:
                if isinstance(arg, (ast.Name, ast.Attribute)) and last_name(arg) == function.name:
                    return True
        return False

    def steps_in_backward(self) -> bool:
        """An optimizer steps from gradient hooks, inside backward (optimizer-in-backward)."""
        for call in ast.walk(self.tree):
            if not isinstance(call, ast.Call):
                continue
            name = last_name(call.func)
            if name in IN_BACKWARD_SETUPS:
                return True
            if name in GRAD_HOOKS and call.args:
                hook = call.args[0]
                if isinstance(hook, ast.Lambda) and STEP in self.reaches(hook.body):
                    return True
                if isinstance(hook, ast.Name) and any(
                    STEP in self.reaches(function) for function in self.functions.get(hook.id, [])
                ):
                    return True
        return False

    def switched_off(self, test: ast.expr) -> bool:
        """`if Tensorboard:` where the file only ever sets `Tensorboard = False` (a switch left
        off in the source): the branch never runs."""
        return isinstance(test, ast.Name) and test.id in self._switches_off

    @cached_property
    def _switches_off(self) -> frozenset[str]:
        """Names the file binds only by `name = False` (or None): one walk for every `if`."""
        values: dict[str, list[ast.expr]] = {}
        other: set[str] = set()  # bound otherwise too: a loop, `with ... as`, `+=`, a parameter
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        values.setdefault(target.id, []).append(node.value)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                if not isinstance(self.parent.get(node), ast.Assign):
                    other.add(node.id)
            else:
                other |= _bound_names(node)
        return frozenset(
            name
            for name, assigned in values.items()
            if name not in other
            and all(isinstance(v, ast.Constant) and v.value in (False, None) for v in assigned)
        )

    def segment(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.code, node) or ast.unparse(node)


def _bound_names(node: ast.AST) -> set[str]:
    if isinstance(node, ast.arg):
        return {node.arg}
    if isinstance(node, ast.alias):
        return {node.asname or node.name}
    return set()
