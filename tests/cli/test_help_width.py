"""Help and plan fit the screen: every verb's --help within 80 columns with examples; `plan`
within the terminal's width (COLUMNS), or 100 columns when piped, its nsys command still one
command that a shell reads back word for word."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

from nsysgen.cli import VERBS
from nsysgen.textwidth import shell_lines, wrap
from tests.conftest import REPO, RunCli


@pytest.mark.parametrize("verb", list(VERBS))
def test_every_verb_has_its_own_help_with_examples(verb: str, run_cli: RunCli) -> None:
    result = run_cli(verb, "--help")
    assert result.code == 0
    lines = result.out.splitlines()
    assert max(len(line) for line in lines) <= 80, max(lines, key=len)
    assert re.search(r"(?m)^examples:\n(  (python3 )?(nsysgen|eval)\S* .+\n)+", result.out + "\n")
    if verb == "compile":  # not the top-level help
        assert "Config groups" not in result.out


def test_top_level_help_fits_80_columns_and_summaries_are_whole(run_cli: RunCli) -> None:
    result = run_cli("--help")
    assert max(len(line) for line in result.out.splitlines()) <= 80
    for verb, entry in VERBS.items():
        assert f"  {verb:<11} {entry.summary}\n" in result.out


def _plan_lines(columns: str | None) -> list[str]:
    env = {"PATH": "/usr/bin:/bin"} | ({"COLUMNS": columns} if columns else {})
    proc = subprocess.run(
        [sys.executable, "-m", "nsysgen", "plan", "experiment=fsdp-p4de"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        check=True,
    )
    return proc.stdout.splitlines()


@pytest.mark.parametrize(("columns", "limit"), [(None, 100), ("80", 80), ("60", 60)])
def test_plan_fits_the_width(columns: str | None, limit: int) -> None:
    lines = _plan_lines(columns)
    assert max(len(line) for line in lines) <= limit, max(lines, key=len)
    assert max(len(line) for line in lines) > limit - 10  # it uses the room it has


@pytest.mark.parametrize("width", [40, 60, 80, 100])
def test_a_wrapped_command_reads_back_as_the_same_words(width: int) -> None:
    argv = [
        "nsys",
        "profile",
        "--trace=cuda,nvtx",
        "--output=/fsx/nsight-reports/job%q{SLURM_JOB_ID}/x_rank%q{SLURM_PROCID}_node"
        "%q{SLURM_NODEID}_%q{SLURMD_NODENAME}_with_a_long_tail_of_words",
        "it's a 'quoted' $(word)",
        "",
    ]
    lines = shell_lines(argv, width)
    assert max(len(line) for line in lines) <= width
    script = "printf '<%s>\\n' " + "\n".join(lines).removeprefix("  nsys ")
    read = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    assert read.stdout.splitlines() == [f"<{word}>" for word in argv[1:]]


INDENTS = [("", ""), ("label:  ", "        "), ("  label:        ", "   ")]


@pytest.mark.parametrize("width", range(30, 60))
@pytest.mark.parametrize("indent", INDENTS)
def test_a_number_and_its_unit_stay_on_one_line(width: int, indent: tuple[str, str]) -> None:
    first, rest = indent
    text = "largest error 17 % over 600 s and 327 MB, in 5 steps of 2 s; 1.5 TB in 2 min"
    lines = wrap(text, width, first, rest)
    assert all(len(line) <= width for line in lines)
    assert " ".join(lines).split() == f"{first} {text}".split()  # nothing lost or changed
    for line in lines[1:]:  # no line starts with a lone unit
        assert not re.match(r"^\s*(%|s|MB|TB|min)(\s|,|;|$)", line)


def test_a_number_and_unit_wider_than_the_line_wrap_as_before() -> None:
    text = "the report 1234567 MB is large"
    for width in range(8, 12):
        assert wrap(text, width) == textwrap.wrap(text, width, break_on_hyphens=False)
