"""Docstrings name files that exist: a path of the repository (or of the package, from
nsysgen/ or from the module's own folder) that a docstring gives must be there. Placeholders
(`conf/cluster/NAME.yaml`) and the wheel's own data folder are not paths of the checkout."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import REPO

FOLDERS = (
    "nsysgen|tests|bench|scripts|conf|schemas|docs|generated|analyze|profile|targets|reports|"
    "shipped|config|output|patching|cli|templates"
)
# A path: one of the folders, then segments, ending in a file's extension or a folder's "/".
PATH = re.compile(
    rf"(?<![\w./-])((?:{FOLDERS})/[\w./-]*?(?:\.(?:py|md|json|yaml|sh|j2|toml|txt|csv)\b|/))"
)
PLACEHOLDER = re.compile(r"\b[A-Z][A-Z_]+\b")
NOT_IN_CHECKOUT = {"nsysgen/_data/"}  # the wheel's copy of conf/ and schemas/


def docstrings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    kinds = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
    return [doc for node in ast.walk(tree) if isinstance(node, kinds)
            if (doc := ast.get_docstring(node, clean=False))]  # fmt: skip


def exists(named: str, module: Path) -> bool:
    return any((base / named).exists() for base in (REPO, REPO / "nsysgen", module.parent))


def test_every_path_a_docstring_names_exists() -> None:
    missing = [
        f"{module.relative_to(REPO)}: {named}"
        for module in sorted((REPO / "nsysgen").rglob("*.py"))
        for doc in docstrings(module)
        for named in PATH.findall(doc)
        if not PLACEHOLDER.search(named) and named not in NOT_IN_CHECKOUT
        if not exists(named, module)
    ]
    assert missing == []


def test_the_rule_finds_a_missing_path(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""See nsysgen/workloads.py and nsysgen/profile/analysis_job.py."""\n')
    found = [n for doc in docstrings(module) for n in PATH.findall(doc) if not exists(n, module)]
    assert found == ["nsysgen/workloads.py"]


DOCUMENTS = ("README.md", "CONTRIBUTING.md", "BENCHMARKS.md", "SECURITY.md", "tests/README.md")
DOC_PATH = re.compile(
    r"(?<![\w./-])((?:nsysgen|tests|bench|scripts|conf|schemas|docs|generated|analyze)/"
    r"[\w./-]*\.(?:py|sh|md|json|yaml|j2))"
)


def test_the_documents_name_files_that_exist() -> None:
    """The project's documents name files of the repository (tests/README.md from tests/):
    a file moved or removed leaves no stale name behind."""
    missing = []
    for document in DOCUMENTS:
        path = REPO / document
        if not path.is_file():
            continue
        bases = (REPO / "tests", REPO) if document.startswith("tests/") else (REPO,)
        for named in sorted(set(DOC_PATH.findall(path.read_text(encoding="utf-8")))):
            if not PLACEHOLDER.search(named) and not any((b / named).exists() for b in bases):
                missing.append(f"{document}: {named}")
    assert missing == []
