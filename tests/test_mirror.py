"""The tests mirror the package: a module with logic, `nsysgen/<folder>/<module>.py`, has its
tests in `tests/<folder>/test_<module>.py` (or `test_<module>_<aspect>.py` beside it); a
package's `__init__.py` in `test_<package>.py` beside its folder's tests or among them; a part
of a program that nsysgen ships as one file (nsysgen/shipped/<program>/) is tested as that
program, in `tests/shipped/test_<program>*.py`. A module without one is named in EXEMPT with the
reason, and the list only shrinks: a new module without a test file fails, and so does an entry
that has its test file now or whose module is gone.

`python -m tests.test_mirror` prints the modules without a test file, as the list should read.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from tests.conftest import REPO

MOVE = "to be moved"  # a test file of its name exists in another folder (tests/compile, say)
COMPILE = "no test file yet: covered through tests/compile/ and tests/e2e/"
ANALYZE = "no test file yet: covered through tests/analyze/"
REPORTS = "no test file yet: covered through tests/analyze/ and tests/compile/test_verify*"
# Modules without a test file of their own, each with the reason: none since issue 41. The list
# only shrinks; `python -m tests.test_mirror` prints it as it should read.
EXEMPT: dict[str, str] = {}


def has_logic(path: Path) -> bool:
    """A function or a class with methods: re-exports, constants and plain data need no tests
    of their own."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) for n in ast.walk(tree))


def shipped_program(parts: tuple[str, ...]) -> str | None:
    """The program a module is a part of (`step_window` for nsysgen/shipped/step_window/x.py)."""
    if len(parts) >= 3 and parts[:2] == ("nsysgen", "shipped"):
        folder = REPO.joinpath(*parts[:3])
        if folder.is_dir() and (folder / "__init__.py").is_file():
            return parts[2]
    return None


def mirrors(module: str) -> list[Path]:
    """The test files that mirror `module` (a path relative to the repository)."""
    parts = Path(module).with_suffix("").parts
    program = shipped_program(parts)
    if program is not None:
        return sorted((REPO / "tests" / "shipped").glob(f"test_{program}*.py"))
    folders = [REPO.joinpath("tests", *parts[1:-1])]
    if parts[-1] == "__init__":
        parts = parts[:-1]  # a package: beside its folder's tests, or among them
        folders = [REPO.joinpath("tests", *parts[1:-1]), REPO.joinpath("tests", *parts[1:])]
    if len(parts) == 1:
        return []  # nsysgen/__init__.py: the package itself
    stem = parts[-1]
    return sorted(
        {path for folder in folders for pattern in (f"test_{stem}.py", f"test_{stem}_*.py")
         for path in folder.glob(pattern)}
    )  # fmt: skip


def modules_with_logic() -> list[str]:
    return [
        path.relative_to(REPO).as_posix()
        for path in sorted((REPO / "nsysgen").rglob("*.py"))
        if has_logic(path)
    ]


def untested() -> list[str]:
    return [m for m in modules_with_logic() if not mirrors(m)]


def reason(module: str) -> str:
    """The reason to write for a module without a test file: where its tests are now."""
    parts = Path(module).with_suffix("").parts
    stem = shipped_program(parts) or (parts[-1] if parts[-1] != "__init__" else parts[-2])
    # The folders written before the tests mirrored the package: a test file of the module's
    # name there is its test file, to be moved (tests/analyze for the analysis side).
    folders = ["analyze"] if parts[1] in ("analyze", "reports") else ["compile"]
    for folder in folders:
        for pattern in (f"test_{stem}.py", f"test_{stem}_*.py"):
            found = sorted((REPO / "tests" / folder).glob(pattern))
            if found:
                return f"{MOVE}: {found[0].relative_to(REPO).as_posix()}"
    return {"analyze": ANALYZE, "reports": REPORTS}.get(parts[1], COMPILE)


def test_every_module_with_logic_has_a_test_file_or_a_reason() -> None:
    missing = [m for m in untested() if m not in EXEMPT]
    assert not missing, (
        f"write tests/<folder>/test_<module>.py for each (or name it in EXEMPT with the "
        f"reason): {missing}"
    )


def test_the_exemptions_only_shrink() -> None:
    logic = set(modules_with_logic())
    stale = [m for m in EXEMPT if m not in logic or mirrors(m)]
    assert not stale, f"remove from EXEMPT (it has a test file now, or is gone): {stale}"


def test_every_exemption_says_why() -> None:
    assert all(reason.strip() for reason in EXEMPT.values())


def as_code(text: str) -> str:
    """A reason as EXEMPT writes it: a constant's name, or the text."""
    names = {COMPILE: "COMPILE", ANALYZE: "ANALYZE", REPORTS: "REPORTS"}
    if text in names:
        return names[text]
    return f'f"{{MOVE}}{text.removeprefix(MOVE)}"' if text.startswith(MOVE) else repr(text)


if __name__ == "__main__":
    sys.stdout.write("EXEMPT: dict[str, str] = {\n")
    for module in untested():
        sys.stdout.write(f'    "{module}": {as_code(EXEMPT.get(module) or reason(module))},\n')
    sys.stdout.write("}\n")
