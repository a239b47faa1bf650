"""One pass over the loop's body in the order it runs (nsysgen/patching/stream.py): calls of the
same file expanded, branches taken at some iterations only left out of the step, the statements
of the step site marked as running once per optimizer step."""

from __future__ import annotations

import ast

from nsysgen.patching.accumulation import Locator
from nsysgen.patching.loop import find_step_loop
from nsysgen.patching.script import Script
from nsysgen.patching.stream import Entry, iteration_stream, micro_loop
from tests.patching.test_find_shapes import script


def stream(source: str) -> tuple[Script, list[Entry]]:
    parsed = Script(ast.parse(source), source)
    loop = find_step_loop(parsed, None)
    assert loop is not None
    site = Locator(parsed, loop).locate(loop.body).site
    return parsed, iteration_stream(parsed, loop.body, site, site.block is None)


def test_calls_are_expanded_and_the_step_site_runs_once_per_step() -> None:
    source = script("""
        def update():
            optimizer.step()
            global step
            step += 1


        for i, batch in enumerate(loader):
            model(batch).sum().backward()
            if (i + 1) % 4 == 0:
                update()
            if i % 100 == 0:
                print(i)
    """)
    _, entries = stream(source)
    texts = [(ast.unparse(e.statement), e.in_step, e.expanded) for e in entries]
    assert texts == [
        ("model(batch).sum().backward()", False, False),
        ("update()", True, True),
        ("optimizer.step()", True, False),
        ("global step", True, False),
        ("step += 1", True, False),
        ("print(i)", False, False),
    ]
    assert entries[2].function is not None and entries[2].function.name == "update"


def test_a_micro_batch_loop_inside_the_step_is_found() -> None:
    source = script("""
        for step in range(10):
            for micro in range(4):
                model(micro).sum().backward()
            optimizer.step()
    """)
    parsed, entries = stream(source)
    assert micro_loop(parsed, entries)
