"""Files a config points at (the training script of `workload.<kind>.source`), read once.

They are read during validation, not while artifacts are rendered, so that `plan`, compile and
`check` accept and refuse exactly the same inputs, and their sha256 goes into the manifest:
`check` then reports a training script that changed since the folder was compiled.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from nsysgen.errors import Issue
from nsysgen.model import Config, SourceSettings, TrainingPatch
from nsysgen.patching.library import LibraryLoop, library_loop
from nsysgen.patching.patch import (
    PatchError,
    analyse,
    patch_library,
    patch_source,
    unified_patch,
)
from nsysgen.patching.syntax import parse
from nsysgen.profile.workloads.steps import METHOD_TEXT


def training_patch(config: Config) -> TrainingPatch | Issue | None:
    """The patch for the workload's own script, an Issue saying why there is none, or None
    when the setup has no script to patch."""
    settings = config.workload.settings
    method = config.setup.step_method
    if method not in ("hook", "patch") or not isinstance(settings, SourceSettings):
        return None
    if not settings.source:
        return None
    source_path = settings.source
    field = f"workload.{config.workload.kind}.source"
    try:
        # newline="": CRLF files keep their line endings, so their patch applies.
        with Path(source_path).open(encoding="utf-8", newline="") as file:
            source = file.read()
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        return Issue(
            field,
            f"cannot read {source_path} ({reason}) (allowed: a UTF-8 Python file, its path "
            "relative to the current directory)",
        )
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
    try:
        found = analyse(source, settings.loop_line, settings.step_expr)
        patched = patch_source(source, settings.loop_line, settings.step_expr)
    except PatchError as error:
        loop = _library_loop(source) if settings.loop_line is None else None
        if loop is not None and settings.step_expr is None:
            return _library_patch(source_path, source, digest, loop, method, field)
        if error.setting is not None:
            field = f"workload.{config.workload.kind}.{error.setting}"
        return Issue(field, f"{source_path}: {error}")
    file_name = source_path.replace("\\", "/").rpartition("/")[2]
    at_step = found.at_step if settings.step_expr is None else settings.step_expr
    # In the helper's words: it names a counter "<expression> in <file>:<function>".
    scope = f"{file_name}:{found.scope}"
    numbered = (
        f"{at_step} in {scope} (read while the optimizer steps)" if at_step else found.counter
    )
    if settings.step_expr is not None:
        where = "at the top of each iteration" if method == "patch" else "while the optimizer steps"
        numbered = f"{at_step} in {scope} (workload.{config.workload.kind}.step_expr, read {where})"
    detected = tuple(
        (what, " ".join(how.split()))  # one line each: they go into comments and tables
        for what, how in (
            ("step loop", f"{source_path}:{found.node.lineno} (in {found.scope})"),
            ("step number", numbered),
            ("accumulation", found.accumulation),
            *_several(found.optimizers, config.capture.optimizer_steps),
            ("method", METHOD_TEXT[method]),
        )
    )
    return TrainingPatch(
        source_path,
        digest,
        unified_patch(source_path, source, patched) if method == "patch" else "",
        detected,
        at_step,
        scope,
    )


def decided(patch: TrainingPatch) -> str:
    """A digest of what nsysgen decided from the script (the patch, the step loop and its line,
    the numbering, the library), which the manifest records instead of the file's hash: `check`
    fails where regenerating would change what runs, never for an edit that changes none of it
    (a learning rate)."""
    facts = [patch.diff, patch.detected, patch.at_step, patch.scope, patch.library_first]
    return hashlib.sha256(json.dumps([*facts, patch.library]).encode()).hexdigest()


def _library_loop(source: str) -> LibraryLoop | None:
    try:
        return library_loop(parse(source), source)
    except SyntaxError:
        return None


def _library_patch(
    path: str, source: str, digest: str, loop: LibraryLoop, method: str, field: str
) -> TrainingPatch | Issue:
    """The loop is a library's: the helper reads the library's counter at run time (hook), or
    the patch attaches the library's step callback (patch)."""
    diff = ""
    if method == "patch":
        try:
            diff = unified_patch(path, source, patch_library(source))
        except PatchError as error:
            return Issue(field, f"{path}: {error}")
    how = (
        "patch (training-loop.patch: window.attach(trainer) before the loop adds the "
        "library's step callback; steps end at the optimizer step)"
        if method == "patch"
        else METHOD_TEXT[method]
    )
    detected = (
        ("step loop", f"the {loop.library.display}'s own, run at {path}:{loop.line} ({loop.call})"),
        (
            "step number",
            f"{loop.library.counter}, the number its logs give the step, read at run time",
        ),
        ("method", how),
    )
    return TrainingPatch(
        path, digest, diff, detected, None, "", loop.library.first, loop.library.display
    )


def _several(optimizers: tuple[str, ...], per_step: int | None) -> tuple[tuple[str, str], ...]:
    """Several optimizers stepped in the loop: say how they are counted, before the run."""
    if len(optimizers) < 2:
        return ()
    names = ", ".join(optimizers)
    # 1 (the default) passes the helper no count (workload/steps.py): it learns the cycle.
    if (per_step or 1) != 1:
        return (("optimizers", f"{names}: {per_step} optimizer steps make one step (set)"),)
    return (
        (
            "optimizers",
            f"{names} step in the loop: the helper learns before the window how many optimizer "
            "steps make one training step (the cycle of distinct optimizers; "
            "capture.optimizer_steps overrides it)",
        ),
    )
