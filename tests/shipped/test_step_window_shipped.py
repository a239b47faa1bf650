"""The step helper as nsysgen ships it (nsysgen_window.py, assembled from the modules of
nsysgen/shipped/step_window/): one file that loads with the standard library alone, holds what
the package holds, and is the same bytes every time (tests/shipped/test_assemble.py reads it
with ruff)."""

from __future__ import annotations

import ast
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

from nsysgen.shipped import STEP_WINDOW_FILE, source_text
from nsysgen.shipped import step_window as package
from tests.conftest import REPO

# Runs the shipped file in a Python without site-packages (-S) or the user's paths (-I), where
# torch cannot be imported, and prints the modules it imported.
PROBE = """\
import json, sys
before = set(sys.modules)
import nsysgen_window
nsysgen_window.arm()
print(json.dumps({
    "new": sorted(set(sys.modules) - before),
    "active": nsysgen_window.window.active,
    "armed": any(type(f).__name__ == "_AfterTorch" for f in sys.meta_path),
}))
"""


def shipped(tmp_path: Path) -> Path:
    path = tmp_path / STEP_WINDOW_FILE
    path.write_text(source_text("step_window"), encoding="utf-8")
    return path


def test_it_loads_and_arms_with_the_standard_library_alone(tmp_path: Path) -> None:
    shipped(tmp_path)
    env = {
        "PATH": os.environ["PATH"],
        "NSYSGEN_PROFILE_FIRST_STEP": "3",
        "NSYSGEN_PROFILE_LAST_STEP": "5",
        "NSYSGEN_PROFILE_RANKS": "0",
        "RANK": "0",
    }
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", f"import sys; sys.path.insert(0, '.')\n{PROBE}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    outside = [m for m in seen["new"] if m.partition(".")[0] not in sys.stdlib_module_names]
    assert outside == ["nsysgen_window"]
    assert seen["active"] and seen["armed"]
    assert "typing" not in seen["new"]  # it loads in every process of a job: typing is not


def test_it_holds_every_name_the_package_exports(tmp_path: Path) -> None:
    tree = ast.parse(shipped(tmp_path).read_text(encoding="utf-8"))
    defined = {
        node.name if isinstance(node, ast.FunctionDef | ast.ClassDef) else ast.unparse(target)
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.Assign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node])
    }
    assert set(package.__all__) <= defined
    assert ast.get_docstring(tree) == inspect.cleandoc(package.__doc__ or "")


def test_the_same_bytes_in_every_process() -> None:
    """Assembling sorts what it merges: no hash seed changes the file."""
    code = "from nsysgen.shipped import source_text; print(source_text('step_window'), end='')"
    texts = {
        subprocess.run(
            [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2", "3")
    }  # fmt: skip
    assert texts == {source_text("step_window")}
