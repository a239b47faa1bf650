"""Rebuild every generated document, table and committed output from the code, in one command:

    python -m scripts.regenerate          # write what is stale, and say what changed
    python -m scripts.regenerate --check  # write nothing; exit 1 and name what is stale
    python -m scripts.regenerate --only layers  # one of them (generated, golden, ...)

What it rebuilds, each from its one source (GENERATORS below): generated/ (every experiment
compiled, and the output root's verifier), tests/golden/<case>/out (tests/compile/test_golden.py's
CASES), the golden plans of tests/golden/plan and patches of tests/golden/patches,
schemas/editor/ (from schemas/), nsysgen/profile/calibration.json (bench/calibration/'s
measurements), the README's lint table (the lint registry) and CONTRIBUTING.md's layers (the
import graph, scripts/layers.py). CI runs `--check` (tests/scripts/test_regenerate.py): a change
to the code that changes one of them without regenerating it fails there, with this command to
run. Review the diff before committing it, as for any golden file.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib.util
import io
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from nsysgen.cli import main as nsysgen
from nsysgen.config.editor_schemas import EDITOR_DIR, editor_schema_texts
from nsysgen.profile.lints import markdown_table
from nsysgen.targets import target_lints
from scripts.golden_sources import (
    CASES,
    EXPERIMENTS,
    PATCHED,
    REPO,
    SCRIPTS,
    corpus_patch,
    script_patch,
    tree_bytes,
)
from scripts.layers import layers_section

COMMAND = "python -m scripts.regenerate"
DIFF_LINES = 60  # of the first stale file, in check mode
# Executable bits are part of a generated file (nsys-exec runs as written).
Files = dict[str, tuple[bytes, int]]


@dataclass(frozen=True)
class Generator:
    name: str  # for --only
    build: Callable[[], Files]  # repository path -> (content, permission bits)
    # Folders this generator writes whole: a file in them that it does not build is removed.
    owns: tuple[str, ...] = ()


@dataclass
class Changes:
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    diff: str = ""  # check mode: how the first stale file differs


def run_nsysgen(args: list[str]) -> str:
    """`nsysgen ARGS` in this process: its standard output (a failure stops the script)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = nsysgen(args)
    if code != 0:
        raise SystemExit(f"nsysgen {' '.join(args)} failed ({code}):\n{err.getvalue()}")
    return out.getvalue()


def compiled(args: list[str], folder: str) -> Files:
    """`nsysgen ARGS output_dir=<temporary>`, the files it writes under `folder` there."""
    with tempfile.TemporaryDirectory() as tmp:
        run_nsysgen([*args, f"output_dir={tmp}"])
        return tree_bytes(Path(tmp) / folder)


def generated() -> Files:
    files: Files = {}
    for experiment in EXPERIMENTS:
        tree = compiled([f"experiment={experiment}"], "")
        files |= {f"generated/{name}": value for name, value in tree.items()}
    return files


def golden_cases() -> Files:
    return {
        f"tests/golden/{case}/out/{name}": value
        for case, overrides in sorted(CASES.items())
        for name, value in compiled(list(overrides), "").items()
    }


def golden_patches() -> Files:
    files: Files = {}
    for name in SCRIPTS:
        files[f"tests/golden/patches/{name}.patch"] = (script_patch(name).encode(), 0o644)
    for entry in PATCHED:
        text = corpus_patch(entry)
        files[f"tests/golden/patches/corpus/{entry['file']}.patch"] = (text.encode(), 0o644)
    return files


def editor_schemas() -> Files:
    texts = editor_schema_texts(REPO / "schemas")
    return {f"schemas/{EDITOR_DIR}/{n}": (t.encode(), 0o644) for n, t in texts.items()}


def between(text: str, start: str, end: str, body: str, where: str) -> str:
    """`text` with what lies between the line that begins with `start` and `end` replaced."""
    head, found, rest = text.partition(start)
    if not found or end not in rest:
        raise SystemExit(f"{where}: no `{start}` ... `{end}` section")
    marker, _, _ = rest.partition("\n")
    _, _, tail = rest.partition(end)
    return f"{head}{start}{marker}\n{body.strip()}\n{end}{tail}"


def lint_table() -> str:
    return markdown_table(target_lints())


def section(path: str, start: str, end: str, body: Callable[[], str]) -> Callable[[], Files]:
    """A section of a hand-written document that code writes, between its two markers."""

    def build() -> Files:
        text = between((REPO / path).read_text(encoding="utf-8"), start, end, body(), path)
        return {path: (text.encode(), (REPO / path).stat().st_mode & 0o777)}

    return build


