"""The verifier an output root shares (nsysgen/output/shared.py): missing, changed in content or
mode, or current; written only when not current, executable, and in place of a symbolic link
without writing through it."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsysgen.output.shared import VERIFIER, shared_state, verifier_text, write_shared


@pytest.fixture(scope="module")
def text() -> str:
    return verifier_text()


def test_the_verifier_is_written_once_and_then_current(tmp_path: Path, text: str) -> None:
    assert shared_state(tmp_path) == "missing"
    assert write_shared(tmp_path) == {VERIFIER: "missing"}
    path = tmp_path / VERIFIER
    assert path.read_text() == text
    assert path.stat().st_mode & 0o777 == 0o755
    assert shared_state(tmp_path) == "current"
    before = path.stat().st_ino
    assert write_shared(tmp_path) == {VERIFIER: "current"}
    assert path.stat().st_ino == before  # not rewritten
    assert sorted(p.name for p in tmp_path.iterdir()) == [VERIFIER]  # no temporary file left


def test_a_changed_content_or_mode_is_changed_and_restored(tmp_path: Path, text: str) -> None:
    write_shared(tmp_path)
    path = tmp_path / VERIFIER
    path.chmod(0o644)
    assert shared_state(tmp_path) == "changed"
    assert write_shared(tmp_path) == {VERIFIER: "changed"}
    assert shared_state(tmp_path) == "current"
    path.write_text(text + "# edited\n")
    assert shared_state(tmp_path) == "changed"
    write_shared(tmp_path)
    assert path.read_text() == text


def test_a_symbolic_link_is_replaced_not_written_through(tmp_path: Path, text: str) -> None:
    elsewhere = tmp_path / "elsewhere.py"
    elsewhere.write_text(text)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / VERIFIER).symlink_to(elsewhere)
    assert shared_state(tmp_path / "out") == "missing"
    elsewhere.write_text("mine\n")
    assert write_shared(tmp_path / "out") == {VERIFIER: "missing"}
    assert not (tmp_path / "out" / VERIFIER).is_symlink()
    assert elsewhere.read_text() == "mine\n"


def test_the_verifier_is_one_python_script(text: str) -> None:
    assert text.startswith("#!/usr/bin/env python3\n")
    compile(text, VERIFIER, "exec")  # one file, valid Python
