"""What the compile offers where it asks for step_expr (nsysgen/patching/shown.py): a number
across the run made of the epoch and the index within it, the quotient of a logged count of
micro-batches, or a DeepSpeed engine's own count of optimizer steps."""

from __future__ import annotations

import ast

from nsysgen.patching.logged import is_log_call
from nsysgen.patching.script import Script
from nsysgen.patching.step_loop import FUNCTIONS, Loop
from nsysgen.patching.stream import Entry
from nsysgen.patching.syntax import Function, direct_calls, last_name, parameters


def quotient(stream: list[Entry], micro: set[str], gate: str | None) -> str | None:
    """`train_step // args.grad_acc` where the optimizer steps `if train_step %
    args.grad_acc == 0` (or on a flag set so): the steps a logged count of micro-batches
    stands for, read while the optimizer steps."""
    if gate is None:
        return None
    tests = [ast.parse(gate, mode="eval").body]
    for entry in stream:  # `is_update = train_step % args.grad_acc == 0`
        statement = entry.statement
        if isinstance(statement, ast.Assign) and ast.unparse(statement.targets[0]) == gate:
            tests.append(statement.value)
    for test in tests:
        for node in ast.walk(test):
            if (
                isinstance(node, ast.BinOp)
                and isinstance(node.op, ast.Mod)
                and ast.unparse(node.left) in micro
            ):
                left, right = ast.unparse(node.left), ast.unparse(node.right)
                return f"`{left} // {right}` (read while the optimizer steps)"
    return None


def suggestion(script: Script, loop: Loop | Function, micro_index: bool) -> str | None:
    """`epoch * len(loader) + i`: an index across the run, for `for i, _ in
    enumerate(loader)` (or `for self.iter in range(self.max_iter)`) under an epoch loop
    (around it in the same function, the function's `epoch` parameter, or `for
    self.epoch in ...` of the same object), stepping on every batch; for a DeepSpeed
    engine's loop, the engine's own count of optimizer steps."""
    engine = _engine(script, loop)
    if engine is not None:
        return f"`{engine}.global_steps` (DeepSpeed's count of optimizer steps)"
    if not isinstance(loop, ast.For) or micro_index:
        return None
    counted = _counted_loop(loop)
    if counted is None:
        return None
    index, size = counted
    node = script.parent.get(loop)
    while node is not None and not isinstance(node, FUNCTIONS):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            return f"`{node.target.id} * {size} + {index}`"
        node = script.parent.get(node)
    if "." in index:  # `self.iter`: the object's epoch, counted by a loop of its own
        owner = index.split(".")[0]
        attributes = {
            ast.unparse(other.target)
            for other in script.loops
            if isinstance(other, ast.For)
            and isinstance(other.target, ast.Attribute)
            and ast.unparse(other.target.value) == owner
            and "epoch" in other.target.attr
        }
        if len(attributes) == 1:
            epoch = attributes.pop()
            return f"`{epoch} * {size} + {index}` (where {epoch} counts from 0)"
    # `def train(args, model, loader, optimizer, epoch)`: the caller's epoch, whose first
    # value this function cannot see.
    epochs = [name for name in parameters(node) if "epoch" in name] if node else []
    if len(epochs) == 1:
        return f"`{epochs[0]} * {size} + {index}` (where {epochs[0]} counts from 0)"
    return None


def _engine(script: Script, loop: Loop | Function) -> str | None:
    """The DeepSpeed engine the loop steps (`model.step()` of `deepspeed.initialize`'s)."""
    for call in direct_calls(loop):
        if script.is_engine_step(call) and isinstance(call.func, ast.Attribute):
            return ast.unparse(call.func.value)
    return None


def _counted_loop(loop: ast.For) -> tuple[str, str] | None:
    """(index, count) of `for i, _ in enumerate(loader)` -> ("i", "len(loader)"), also through
    a logger (`metric_logger.log_every(loader, ...)`), and of `for it in range(n)` -> ("it",
    "n")."""
    iterator = loop.iter
    if not isinstance(iterator, ast.Call) or not iterator.args:
        return None
    name = last_name(iterator.func)
    if name == "range" and len(iterator.args) == 1:
        if isinstance(loop.target, (ast.Name, ast.Attribute)):
            return ast.unparse(loop.target), ast.unparse(iterator.args[0])
        return None
    if name != "enumerate" or not isinstance(loop.target, ast.Tuple):
        return None
    if not isinstance(loop.target.elts[0], ast.Name):
        return None
    loader = iterator.args[0]
    if isinstance(loader, ast.Call) and is_log_call(loader) and loader.args:
        loader = loader.args[0]  # `metric_logger.log_every(loader, ...)`
    return loop.target.elts[0].id, f"len({ast.unparse(loader)})"
