"""CUDA graphs: an optimizer step captured into a graph, and the replays that run it.

A whole-network capture (PyTorch's CUDA graphs notes, "Whole-network capture") runs a few eager
warm-up iterations, captures one iteration, optimizer step included, in
`with torch.cuda.graph(g):`, and then trains by `g.replay()`. A replay runs the captured kernels
and no Python: no optimizer step hook fires, so the step helper cannot see those steps, and the
warm-up loop is the only loop left that looks like a training loop. Such a script is refused.
A capture of forward and backward only, with the optimizer stepped eagerly after each replay (the
notes' "Usage with torch.cuda.amp"), is fine: there `g.replay()` runs the step's backward. So is
a graph that is one mode of a script whose replay loop steps eagerly in its other branch.
`torch.compile(mode="reduce-overhead")` graphs the model only, and the optimizer steps eagerly.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

REFUSAL = (
    "the optimizer steps inside a CUDA graph capture (`{capture}` at line {line}): its replays "
    "run no Python optimizer step, so nsysgen's step helper cannot see the steps; record this "
    "script with capture=window or capture=nvtx"
)


@dataclass(frozen=True)
class Capture:
    """A CUDA graph capture: its graph (as written), where it starts and what it captures."""

    graph: str
    line: int
    text: str  # how it starts, as written: `with torch.cuda.graph(g):`, `g.capture_begin()`
    body: list[ast.stmt]


def captures(tree: ast.Module) -> list[Capture]:
    """`with torch.cuda.graph(g):` blocks, and the statements between `g.capture_begin()` and
    `g.capture_end()` in one block."""
    found: list[Capture] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            found += _graph_blocks(node)
        for block in _blocks(node):
            found += _raw_captures(block)
    return sorted(found, key=lambda capture: capture.line)


def captured_step(
    tree: ast.Module,
    steps: Callable[[ast.stmt], bool],
    steps_block: Callable[[list[ast.stmt]], bool],
    calls_capture: Callable[[list[ast.stmt]], bool],
) -> str | None:
    """The refusal, when a capture holds a statement that `steps` says steps an optimizer,
    unless the graph is one mode of the script (`one_mode`)."""
    for capture in captures(tree):
        if any(steps(statement) for statement in capture.body):
            if one_mode(tree, steps_block, calls_capture):
                return None
            return REFUSAL.format(capture=capture.text, line=capture.line)
    return None


def one_mode(
    tree: ast.Module,
    steps_block: Callable[[list[ast.stmt]], bool],
    calls_capture: Callable[[list[ast.stmt]], bool],
) -> bool:
    """A loop that captures no graph (itself or through a function it calls) and whose `if`
    replays a graph in one branch and steps an optimizer in the other (`if graph is not None:
    graph.replay() else: ... optimizer.step()`): the script trains eagerly in its other mode,
    so the compile takes that loop and the step helper refuses the graph mode when it runs (it
    sees the capture). A warm-up, a capture and the replays in one loop stay refused."""
    for loop in ast.walk(tree):
        if not isinstance(loop, ast.For | ast.AsyncFor | ast.While):
            continue
        if _captures_in(loop.body) or calls_capture(loop.body):
            continue
        for node in (n for statement in loop.body for n in ast.walk(statement)):
            if not isinstance(node, ast.If) or not node.orelse:
                continue
            for replaying, other in ((node.body, node.orelse), (node.orelse, node.body)):
                if _replays_in(replaying) and not _replays_in(other) and steps_block(other):
                    return True
    return False


def capturing_functions(tree: ast.Module) -> set[str]:
    """The names of the functions and methods whose bodies hold a capture."""
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _captures_in(node.body)
    }


def _captures_in(block: list[ast.stmt]) -> bool:
    module = ast.Module(body=block, type_ignores=[])
    return bool(captures(module))


def _replays_in(block: list[ast.stmt]) -> bool:
    """`x.replay()` in the block: a CUDA graph's replay (CUDAGraph.replay takes no argument)."""
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "replay"
        and not node.args
        and not node.keywords
        for statement in block
        for node in ast.walk(statement)
    )


def is_graph_context(call: ast.expr) -> bool:
    """`torch.cuda.graph(g)`, `torch.cuda.graphs.graph(g)`, `cuda.graph(g)`."""
    if not isinstance(call, ast.Call) or not call.args:
        return False
    parts = ast.unparse(call.func).split(".")
    return parts[-1] == "graph" and "cuda" in parts[:-1]


def _graph_blocks(node: ast.With | ast.AsyncWith) -> list[Capture]:
    found = []
    for item in node.items:
        call = item.context_expr
        if isinstance(call, ast.Call) and is_graph_context(call):
            text = f"with {ast.unparse(call)}:"
            found.append(Capture(ast.unparse(call.args[0]), node.lineno, text, node.body))
    return found


def _blocks(node: ast.AST) -> list[list[ast.stmt]]:
    """The statement lists directly inside `node` (body, orelse, finalbody, handlers)."""
    blocks = [getattr(node, name, None) for name in ("body", "orelse", "finalbody")]
    return [block for block in blocks if isinstance(block, list) and block]


def _raw_captures(block: list[ast.stmt]) -> list[Capture]:
    """`g.capture_begin()` ... `g.capture_end()` in one block (CUDAGraph's own API)."""
    found = []
    for index, statement in enumerate(block):
        graph = _graph_call(statement, "capture_begin")
        if graph is None:
            continue
        rest = block[index + 1 :]
        ends = [i for i, s in enumerate(rest) if _graph_call(s, "capture_end") == graph]
        body = rest[: ends[0]] if ends else rest
        found.append(Capture(graph, statement.lineno, ast.unparse(statement), body))
    return found


def _graph_call(statement: ast.stmt, method: str) -> str | None:
    """`g.capture_begin()` as a statement: "g"."""
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return None
    func = statement.value.func
    if isinstance(func, ast.Attribute) and func.attr == method:
        return ast.unparse(func.value)
    return None
