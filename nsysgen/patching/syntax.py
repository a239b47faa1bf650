"""Small readings of Python syntax that the patching modules share."""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterator

Function = ast.FunctionDef | ast.AsyncFunctionDef


def parse(code: str) -> ast.Module:
    """A user's script as a tree. Its compile-time warnings (`"\\e"`, an invalid escape that
    Python still runs: a DeprecationWarning before 3.12, a SyntaxWarning since) are the
    script's business: never an error here, whatever the process's warning filters (`python -W
    error`) say."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return ast.parse(code)


def direct_calls(node: ast.AST) -> Iterator[ast.Call]:
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


def last_name(node: ast.expr) -> str:
    """`self.optimizer` -> "optimizer", `opts[0]` -> "opts": what a variable is called."""
    while isinstance(node, (ast.Subscript, ast.Call)):
        node = node.value if isinstance(node, ast.Subscript) else node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def root_name(node: ast.expr) -> str:
    """`transformers.trainer.Trainer` -> "transformers": the name an attribute chain starts at."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


def names_in(node: ast.AST) -> set[str]:
    """The variables an expression reads: `epoch * len(loader) + i` -> {epoch, len, loader, i}."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def parameters(function: Function) -> list[str]:
    """The names of a function's parameters, in order (`self` included)."""
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    return [argument.arg for argument in every]
