"""The step window's variables are spelled once: in nsysgen/shipped/step_window/names.py (and
the folder a patched loop imports the helper from, in nsysgen/shipped/__init__.py). The
profile side, the patch, the targets and the templates take them from there: no string literal
in the code and no template text spells one (comments and docstrings may name them)."""

from __future__ import annotations

import ast
import re

from nsysgen.shipped import HELPER_DIR
from nsysgen.shipped.step_window import names
from tests.conftest import REPO

SPELLED = re.compile(r"NSYSGEN_(?:PROFILE_[A-Z_]+|HELPER_(?:DIR|LOG))")
HOMES = {"nsysgen/shipped/step_window/names.py", "nsysgen/shipped/__init__.py"}


def literals(path: str) -> list[str]:
    """The string literals of a module that are not docstrings."""
    tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    ]


def test_no_module_spells_a_window_variable_but_its_home() -> None:
    spelled = {
        path: found
        for p in sorted((REPO / "nsysgen").rglob("*.py"))
        if (path := str(p.relative_to(REPO))) not in HOMES
        if (found := [s for s in literals(path) if SPELLED.search(s)])
    }
    assert spelled == {}


def test_no_template_spells_one_outside_its_comments() -> None:
    spelled = {}
    for template in sorted((REPO / "nsysgen" / "templates").rglob("*.j2")):
        code = [
            line
            for line in template.read_text(encoding="utf-8").splitlines()
            if not line.lstrip().startswith("#") and "README" not in template.name
        ]
        if found := [line for line in code if SPELLED.search(line)]:
            spelled[template.name] = found
    assert spelled == {}


def test_the_homes_name_every_variable_the_launch_passes() -> None:
    assert names.VARIABLES == (
        "NSYSGEN_PROFILE_FIRST_STEP", "NSYSGEN_PROFILE_LAST_STEP", "NSYSGEN_PROFILE_RANKS",
        "NSYSGEN_PROFILE_OPTIMIZER_STEPS", "NSYSGEN_PROFILE_STEP_EXPR",
        "NSYSGEN_PROFILE_STEP_SCOPE", "NSYSGEN_HELPER_LOG",
    )  # fmt: skip
    assert HELPER_DIR == "NSYSGEN_HELPER_DIR"
