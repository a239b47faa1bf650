"""The errors that reach the user (nsysgen/errors.py): the invalid-config message (problems
sorted and counted once, each with the file that chose its group), and the misspelt-flag hint."""

from __future__ import annotations

from nsysgen.errors import (
    EXIT_INVALID,
    ComposeError,
    InvalidConfig,
    Issue,
    NsysgenError,
    close_flags,
)


def test_invalid_config_lists_each_problem_once_sorted_with_its_source_and_groups() -> None:
    issues = [
        Issue("slurm.nodes", "must be >= 1"),
        Issue("nsys.trace[0]", "unknown"),
        Issue("slurm.nodes", "must be >= 1"),
    ]
    error = InvalidConfig(
        issues,
        choices={"slurm": "p5", "nsys": "default"},
        sources={"nsys": "/home/u/conf/nsys/mine.yaml"},
    )
    assert error.exit_code == EXIT_INVALID
    assert str(error) == "2 problem(s)"
    assert error.user_message() == (
        "error: invalid config (2 problems)\n"
        "  nsys.trace[0]: unknown [in /home/u/conf/nsys/mine.yaml]\n"
        "  slurm.nodes: must be >= 1\n"
        "  groups: nsys=default slurm=p5"
    )


def test_one_problem_is_singular_and_no_groups_line_without_choices() -> None:
    message = InvalidConfig([Issue("a.b", "bad")]).user_message()
    assert message == "error: invalid config (1 problem)\n  a.b: bad"


def test_compose_and_plain_errors_say_what_they_carry() -> None:
    assert ComposeError("unknown option x").user_message() == "error: unknown option x"
    assert NsysgenError("error: as written").user_message() == "error: as written"


def test_close_flags_tries_dashes_for_underscores_first_then_close_spellings() -> None:
    flags = ["--config-dir", "--help", "--output", "--out", "positional"]
    assert close_flags("--config_dir", flags) == " (did you mean --config-dir?)"
    assert close_flags("--confg-dir=x", flags) == " (did you mean --config-dir?)"
    assert close_flags("--outpt", flags) == " (did you mean --output or --out?)"
    assert close_flags("--zzz", flags) == ""
    assert close_flags("positionl", flags) == ""  # only flags are offered
