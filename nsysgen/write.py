"""write: rendered files -> a folder on disk, one atomic replace per changed file."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from nsysgen.render import RenderedFile

Status = Literal["created", "identical", "updated"]


@dataclass(frozen=True)
class FileStatus:
    path: str
    status: Status


def file_mode(executable: bool) -> int:
    # Explicit modes, so the user's umask cannot change what is committed.
    return 0o755 if executable else 0o644


def write_file(target: Path, data: bytes, mode: int) -> Status:
    """Write `data` to `target` unless it is already there with that mode (mtime then stays)."""
    if target.is_file():
        if target.read_bytes() == data and (target.stat().st_mode & 0o777) == mode:
            return "identical"
        status: Status = "updated"
    else:
        status = "created"
    target.parent.mkdir(parents=True, exist_ok=True)
    # A reader never sees a half-written file: write beside it, then rename over it.
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        Path(tmp).chmod(mode)
        Path(tmp).replace(target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return status


def write_folder(files: list[RenderedFile], folder: Path) -> list[FileStatus]:
    return [
        FileStatus(f.path, write_file(folder / f.path, f.text.encode(), file_mode(f.executable)))
        for f in files
    ]
