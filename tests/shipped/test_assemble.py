"""shipped/assemble.py: a package of small modules becomes one standard-library file, the same
bytes every time, and a part that cannot go into such a file is refused with the reason."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from nsysgen.shipped.assemble import SHIPPED, AssembleError, assemble, parts
from tests.conftest import REPO

INIT = '"""The shipped file\'s docstring."""\n\nPARTS = ("first", "second")\n'
FIRST = '''\
"""A part's own docstring (left out)."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is not imported at run time: this file loads in every process
if TYPE_CHECKING:
    from typing import Any

LIMIT = 3


def first(value: Any) -> int:
    return len(sys.argv) + LIMIT
'''
SECOND = '''\
"""Another part."""

from __future__ import annotations

import os
import sys

from nsysgen.shipped.demo.first import LIMIT, first

TYPE_CHECKING = False  # typing is not imported at run time: this file loads in every process
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

# A comment above the code stays with it.
def second(env: Mapping[str, Any]) -> int:
    return first(env) + LIMIT + len(os.sep) + len(sys.argv)
'''
ASSEMBLED = '''\
"""The shipped file's docstring."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing is not imported at run time: this file loads in every process
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

LIMIT = 3


def first(value: Any) -> int:
    return len(sys.argv) + LIMIT


# A comment above the code stays with it.
def second(env: Mapping[str, Any]) -> int:
    return first(env) + LIMIT + len(os.sep) + len(sys.argv)
'''


def package(root: Path, first: str = FIRST, second: str = SECOND) -> Path:
    folder = root / "demo"
    folder.mkdir()
    (folder / "__init__.py").write_text(INIT)
    (folder / "first.py").write_text(first)
    (folder / "second.py").write_text(second)
    return root


def test_parts_are_written_in_order_with_their_imports_merged_once(tmp_path: Path) -> None:
    root = package(tmp_path)
    assert parts("demo", root) == [
        ("nsysgen.shipped.demo.first", root / "demo" / "first.py"),
        ("nsysgen.shipped.demo.second", root / "demo" / "second.py"),
    ]
    assert assemble("demo", root) == ASSEMBLED
    assert assemble("demo", root) == assemble("demo", root)


@pytest.mark.parametrize(
    ("first", "second", "error"),
    [
        (FIRST.replace("import sys", "import yaml"), SECOND,
         "first.py: imports yaml, which is not in the standard library"),
        (FIRST, SECOND.replace("LIMIT, first", "LATER, first"),
         "second.py: imports LATER, which nsysgen.shipped.demo.first does not define"),
        (FIRST, SECOND.replace("shipped.demo.first", "config.keys"),
         "second.py: imports nsysgen.config.keys, which is not an earlier part"),
        (FIRST, SECOND + "\n\nLIMIT = 4\n", "second.py: LIMIT is also defined in"),
        (FIRST.replace("import sys", "import sys as system"), SECOND, "`import ... as`"),
    ],
    ids=["not-stdlib", "not-earlier", "outside", "twice", "alias"],
)  # fmt: skip
def test_a_part_that_cannot_be_one_file_is_refused(
    tmp_path: Path, first: str, second: str, error: str
) -> None:
    root = package(tmp_path, first, second)
    with pytest.raises(AssembleError, match=re.escape(error)):
        assemble("demo", root)


PROGRAMS = sorted(p.parent.name for p in SHIPPED.glob("*/__init__.py"))


@pytest.mark.parametrize("program", PROGRAMS)
def test_every_shipped_program_reads_as_the_projects_code(program: str) -> None:
    """What nsysgen writes passes the repository's ruff rules and format, as its sources do."""
    text = assemble(program)
    stdin = f"nsysgen/shipped/{program}_assembled.py"  # read with the repository's settings
    for command in (["check", "--no-fix"], ["format", "--check"]):
        proc = subprocess.run(
            [sys.executable, "-m", "ruff", *command, "--stdin-filename", stdin, "-"],
            cwd=REPO, input=text, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
