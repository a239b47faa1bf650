"""What finding says when it cannot decide: the error, with the setting that fixes it
(`loop_line`, `step_expr`), and the library whose loop runs the steps.
"""

from __future__ import annotations

from nsysgen.patching.library import LibraryLoop

NO_LOOP = (
    "found no training loop (a for or while loop that reaches .backward() or an optimizer's "
    ".step(), directly or through functions of this file)"
)


LOOP_HINT = "set loop_line to the line of the step loop's `for` or `while`"


class FindError(Exception):
    """No step loop or no counter could be told apart, or the script cannot be recorded by
    step; `setting` is the fix to name (None: the script itself)."""

    def __init__(self, message: str, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting


class LibraryLoopError(FindError):
    """The training loop is a library's (`loop` says which and where): there is no loop of the
    script's own to patch, and the library's counter numbers the steps."""

    def __init__(self, loop: LibraryLoop) -> None:
        library = loop.library
        super().__init__(
            f"the training loop is the {library.display}'s (`{loop.call}` at line {loop.line}), "
            f"not a loop of this file: its steps are numbered by the {library.display}'s own "
            f"counter ({library.counter})"
        )
        self.loop = loop
