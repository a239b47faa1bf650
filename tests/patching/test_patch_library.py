"""Scripts whose training loop is a library's: compile reads the library's counter (zero-patch)
or patches in the library's step callback, and the patched script records the steps the library
logs (under the torch and library stand-ins of tests/standin)."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

from nsysgen.patching.library import library_loop
from nsysgen.patching.patch import PatchError, patch_library, strip
from tests.conftest import REPO, RunCli
from tests.stepruns import run_script

HF = """\
import torch
from transformers import Trainer, TrainingArguments

model = torch.nn.Linear(4, 4)
trainer = Trainer(model, TrainingArguments(max_steps=12, gradient_accumulation_steps=2))
trainer.train()
"""
WINDOW = {
    "NSYSGEN_PROFILE_FIRST_STEP": "5",
    "NSYSGEN_PROFILE_LAST_STEP": "7",
    "NSYSGEN_PROFILE_RANKS": "0",
    "RANK": "0",
}


def patched(source: str) -> str:
    assert library_loop(ast.parse(source), source) is not None
    return patch_library(source)


def test_the_patched_library_loop_records_the_steps_it_logs(tmp_path: Path) -> None:
    text = patched(HF)
    assert "_nsysgen_window.attach(trainer)  # nsysgen\ntrainer.train()\n" in text
    assert strip(text) == HF and patched(text) == text
    run = run_script(tmp_path, text, WINDOW, mode="beside")
    assert run.recorded == ["step 5", "step 6", "step 7"]
    assert not run.mismatched and run.outside_marks == 0
    assert run.inside(6) == ["forward", "backward", "forward", "backward", "optimizer.step", "mark"]


BRANCHES = HF.replace(
    "trainer.train()\n",
    "if checkpoints:\n    trainer.train(resume_from_checkpoint=True)\nelse:\n    trainer.train()\n",
).replace("model = ", "checkpoints = []\nmodel = ")


def test_every_call_of_the_library_loop_is_attached(tmp_path: Path) -> None:
    """`if checkpoints: trainer.train(resume...) else: trainer.train()`: the fresh run, the
    common case, is in the second branch; both get the callback (once per trainer)."""
    text = patched(BRANCHES)
    assert text.count("_nsysgen_window.attach(trainer)  # nsysgen\n") == 2
    assert "    _nsysgen_window.attach(trainer)  # nsysgen\n    trainer.train()\n" in text
    assert strip(text) == BRANCHES and patched(text) == text
    run = run_script(tmp_path, text, WINDOW, mode="beside")
    assert run.recorded == ["step 5", "step 6", "step 7"]
    assert not run.mismatched and run.outside_marks == 0


def test_a_trainer_without_a_name_cannot_be_patched() -> None:
    source = HF.replace("trainer = Trainer(", "Trainer(").replace(
        "2))\ntrainer.train()", "2)).train()"
    )
    with pytest.raises(PatchError, match="no trainer object to attach a step callback to"):
        patched(source)


@pytest.mark.parametrize("method", ["hook", "patch"])
def test_compile_takes_a_library_loop(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    monkeypatch.chdir(REPO)
    source = "tests/training_scripts/corpus/trl_sft.py"
    result = run_cli(
        "workload=python",
        "capture=steps",
        f"workload.python.source={source}",
        f"workload.python.script=/fsx/repo/{source}",
        f"capture.step_method={method}",
        "job.name=lib",
        f"output_dir={tmp_path}",
    )
    assert result.code == 0, result.err
    readme = " ".join((tmp_path / "lib" / "README.md").read_text().split())
    counter = "state.global_step + 1 (transformers Trainer)"
    assert f"{counter}, the number its logs give the step" in readme
    assert f"{counter}, the number its logs give the step" in readme
    if method == "patch":
        repo = tmp_path / "repo"
        (repo / "tests/training_scripts/corpus").mkdir(parents=True)
        (repo / source).write_text((REPO / source).read_text())
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        patch = tmp_path / "lib" / "training-loop.patch"
        subprocess.run(["git", "apply", str(patch)], cwd=repo, check=True)
        assert "_nsysgen_window.attach(trainer)  # nsysgen" in (repo / source).read_text()
        # The helper is the generated tree's one copy, not a file the patch adds.
        assert not (repo / "tests/training_scripts/corpus/nsysgen_window.py").exists()
        assert (tmp_path / "nsysgen-site" / "nsysgen_window.py").is_file()
