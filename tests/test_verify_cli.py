"""`nsysgen verify` (nsysgen/verify_cli.py): its flags are read from the shipped verifier's own
help, a misspelt flag is refused with the close one named before the verifier runs, and an
abbreviation or a word after `--` is left to the verifier's parser."""

from __future__ import annotations

import pytest

from nsysgen.errors import EXIT_INVALID
from nsysgen.verify_cli import _flags, run_verify


def test_the_flags_are_the_shipped_verifiers_own() -> None:
    flags = _flags()
    assert {"--help", "--json", "--reports", "--job-id", "--presence-only"} <= set(flags)
    assert flags == sorted(set(flags))
    assert all(flag.startswith("--") and not flag.endswith("-") for flag in flags)


def test_a_misspelt_flag_is_refused_with_the_close_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_verify(["--jsn=1", "/nonexistent"]) == EXIT_INVALID
    assert capsys.readouterr().err == (
        "verify: error: verify does not take --jsn (did you mean --json?)\n"
    )


def test_an_abbreviation_reaches_the_verifier(capsys: pytest.CaptureFixture[str]) -> None:
    # argparse takes --pres for --presence-only: the verifier then looks at the folder.
    assert run_verify(["--pres", "/nonexistent"]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "does not take" not in err
    assert "/nonexistent/nsysgen-expect.json not found" in err


def test_words_after_a_double_dash_are_not_checked(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_verify(["/nonexistent", "--", "--jsn"]) == EXIT_INVALID
    assert "verify does not take" not in capsys.readouterr().err
