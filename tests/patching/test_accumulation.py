"""Where a step ends and how gradients accumulate (nsysgen/patching/accumulation.py), read
directly: the block that runs once per optimizer step and the test that gates it. The same
shapes through find() are in test_find_shapes.py."""

from __future__ import annotations

import ast

import pytest

from nsysgen.patching import step_loop as f
from nsysgen.patching.accumulation import FoundSite, Locator, has_gate_words
from nsysgen.patching.loop import find_step_loop
from nsysgen.patching.script import Script
from tests.patching.test_find_shapes import script


def located(source: str) -> tuple[Script, FoundSite]:
    parsed = Script(ast.parse(source), source)
    loop = find_step_loop(parsed, None)
    assert loop is not None
    return parsed, Locator(parsed, loop).locate(loop.body)


HEAD = """
    import torch
    model = torch.nn.Linear(4, 4)
    optimizer = torch.optim.SGD(model.parameters())
    for i, batch in enumerate(loader):
        model(batch).sum().backward()
"""


@pytest.mark.parametrize(
    ("tail", "form", "gate"),
    [
        ("    optimizer.step()\n", f.NO_ACCUMULATION, None),
        ("    if (i + 1) % 4 == 0:\n        optimizer.step()\n", f.IF_BLOCK, "(i + 1) % 4 == 0"),
        ("    if (i + 1) % 4 != 0:\n        continue\n    optimizer.step()\n", f.CONTINUE,
         "(i + 1) % 4 != 0"),
        ("    if accelerator.sync_gradients:\n        optimizer.step()\n", f.SYNC_GRADIENTS,
         "accelerator.sync_gradients"),
        ("    if use_amp:\n        optimizer.step()\n    else:\n        optimizer.step()\n",
         f.NO_ACCUMULATION, None),
    ],
    ids=["every-iteration", "if-block", "continue", "sync-gradients", "setting"],
)  # fmt: skip
def test_the_step_site_and_its_gate(tail: str, form: str, gate: str | None) -> None:
    _, found = located(script(HEAD) + tail)
    assert (found.form, found.gate) == (form, gate)
    assert (found.site.block is None) == (form == f.NO_ACCUMULATION)


def test_accelerate_accumulate_ends_the_step_on_its_syncs() -> None:
    source = script("""
        import torch
        optimizer = torch.optim.SGD(params)
        for batch in loader:
            with accelerator.accumulate(model):
                model(batch).sum().backward()
                optimizer.step()
    """)
    _, found = located(source)
    assert found.form == f.ACCUMULATE
    assert found.site.when == "accelerator.sync_gradients"


def test_a_name_assigned_from_a_boundary_test_gates_too() -> None:
    source = script("""
        import torch
        optimizer = torch.optim.SGD(params)
        for i, batch in enumerate(loader):
            is_accumulating = (i + 1) % 4 != 0
            model(batch).sum().backward()
            if not is_accumulating:
                optimizer.step()
    """)
    _, found = located(source)
    assert (found.form, found.gate) == (f.IF_BLOCK, "not is_accumulating")


@pytest.mark.parametrize(
    ("test", "gates"),
    [("step % 8 == 0", True), ("engine.is_gradient_accumulation_boundary()", True),
     ("self.sync_gradients", True), ("use_amp", False), ("epoch > 2", False)],
)  # fmt: skip
def test_gate_words(test: str, gates: bool) -> None:
    assert has_gate_words(ast.parse(test, mode="eval").body) == gates
