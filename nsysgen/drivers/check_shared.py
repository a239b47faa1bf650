"""The output root's shared files against what its folders need today: each one missing or
changed, and each one nsysgen wrote there that no folder needs any more (`nsysgen check`
reports them, `nsysgen regenerate` writes and removes them).

nsysgen's own shared files are told by their header (nsysgen/output/render.py SHARED_HEADER),
not by a list of names: any target may share a file, and a user's file at the root is never
taken for one. They sit at the root or one folder below it (`nsysgen-site/`), never in a
setup folder or a sweep."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from nsysgen.drivers.build import SWEEP_INDEX
from nsysgen.output.manifest import MANIFEST_NAME
from nsysgen.output.render import SHARED_HEADER, RenderedFile
from nsysgen.output.shared import State, needed, shared_state

_MARK = SHARED_HEADER[0].encode()
_HEAD = 512  # the header is in a file's first lines (after a shebang at most)


def states(output_dir: Path, files: Iterable[RenderedFile]) -> list[tuple[RenderedFile, State]]:
    """(file, its state) for every shared file the folders need."""
    return [(file, shared_state(output_dir, file)) for file in needed(files)]


def _candidates(output_dir: Path) -> Iterator[Path]:
    for entry in sorted(output_dir.iterdir()):
        if entry.is_symlink():
            continue
        if entry.is_file():
            yield entry
        elif entry.is_dir() and not any(
            (entry / name).exists() for name in (MANIFEST_NAME, SWEEP_INDEX)
        ):
            yield from (f for f in sorted(entry.iterdir()) if f.is_file() and not f.is_symlink())


def _ours(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return _MARK in handle.read(_HEAD)
    except OSError:
        return False


def orphans(output_dir: Path, files: Iterable[RenderedFile]) -> list[Path]:
    """nsysgen's shared files at the output root that no folder needs any more."""
    wanted = {output_dir / file.path for file in needed(files)}
    return [p for p in _candidates(output_dir) if p not in wanted and _ours(p)]


def remove_orphans(output_dir: Path, files: Iterable[RenderedFile]) -> list[Path]:
    """Remove the orphaned shared files (and a folder they leave empty); the caller holds the
    output lock. Returns what it removed."""
    removed = orphans(output_dir, files)
    for path in removed:
        path.unlink()
        folder = path.parent
        if folder != output_dir and not any(folder.iterdir()):
            folder.rmdir()
    return removed
