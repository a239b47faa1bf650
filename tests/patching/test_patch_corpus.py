"""Training-loop patches on public training scripts, kept verbatim under
tests/training_scripts/corpus/ (sources and licenses in corpus.json and licenses/): the step loop
and step numbering each one gets, byte-exact golden patches that `git apply` and `patch -p1`
accept, patched scripts that compile, idempotence."""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nsysgen.patching.patch import (
    PatchError,
    analyse,
    patch_source,
    strip,
)
from nsysgen.patching.step_loop import ACCUMULATIONS
from scripts.golden_sources import CORPUS_ENTRIES, PATCHED, read
from scripts.golden_sources import corpus_patch as diff_for
from tests.conftest import REPO

pytestmark = pytest.mark.slow  # shellcheck/bash over every setup; a corpus of scripts

CORPUS = REPO / "tests" / "training_scripts" / "corpus"
GOLDEN = REPO / "tests" / "golden" / "patches" / "corpus"
ENTRIES = CORPUS_ENTRIES
NAMES = [entry["file"] for entry in ENTRIES]
# PATCHED: the scripts with a step loop (or step function) to patch; the others are refused or
# hand their loop to a library (tests/patching/test_find_issue38.py checks those).
PATCHED_NAMES = [entry["file"] for entry in PATCHED]


def source_of(name: str) -> str:
    return read(CORPUS / name)


def fix_of(entry: dict[str, Any]) -> tuple[int | None, str | None]:
    """The settings the corpus entry's error asks for, as a user sets them."""
    fix: dict[str, Any] = entry.get("fix", {})
    return fix.get("loop_line"), fix.get("step_expr")


def test_corpus_is_large_and_permissive() -> None:
    assert len(ENTRIES) >= 30
    assert len({entry["repo"] for entry in ENTRIES}) >= 18
    assert {entry["license"] for entry in ENTRIES} <= {"MIT", "BSD-3-Clause", "Apache-2.0"}
    for entry in ENTRIES:
        assert (CORPUS / entry["license_file"]).is_file(), entry["file"]
        assert entry["url"].endswith(f"/{entry['commit']}/{entry['path']}")
    assert sorted(NAMES) == sorted(p.name for p in CORPUS.glob("*.py"))


@pytest.mark.parametrize("entry", PATCHED, ids=PATCHED_NAMES)
def test_step_loop_and_numbering(entry: dict[str, Any]) -> None:
    source = source_of(entry["file"])
    if "error" in entry:
        # Left as an error on purpose: the message lists the candidates and the fix.
        with pytest.raises(PatchError) as error:
            analyse(source)
        assert str(error.value) == entry["error"]
        assert error.value.setting in entry["fix"]
    found = analyse(source, *fix_of(entry))
    assert (found.node.lineno, found.step, found.counter) == (
        entry["loop_line"],
        entry["step"],
        entry["counter"],
    )
    assert (found.at_step, found.scope, found.accumulation) == (
        entry["at_step"],
        entry["scope"],
        entry["accumulation"],
    )
    assert found.accumulation in ACCUMULATIONS
    for expression in (found.step, found.at_step):
        if expression is not None:
            ast.parse(expression, mode="eval")  # open() and the helper evaluate them
    # The scope is the function that holds the loop (or the step function itself): the helper
    # finds at_step's frame by it.
    holder = [
        node.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.lineno <= found.node.lineno <= (node.end_lineno or 0)
        and node is not found.node
    ]
    if isinstance(found.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        holder = [found.node.name]
    assert found.scope == (holder[-1] if holder else "<module>")
    if "optimizers" in entry:
        assert list(found.optimizers) == entry["optimizers"]
    assert entry["pattern"]
    site = found.site
    ends = "every iteration" if site.block is None else f"block at line {site.block[0].lineno}"
    ends += f" when {site.when}" if site.when else ""
    assert ends == entry["ends"]


@pytest.mark.parametrize("entry", PATCHED, ids=PATCHED_NAMES)
def test_corpus_patch_matches_golden(entry: dict[str, Any], request: pytest.FixtureRequest) -> None:
    golden = GOLDEN / f"{entry['file']}.patch"
    if request.config.getoption("--update-golden"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_bytes(diff_for(entry).encode())
    assert diff_for(entry) == golden.read_bytes().decode(), "run `pytest --update-golden`"


def test_corpus_patches_apply_compile_and_are_idempotent(tmp_path: Path) -> None:
    folder = tmp_path / "tests" / "training_scripts" / "corpus"
    shutil.copytree(CORPUS, folder)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    for index, entry in enumerate(PATCHED):
        patch = str(GOLDEN / f"{entry['file']}.patch")
        # Half of them with git, half with patch(1): both must take every patch.
        tool = ["git", "apply"] if index % 2 else ["patch", "-p1", "--quiet", "-i"]
        subprocess.run([*tool, patch], cwd=tmp_path, check=True)
        patched = read(folder / entry["file"])
        compile(patched, entry["file"], "exec")
        assert patched == patch_source(source_of(entry["file"]), *fix_of(entry))
        assert patch_source(patched, *fix_of(entry)) == patched
        assert strip(patched) == source_of(entry["file"])
