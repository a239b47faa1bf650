"""The README's first command works on a fresh machine: a new venv, `pip install .`, `nsysgen`."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, compare_trees


def readme_command(marker: str) -> str:
    text = (REPO / "README.md").read_text()
    match = re.search(rf"<!-- {marker} -->\n```bash\n(.+?)\n```", text, re.S)
    assert match, f"README.md has no ```bash block after <!-- {marker} -->"
    return match.group(1)


def test_ci_runs_the_readme_test_command() -> None:
    command = readme_command("test-command")
    assert "pytest" in command
    proc = subprocess.run(
        [
            "bash",
            "-c",
            "sed -n '/<!-- test-command -->/,/^```$/p' README.md "
            "| sed -n '/^```bash$/,/^```$/p' | sed '1d;$d'",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.strip() == command
    assert "test-command" in (REPO / ".ci" / "run").read_text()


@pytest.mark.slow
def test_main_command_in_a_fresh_venv(tmp_path: Path) -> None:
    command = readme_command("main-command")
    files = (
        subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=REPO,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    checkout = tmp_path / "checkout"
    for name in filter(None, files):
        if (REPO / name).is_file() and not name.startswith("generated/"):
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, checkout / name)
    proc = subprocess.run(
        ["bash", "-c", command], cwd=checkout, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.splitlines()[-1] == "generated/nccl-p5-slurm: 7 files (7 created)"
    compare_trees(
        checkout / "generated",
        REPO / "tests" / "golden" / "default" / "out",
        "the installed wheel compiles differently from the source tree",
    )
