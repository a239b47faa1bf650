"""write: rendered files -> one output folder, replaced as a whole or not at all.

Rules (STYLE.md section 5): a byte-identical file is never rewritten (its mtime stays); files
that nsysgen wrote earlier and no longer plans (orphans) are removed; a file nsysgen did not
write is never touched, and one in the way of a planned file stops the compile.

Atomicity: the new folder is staged beside the old one (unchanged and foreign files are hard
links, so they keep their inode and mtime) and swapped in with one renameat2(RENAME_EXCHANGE).
A crash or an error before the swap leaves the previous folder exactly as it was.
"""

from __future__ import annotations

import ctypes
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from nsysgen.errors import NsysgenError
from nsysgen.manifest import MANIFEST_NAME, Manifest, file_mode, sha256
from nsysgen.render import RenderedFile

Status = Literal["created", "identical", "updated", "removed", "kept"]


@dataclass(frozen=True)
class FileStatus:
    path: str
    status: Status


class ForeignFileError(NsysgenError):
    def user_message(self) -> str:
        return f"error: {self}"


def _disk_state(path: Path) -> tuple[bytes, int] | None:
    if not path.is_file() or path.is_symlink():
        return None
    return path.read_bytes(), path.stat().st_mode & 0o777


def plan_statuses(
    folder: Path, files: list[RenderedFile], previous: Manifest | None
) -> list[FileStatus]:
    """What writing `files` into `folder` would do to each file, without doing it."""
    owned = previous.files if previous else {}
    statuses = []
    for f in files:
        target = folder / f.path
        state = _disk_state(target)
        if (target.exists() or target.is_symlink()) and f.path not in owned:
            raise ForeignFileError(
                f"{target} exists and was not written by nsysgen; move it away or choose "
                "another job.name or output_dir"
            )
        if state is None:
            statuses.append(FileStatus(f.path, "created"))
        elif state == (f.text.encode(), file_mode(f.executable)):
            statuses.append(FileStatus(f.path, "identical"))
        else:
            statuses.append(FileStatus(f.path, "updated"))
    planned = {f.path for f in files}
    for name, record in sorted(owned.items()):
        state = _disk_state(folder / name)
        if name in planned or state is None:
            continue
        # Only an orphan that is still exactly as nsysgen wrote it is removed.
        statuses.append(
            FileStatus(name, "removed" if sha256(state[0]) == record.sha256 else "kept")
        )
    return statuses


def write_folder(folder: Path, files: list[RenderedFile], manifest: Manifest) -> list[FileStatus]:
    """Make `folder` hold `files` plus the manifest; returns the status of each file."""
    manifest_path = folder / MANIFEST_NAME
    previous = Manifest.read(manifest_path) if manifest_path.is_file() else None
    statuses = plan_statuses(folder, files, previous)
    manifest_text = manifest.to_text()
    manifest_current = manifest_path.is_file() and manifest_path.read_text() == manifest_text
    changed = [s for s in statuses if s.status not in ("identical", "kept")]
    if not changed and manifest_current:
        return statuses

    staging = folder.parent / f".{folder.name}.nsysgen-staging"
    shutil.rmtree(staging, ignore_errors=True)  # left over from a crash
    replaced = {s.path for s in changed} | {MANIFEST_NAME}
    if folder.is_dir():
        _link_tree(folder, staging, skip=replaced)
    else:
        staging.mkdir(parents=True)
    by_path = {f.path: f for f in files}
    for status in changed:
        if status.status == "removed":
            continue
        f = by_path[status.path]
        _write(staging / f.path, f.text.encode(), file_mode(f.executable))
    _write(staging / MANIFEST_NAME, manifest_text.encode(), 0o644)
    _swap_in(staging, folder)
    return statuses


def _write(target: Path, data: bytes, mode: int) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    target.chmod(mode)


def _link_tree(source: Path, staging: Path, skip: set[str]) -> None:
    """Recreate `source` under `staging` with hard links, leaving out the paths in `skip`."""
    for root, dirs, names in os.walk(source):
        rel_root = Path(root).relative_to(source)
        (staging / rel_root).mkdir(parents=True, exist_ok=True)
        shutil.copymode(root, staging / rel_root)
        for name in names:
            rel = (rel_root / name).as_posix()
            if rel in skip:
                continue
            src, dst = Path(root) / name, staging / rel_root / name
            if src.is_symlink():
                dst.symlink_to(src.readlink())
            else:
                os.link(src, dst)
        dirs.sort()


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2); False where the call is unavailable."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    result = renameat2(_AT_FDCWD, bytes(a), _AT_FDCWD, bytes(b), _RENAME_EXCHANGE)
    return bool(result == 0)


def _swap_in(staging: Path, folder: Path) -> None:
    if not folder.exists():
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging.rename(folder)
        return
    if not _exchange(staging, folder):
        # Two renames: a crash between them leaves the old folder under the staging name.
        old = folder.parent / f".{folder.name}.nsysgen-old"
        shutil.rmtree(old, ignore_errors=True)
        folder.rename(old)
        staging.rename(folder)
        staging = old
    shutil.rmtree(staging)


def remove_folder(folder: Path) -> list[FileStatus]:
    """Remove what nsysgen wrote in `folder` (unchanged files only), and the folder if empty."""
    manifest_path = folder / MANIFEST_NAME
    if not manifest_path.is_file():
        return []
    statuses = plan_statuses(folder, [], Manifest.read(manifest_path))
    for status in statuses:
        if status.status == "removed":
            (folder / status.path).unlink()
    manifest_path.unlink()
    for directory in sorted((p for p in folder.rglob("*") if p.is_dir()), reverse=True):
        if not any(directory.iterdir()):
            directory.rmdir()
    if not any(folder.iterdir()):
        folder.rmdir()
    return statuses
