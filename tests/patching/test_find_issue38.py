"""Issue 38, the compile side, end to end: corpus scripts that are refused or hand their loop to
a library (tests/patching/test_patch_corpus.py checks the others), and small scripts of each shape
that number steps as they log them, run under the torch stand-in. The shapes themselves are tested
beside the module that reads each: test_numbering, test_counter, test_reading, test_loop,
test_optimizer_calls, test_graphs, test_library, test_logged."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from nsysgen.patching import step_loop as f
from nsysgen.patching.hints import LibraryLoopError
from nsysgen.patching.library import LIGHTNING, TRANSFORMERS, library_loop
from nsysgen.patching.patch import PatchError, analyse
from nsysgen.patching.script import Script
from tests.conftest import REPO
from tests.patching.test_find_shapes import script
from tests.patching.test_numbering import MICRO_BATCHES
from tests.patching.test_reading import CYCLEGAN
from tests.stepruns import Run, run_script

CORPUS = REPO / "tests" / "training_scripts" / "corpus"
ENTRIES: list[dict[str, Any]] = json.loads((CORPUS / "corpus.json").read_text())
REFUSED = [entry for entry in ENTRIES if "refused" in entry]
LIBRARY = [entry for entry in ENTRIES if "library" in entry]


def corpus(name: str) -> str:
    with (CORPUS / name).open(encoding="utf-8", newline="") as file:
        return file.read()


# The corpus: refused scripts and library loops -------------------------------------------------


@pytest.mark.parametrize("entry", REFUSED, ids=[e["file"] for e in REFUSED])
def test_corpus_refusals(entry: dict[str, Any]) -> None:
    source = corpus(entry["file"])
    for loop_line in (None, *(loop.lineno for loop in Script(ast.parse(source), source).loops)):
        with pytest.raises(PatchError) as error:
            analyse(source, loop_line)
        assert str(error.value) == entry["refused"]
        assert error.value.setting is None  # the user fixes workload.<kind>.source


@pytest.mark.parametrize("entry", LIBRARY, ids=[e["file"] for e in LIBRARY])
def test_corpus_library_loops(entry: dict[str, Any]) -> None:
    source = corpus(entry["file"])
    found = library_loop(ast.parse(source), source)
    assert found is not None
    expected = entry["library"]
    assert (found.library.key, found.line, found.call, found.trainer) == (
        expected["key"],
        expected["line"],
        expected["call"],
        expected["trainer"],
    )
    with pytest.raises(PatchError) as error:
        analyse(source)
    assert "found no training loop" not in str(error.value)
    assert str(error.value) == str(LibraryLoopError(found))
    assert error.value.setting is None


def test_every_new_corpus_script_says_what_it_logs() -> None:
    for entry in REFUSED + LIBRARY:
        assert entry["logged"], entry["file"]
    assert {e["library"]["key"] for e in LIBRARY} == {TRANSFORMERS.key, LIGHTNING.key}


# Behaviour: the shapes that run on a CPU, under the torch stand-in ----------------------------

WINDOW = {"NSYSGEN_PROFILE_RANKS": "0", "RANK": "0"}


def numbered_run(tmp_path: Path, source: str, mode: str, first: int, last: int, **env: str) -> Run:
    """Run `source` as train.py with the numbering compile finds for it, as a compiled setup
    passes it (NSYSGEN_PROFILE_STEP_EXPR read in NSYSGEN_PROFILE_STEP_SCOPE)."""
    found = analyse(source)
    assert found.at_step is not None
    window = {
        **WINDOW,
        "NSYSGEN_PROFILE_FIRST_STEP": str(first),
        "NSYSGEN_PROFILE_LAST_STEP": str(last),
        "NSYSGEN_PROFILE_STEP_EXPR": found.at_step,
        "NSYSGEN_PROFILE_STEP_SCOPE": f"train.py:{found.scope}",
        **env,
    }
    return run_script(tmp_path, source, window, mode=mode)


LOGGED_SHAPES = {
    # 2. micro-batches, the step computed from the index // accumulation.
    "micro-batches": (MICRO_BATCHES.replace("        writer.add_scalar", "        # writer"), {}),
    # 4. a closure optimizer, the iteration logged 1-based.
    "closure": (
        script("""
            import torch

            model = torch.nn.Linear(4, 4)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for k in range(8):
                def closure():
                    optimizer.zero_grad()
                    loss = model(k)
                    loss.backward()
                    return loss

                optimizer.step(closure)
                print("@@ log", k + 1)
                print(f"Iteration {k + 1}")
        """),
        {},
    ),
    # 4. the 1-based global number computed only when logging (DLRM's log_iter).
    "computed when logging": (
        script("""
            import torch

            model = torch.nn.Linear(4, 4)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            nbatches, k = 3, 0
            while k < 3:
                for j, batch in enumerate(range(nbatches)):
                    model(batch).backward()
                    optimizer.step()
                    log_iter = nbatches * k + j + 1
                    print("@@ log", log_iter)
                    print(f"it {j + 1} step {log_iter}")
                k += 1
        """),
        {},
    ),
    # 5. three optimizers an iteration, its number assigned after them.
    "three optimizers": (CYCLEGAN, {"NSYSGEN_PROFILE_OPTIMIZER_STEPS": "3"}),
}


@pytest.mark.parametrize("mode", ["hook", "patch"])
@pytest.mark.parametrize("shape", list(LOGGED_SHAPES))
def test_steps_are_numbered_as_the_script_logs_them(tmp_path: Path, shape: str, mode: str) -> None:
    source, env = LOGGED_SHAPES[shape]
    run = numbered_run(tmp_path, source, mode, 3, 5, **env)
    assert (run.starts, run.stops) == (1, 1), run.stderr
    assert run.recorded == ["step 3", "step 4", "step 5"], run.stderr
    assert not run.mismatched, run.mismatched


STEP_MODULE = script("""
    def train_step(model, optimizer, batch, iteration):
        model(batch).backward()
        optimizer.step()
        print("@@ log", iteration)
""")
DRIVER = script("""
    import torch

    from steps import train_step

    model = torch.nn.Linear(4, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    iteration = 100
    for epoch in range(2):
        for batch in range(4):
            train_step(model, optimizer, batch, iteration)
            iteration += 1
""")


def test_a_step_function_of_another_file_is_numbered_by_its_parameter(tmp_path: Path) -> None:
    found = analyse(STEP_MODULE)
    assert (found.at_step, found.scope, found.counter) == ("iteration", "train_step", f.PARAMETER)
    (tmp_path / "steps.py").write_text(STEP_MODULE)
    env = {
        **WINDOW,
        "NSYSGEN_PROFILE_FIRST_STEP": "102",
        "NSYSGEN_PROFILE_LAST_STEP": "105",
        "NSYSGEN_PROFILE_STEP_EXPR": found.at_step or "",
        "NSYSGEN_PROFILE_STEP_SCOPE": f"steps.py:{found.scope}",
    }
    run = run_script(tmp_path, DRIVER, env, mode="hook")
    assert run.recorded == [f"step {n}" for n in range(102, 106)], run.stderr
    assert not run.mismatched
