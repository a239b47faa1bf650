"""Which folder verify checks: the compiled setup folder it is given, never a default of its own.
Neither `nsysgen verify` (the code inside the installed package) nor the standalone copy at the
top of a generated tree sits in a setup folder; without one, or given a folder that is not one,
both say which folder they looked at and what it must hold, exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import RunCli

NEEDS = "a compiled setup folder (one holding nsysgen-expect.json, e.g. generated/fsdp-p4de)"


@pytest.fixture
def tree(tmp_path: Path, run_cli: RunCli) -> Path:
    """A generated tree of two setups, a and b, with the verifier at its top."""
    out = tmp_path / "generated"
    for name in ("a", "b"):
        made = run_cli("workload=nccl", "capture=window", f"job.name={name}", f"output_dir={out}")
        assert made.code == 0, made.err
    assert sorted(p.name for p in out.iterdir()) == ["a", "b", "nsysgen-verify.py"]
    return out


def standalone(script: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The verifier as a cluster without nsysgen runs it: -I -S, no site-packages, no nsysgen
    to import."""
    return subprocess.run(
        [sys.executable, "-I", "-S", str(script), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def test_nsysgen_verify_without_a_folder_asks_for_one(run_cli: RunCli) -> None:
    result = run_cli("verify")
    assert (result.code, result.out) == (2, "")
    assert result.err == f"verify: error: no FOLDER given: pass {NEEDS}\n"
    assert "nsysgen/shipped" not in result.err  # not the package's own folder


def test_a_folder_that_is_not_a_setup_is_named(tree: Path, run_cli: RunCli) -> None:
    expect = tree / "nsysgen-expect.json"
    top = run_cli("verify", str(tree))  # the tree's top: its setups are named
    assert (top.code, top.out) == (2, "")
    assert top.err == (
        f"verify: error: {expect} not found: {tree} is not {NEEDS}; the setup folders in "
        f"{tree}: a, b\n"
    )
    nowhere = tree / "nowhere"
    missing = run_cli("verify", str(nowhere))
    assert missing.code == 2
    assert missing.err == (
        f"verify: error: {nowhere / 'nsysgen-expect.json'} not found: {nowhere} is not {NEEDS}\n"
    )
    script = tree / "nsysgen-verify.py"  # a file, not a folder
    in_file = run_cli("verify", str(script))
    assert in_file.code == 2
    assert in_file.err.startswith(f"verify: error: {script / 'nsysgen-expect.json'} not found: ")
    (tree / "a" / "nsysgen-expect.json").unlink()  # as an older nsysgen left it
    older = run_cli("verify", str(tree / "a"))
    assert older.code == 2
    assert older.err.endswith(
        "; an nsysgen folder (nsysgen-manifest.json) without expectations: regenerate it\n"
    )


def test_the_standalone_verifier_needs_a_folder_from_anywhere(tree: Path, tmp_path: Path) -> None:
    script = tree / "nsysgen-verify.py"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    bare = standalone(script, cwd=elsewhere)
    assert (bare.returncode, bare.stdout) == (2, "")
    # Not its own folder (the tree's top) taken as a setup: the setups there named instead.
    assert bare.stderr == (
        f"verify: error: no FOLDER given: pass {NEEDS}; the setup folders in {tree}: a, b\n"
    )
    # Given a setup, it runs (standard library only): no report of the job, exit 1.
    reports = tmp_path / "reports"
    reports.mkdir()
    args = (str(tree / "a"), "--reports", str(reports), "--job-id", "7", "--presence-only")
    checked = standalone(script, *args, cwd=elsewhere)
    assert checked.returncode == 1, checked.stderr
    assert "MISSING" in checked.stdout and checked.stderr == ""


def test_the_usage_shows_folder_as_required(capsys: pytest.CaptureFixture[str]) -> None:
    from nsysgen.shipped.verify import main

    assert main(["--help"], prog="nsysgen verify") == 0
    usage = capsys.readouterr().out.split("\n\n")[0]
    assert usage.split()[-1] == "FOLDER" and "[FOLDER]" not in usage, usage
