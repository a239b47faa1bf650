"""A parsed script (nsysgen/patching/script.py): which calls are optimizer steps and backwards,
which functions of the file a call runs (methods, overrides, functions passed in), and what a
statement reaches through them."""

from __future__ import annotations

import ast

import pytest

from nsysgen.patching.script import Script
from nsysgen.patching.step_loop import BACKWARD, STEP
from tests.patching.test_find_shapes import script


def parsed(source: str) -> Script:
    return Script(ast.parse(source), source)


def call(text: str) -> ast.Call:
    node = ast.parse(text, mode="eval").body
    assert isinstance(node, ast.Call)
    return node


@pytest.mark.parametrize(
    ("text", "stepping"),
    [("optimizer.step()", True), ("self.opt_g.step()", True), ("scaler.step(optimizer)", True),
     ("sgd.step()", True), ("model_engine.step()", True), ("xm.optimizer_step(opt)", True),
     ("lr_scheduler.step()", False), ("ema.step()", False), ("env.step(action)", False)],
)  # fmt: skip
def test_optimizer_steps(text: str, stepping: bool) -> None:
    source = "import torch\nsgd = torch.optim.SGD(params)\n"
    assert parsed(source).is_optimizer_step(call(text)) == stepping


def test_reach_follows_methods_their_overrides_and_functions_passed_in() -> None:
    source = script("""
        class Base:
            def fit(self):
                for batch in loader:
                    self.run_step(batch)

            def run_step(self, batch):
                raise NotImplementedError


        class Mine(Base):
            def run_step(self, batch):
                loss(batch).backward()
                optimizer.step()


        def train(loader, step_fn):
            for batch in loader:
                step_fn(batch)


        def one_step(batch):
            loss(batch).backward()
            optimizer.step()


        train(loader, one_step)
    """)
    found = parsed(source)
    fit, train = found.methods["fit"][0], found.functions["train"][0]
    assert found.reaches(fit) == {STEP, BACKWARD}
    assert found.reaches(train) == {STEP, BACKWARD}
    assert [f.name for f in found.called_functions(train)] == ["one_step"]


def test_an_epoch_loop_around_the_step_loop_runs_it_repeatedly() -> None:
    source = script("""
        def epoch():
            for batch in loader:
                optimizer.step()


        for e in range(3):
            epoch()
    """)
    found = parsed(source)
    inner = found.loops[0]
    assert found.runs_repeatedly(inner)
    assert found.called_in_file(found.functions["epoch"][0])


def test_optimizer_in_backward_is_seen_from_its_hooks() -> None:
    source = script("""
        def hook(param):
            optimizer_dict[param].step()

        for p in model.parameters():
            p.register_post_accumulate_grad_hook(hook)
    """)
    assert parsed(source).steps_in_backward()
    assert not parsed("optimizer.step()\n").steps_in_backward()


def test_a_switch_the_file_leaves_off_never_runs() -> None:
    off = parsed("Tensorboard = False\nif Tensorboard:\n    step += 1\n")
    test = next(n for n in ast.walk(off.tree) if isinstance(n, ast.If)).test
    assert off.switched_off(test)
    for on in (
        "Tensorboard = False\nTensorboard = args.tb\nif Tensorboard:\n    pass\n",
        "def f(Tensorboard):\n    if Tensorboard:\n        pass\n",
        "from config import Tensorboard\nif Tensorboard:\n    pass\n",
        "for Tensorboard in (False, True):\n    if Tensorboard:\n        pass\n",
    ):
        tree = parsed(on)
        test = next(n for n in ast.walk(tree.tree) if isinstance(n, ast.If)).test
        assert not tree.switched_off(test), on
