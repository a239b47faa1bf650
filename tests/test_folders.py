"""A folder replaced whole (nsysgen/folders.py): in one exchange where Linux has renameat2, by
two renames otherwise; either way the folder is the new one and the old one is left to delete."""

from __future__ import annotations

from pathlib import Path

import pytest

import nsysgen.folders
from nsysgen.folders import swap_in


def folder(path: Path, text: str) -> Path:
    path.mkdir()
    (path / "f").write_text(text)
    return path


def test_a_new_folder_is_moved_into_place(tmp_path: Path) -> None:
    left = swap_in(folder(tmp_path / "stage", "new"), tmp_path / "out")
    assert (tmp_path / "out" / "f").read_text() == "new" and not left.exists()


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
def test_an_old_folder_is_replaced_and_left_to_delete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exchange: bool
) -> None:
    if not exchange:
        monkeypatch.setattr(nsysgen.folders, "_exchange", lambda a, b: False)
    folder(tmp_path / "out", "old")
    left = swap_in(folder(tmp_path / "stage", "new"), tmp_path / "out", ".mine")
    assert (tmp_path / "out" / "f").read_text() == "new"
    old = left / "f" if exchange else left / "old" / "f"
    assert old.read_text() == "old"
    assert exchange or left.name.endswith(".mine")
