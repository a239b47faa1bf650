"""Shared fixtures: running the CLI in-process, golden-file comparison, repository paths."""

from __future__ import annotations

import difflib
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

from nsysgen.cli import main
from scripts.golden_sources import EXPERIMENTS, REPO, tree_bytes

__all__ = ["EXPERIMENTS", "REPO", "tree_bytes"]  # the tests' shared paths, from one place

pytest_plugins = ["tests.realparts"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests on the real Slurm cluster or nsys are end-to-end: out of the fast default tier."""
    for item in items:
        if item.get_closest_marker("slurm") or item.get_closest_marker("nsys"):
            item.add_marker(pytest.mark.e2e)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite golden files (generated/ and tests/golden/) instead of comparing them",
    )


@dataclass
class CliResult:
    code: int
    out: str
    err: str


class RunCli(Protocol):
    """The `run_cli` fixture: `nsysgen ARGS` in this process."""

    def __call__(self, *args: str) -> CliResult: ...


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> RunCli:
    """Run `nsysgen ARGS` in this process (fast) and return exit code, stdout and stderr."""

    def run(*args: str) -> CliResult:
        capsys.readouterr()  # only this command's output (not a fixture's set-up before it)
        code = main(list(args))
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


def run_nsysgen_process(*args: str, cwd: Path, env: dict[str, str] | None = None) -> CliResult:
    """Run nsysgen as a separate process (for environment and working-directory effects)."""
    proc = subprocess.run(
        [sys.executable, "-m", "nsysgen", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def compare_trees(actual: Path, expected: Path, regenerate: str) -> None:
    """Byte-for-byte comparison with a unified diff of the first differing file."""
    got, want = tree_bytes(actual), tree_bytes(expected)
    assert sorted(got) == sorted(want), f"file lists differ under {expected}; {regenerate}"
    for name in sorted(want):
        if got[name] == want[name]:
            continue
        diff = "".join(
            difflib.unified_diff(
                want[name][0].decode().splitlines(keepends=True),
                got[name][0].decode().splitlines(keepends=True),
                fromfile=f"expected/{name}",
                tofile=f"actual/{name}",
            )
        )
        modes = f"mode {oct(got[name][1])} != {oct(want[name][1])}\n"
        pytest.fail(f"{expected / name} differs; {regenerate}\n{diff or modes}")
