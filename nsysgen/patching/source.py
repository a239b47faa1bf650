"""Source files as they are published: a byte order mark, CRLF line endings, no final newline.

The patch edits lines, never reformats them: every inserted line takes the file's own line ending
and indentation, and the diff marks a missing final newline the way `git apply` and `patch -p1`
expect.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

BOM = "\ufeff"
# Python ends lines at \n (after an optional \r); str.splitlines would also split at form feeds
# and other separators that are legal inside a line of source.
_LINE = re.compile(r"[^\n]*\n|[^\n]+$")
NO_NEWLINE = "\\ No newline at end of file\n"


def split_lines(text: str) -> list[str]:
    """The lines of `text`, each with its own ending (the last one may have none)."""
    return _LINE.findall(text)


def line_text(line: str) -> str:
    """A line without its ending."""
    return line.rstrip("\r\n")


@dataclass(frozen=True)
class SourceFile:
    """A script split into what the parser sees and how the file writes it."""

    bom: str  # the byte order mark, if the file starts with one
    newline: str  # the file's line ending: "\n" or "\r\n"
    lines: list[str]  # the lines after the mark, each with its ending

    @classmethod
    def of(cls, text: str) -> SourceFile:
        bom = BOM if text.startswith(BOM) else ""
        lines = split_lines(text[len(bom) :])
        newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
        return cls(bom, newline, lines)

    @property
    def code(self) -> str:
        """What ast.parse reads (it refuses a byte order mark inside a str)."""
        return "".join(self.lines)

    def indent_of(self, line_number: int) -> str:
        """The leading whitespace of a line, tabs included, to indent inserted lines alike."""
        line = line_text(self.lines[line_number - 1])
        return line[: len(line) - len(line.lstrip(" \t"))]

    def render(self, inserts: dict[int, list[str]]) -> str:
        """The file with `inserts[n]` (lines without endings) after line n (0: at the top).

        A file without a final newline keeps lacking one: lines inserted after its last line
        carry the newline in between instead.
        """
        out = [self.newline.join([*inserts.get(0, []), ""])] if inserts.get(0) else []
        for number, line in enumerate(self.lines, start=1):
            added = inserts.get(number, [])
            if added and not line.endswith("\n"):
                out.append(line + self.newline + self.newline.join(added))
                continue
            out.append(line)
            out += [text + self.newline for text in added]
        return self.bom + "".join(out)


def unified_diff(path: str, original: str, patched: str, created: bool = False) -> str:
    """A diff that `git apply` and `patch -p1` apply, CRLF lines and missing newlines included;
    `created`: the file is new (from /dev/null)."""
    out = []
    for line in difflib.unified_diff(
        split_lines(original),
        split_lines(patched),
        fromfile="/dev/null" if created else f"a/{path}",
        tofile=f"b/{path}",
    ):
        out.append(line)
        if not line.endswith("\n"):
            out.append("\n" + NO_NEWLINE)
    return "".join(out)
