"""The files an output root holds for every folder below it: one nsysgen-verify.py, and one copy
of each helper a folder's job loads (the zero-patch step helper, its ConfigMap on Kubernetes).

The verifier is nsysgen's `verify` as one standard-library script (nsysgen/shipped/verify/,
assembled with nsysgen/reports/ into one file by nsysgen/shipped/assemble.py), so that a cluster
or laptop without nsysgen can check reports. A helper is a file a target marks `shared`
(nsysgen/output/render.py ArtifactSpec). Every folder's scripts find them above them (the output
root, or a sweep's root below it), so a reviewed tree holds one copy, not one per folder or
sweep point. They are written with the folders, under the output root's lock, and checked and
regenerated with them.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from nsysgen.output.manifest import file_mode
from nsysgen.output.render import RenderedFile, header, render_template
from nsysgen.shipped import source_text

VERIFIER = "nsysgen-verify.py"
State = Literal["current", "missing", "changed"]


def verifier_text() -> str:
    # The shared header: how check tells nsysgen's shared files (nsysgen/drivers/check_shared.py).
    return render_template(
        "common/nsysgen-verify.py.j2",
        header=header("#", shared=True),
        source=source_text("verify"),
    )


def verifier() -> RenderedFile:
    return RenderedFile(VERIFIER, verifier_text(), True, shared=True)


def shared_state(output_dir: Path, file: RenderedFile | None = None) -> State:
    """One shared file of the output root (the verifier by default) against this nsysgen's."""
    file = file or verifier()
    path = output_dir / file.path
    if not path.is_file() or path.is_symlink() or _linked_above(output_dir, file.path):
        return "missing"
    same = path.read_bytes() == file.text.encode()
    return "current" if same and path.stat().st_mode & 0o777 == file_mode(file.executable) else (
        "changed"
    )  # fmt: skip


def _linked_above(output_dir: Path, relative: str) -> bool:
    """Whether a folder between the root and the file is a symbolic link (written through, it
    would put the file elsewhere)."""
    parent = output_dir
    for part in Path(relative).parts[:-1]:
        parent = parent / part
        if parent.is_symlink():
            return True
    return False


def needed(files: Iterable[RenderedFile]) -> list[RenderedFile]:
    """The verifier and each distinct shared file of `files`, by path, in path order."""
    by_path = {f.path: f for f in files if f.shared}
    by_path[VERIFIER] = verifier()
    return [by_path[path] for path in sorted(by_path)]


def write_shared(output_dir: Path, files: Iterable[RenderedFile] = ()) -> dict[str, State]:
    """Write each of the root's shared files (the verifier and `files`) that is not current
    (atomically: a reader sees the old file or the new one); returns each one's state before.
    The caller holds the output lock."""
    before: dict[str, State] = {}
    for file in needed(files):
        state = before[file.path] = shared_state(output_dir, file)
        if state != "current":
            _write(output_dir, file)
    return before


def _write(output_dir: Path, file: RenderedFile) -> None:
    target = output_dir / file.path
    for parent in reversed(target.relative_to(output_dir).parents[:-1]):
        folder = output_dir / parent
        if folder.is_symlink():
            folder.unlink()  # never written through: replaced by a real folder
        folder.mkdir(exist_ok=True)
    if target.is_symlink():
        target.unlink()
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    partial = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(file.text)
        partial.chmod(file_mode(file.executable))
        partial.replace(target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
