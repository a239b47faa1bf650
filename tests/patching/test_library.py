"""Training loops that live in libraries (the Hugging Face Trainer, Lightning's Trainer): found,
named with the call that runs them, and told apart from other trainers and from a script's own
loop (nsysgen/patching/library.py)."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from nsysgen.patching.library import (
    IGNITE,
    LIGHTNING,
    TRANSFORMERS,
    LibraryLoop,
    library_loop,
)
from nsysgen.patching.patch import analyse
from tests.patching.test_find_shapes import marked, script

# 9. Loops that live in libraries -------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "library", "line", "trainer"),
    [
        (
            "from transformers import Seq2SeqTrainer\n"
            "trainer = Seq2SeqTrainer(model=model)\n\ntrainer.train()\n",
            TRANSFORMERS,
            4,
            "Seq2SeqTrainer",
        ),
        ("import transformers\ntransformers.Trainer(model=m).train()\n", TRANSFORMERS, 2,
         "transformers.Trainer"),
        (
            "from transformers import Trainer\nclass MyTrainer(Trainer):\n    pass\n"
            "class Deeper(MyTrainer):\n    pass\nt = Deeper(model)\n"
            "t.train(resume_from_checkpoint=c)\n",
            TRANSFORMERS,
            7,
            "Deeper",
        ),
        ("from trl import GRPOTrainer as G\ntrainer = G(model)\ntrainer.train()\n", TRANSFORMERS,
         3, "G"),
        ("import pytorch_lightning as pl\ntrainer = pl.Trainer()\ntrainer.fit(model, dm)\n",
         LIGHTNING, 3, "pl.Trainer"),
        ("from lightning.pytorch import Trainer\nTrainer(max_epochs=1).fit(model)\n", LIGHTNING, 2,
         "Trainer"),
        ("from lightning.pytorch.cli import LightningCLI\nLightningCLI(Model, DataModule)\n",
         LIGHTNING, 2, "LightningCLI"),
        ("from ignite.engine import create_supervised_trainer\n"
         "trainer = create_supervised_trainer(model, optimizer, loss)\ntrainer.run(data, 5)\n",
         IGNITE, 3, "create_supervised_trainer"),
        ("from ignite.engine import Engine\nengine = Engine(step)\nengine.run(data)\n", IGNITE,
         3, "Engine"),
        # A function of the script that builds the trainer (a run, then one resumed from it).
        ("from transformers import Trainer\ndef make(steps):\n    return Trainer(model)\n"
         "make(20).train()\nresumed = make(40)\nresumed.train(resume_from_checkpoint=True)\n",
         TRANSFORMERS, 4, "make"),
        ("import transformers\ndef make(steps) -> transformers.Trainer:\n    t = build(steps)\n"
         "    return t\nmake(20).train()\n", TRANSFORMERS, 5, "make"),
    ],
)  # fmt: skip
def test_library_loops_are_recognised(source: str, library: Any, line: int, trainer: str) -> None:
    found = library_loop(ast.parse(source), source)
    assert found is not None
    assert (found.library, found.line, found.trainer) == (library, line, trainer)


@pytest.mark.parametrize(
    "source",
    [
        # A trainer of the script's own, not a library's (Lightning Fabric's example).
        "from trainer import MyCustomTrainer\ntrainer = MyCustomTrainer()\ntrainer.fit(model)\n",
        # `model.train()` is torch's, and a transformers Trainer that only evaluates.
        "from transformers import Trainer\nmodel.train()\nTrainer(model).evaluate()\n",
        # A Lightning Trainer's train() is not its loop; the CLI with run=False runs nothing.
        "import lightning as L\nL.Trainer().train()\nL.pytorch.cli.LightningCLI(M, run=False)\n",
        # An Engine of another library is no Ignite loop.
        "from mylib import Engine\nengine = Engine(step)\nengine.run(data)\n",
    ],
)
def test_other_trainers_are_no_library_loops(source: str) -> None:
    assert library_loop(ast.parse(source), source) is None


def test_a_script_with_its_own_loop_keeps_it_beside_a_library_import() -> None:
    source = script("""
        from transformers import Trainer, AutoModel

        for step in range(10):  # step loop
            model(step).sum().backward()
            optimizer.step()
    """)
    assert analyse(source).node.lineno == marked(source)


def test_library_loop_api() -> None:
    source = "import lightning as L\ntrainer = L.Trainer(\n    max_epochs=1,\n)\n"
    source += "trainer.fit(\n    m\n)\n"
    found = library_loop(ast.parse(source))
    assert found == LibraryLoop(LIGHTNING, 5, "trainer.fit(m)", "L.Trainer")
    assert library_loop(ast.parse(source), source) == LibraryLoop(
        LIGHTNING, 5, "trainer.fit(", "L.Trainer"
    )
    displays = (LIGHTNING.display, TRANSFORMERS.display)
    assert displays == ("Lightning Trainer", "Hugging Face Trainer")
