"""Tools import no tests: what a tool shares with the tests (the golden sources, the layer
rules, the fuzzers' generators, the browser) lives in scripts/, which both import."""

from __future__ import annotations

import ast

from tests.conftest import REPO


def test_no_tool_imports_the_tests() -> None:
    found = []
    for path in sorted([*(REPO / "scripts").rglob("*.py"), *(REPO / "bench").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            found += [
                f"{path.relative_to(REPO)}: {name}"
                for name in names
                if name == "tests" or name.startswith("tests.")
            ]
    assert found == []
