"""The verifier as nsysgen ships it (nsysgen-verify.py, assembled from nsysgen/shipped/verify/ and
the report-side modules analyze imports, nsysgen/reports/): one file that runs with the standard
library alone, where nsysgen cannot be imported, gives the answers `nsysgen verify` gives, reads
as the project's code reads (ruff), and is the same bytes every time."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from nsysgen.output.shared import VERIFIER, verifier_text
from nsysgen.shipped import source_text
from nsysgen.shipped import verify as package
from nsysgen.shipped.verify import expected_reports, load_expect
from tests.conftest import REPO, RunCli


@pytest.fixture
def setup(tmp_path: Path, run_cli: RunCli) -> Path:
    """A compiled setup (2 ranks' reports) in a generated tree, its verifier at the top."""
    out = tmp_path / "generated"
    made = run_cli("workload=nccl", "capture=window", "job.name=a", f"output_dir={out}")
    assert made.code == 0, made.err
    return out / "a"


def lay_runs(setup: Path, runs: dict[str, int]) -> Path:
    """The report folder: a run folder job<ID>/ per job, with that many of its reports."""
    expect = load_expect(setup)
    reports = setup.parent.parent / "reports"
    for job, count in runs.items():
        folder = reports / f"job{job}"
        folder.mkdir(parents=True)
        for entry in list(expected_reports(expect))[:count]:
            name = entry["name"].format(job=job, node=f"n{entry['node']}")
            (folder / f"{name}.nsys-rep").write_bytes(b"a report")
    return reports


def standalone(script: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """As a cluster without nsysgen runs it: -I -S (no site-packages, no user paths), in a
    folder outside the repository, with nothing of the environment but PATH."""
    return subprocess.run(
        [sys.executable, "-I", "-S", str(script), *args],
        cwd=cwd, env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_the_written_verifier_is_the_assembled_package_the_same_every_time() -> None:
    text = verifier_text()
    assert source_text("verify") in text and verifier_text() == text
    tree = ast.parse(text)
    assert ast.get_docstring(tree) is not None
    defined = {
        node.name if isinstance(node, ast.FunctionDef | ast.ClassDef) else ast.unparse(target)
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.Assign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node])
    }
    assert set(package.__all__) <= defined


def test_it_runs_with_the_standard_library_alone_where_nsysgen_is_not(tmp_path: Path) -> None:
    script = tmp_path / VERIFIER
    script.write_text(verifier_text(), encoding="utf-8")
    probe = (
        "import importlib.util, json, sys\n"
        f"spec = importlib.util.spec_from_file_location('v', {str(script)!r})\n"
        "module = sys.modules['v'] = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "print(json.dumps({'modules': sorted(sys.modules),\n"
        "    'nsysgen': importlib.util.find_spec('nsysgen') is not None}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe],
        cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert not seen["nsysgen"]
    outside = [m for m in seen["modules"] if m.partition(".")[0] not in sys.stdlib_module_names]
    assert outside == ["__main__", "v"]
    helped = standalone(script, "--help", cwd=tmp_path)
    assert helped.returncode == 0 and "usage: nsysgen-verify.py" in helped.stdout


@pytest.mark.parametrize(
    ("runs", "args"),
    [
        ({"7": 2}, []),  # complete
        ({"7": 1}, []),  # a report missing
        ({"5": 2, "9": 1}, []),  # the newest run, the other named
        ({"5": 2, "9": 1}, ["--job-id", "5"]),
        ({"5": 2}, ["--job-id", "6"]),  # no such run: bad input
    ],
    ids=["complete", "missing", "newest", "job-id", "no-such-run"],
)
def test_the_shipped_file_and_nsysgen_verify_give_the_same_answers(
    setup: Path, run_cli: RunCli, runs: dict[str, int], args: list[str]
) -> None:
    reports = lay_runs(setup, runs)
    script = setup.parent / VERIFIER
    argv = [str(setup), "--reports", str(reports), "--presence-only", *args]
    ours = run_cli("verify", *argv)
    theirs = standalone(script, *argv, cwd=setup.parent.parent)
    assert theirs.returncode == ours.code, theirs.stderr
    if ours.code == 2:
        assert theirs.stderr == ours.err
        return
    for output in ("--json", None):
        extra = [output] if output else []
        ours = run_cli("verify", *argv, *extra)
        theirs = standalone(script, *argv, *extra, cwd=setup.parent.parent)
        assert theirs.stdout == ours.out


def test_it_passes_the_projects_ruff_rules_and_format() -> None:
    text = source_text("verify")
    stdin = "nsysgen/shipped/nsysgen_verify.py"  # read with the repository's ruff settings
    for command in (["check", "--no-fix"], ["format", "--check"]):
        proc = subprocess.run(
            [sys.executable, "-m", "ruff", *command, "--stdin-filename", stdin, "-"],
            cwd=REPO, input=text, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
