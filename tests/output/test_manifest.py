"""The manifest (nsysgen/output/manifest.py): it reads back as written, records explicit file
modes and digests, and a manifest that nsysgen did not write as it is (not JSON, not an object,
a key missing, a path leaving the folder, itself listed) is refused naming the file."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from nsysgen import __version__
from nsysgen.output.manifest import (
    MANIFEST_NAME,
    FileRecord,
    Manifest,
    TamperedFile,
    build_manifest,
    is_safe_relative,
)
from nsysgen.output.render import RenderedFile


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("a", True), ("a/b.sh", True), ("x+y_z-1.txt", True), (".hidden", False),
        ("../a", False), ("a/../b", False), ("/abs", False), ("a//b", False), ("", False),
        ("a b", False), ("x/.", False), (5, False),
    ],
)  # fmt: skip
def test_only_plain_relative_names_are_safe(name: object, safe: bool) -> None:
    assert is_safe_relative(name) is safe


def test_a_built_manifest_reads_back_with_modes_digests_and_sorted_choices(tmp_path: Path) -> None:
    files = [RenderedFile("b.sh", "echo\n", True), RenderedFile("a.md", "x", False)]
    manifest = build_manifest(
        files, "nsysgen a=1", ("a=1",), (), {"z": "1", "a": "2"}, inputs={"t.py": "ab"}, root=".."
    )
    assert manifest.files == {
        "b.sh": FileRecord(hashlib.sha256(b"echo\n").hexdigest(), "0755"),
        "a.md": FileRecord(hashlib.sha256(b"x").hexdigest(), "0644"),
    }
    data = json.loads(manifest.to_text())
    assert data["generated_by"] == f"nsysgen {__version__}"
    assert list(data["choices"]) == ["a", "z"] and list(data["files"]) == ["a.md", "b.sh"]
    assert (data["inputs"], data["root"]) == ({"t.py": "ab"}, "..")
    assert "input_keys" not in data  # no --config-dir file: nothing to record
    path = tmp_path / MANIFEST_NAME
    path.write_text(manifest.to_text())
    assert Manifest.read(path) == manifest


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"[1]", "not a JSON object"),
        (b"\xff", "not readable as JSON ('utf-8' codec can't decode byte 0xff in position 0"),
        (b'{"command": "x"}', "not an nsysgen manifest (no 'overrides' key)"),
    ],
)
def test_a_manifest_that_is_not_one_is_refused(tmp_path: Path, text: bytes, message: str) -> None:
    path = tmp_path / MANIFEST_NAME
    path.write_bytes(text)
    with pytest.raises(TamperedFile) as raised:
        Manifest.read(path)
    assert raised.value.user_message().startswith(f"error: {path}: {message}")


@pytest.mark.parametrize("listed", ["../x", MANIFEST_NAME])
def test_a_manifest_listing_a_file_it_may_not_touch_is_refused(tmp_path: Path, listed: str) -> None:
    manifest = Manifest("nsysgen", (), (), {}, {listed: FileRecord("0", "0644")})
    path = tmp_path / MANIFEST_NAME
    path.write_text(manifest.to_text())
    with pytest.raises(TamperedFile) as raised:
        Manifest.read(path)
    assert str(raised.value) == (
        f"{path}: lists {listed!r}, which is not a file nsysgen writes inside the folder; "
        "restore the manifest from version control"
    )
