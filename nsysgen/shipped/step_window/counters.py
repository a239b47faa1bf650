"""The step numbers a program keeps, read at each optimizer step: the patched loop's, an
expression's, a library's."""

from __future__ import annotations

from nsysgen.shipped.step_window.libraries import LIBRARIES, Library
from nsysgen.shipped.step_window.names import HINT_COUNTER

TYPE_CHECKING = False  # typing is not imported at run time: this file loads in every process
if TYPE_CHECKING:
    from types import FrameType


class Counter:
    """A step number the program keeps, read at each optimizer step (None: not readable)."""

    name = ""
    broken = ""  # why it can never be read again (an expression that raised)
    late = False  # may be unreadable at first without fault (the number the program prints)

    def read(self, frame: FrameType | None) -> int | None:
        raise NotImplementedError


class HintCounter(Counter):
    """The number the patched loop gives open() at the top of each iteration."""

    name = HINT_COUNTER

    def __init__(self) -> None:
        self.value: int | None = None
        self.given = False  # the patched loop gives a number at all (else: the helper counts)

    def read(self, frame: FrameType | None) -> int | None:
        return self.value


class ExprCounter(Counter):
    """An expression nsysgen found in the script, evaluated in the step loop's function."""

    def __init__(self, expr: str, scope: str) -> None:
        self.expr, self.scope = expr, scope
        self.file, _, self.function = scope.rpartition(":")
        self.name = f"{expr} in {scope}"

    def read(self, frame: FrameType | None) -> int | None:
        while frame is not None:
            code = frame.f_code
            name = code.co_filename.replace("\\", "/").rpartition("/")[2]
            if code.co_name == self.function and (not self.file or name == self.file):
                try:
                    return int(eval(self.expr, frame.f_globals, frame.f_locals))  # noqa: S307
                except Exception as error:  # noqa: BLE001 - any failure: not a counter, say why
                    self.broken = f"{self.expr} cannot be read in {self.scope} ({error!r})"
                    return None
            frame = frame.f_back
        return None  # an optimizer step outside the loop's function


class LibraryCounter(Counter):
    """The step counter of the library that owns the loop, found on the stack."""

    def __init__(self) -> None:
        self.library: Library | None = None
        self.name = "the step counter of a library's training loop"

    def read(self, frame: FrameType | None) -> int | None:
        found: dict[int, object] = {}
        while frame is not None:
            owner = frame.f_locals.get("self") if frame.f_code.co_argcount else None
            if owner is not None:
                for index, library in enumerate(LIBRARIES):
                    if index not in found and library.owns(owner):
                        found[index] = owner
            frame = frame.f_back
        if not found:
            return None
        index = min(found)
        library = LIBRARIES[index]
        if self.library is not library:
            self.library, self.name = library, library.counter
        try:
            return library.read(found[index])
        except Exception as error:  # noqa: BLE001 - a library version without the attribute
            self.broken = f"{library.counter} cannot be read ({error!r})"
            return None
