"""What a name read from a report may become in the analysis's files: a part of a file name
(never a path) and a CSV cell (never a formula). Reports come from other people's jobs: a range
or kernel name is theirs to choose."""

from __future__ import annotations

import hashlib
import re

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def op_file(op: str, what: str) -> str:
    """The file name of an operation's picture: only letters, digits, _ and - of its name (a
    name read from a report never chooses a path: `x/../../y`), with a digest of the name where
    anything was replaced, so that two names never share a file."""
    safe = _UNSAFE.sub("_", op)[:60]
    if safe != op:
        safe += "-" + hashlib.sha256(op.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"nccl_{safe}_{what}.png"


def cell(value: object) -> object:
    """A CSV cell as a spreadsheet reads it: text that it would run as a formula (`=cmd|...`)
    is kept as text, behind a quote."""
    return "'" + value if isinstance(value, str) and value.startswith(_FORMULA) else value
