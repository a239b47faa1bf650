"""The files an output root holds for every folder below it: one nsysgen-verify.py.

The verifier is nsysgen's `verify` as one standard-library script (nsysgen/shipped/verify/,
assembled with nsysgen/reports/ into one file by nsysgen/shipped/assemble.py),
so that a cluster or laptop without nsysgen can check reports. Every folder's scripts find it
above them (the output root, or a sweep's root below it), so a reviewed tree holds one copy, not
one per folder. It is written with the folders, under the output root's lock, and checked and
regenerated with them.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Literal

from nsysgen.output.manifest import file_mode
from nsysgen.output.render import render_template
from nsysgen.shipped import source_text

VERIFIER = "nsysgen-verify.py"


def verifier_text() -> str:
    return render_template("common/nsysgen-verify.py.j2", source=source_text("verify"))


def shared_state(output_dir: Path) -> Literal["current", "missing", "changed"]:
    """The output root's verifier against this nsysgen's."""
    path = output_dir / VERIFIER
    if not path.is_file() or path.is_symlink():
        return "missing"
    same = path.read_bytes() == verifier_text().encode()
    return "current" if same and path.stat().st_mode & 0o777 == file_mode(True) else "changed"


def write_shared(output_dir: Path) -> str:
    """Write the output root's verifier if it is not current (atomically: a reader sees the old
    file or the new one); returns its state before. The caller holds the output lock."""
    state = shared_state(output_dir)
    if state == "current":
        return state
    target = output_dir / VERIFIER
    if target.is_symlink():
        target.unlink()
    fd, name = tempfile.mkstemp(prefix=f".{VERIFIER}.", dir=output_dir)
    partial = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(verifier_text())
        partial.chmod(file_mode(True))
        partial.replace(target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return state
