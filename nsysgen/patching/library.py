"""Training loops that live in libraries.

A script whose training is `Trainer(...).train()` (Hugging Face transformers, and the trainers
built on it: trl's `SFTTrainer`, `Seq2SeqTrainer`, a subclass of the script's own) or
`Trainer(...).fit(...)` (Lightning, as `lightning` or `pytorch_lightning`, also through
`LightningCLI`) has no step loop of its own: the library's loop steps the optimizer, and the
library counts the steps. `library_loop` recognises these calls in the source and says which
library owns the loop and where the script hands it over; the step helper then reads the
library's own counter (`Library.counter`) instead of a counter of the script.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from nsysgen.patching.syntax import last_name, root_name
from nsysgen.shipped.step_window import LIBRARIES as RUNTIME


@dataclass(frozen=True)
class Library:
    """A library that owns a training loop.

    key: a short name for code and settings. display: the name people know it by, for messages.
    counter: what the library counts its optimizer steps with, read during an optimizer step, as
        the number its logs give that step (the step helper reads it there).
    modules: the top-level modules whose trainer classes belong to it.
    call: the method of a trainer that runs the loop.
    first: the number its logs give the first optimizer step (the counter's offset).
    """

    key: str
    display: str
    counter: str
    modules: tuple[str, ...]
    call: str
    first: int


# transformers' Trainer increments state.global_step after each optimizer step and logs the
# step with the incremented value (trainer.py, _inner_training_loop): during the optimizer
# step, the step it will log is state.global_step + 1.
TRANSFORMERS = Library(
    "transformers",
    "Hugging Face Trainer",
    RUNTIME[0].counter,  # in the step helper's words: "state.global_step + 1 (transformers ...)"
    ("transformers", "trl"),
    "train",
    RUNTIME[0].offset,
)
# Lightning's loggers record a step's metrics at the fit loop's count of batches that stepped,
# as it is while that step runs (trainer.global_step counts optimizer steps, two a batch for a
# GAN with manual optimization).
LIGHTNING = Library(
    "lightning",
    "Lightning Trainer",
    RUNTIME[1].counter,
    ("lightning", "pytorch_lightning"),
    "fit",
    RUNTIME[1].offset,
)
# PyTorch-Ignite's Engine runs the loop (`trainer = create_supervised_trainer(...)` or
# `Engine(step_function)`, then `trainer.run(loader, max_epochs=...)`) and counts iterations.
IGNITE = Library(
    "ignite",
    "PyTorch-Ignite Engine",
    RUNTIME[3].counter,
    ("ignite",),
    "run",
    RUNTIME[3].offset,
)
LIBRARIES = (TRANSFORMERS, LIGHTNING, IGNITE)
# What makes a trainer besides a class named ...Trainer: Ignite's Engine and its factory.
_MAKERS = frozenset({"Engine", "create_supervised_trainer"})
# Not a loop owner (the script writes the loop) but a counter the helper can read the same way:
# a DeepSpeed engine increments global_steps after each optimizer step (engine.py,
# _take_model_step), so the step in progress is global_steps + 1 as its logs give it.
DEEPSPEED_COUNTER = RUNTIME[2].counter
# Lightning's CLI class: it builds a Trainer and, unless run=False, runs `fit` itself.
_CLI = "LightningCLI"


@dataclass(frozen=True)
class LibraryLoop:
    """Where a script hands its training loop to a library.

    line: the line of the call that runs the loop (`trainer.train(...)`, `trainer.fit(...)`, or
        `LightningCLI(...)` where the CLI runs it). call: that call as written (its first line).
    trainer: the trainer class as the script names it (`SFTTrainer`, `L.Trainer`).
    """

    library: Library
    line: int
    call: str
    trainer: str


def library_loop(tree: ast.Module, code: str | None = None) -> LibraryLoop | None:
    """The first call of `tree` that runs a library's training loop, or None."""
    found = library_loops(tree, code)
    return found[0] if found else None


def library_loops(tree: ast.Module, code: str | None = None) -> list[LibraryLoop]:
    """Every call of `tree` that runs a library's training loop, by line (`if resume:
    trainer.train(resume_from_checkpoint=True) else: trainer.train()` has two)."""
    classes = _trainer_classes(tree)
    if not classes:
        return []
    instances = _instances(tree, classes)
    found = [
        loop
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        for loop in [_loop_call(node, classes, instances, code)]
        if loop is not None
    ]
    return sorted(found, key=lambda loop: loop.line)


def _library_of(module: str) -> Library | None:
    top = module.split(".")[0]
    return next((library for library in LIBRARIES if top in library.modules), None)


def _trainer_classes(tree: ast.Module) -> dict[str, Library]:
    """Names that stand for a trainer class, as written (`Trainer`, `pl.Trainer`,
    `LightningCLI`, a class of the script derived from one), and whose loop it runs."""
    classes, aliases = _imports(tree)
    for node in ast.walk(tree):  # `transformers.Trainer(...)`, `L.Trainer(...)`
        if isinstance(node, ast.Attribute) and _is_trainer(node.attr):
            library = aliases.get(root_name(node))
            if library is not None:
                classes[ast.unparse(node)] = library
    return _with_makers(tree, _with_subclasses(tree, classes))


def _with_makers(tree: ast.Module, classes: dict[str, Library]) -> dict[str, Library]:
    """Functions of the script that build a trainer (`def trainer(steps) -> Trainer: return
    Trainer(...)`): a call of one stands for the trainer it returns."""
    found = dict(classes)
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        made = [
            ast.unparse(child.value.func)
            for child in ast.walk(node)
            if isinstance(child, ast.Return) and isinstance(child.value, ast.Call)
        ]
        if node.returns is not None:
            made.append(ast.unparse(node.returns))
        library = next((classes[name] for name in made if name in classes), None)
        if library is not None:
            found.setdefault(node.name, library)
    return found


def _is_trainer(name: str) -> bool:
    return name.endswith("Trainer") or name == _CLI or name in _MAKERS


def _imports(tree: ast.Module) -> tuple[dict[str, Library], dict[str, Library]]:
    """Trainer classes imported from a library (`from trl import SFTTrainer`), by the name the
    script gives them, and the library modules bound to a name (`import lightning as L`)."""
    names: dict[str, Library] = {}
    aliases: dict[str, Library] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            library = _library_of(node.module)
            for alias in node.names:
                if library is not None and _is_trainer(alias.name):
                    names[alias.asname or alias.name] = library
        elif isinstance(node, ast.Import):
            for alias in node.names:
                library = _library_of(alias.name)
                if library is not None:
                    aliases[alias.asname or alias.name.split(".")[0]] = library
    return names, aliases


def _with_subclasses(tree: ast.Module, classes: dict[str, Library]) -> dict[str, Library]:
    """`class CustomTrainer(Trainer):` runs its base's loop: add the script's subclasses."""
    grown = True
    while grown:
        grown = False
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef) or node.name in classes:
                continue
            bases = [classes[ast.unparse(b)] for b in node.bases if ast.unparse(b) in classes]
            if bases:
                classes[node.name], grown = bases[0], True
    return classes


