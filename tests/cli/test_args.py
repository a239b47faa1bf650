"""The command line parsed into Arguments (nsysgen/cli/args.py): verbs, flags with their values
in both spellings, overrides kept in order, each verb refusing the flags of the others (with
the close one named), Hydra's flags pointed to nsysgen's, and plan's --expand and --ranks."""

from __future__ import annotations

import pytest

from nsysgen.cli.args import VERBS, Arguments, UsageError, parse_arguments


def test_no_words_is_a_default_compile() -> None:
    assert parse_arguments([]) == Arguments()


def test_flags_in_both_spellings_and_overrides_in_order() -> None:
    args = parse_arguments(
        ["plan", "--config-dir=a", "--config-dir", "b", "--multirun", "--json", "--expand", "5"]
        + ["--ranks=3-9", "~x", "+y=1", "z=2", "-h"]
    )
    assert args == Arguments(
        verb="plan", config_dirs=["a", "b"], overrides=["~x", "+y=1", "z=2"], help=True,
        multirun=True, json=True, expand=5, ranks=(3, 9),
    )  # fmt: skip
    assert parse_arguments(["plan", "--ranks", "4"]).ranks == (4, 4)
    assert parse_arguments(["show", "--all"]).all
    assert parse_arguments(["regenerate", "--force", "output_dir=x"]).force


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["compile", "--json"], "compile does not take --json"),
        (["show", "--expand", "3"], "show does not take --expand"),
        (["check", "--force"], "check does not take --force"),
        (["--multirun_"], "compile does not take --multirun_ (did you mean --multirun?)"),
        (["regenerate", "--forc"], "regenerate does not take --forc (did you mean --force?)"),
        (["-cn=x"], "-cn is Hydra's flag, not nsysgen's: choose an experiment: nsysgen "
         "experiment=NAME (in --config-dir DIR)"),
        (["pln"], "pln: not a verb (did you mean plan?) (allowed: compile, plan, check, "
         "regenerate, show, analyze, verify, completion)"),
        (["compile", "plan"], "plan: the verb comes first: nsysgen plan ..."),
        (["show", "cluster"], "cluster: a group takes an option, as cluster=OPTION (nsysgen "
         "--help lists them)"),
        (["cluster"], "cluster: a group takes an option, as cluster=OPTION (nsysgen "
         "--help lists them)"),
        (["compile", "foo"], "foo: not an override (allowed: group=option, key=value, "
         "+key=value, ~key)"),
        (["--config-dir"], "--config-dir needs a directory"),
        (["plan", "--expand"], "--expand needs a value"),
    ],
)  # fmt: skip
def test_words_a_verb_does_not_take_are_usage_errors(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_arguments(argv)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "--expand '0': not a count (allowed: 1..1000000)"),
        ("1000001", "--expand '1000001': not a count (allowed: 1..1000000)"),
        ("-1", "--expand '-1': not a count (allowed: 1..1000000)"),
    ],
)
def test_expand_is_a_count_within_bounds(value: str, message: str) -> None:
    assert parse_arguments(["plan", "--expand", "1000000"]).expand == 1_000_000
    with pytest.raises(UsageError) as raised:
        parse_arguments(["plan", "--expand", value])
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("9-2", "--ranks '9-2': 9 > 2 (allowed: A <= B)"),
        ("a", "--ranks 'a': not a range (allowed: A-B or A, e.g. 0-15)"),
        ("3-", "--ranks '3-': not a range (allowed: A-B or A, e.g. 0-15)"),
    ],
)
def test_ranks_is_a_range_low_to_high(value: str, message: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_arguments(["plan", f"--ranks={value}"])
    assert str(raised.value) == message


def test_a_usage_error_prints_the_verbs_usage_and_where_help_is() -> None:
    with pytest.raises(UsageError) as raised:
        parse_arguments(["check", "--force"])
    assert raised.value.user_message() == (
        "error: check does not take --force\n"
        f"usage: {VERBS['check'].usage}\n"
        "Run 'nsysgen check --help' for more."
    )
