"""Training-loop patches on realistic scripts: byte-exact golden diffs that `git apply` and
`patch -p1` accept, patched scripts that compile, idempotence, and clear errors."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nsysgen.patching.patch import (
    PatchError,
    patch_source,
    strip,
)
from nsysgen.shipped import STEP_WINDOW_FILE, source_text
from nsysgen.shipped.step_window import StepWindow
from scripts.golden_sources import SCRIPTS
from scripts.golden_sources import script_patch as diff_for
from tests.conftest import REPO, RunCli

GOLDEN = REPO / "tests" / "golden" / "patches"
HELPER = source_text("step_window")


def source_of(name: str) -> str:
    return (REPO / "tests" / "training_scripts" / name).read_text()


@pytest.mark.parametrize("name", SCRIPTS)
def test_patch_matches_golden(name: str, request: pytest.FixtureRequest) -> None:
    golden = GOLDEN / f"{name}.patch"
    if request.config.getoption("--update-golden"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(diff_for(name))
    assert diff_for(name) == golden.read_text(), "run `pytest --update-golden` and review"


@pytest.mark.parametrize(
    ("name", "begin", "steps_by"),
    [
        ("fsdp_train.py", "        _nsysgen_window.open(batch_idx)  # nsysgen", "enumerate index"),
        ("ddp_train.py", "            _nsysgen_window.open(global_step)  # nsysgen", "counter"),
        ("plain_loop.py", "    _nsysgen_window.open(step)  # nsysgen", "range variable"),
        ("while_loop.py", "        _nsysgen_window.open(step)  # nsysgen", "while counter"),
        ("function_loop.py", "            _nsysgen_window.open()  # nsysgen", "helper's count"),
    ],
)
def test_patch_finds_the_training_loop(name: str, begin: str, steps_by: str) -> None:
    patched = patch_source(source_of(name)).splitlines()
    assert patched.count(begin) == 1, steps_by
    # The step ends at the optimizer step (the helper's hook): no line marks the end.
    assert sum(line.endswith("# nsysgen") for line in patched) == 1
    assert (
        patched.count("    from nsysgen_window import window as _nsysgen_window  # noqa: E402") == 1
    )


@pytest.mark.parametrize("tool", ["git", "patch"])
def test_patches_apply_with_git_and_patch_and_compile(tmp_path: Path, tool: str) -> None:
    for name in SCRIPTS:
        repo = tmp_path / tool / name
        (repo / "tests" / "training_scripts").mkdir(parents=True)
        shutil.copy(
            REPO / "tests" / "training_scripts" / name, repo / "tests" / "training_scripts" / name
        )
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        patch = tmp_path / f"{name}.patch"
        patch.write_text((GOLDEN / f"{name}.patch").read_text())
        apply = ["git", "apply"] if tool == "git" else ["patch", "-p1", "--quiet", "-i"]
        subprocess.run([*apply, str(patch)], cwd=repo, check=True)
        patched = (repo / "tests" / "training_scripts" / name).read_text()
        compile(patched, name, "exec")
        assert patched == patch_source(source_of(name))
        assert not (repo / "tests" / "training_scripts" / STEP_WINDOW_FILE).exists()
        # Patching an already patched file changes nothing; stripping gives the original back.
        assert patch_source(patched) == patched
        assert strip(patched) == source_of(name)


def test_patched_script_does_nothing_without_the_window_variables(tmp_path: Path) -> None:
    # The helper is plain Python: without NSYSGEN_PROFILE_* it never imports torch.
    (tmp_path / "train.py").write_text(
        patch_source(
            "class Loss:\n    def backward(self):\n        pass\n\n\n"
            "for step in range(3):\n    Loss().backward()\n"
        )
    )
    (tmp_path / STEP_WINDOW_FILE).write_text(HELPER)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("NSYSGEN_PROFILE_")}
    code = "import runpy, sys; runpy.run_path('train.py'); print('torch' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], env=environ, cwd=tmp_path, capture_output=True, text=True
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "False\n", "")


LOOP = (
    "class Loss:\n    def backward(self):\n        pass\n\n\n"
    "for step in range(3):\n    Loss().backward()\n"
)


def test_a_patched_script_finds_the_trees_helper_or_says_why_none(tmp_path: Path) -> None:
    """The patch adds no file: the loop imports the generated tree's one copy from the folder
    NSYSGEN_HELPER_DIR names (nsys-exec, the EKS pods), else from beside the script; with
    neither it still runs, and says why nothing is recorded when a window was asked for."""
    (tmp_path / "train.py").write_text(patch_source(LOOP))
    site = tmp_path / "tree" / "nsysgen-site"
    site.mkdir(parents=True)
    (site / STEP_WINDOW_FILE).write_text(HELPER)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("NSYSGEN_")}
    code = "import runpy, sys; runpy.run_path('train.py'); print(sys.modules.get('nsysgen_window'))"

    def run(**env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", code], env={**environ, **env}, cwd=tmp_path,
            capture_output=True, text=True, check=False,
        )  # fmt: skip

    found = run(NSYSGEN_HELPER_DIR=str(site))
    assert found.returncode == 0 and str(site / STEP_WINDOW_FILE) in found.stdout, found
    quiet = run()
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "None\n", "")
    asked = run(NSYSGEN_PROFILE_FIRST_STEP="1", NSYSGEN_PROFILE_LAST_STEP="2")
    assert asked.returncode == 0, asked.stderr
    assert asked.stderr.startswith("nsysgen: no step helper (No module named 'nsysgen_window')")


def test_helper_selects_ranks_from_the_environment() -> None:
    first_last = {"NSYSGEN_PROFILE_FIRST_STEP": "3", "NSYSGEN_PROFILE_LAST_STEP": "5"}
    for ranks, rank, local, expected in [
        ("0,8", "8", "0", True),
        ("0,8", "1", "1", False),
        ("one_per_node", "9", "1", False),
        ("one_per_node", "8", "0", True),
        ("all", "5", "5", True),
    ]:
        env = {**first_last, "NSYSGEN_PROFILE_RANKS": ranks, "RANK": rank, "LOCAL_RANK": local}
        assert StepWindow(env).active is expected, (ranks, rank)


@pytest.mark.parametrize(
    ("source", "loop_line", "message"),
    [
        (
            "x = 1\nfor i in range(3):\n    print(i)\n",
            None,
            "found no training loop (a for or while loop that reaches .backward() or an "
            "optimizer's .step(), directly or through functions of this file); set loop_line to "
            "the line of the step loop's `for` or `while` (loops of this file: line 2)",
        ),
        (
            "for a in b:\n    l.backward()\nfor c in d:\n    l.backward()\n",
            None,
            "found several step loops: line 1, line 3; set loop_line to the line of the step "
            "loop's `for` or `while`",
        ),
        (
            "for a in b:\n    l.backward()\n",
            7,
            "no for/while loop starts at line 7 (loops start at lines: 1)",
        ),
        (
            "for a in b: l.backward()\n",
            None,
            "the loop at line 1 has its body on the same line; put it on lines of its own",
        ),
        ("for a in b\n    l.backward()\n", None, "is not valid Python (expected ':', line 1)"),
        (
            "for s in range(3):\n    a.step()\n    o.step()\n    s += 1\n    t += 1\n",
            None,
            "found no training loop (a for or while loop that reaches .backward() or an "
            "optimizer's .step(), directly or through functions of this file); set loop_line to "
            "the line of the step loop's `for` or `while` (loops of this file: line 1)",
        ),
        (
            "while x:\n    l.backward()\n    opt.step()\n    a += 1\n    b += 1\n",
            None,
            "the step loop at line 1 counts with several variables (a, b); set step_expr to the "
            "one that numbers steps",
        ),
    ],
)
def test_unpatchable_scripts_say_why(source: str, loop_line: int | None, message: str) -> None:
    with pytest.raises(PatchError) as error:
        patch_source(source, loop_line)
    assert str(error.value) == message


def test_loop_line_picks_one_of_several_loops() -> None:
    source = "for a in b:\n    l.backward()\nfor c in d:\n    l.backward()\n"
    patched = patch_source(source, loop_line=3)
    assert patched.endswith(
        "for c in d:\n    _nsysgen_window.open()  # nsysgen\n    l.backward()\n"
    )


def test_compile_writes_the_patch_and_reports_errors(
    tmp_path: Path,
    run_cli: RunCli,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(REPO)
    source = "tests/training_scripts/plain_loop.py"
    out = tmp_path / "out"
    result = run_cli(
        "workload=python",
        "capture=steps",
        f"workload.python.source={source}",
        f"workload.python.script=/fsx/repo/{source}",
        "capture.step_method=patch",
        "job.name=patched",
        f"output_dir={out}",
    )
    assert result.code == 0, result.err
    text = (out / "patched" / "training-loop.patch").read_text()
    assert text.endswith(diff_for("plain_loop.py"))
    # The helper: the tree's one copy, which nsys-exec names to the patched loop.
    assert not (out / "patched" / "nsysgen_window.py").exists()
    assert (out / "nsysgen-site" / "nsysgen_window.py").read_text().endswith(HELPER + "\n")
    assert 'export NSYSGEN_HELPER_DIR="$site"' in (out / "patched" / "nsys-exec").read_text()
    missing = run_cli(
        "workload=python",
        "capture=steps",
        "workload.python.source=nope/train.py",
        f"output_dir={out}",
    )
    assert missing.code == 2
    assert (
        "  workload.python.source: cannot read nope/train.py (No such file or directory) "
        "(allowed: a UTF-8 Python file, its path relative to the current directory)"
    ) in missing.err.splitlines()
    no_loop = run_cli(
        "workload=python",
        "capture=steps",
        "workload.python.source=tests/workloads/nccl_allreduce.py",
        f"output_dir={out}",
        "job.name=noloop",
    )
    assert no_loop.code == 2
    assert "found no training loop" in no_loop.err
    assert not (out / "noloop").exists()


def test_step_expr_names_the_counter() -> None:
    source = "while True:\n    loss.backward()\n    opt.step()\n    done += 1\n"
    patched = patch_source(source, step_expr=" state['step'] ")
    assert "    _nsysgen_window.open(state['step'])  # nsysgen\n" in patched
    with pytest.raises(PatchError) as error:
        patch_source(source, step_expr="step +")
    assert error.value.setting == "step_expr"
    assert str(error.value) == (
        "'step +' is not a Python expression (allowed: an expression the step loop can read at "
        "the top of every iteration, e.g. iter_num or self.step)"
    )


def test_cli_names_the_setting_to_fix(
    tmp_path: Path,
    run_cli: RunCli,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(REPO)
    common = (
        "workload=python",
        "capture=steps",
        "workload.python.source=tests/training_scripts/plain_loop.py",
        "workload.python.script=/fsx/repo/tests/training_scripts/plain_loop.py",
        "capture.step_method=patch",
        f"output_dir={tmp_path}",
    )
    bad = run_cli(*common, "workload.python.step_expr='step +'")
    assert bad.code == 2
    assert "  workload.python.step_expr: tests/training_scripts/plain_loop.py: 'step +' is not" in (
        bad.err
    )
    line = run_cli(*common, "workload.python.loop_line=3")
    assert line.code == 2
    assert (
        "  workload.python.loop_line: tests/training_scripts/plain_loop.py: no for/while loop "
        "starts at line 3 (loops start at lines: 10)"
    ) in line.err.splitlines()
