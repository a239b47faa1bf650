"""What finding says when it cannot decide (nsysgen/patching/hints.py): the setting that fixes
it, and for a library's loop which library, where, and the counter that numbers its steps."""

from __future__ import annotations

import ast

import pytest

from nsysgen.patching.find import find
from nsysgen.patching.hints import LOOP_HINT, NO_LOOP, FindError, LibraryLoopError
from nsysgen.patching.library import library_loop
from tests.patching.test_find_shapes import script

TRAINER = script("""
    from transformers import Trainer
    Trainer(model=model, args=args).train()
""")


def test_a_library_loop_names_the_library_the_call_and_its_counter() -> None:
    loop = library_loop(ast.parse(TRAINER), TRAINER)
    assert loop is not None
    error = LibraryLoopError(loop)
    assert error.loop is loop and error.setting is None
    assert str(error) == (
        f"the training loop is the {loop.library.display}'s (`{loop.call}` at line 2), not a "
        f"loop of this file: its steps are numbered by the {loop.library.display}'s own "
        f"counter ({loop.library.counter})"
    )
    with pytest.raises(LibraryLoopError):
        find(ast.parse(TRAINER), TRAINER, None, None)


def test_no_loop_names_loop_line() -> None:
    source = "x = 1\n"
    with pytest.raises(FindError) as error:
        find(ast.parse(source), source, None, None)
    assert str(error.value) == (
        f"{NO_LOOP}; {LOOP_HINT} (this file has no loop: the training loop is in another file; "
        "set workload.<kind>.source to that file)"
    )
    assert error.value.setting == "loop_line"


def test_a_loop_line_without_a_loop_lists_the_loops() -> None:
    source = script("""
        for a in range(3):
            pass
        while True:
            break
    """)
    with pytest.raises(FindError, match=r"no for/while loop starts at line 2 \(loops start at "
                       r"lines: 1, 3\)") as error:  # fmt: skip
        find(ast.parse(source), source, 2, None)
    assert error.value.setting == "loop_line"
