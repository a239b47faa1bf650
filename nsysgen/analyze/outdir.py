"""The analysis's output folder holds one analysis: runs into it are serialised by a lock (a
second is refused, its holder named where its fresh folder shows it), and each writes into a
fresh folder beside it that then replaces it whole (as the compile does,
nsysgen/output/write.py), so that a failed run leaves the previous analysis exactly as it was.

What the fresh folder starts with: the files of the old one that the previous analysis did not
write (a user's notes stay), and the plots whose record still holds (.nsysgen-plots.json: they are
not drawn again). The previous analysis's own outputs are not carried: the new one writes its own.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

from nsysgen.analyze.errors import AnalyzeError
from nsysgen.analyze.record import RECORD
from nsysgen.analyze.render.plot import Plots
from nsysgen.folders import swap_in

STAGING = ".nsysgen-analysis-staging"


def _cannot(out: Path, error: OSError) -> AnalyzeError:
    return AnalyzeError(
        f"--output {out}: cannot write there ({error.strerror or error}); pass --output a "
        "folder you can write"
    )


def _me() -> str:
    """This run, as a fresh folder's name carries it (for the run refused beside it)."""
    host = "".join(c if c.isalnum() or c in ".-" else "_" for c in socket.gethostname())
    return f"pid{os.getpid()}@{host[:64]}"


def _holder(out: Path) -> str:
    for stage in out.parent.glob(f".{out.name}.pid*{STAGING}"):
        who = stage.name.removeprefix(f".{out.name}.").split(".")[0]
        pid, _, host = who.removeprefix("pid").partition("@")
        return f"pid {pid} on {host}"
    return "its process id is not known yet"


@contextlib.contextmanager
def locked(out: Path) -> Iterator[None]:
    """Hold the output folder's lock (flock on the folder, or on its nearest existing parent
    before the first analysis: no file is made for it); refused at once where another analysis
    holds it. A run that swaps its fresh folder in leaves the lock on the old one: a run that
    starts after the swap reads a complete analysis."""
    target = out
    while not target.is_dir() and target != target.parent:
        target = target.parent
    try:
        fd = os.open(target, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as error:
        raise _cannot(out, error) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise _cannot(out, error) from None
            raise AnalyzeError(
                f"--output {out}: another nsysgen analyze is writing it ({_holder(out)}); wait "
                "for it to end, or pass another --output"
            ) from None
        yield
    finally:
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def staged(out: Path) -> Iterator[Path]:
    """A fresh folder to write the analysis into, put in place of `out` when the block ends
    without an exception, else removed (`out` untouched). Call under locked(out)."""
    if out.is_symlink():
        raise AnalyzeError(f"--output {out}: a symbolic link; pass the folder itself")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        for leftover in out.parent.glob(f".{out.name}.*{STAGING}"):  # a crashed run's
            shutil.rmtree(leftover, ignore_errors=True)
        prefix = f".{out.name}.{_me()}."
        stage = Path(tempfile.mkdtemp(prefix=prefix, suffix=STAGING, dir=out.parent))
        stage.chmod(0o755)
        if out.is_dir():
            _carry(out, stage)
    except OSError as error:
        raise _cannot(out, error) from None
    try:
        yield stage
        try:
            stage = swap_in(stage, out, STAGING)
        except OSError as error:
            raise _cannot(out, error) from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _carry(out: Path, stage: Path) -> None:
    """Into the fresh folder: what the previous analysis did not write, and its kept plots."""
    previous = _json(out / RECORD).get("outputs")
    own = set(previous) if isinstance(previous, dict) else set()
    plots = _json(out / Plots.FILE)
    for path in out.iterdir():
        name = path.name
        if path.is_symlink():
            continue  # never followed: the analysis writes no links
        kept_plot = name in plots or name == Plots.FILE
        if own and name in own and not kept_plot:
            continue
        if name == RECORD:
            continue
        if path.is_dir():
            shutil.copytree(path, stage / name, symlinks=True)
        else:
            shutil.copy2(path, stage / name)


def _json(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
