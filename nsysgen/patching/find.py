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
`train_one_epoch`, nor that of `itertools.count()` in a function given the caller's running
`step`), both are None and steps are numbered by the optimizer's own count. A DeepSpeed engine's
`global_steps`, where the script reads it, is such a counter. A counter set to 0 every epoch
(`self.step = 0` before the loop of an epoch function) numbers no steps either.

Where neither the loop's index nor a counter numbers steps, or where the script logs another
number than its index, the step's number is what the script logs or computes: a value its logs
label as a step (`step=`, a TensorBoard global_step, `f"Iteration {k + 1}"`), or an epoch offset
plus the index (`batches_done = epoch * len(dataloader) + i`, `nbatches * k + j + 1`), read as
the variable where it is set before the optimizer step and as its expression where it is set
after (the GAN's number assigned after its three optimizer steps). Several such numbers: none.

No loop of the file trains: a function that runs a whole step and that the file never calls is
the unit (`def train_step(batch, ..., iteration)`, called by another file's loop), numbered by
its step parameter; a loop that calls a step function passed in as a parameter trains
(`train_epoch(_train_step, ...)`). A loop that a library runs (`Trainer(...).train()`,
Lightning's `Trainer(...).fit(...)`, nsysgen.patching.library) is reported as such
(LibraryLoopError), and an optimizer step captured into a CUDA graph is refused
(nsysgen.patching.graphs): its replays run no optimizer step the helper can see.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import TypeGuard

from nsysgen.patching.graphs import captured_step, captures
from nsysgen.patching.library import LibraryLoop, library_loop
from nsysgen.patching.logged import is_log_call, offset, shows, step_arguments
from nsysgen.patching.syntax import Function, names_in, parameters
from nsysgen.patching.syntax import direct_calls as _direct_calls
from nsysgen.patching.syntax import last_name as _last_name

Loop = ast.For | ast.While
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
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
PARAMETER = "the step function's parameter"
LOGGED = "the number the script logs"
COMPUTED = "the iteration's number the script computes"


NO_LOOP = (
    "found no training loop (a for or while loop that reaches .backward() or an optimizer's "
    ".step(), directly or through functions of this file)"
)
LOOP_HINT = "set loop_line to the line of the step loop's `for` or `while`"


class FindError(Exception):
    """No step loop or no counter could be told apart, or the script cannot be recorded by
    step; `setting` is the fix to name (None: the script itself)."""

    def __init__(self, message: str, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting


class LibraryLoopError(FindError):
    """The training loop is a library's (`loop` says which and where): there is no loop of the
    script's own to patch, and the library's counter numbers the steps."""

    def __init__(self, loop: LibraryLoop) -> None:
        library = loop.library
        super().__init__(
            f"the training loop is the {library.display}'s (`{loop.call}` at line {loop.line}), "
            f"not a loop of this file: its steps are numbered by the {library.display}'s own "
            f"counter ({library.counter})"
        )
        self.loop = loop


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
    node: the step loop; or, where a loop in another file calls this file's training step,
        the function that runs one step (patch mode opens a step at the top of its body).
    accumulation: the form of gradient accumulation found, one of ACCUMULATIONS.
    """

    node: Loop | Function
    site: StepSite
    step: str | None
    counter: str = field(default="")
    at_step: str | None = None
    scope: str = "<module>"
    accumulation: str = NO_ACCUMULATION
    optimizers: tuple[str, ...] = ()  # the optimizers the loop steps, as written


# Things stepped in a training loop that are not optimizers, however they were built
# (`torch.optim.lr_scheduler.OneCycleLR(...)`, `torch.optim.swa_utils.SWALR(...)`) or named
# (`opt_param_scheduler`, `ema_optimizer`): LR schedulers, weight averages, loss scalers.
_NOT_OPTIMIZER_PARTS = ("sched", "swa", "scaler", "warmup", "averag")
_NOT_OPTIMIZER_WORDS = frozenset({"ema", "lr", "sched", "schedule", "scheduler", "swa"})


def _says_not_optimizer(name: str) -> bool:
    """`lr_scheduler`, `opt_param_scheduler`, `ema_optimizer`, `WeightEMA`, `GradScaler`."""
    lowered = name.lower()
    words = set(re.split(r"[_.]+|(?<=[a-z])(?=[A-Z])", name.replace("EMA", "_ema_").strip("_")))
    return any(part in lowered for part in _NOT_OPTIMIZER_PARTS) or bool(
        {word.lower() for word in words} & _NOT_OPTIMIZER_WORDS
    )


def _names_optimizer(name: str) -> bool:
    lowered = name.lower()
    if _says_not_optimizer(name):
        return False
    return "optim" in lowered or lowered.startswith("opt")


def _builds_optimizer(call: ast.Call) -> bool:
    """`torch.optim.AdamW(...)`, `build_optimizer(...)`; not `optim.lr_scheduler.LambdaLR(...)`,
    `torch.optim.swa_utils.AveragedModel(...)`."""
    text = ast.unparse(call.func)
    if _says_not_optimizer(text):
        return False
    return _names_optimizer(_last_name(call.func)) or "optim" in text.lower()


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
            if _builds_optimizer(node.value) and not _says_not_optimizer(ast.unparse(target))
        }
        self.engines = _deepspeed_engines(tree, self.optimizers)
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
            if isinstance(site, ast.Call) and _last_name(site.func) == function.name:
                argument = _argument(site, call.func.id, position)
                name = _last_name(argument) if argument is not None else ""
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
        name = _last_name(receiver)
        if _names_optimizer(name) or ast.unparse(receiver) in self.optimizers:
            return True
        if self.is_engine(receiver):
            return True
        if _says_not_optimizer(name) and "scaler" not in name.lower():
            return False  # lr_scheduler.step(), ema.step(): not an optimizer, whatever its args
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
            for call in _direct_calls(todo.pop()):
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


def _replays(script: Script, loop: Loop) -> bool:
    return any(script.replays_backward(call) for call in _direct_calls(loop))


def find_step_loop(script: Script, loop_line: int | None) -> Loop | None:
    """The step loop: the one at `loop_line`, else the innermost loop that trains; None when
    no loop of this file trains."""
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
    # A CUDA graph's replays are the training; the eager iterations before its capture only
    # warm it up (PyTorch's CUDA graphs notes).
    replaying = [loop for loop in candidates if _replays(script, loop)]
    candidates = replaying or candidates
    innermost = [
        loop for loop in candidates if not any(script.encloses(loop, other) for other in candidates)
    ]
    if not innermost:
        return None
    if len(innermost) > 1:
        where = ", ".join(_where(script, loop) for loop in innermost)
        raise FindError(f"found several step loops: {where}; {LOOP_HINT}", "loop_line")
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

    def __init__(self, script: Script, loop: Loop | Function) -> None:
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


def _zeroes(node: ast.AST, text: str) -> bool:
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


def _step_parameters(function: Function) -> list[str]:
    """The parameters that hold a step's number: named so (`step`, `global_step`, `iteration`)
    and not called (`train_step(batch)` is a function)."""
    called = {call.func.id for call in _direct_calls(function) if isinstance(call.func, ast.Name)}
    return [name for name in parameters(function) if _says_step_number(name) and name not in called]


def _runs_per_epoch(function: Function) -> bool:
    """`def train_one_epoch(...)`, or a function given the caller's running step count: runs
    once per epoch, so what it starts from 0 starts again every epoch."""
    return "epoch" in function.name.lower() or bool(_step_parameters(function))


def _declares(function: Function | None, name: str) -> bool:
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


def _choose_counter(
    script: Script, loop: Loop | Function, found: list[ast.expr]
) -> ast.expr | None:
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
    found_offset: str | None = None
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
            and shows(statement.value, texts, set(carriers))
            and ast.unparse(statement.targets[0]) != text
        ):
            carriers[ast.unparse(statement.targets[0])] = index
        for call in _direct_calls(statement):
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
            found_offset = found_offset or offset(call, text)
    return _Logged(before, after, found_offset)


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
    def __init__(self, script: Script, loop: Loop | Function, found: _Site) -> None:
        self.script, self.loop, self.found = script, loop, found
        # A step function (no loop in this file) numbers steps in its own frame.
        self.function = loop if isinstance(loop, _FUNCTIONS) else script.function_of(loop)
        self.stream = _stream(script, loop.body, found.site, found.site.block is None)
        self.reset: list[str] = []  # counters left out: they start again every epoch

    def number(self) -> _Numbering:
        if isinstance(self.loop, _FUNCTIONS):
            return self._number_function(self.loop)
        variable = _loop_variable(self.loop) if isinstance(self.loop, ast.For) else None
        restarts = self._restarts(variable)
        if variable is not None and not restarts:
            logged = self._logged_number(restarts=False)
            return logged or _Numbering(variable[0], variable[0], LOOP_VARIABLE)
        found = self.found
        counted = self._counter() if found.form != ENGINE or found.site.block else None
        counted = counted or self._engine_counter() or self._logged_number(bool(restarts))
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
        found = self.found
        micro = found.site.block is not None or found.form in (ENGINE, CONTINUE, ACCUMULATE)
        why = ["the loop counts micro-batches"] if micro else []
        if script.runs_repeatedly(loop):
            return [*why, "the loop's index restarts every epoch"]
        if variable is None or function is None or script.called_in_file(function):
            return why
        if variable[1] not in _NUMBERING:
            name = function.name
            why.append(f"the loop's index restarts whenever {name}, called from another file, runs")
        elif _runs_per_epoch(function):
            # `def train_one_epoch(model, loader, step): for i in itertools.count():` counts
            # from 0 on every call; the caller's running count is the step's number.
            why.append(f"the loop's index restarts whenever {function.name} runs")
        return why

    def _number_function(self, function: Function) -> _Numbering:
        """A step function with no loop in this file (`def train_step(model, batch, step)`,
        called by a loop in another file): the step number it is given, else a counter it
        increments (an attribute or a global: its locals start anew every call)."""
        named = _step_parameters(function)
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

    def _counter(self) -> _Numbering | None:
        script, stream = self.script, self.stream
        increments: list[tuple[int, ast.expr]] = []
        for index, entry in enumerate(stream):
            target = _increment(entry.statement, self.found.gate)
            # Once per step: in the step site, or `+= int(<the gate>)` anywhere in the loop.
            if target is None or not (entry.in_step or _increment(entry.statement) is None):
                continue
            if isinstance(target, ast.Name) and not self._lasts(entry, target.id):
                continue  # a local of another function: not there to read in the loop's frame
            increments.append((index, target))
        kept = [target for _, target in increments if not self._restarts_every_epoch(target)]
        every = {script.segment(target) for _, target in increments}
        self.reset = sorted(every - {script.segment(target) for target in kept})
        counter = _choose_counter(script, self.loop, kept)
        if counter is None:
            return None
        text = script.segment(counter)
        at = min(i for i, target in increments if script.segment(target) == text)
        stepping = self._stepping()
        logged = _logged(stream, text, stepping, at, self.function)
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
        reading = _Reading(self.script, self.loop, self.stream, self.function, self._stepping())
        variable = _loop_variable(self.loop) if isinstance(self.loop, ast.For) else None
        index = variable[0] if variable is not None else None
        for candidates, how in ((reading.logged(), LOGGED), (reading.computed(), COMPUTED)):
            kept = [c for c in candidates if reading.numbers(c, restarts)]
            texts = {c.at_step for c in kept}
            bare = index is not None and index in texts and not reading.reassigned(index)
            if bare or len(texts) > 1:
                return None  # the loop's index as it is, or no single number
            if kept:
                chosen = kept[0]
                return _Numbering(chosen.at_step if chosen.top else None, chosen.at_step, how)
        return None

    def _lasts(self, entry: _Entry, name: str) -> bool:
        """A counter variable `name` incremented at `entry` keeps its value from one step to the
        next where the helper reads it: a local of the loop's function, or a global; not a
        local of a step function, which starts anew every call."""
        if _declares(entry.function, name):
            return True
        return entry.function is self.function and not isinstance(self.loop, _FUNCTIONS)

    def _restarts_every_epoch(self, target: ast.expr) -> bool:
        """`self.step = 0` where every epoch runs it (in an epoch loop around the step loop, or
        before the loop in a function run once per epoch): a per-epoch count, not the step's
        number, however the script names it."""
        script, loop, text = self.script, self.loop, ast.unparse(target)
        for node in ast.walk(script.tree):
            if not _zeroes(node, text) or script.encloses(loop, node) or loop is node:
                continue
            outer = [other for other in script.loops if other is not loop]
            if any(script.encloses(o, node) and script.encloses(o, loop) for o in outer):
                return True
            function = script.function_of(node)
            if function is self.function and function is not None and _runs_per_epoch(function):
                return not script.called_in_file(function)  # else an epoch loop shows it
        return False

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


@dataclass(frozen=True)
class _Candidate:
    at_step: str  # the expression, read in the loop's frame while the optimizer steps
    value: ast.expr  # what it holds (a variable's assigned value)
    top: bool  # the same expression reads the same number at the top of the iteration


def _texts(node: ast.AST) -> set[str]:
    """The variables an expression reads, attributes as written: {"epoch", "self.local_step"}."""
    return names_in(node) | {ast.unparse(n) for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def _targets(node: ast.AST) -> set[str]:
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
    return isinstance(statement, ast.Assign) and _targets(statement) == {text}


def _has_product(node: ast.AST) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult) for n in ast.walk(node))


def _global_index(value: ast.expr, iterating: set[str]) -> bool:
    """`epoch * len(loader) + i`, `nbatches * k + j + 1`, `self.epoch * n + self.local_step`:
    an epoch offset (a product of values fixed during the epoch) plus the loop's index."""
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
    return (
        len(products) == 1
        and len(indices) == 1
        and len(terms) == len(products) + len(indices) + len(constants)
        and not _texts(products[0]) & iterating
    )


class _Reading:
    """The numbers one iteration logs or computes, besides counters, as the loop's function
    holds them while the optimizer steps."""

    def __init__(
        self,
        script: Script,
        loop: Loop | Function,
        stream: list[_Entry],
        function: Function | None,
        stepping: int,
    ) -> None:
        self.script, self.loop, self.function, self.stepping = script, loop, function, stepping
        self.own = [(i, e.statement) for i, e in enumerate(stream) if e.function is function]
        self.in_loop = {t for node in ast.walk(loop) for t in _targets(node)}
        self.loop_targets = _targets(loop) if isinstance(loop, ast.For) else set()
        self.iterating = set(self.loop_targets)  # and what the iteration derives from them
        for index, statement in self.own:
            if index < stepping and _texts(statement) & self.iterating:
                self.iterating |= _targets(statement)

    def logged(self) -> list[_Candidate]:
        """What the logs after the optimizer step label as the step's number."""
        found: list[_Candidate] = []
        for index, statement in self.own:
            if index <= self.stepping:
                continue
            for call in _direct_calls(statement):
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
            if not _global_index(statement.value, self.iterating):
                continue
            if index < self.stepping:
                found.append(_Candidate(ast.unparse(statement.targets[0]), statement.value, False))
            elif self._unchanged(statement.value, index):
                found.append(self._expression(statement.value))
        return found

    def numbers(self, candidate: _Candidate, restarts: bool) -> bool:
        """It changes every iteration, and, where the loop's index restarts every epoch, it
        counts across epochs (an epoch offset, or the caller's running count)."""
        reads = _texts(candidate.value)
        if not reads & self.iterating:
            return False
        if not restarts:
            return True
        function = self.function
        running = set(_step_parameters(function)) if function else set()
        return _has_product(candidate.value) or bool(reads & running)

    def reassigned(self, name: str) -> bool:
        """`it = len(loader) * epoch + it`: the iteration gives the loop variable a new value."""
        return any(name in _targets(statement) for _, statement in self.own)

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
            _targets(statement) & reads
            for index, statement in self.own
            if self.stepping < index < at
        )

    def _expression(self, expression: ast.expr) -> _Candidate:
        text = self.script.segment(expression)
        text = text if "\n" not in text else ast.unparse(expression)
        top = not (_texts(expression) & (self.in_loop - self.loop_targets))
        return _Candidate(text, expression, top)


def find(tree: ast.Module, code: str, loop_line: int | None, step_expr: str | None) -> StepLoop:
    script = Script(tree, code)
    refusal = captured_step(tree, lambda statement: STEP in script.reaches(statement))
    if refusal is not None:
        raise FindError(refusal)
    loop: Loop | Function | None = find_step_loop(script, loop_line)
    if loop is None:
        loop = _without_loop(script)
    found = _Locator(script, loop).locate(loop.body)
    function = loop if isinstance(loop, _FUNCTIONS) else script.function_of(loop)
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


def _without_loop(script: Script) -> Function:
    """No loop of this file trains: a library's loop (refused here, with what runs it), or a
    step function that a loop in another file calls, else the question for loop_line."""
    library = library_loop(script.tree, script.code)
    if library is not None:
        raise LibraryLoopError(library)
    function = step_function(script)
    if function is None:
        raise FindError(f"{NO_LOOP}; {LOOP_HINT}", "loop_line")
    return function


def step_function(script: Script) -> Function | None:
    """The one function of this file that runs a whole training step (backward and optimizer
    step) and that this file never calls: another file's loop calls it once per step."""
    every = [*script.functions.values(), *script.methods.values()]
    found = [
        function
        for functions in every
        for function in functions
        if {STEP, BACKWARD} <= script.reaches(function) and not script.called_in_file(function)
    ]
    return found[0] if len(found) == 1 else None


def stepped_optimizers(script: Script, loop: Loop | Function) -> tuple[str, ...]:
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
