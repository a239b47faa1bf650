"""write: rendered files -> one output folder, replaced as a whole or not at all.

Rules: a byte-identical file is never rewritten (its mtime stays); files
that nsysgen wrote earlier and no longer plans (orphans) are removed; a file nsysgen did not
write is never touched, and one in the way of a planned file stops the compile.

Atomicity: the new folder is staged beside the old one (unchanged and foreign files are hard
links, so they keep their inode and mtime) and swapped in with one renameat2(RENAME_EXCHANGE).
A crash or an error before the swap leaves the previous folder exactly as it was.

Safety: the staging folder has a fresh random name (mkdtemp), so nothing planted at a known
name can redirect a write; the output folder and every path inside it that nsysgen writes or
deletes must not be (or pass through) a symbolic link; paths come from nsysgen's own plan or from
a manifest that `Manifest.read` has checked. Compiles into one output_dir serialise on an
advisory lock (flock on the output_dir itself), so concurrent compiles never mix.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from nsysgen.errors import NsysgenError
from nsysgen.folders import STAGING, swap_in
from nsysgen.output.manifest import MANIFEST_NAME, Manifest, file_mode, sha256
from nsysgen.output.render import RenderedFile

Status = Literal["created", "identical", "updated", "removed", "kept"]


@dataclass(frozen=True)
class FileStatus:
    path: str
    status: Status


class ForeignFileError(NsysgenError):
    def user_message(self) -> str:
        return f"error: {self}"


class OutputError(NsysgenError):
    """The output folder cannot be written (a file in the way, permissions, a symlink)."""

    def user_message(self) -> str:
        return f"error: {self}"


@contextlib.contextmanager
def output_lock(output_dir: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on `output_dir` (created if needed) while writing it."""
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(output_dir, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise OutputError(f"output_dir {output_dir}: {exc.strerror or exc}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            print(f"nsysgen: waiting for another nsysgen writing to {output_dir}", file=sys.stderr)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def inside(folder: Path, name: str) -> Path:
    """`folder/name`, refusing a path that passes through a symbolic link on the way."""
    path = folder
    for part in name.split("/"):
        if path.is_symlink():
            raise OutputError(f"{path} is a symbolic link; nsysgen does not write through links")
        path = path / part
    return path


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
        target = inside(folder, f.path)
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
        state = _disk_state(inside(folder, name))
        if name in planned or state is None:
            continue
        # Only an orphan that is still exactly as nsysgen wrote it is removed.
        statuses.append(
            FileStatus(name, "removed" if sha256(state[0]) == record.sha256 else "kept")
        )
    return statuses


def write_folder(folder: Path, files: list[RenderedFile], manifest: Manifest) -> list[FileStatus]:
    """Make `folder` hold `files` plus the manifest; returns the status of each file.

    The caller holds `output_lock` on the output_dir that contains `folder`.
    """
    if folder.is_symlink():
        raise OutputError(f"{folder} is a symbolic link; nsysgen writes only real folders")
    manifest_path = folder / MANIFEST_NAME
    previous = Manifest.read(manifest_path) if manifest_path.is_file() else None
    statuses = plan_statuses(folder, files, previous)
    manifest_text = manifest.to_text()
    manifest_current = manifest_path.is_file() and manifest_path.read_text() == manifest_text
    changed = [s for s in statuses if s.status not in ("identical", "kept")]
    if not changed and manifest_current:
        return statuses
    try:
        _stage_and_swap(folder, files, changed, manifest_text)
    except OSError as exc:
        raise OutputError(f"cannot write {folder}: {exc.strerror or exc}") from None
    return statuses


def _stage_and_swap(
    folder: Path, files: list[RenderedFile], changed: list[FileStatus], manifest_text: str
) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_staging(folder)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=STAGING, dir=folder.parent))
    staging.chmod(0o755)  # mkdtemp's 0700 would hide a new folder from the job's other users
    try:
        replaced = {s.path for s in changed} | {MANIFEST_NAME}
        if folder.is_dir():
            _link_tree(folder, staging, skip=replaced)
        by_path = {f.path: f for f in files}
        for status in changed:
            if status.status == "removed":
                continue
            f = by_path[status.path]
            _write(staging / f.path, f.text.encode(), file_mode(f.executable))
        _write(staging / MANIFEST_NAME, manifest_text.encode(), 0o644)
        staging = swap_in(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _remove_stale_staging(folder: Path) -> None:
    """Staging folders a crashed compile left (the lock says no compile is running now)."""
    for leftover in folder.parent.glob(f".{folder.name}.*{STAGING}"):
        if leftover.is_symlink() or not leftover.is_dir():
            leftover.unlink()  # the link itself; never what it points to
        else:
            shutil.rmtree(leftover)


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


def remove_folder(folder: Path) -> list[FileStatus]:
    """Remove what nsysgen wrote in `folder` (unchanged files only), and the folder if empty."""
    if folder.is_symlink():
        raise OutputError(f"{folder} is a symbolic link; nsysgen removes only real folders")
    manifest_path = folder / MANIFEST_NAME
    if not manifest_path.is_file():
        return []
    statuses = plan_statuses(folder, [], Manifest.read(manifest_path))
    for status in statuses:
        if status.status == "removed":
            inside(folder, status.path).unlink()
    manifest_path.unlink()
    for directory in sorted((p for p in folder.rglob("*") if p.is_dir()), reverse=True):
        if not directory.is_symlink() and not any(directory.iterdir()):
            directory.rmdir()
    if not any(folder.iterdir()):
        folder.rmdir()
    return statuses