def _instances(tree: ast.Module, classes: dict[str, Library]) -> dict[str, tuple[Library, str]]:
    """Variables that hold a trainer (`trainer = SFTTrainer(...)`): library and class."""
    found: dict[str, tuple[Library, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call):
            cls = ast.unparse(node.value.func)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets if cls in classes else []:
                found[ast.unparse(target)] = (classes[cls], cls)
    return found


def _loop_call(
    call: ast.Call,
    classes: dict[str, Library],
    instances: dict[str, tuple[Library, str]],
    code: str | None,
) -> LibraryLoop | None:
    """`trainer.train()`, `SFTTrainer(...).train()`, `cli.trainer.fit(...)`,
    `LightningCLI(Model)` (which runs fit itself unless run=False)."""
    func = call.func
    text = (ast.get_source_segment(code, call) if code else None) or ast.unparse(call)
    text = text.splitlines()[0]
    if ast.unparse(func) in classes and last_name(func) == _CLI:
        if any(k.arg == "run" for k in call.keywords):
            return None  # run=False (or a setting): the script calls fit itself
        return LibraryLoop(classes[ast.unparse(func)], call.lineno, text, ast.unparse(func))
    if not isinstance(func, ast.Attribute):
        return None
    owner = _trainer_of(func.value, classes, instances)
    if owner is None or func.attr != owner[0].call:
        return None
    return LibraryLoop(owner[0], call.lineno, text, owner[1])


def _trainer_of(
    receiver: ast.expr,
    classes: dict[str, Library],
    instances: dict[str, tuple[Library, str]],
) -> tuple[Library, str] | None:
    """The library and class of the trainer that `receiver` is, if it is one."""
    if isinstance(receiver, ast.Call) and ast.unparse(receiver.func) in classes:
        cls = ast.unparse(receiver.func)
        return classes[cls], cls
    text = ast.unparse(receiver)
    if text in instances:
        return instances[text]
    # `cli.trainer.fit(...)`: the trainer a LightningCLI built.
    if isinstance(receiver, ast.Attribute) and receiver.attr == "trainer":
        cli = instances.get(ast.unparse(receiver.value))
        if cli is not None and cli[1].endswith(_CLI):
            return cli
    return None
