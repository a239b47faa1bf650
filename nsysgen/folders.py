"""A folder replaced whole in one step: a fresh folder built beside it is swapped in with one
renameat2(RENAME_EXCHANGE) (two renames where the call is unavailable), so that readers see the
old folder or the new one, never a mix (the compile's output, the analysis's)."""

from __future__ import annotations

import ctypes
import tempfile
from pathlib import Path

STAGING = ".nsysgen-staging"  # the suffix of the old folder's name where two renames are used


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


def swap_in(staging: Path, folder: Path, suffix: str = STAGING) -> Path:
    """Put `staging` in place of `folder`; returns the path left to delete (the old folder,
    under a name ending in `suffix` where two renames were used: a crash leaves it for the next
    run's clean-up)."""
    if not folder.exists():
        staging.rename(folder)
        return staging  # no longer exists: nothing to delete
    if not _exchange(staging, folder):
        # Two renames: a crash between them leaves the old folder under the staging name.
        old = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=suffix, dir=folder.parent))
        folder.rename(old / "old")
        staging.rename(folder)
        return old
    return staging
