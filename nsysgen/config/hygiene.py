"""What any config value may contain, whatever field it is in: checked before the schemas.

Generated files are shell, YAML, Python and Markdown that people run as root. Every value is
emitted through a quoting filter or a YAML library, but a line-oriented format (an `#SBATCH`
line, a comment, a header) cannot hold a line break at all, and one stray control character is
never what a config author meant. So no string anywhere may hold a control character, and every
number must be finite: one rule for all fields, so a new field cannot forget it.

Resolvers (`${oc.env:X}`, `${oc.decode:...}`, custom ones) are refused before anything resolves
them: they would copy the caller's environment (often a secret) into committed files.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterator
from typing import Any

from nsysgen.errors import Issue

# C0 and C1 controls, DEL, and the Unicode line and paragraph separators (line breaks to YAML
# and to many editors).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# `${name:...}`: a resolver call; `${a.b}` (no colon) is a plain node reference.
_RESOLVER = re.compile(r"\$\{\s*([\w.\-]+)\s*:")
# Integers beyond this are no count or duration anyone means, and lose precision in JSON.
MAX_INTEGER = 2**53


def describe(char: str) -> str:
    name = unicodedata.name(char, "") or {"\n": "line feed", "\r": "carriage return"}.get(
        char, "control character"
    )
    return f"U+{ord(char):04X} {name.lower()}"


def walk(node: Any, path: str = "") -> Iterator[tuple[str, Any, bool]]:
    """(path, value, is_key) for every leaf and every mapping key under `node`."""
    if isinstance(node, dict):
        for key, value in node.items():
            child = f"{path}.{key}" if path else str(key)
            yield child, key, True
            yield from walk(value, child)
    elif isinstance(node, (list, tuple)):
        for index, value in enumerate(node):
            yield from walk(value, f"{path}[{index}]")
    else:
        yield path, node, False


def control_character(text: str) -> str | None:
    """The first control character in `text`, described, or None."""
    match = _CONTROL.search(text)
    return describe(match.group(0)) if match else None


def value_issues(data: dict[str, Any]) -> list[Issue]:
    """Every control character, non-finite number or out-of-range integer in `data`."""
    issues = []
    for path, value, is_key in walk(data, ""):
        where = "key" if is_key else "value"
        if isinstance(value, str):
            found = control_character(value)
            if found:
                issues.append(
                    Issue(
                        path,
                        f"{where} contains {found} (allowed: printable text without line "
                        "breaks, tabs or other control characters)",
                    )
                )
        elif isinstance(value, float) and not math.isfinite(value):
            issues.append(Issue(path, f"{value} is not a finite number (allowed: a finite number)"))
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INTEGER:
            issues.append(
                Issue(path, f"{value} is out of range (allowed: -2^53 .. 2^53, and the schema's)")
            )
    return sorted(set(issues))


def resolver_issues(data: Any, path: str = "") -> list[Issue]:
    """Every string in `data` (an unresolved config) that calls a resolver."""
    issues = []
    for where, value, _ in walk(data, path):
        if isinstance(value, str):
            match = _RESOLVER.search(value)
            if match:
                issues.append(
                    Issue(
                        where,
                        f"calls the resolver {match.group(1)!r}; resolvers would copy this "
                        "machine's environment (often secrets) into generated files (allowed: "
                        "plain values and ${path.to.key} references; pass run-time values "
                        "through the job's environment)",
                    )
                )
    return issues
