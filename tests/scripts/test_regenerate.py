"""scripts/regenerate.py: one command rebuilds every generated file; CI runs it in check mode,
and a generated file that the code no longer makes fails there, naming the command to run."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.regenerate import GENERATORS, Files, Generator, apply, between, run


@pytest.mark.slow
def test_nothing_generated_is_stale(capsys: pytest.CaptureFixture[str]) -> None:
    """The committed generated files are what the code makes today (slow: it compiles every
    experiment and golden case)."""
    code = run(["--check"])
    out, err = capsys.readouterr()
    assert code == 0, out + err


def files() -> Files:
    return {"out/a.txt": (b"a\n", 0o644), "out/run.sh": (b"#!/bin/sh\n", 0o755)}


def test_stale_files_are_named_in_check_mode_and_written_otherwise(tmp_path: Path) -> None:
    (tmp_path / "out" / "old").mkdir(parents=True)
    (tmp_path / "out" / "old" / "gone.txt").write_text("left over\n")
    (tmp_path / "out" / "a.txt").write_text("a\n")
    (tmp_path / "out" / "a.txt").chmod(0o644)
    generators = (Generator("demo", files, ("out",)),)
    checked = apply(tmp_path, generators, write=False)
    assert checked.written == ["out/run.sh"] and checked.removed == ["out/old/gone.txt"]
    assert not (tmp_path / "out" / "run.sh").exists()  # check mode writes nothing
    assert checked.diff.startswith("--- out/run.sh (committed)\n+++ out/run.sh (regenerated)\n")
    written = apply(tmp_path, generators, write=True)
    assert (written.written, written.removed) == (checked.written, checked.removed)
    assert (tmp_path / "out" / "run.sh").stat().st_mode & 0o777 == 0o755
    assert not (tmp_path / "out" / "old").exists()
    again = apply(tmp_path, generators, write=False)
    assert (again.written, again.removed) == ([], [])


def test_a_mode_change_alone_is_stale(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "a.txt").write_text("a\n")
    (tmp_path / "out" / "run.sh").write_text("#!/bin/sh\n")
    (tmp_path / "out" / "run.sh").chmod(0o644)
    changes = apply(tmp_path, (Generator("demo", files),), write=False)
    assert changes.written == ["out/run.sh"]
    assert changes.diff == "out/run.sh: mode 0o644, generated 0o755\n"


def test_a_section_is_replaced_between_its_markers_and_nothing_else() -> None:
    text = "intro\n<!-- table: generated -->\nold\nrows\n<!-- /table -->\nafter\n"
    new = between(text, "<!-- table", "<!-- /table -->", "\nnew row\n", "X.md")
    assert new == "intro\n<!-- table: generated -->\nnew row\n<!-- /table -->\nafter\n"
    with pytest.raises(SystemExit, match="X.md: no `<!-- other` ... `<!-- /other -->` section"):
        between(text, "<!-- other", "<!-- /other -->", "", "X.md")


def test_every_generator_has_its_own_name() -> None:
    names = [g.name for g in GENERATORS]
    assert len(set(names)) == len(names)
