"""Text for a terminal: the width to fit, prose wrapped to it, and shell commands broken so that
they can still be pasted into a shell."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import textwrap
from collections.abc import Sequence

PIPE_WIDTH = 100  # output that is not a terminal: a log, a pull request comment, a file
MIN_WIDTH = 40
# A number and its unit: wrapped as one word, through a character no text carries (private use).
_UNIT = re.compile(r"(\S*\d) (%|(?:us|ms|s|min|h|B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)(?!\w))")
_GLUE = "\ue000"


def output_width() -> int:
    """COLUMNS when set, else the terminal's width, else PIPE_WIDTH."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit():
        return max(MIN_WIDTH, int(columns))
    if sys.stdout.isatty():
        return max(MIN_WIDTH, shutil.get_terminal_size((PIPE_WIDTH, 24)).columns)
    return PIPE_WIDTH


def wrap(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    """`text` in lines of at most `width` characters: the first after `first`, the others
    after `rest`. Words longer than a line are cut (a path is still readable across lines); a
    number keeps its unit ("17 %", "600 s" never break between the two) where the two fit on
    a line."""
    room = width - max(len(first), len(rest))

    def glue(match: re.Match[str]) -> str:
        number, unit = match.groups()
        return f"{number}{_GLUE}{unit}" if len(number) + 1 + len(unit) <= room else match[0]

    glued = _UNIT.sub(glue, text)
    lines = textwrap.wrap(
        glued,
        width,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=True,
        break_on_hyphens=False,
    ) or [first.rstrip()]
    return [line.replace(_GLUE, " ") for line in lines]


def shell_lines(
    argv: Sequence[str], width: int, indent: str = "  ", rest: str = "      "
) -> list[str]:
    """`argv` as a shell command in lines of at most `width` characters, joined by backslash
    continuations. A word longer than a line is split into quoted pieces that the shell joins
    again ('abc'\\ + newline + 'def' reads as abcdef), so the text stays one paste-able command.
    The first line starts with `indent`, the others with `rest`."""
    room = max(8, width - max(len(indent), len(rest)) - 2)  # 2: " \\"
    pieces: list[tuple[str, bool]] = []  # (text, whether the next piece continues its word)
    for word in argv:
        quoted = shlex.quote(word)
        if len(quoted) <= room:
            pieces.append((quoted, False))
            continue
        parts = _pieces(word, room - 1)  # 1: the backslash that joins a piece to the next
        pieces += [(part + "\\", True) for part in parts[:-1]]
        pieces.append((parts[-1], False))
    lines: list[str] = []
    current, lead = "", indent
    for text, continues in pieces:
        if current and len(current) + 1 + len(text) > room:
            lines.append(lead + current + " \\")
            current, lead = "", rest
        current = f"{current} {text}" if current else text
        if continues:
            # The word goes on at the very start of the next line: an indent there would
            # make the rest another word.
            lines.append(lead + current)
            current, lead = "", ""
    lines.append(lead + current)
    return lines


def _pieces(word: str, room: int) -> list[str]:
    """`word` in quoted pieces of at most `room` characters each (at least one character)."""
    pieces, current = [], ""
    for char in word:
        if current and len(_quote_all(current + char)) > room:
            pieces.append(_quote_all(current))
            current = ""
        current += char
    return [*pieces, _quote_all(current)]


def _quote_all(text: str) -> str:
    """Single quotes always, so that split pieces join into one word whatever they hold."""
    return "'" + text.replace("'", "'\"'\"'") + "'"