def calibration() -> Files:
    """nsysgen/profile/calibration.json, fitted from bench/calibration/'s measurements as
    `python bench/calibration/fit.py` writes it."""
    spec = importlib.util.spec_from_file_location("fit", REPO / "bench" / "calibration" / "fit.py")
    assert spec is not None and spec.loader is not None
    fit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit)
    model = fit.fit()
    model["max_abs_error_percent"] = round(max(abs(e[3]) for e in fit.errors(model)), 1)
    text = json.dumps(model, indent=2, sort_keys=True) + "\n"
    return {"nsysgen/profile/calibration.json": (text.encode(), 0o644)}


def golden_plans() -> Files:
    files: Files = {}
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # the width of plan's output when piped: one golden
    try:
        for experiment in EXPERIMENTS:
            out = run_nsysgen(["plan", f"experiment={experiment}"])
            files[f"tests/golden/plan/{experiment}.txt"] = (out.encode(), 0o644)
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns
    return files


GENERATORS = (
    Generator("generated", generated, ("generated",)),
    Generator("golden", golden_cases, tuple(f"tests/golden/{c}/out" for c in sorted(CASES))),
    Generator("patches", golden_patches, ("tests/golden/patches",)),
    Generator("plans", golden_plans, ("tests/golden/plan",)),
    Generator("schemas", editor_schemas, (f"schemas/{EDITOR_DIR}",)),
    Generator("calibration", calibration),
    Generator(
        "lint-table", section("README.md", "<!-- lint-table", "<!-- /lint-table", lint_table)
    ),
    Generator("layers", section("CONTRIBUTING.md", "<!-- layers", "<!-- /layers", layers_section)),
)


def on_disk(root: Path, folders: tuple[str, ...]) -> Iterator[str]:
    for folder in folders:
        for path in sorted((root / folder).rglob("*")):
            if path.is_file():
                yield path.relative_to(root).as_posix()


def apply(root: Path, generators: tuple[Generator, ...], write: bool) -> Changes:
    """Bring the files under `root` up to date (write=False: only say which are not)."""
    changes = Changes()
    for generator in generators:
        files = generator.build()
        stale = _update(root, files, write)
        if stale and not write and not changes.diff:
            changes.diff = _diff(root, stale[0], *files[stale[0]])
        changes.written += stale
        left_over = [name for name in on_disk(root, generator.owns) if name not in files]
        changes.removed += left_over
        if write:
            for name in left_over:
                (root / name).unlink()
            for folder in generator.owns:
                _remove_empty(root / folder)
    return changes


def _update(root: Path, files: Files, write: bool) -> list[str]:
    stale = []
    for name, (content, mode) in sorted(files.items()):
        path = root / name
        if path.is_file() and (path.read_bytes(), path.stat().st_mode & 0o777) == (content, mode):
            continue
        stale.append(name)
        if write:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
            path.chmod(mode)
    return stale


def _diff(root: Path, name: str, content: bytes, mode: int) -> str:
    """The first lines of a unified diff from the committed file to the generated one."""
    path = root / name
    old = path.read_bytes() if path.is_file() else b""
    if old == content:
        return f"{name}: mode {oct(path.stat().st_mode & 0o777)}, generated {oct(mode)}\n"
    lines = difflib.unified_diff(
        old.decode(errors="replace").splitlines(keepends=True),
        content.decode(errors="replace").splitlines(keepends=True),
        fromfile=f"{name} (committed)",
        tofile=f"{name} (regenerated)",
    )
    return "".join(list(lines)[:DIFF_LINES])


def _remove_empty(folder: Path) -> None:
    for path in sorted(folder.rglob("*"), reverse=True):
        if path.is_dir() and not any(path.iterdir()):
            shutil.rmtree(path)


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    names = [g.name for g in GENERATORS]
    parser.add_argument(
        "--only", action="append", choices=names, help="rebuild only these (default: every one)"
    )
    args = parser.parse_args(argv)
    chosen = tuple(g for g in GENERATORS if not args.only or g.name in args.only)
    changes = apply(REPO, chosen, write=not args.check)
    for name in changes.written:
        print(f"{'stale' if args.check else 'written'}: {name}")
    for name in changes.removed:
        print(f"{'left over' if args.check else 'removed'}: {name}")
    stale = bool(changes.written or changes.removed)
    if args.check and stale:
        print(changes.diff, end="", file=sys.stderr)
        print(f"generated files are stale: run `{COMMAND}` and review the diff", file=sys.stderr)
        return 1
    print(f"{COMMAND}: {'up to date' if not stale else 'done'}")
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
