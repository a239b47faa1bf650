"""The user's --config-dir files as manifest inputs (nsysgen/output/config_inputs.py): only the
chosen options' files (the first directory's), each value under the key its package puts it,
long values by digest, and the changed keys as `check` prints them."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from nsysgen.output.config_inputs import changed_keys, chosen_files, config_inputs, file_values

CLUSTER = b"defaults:\n  - p5\n  - override /capture: steps\n  - _self_\nname: x\nenv: {A: '1'}\n"


def test_only_the_chosen_options_files_of_the_first_directory_are_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for directory in ("one", "two"):
        (tmp_path / directory / "cluster").mkdir(parents=True)
        (tmp_path / directory / "cluster" / "mine.yaml").write_bytes(CLUSTER)
        (tmp_path / directory / "cluster" / "unused.yaml").write_bytes(b"name: u\n")
    choices = {"cluster": "mine", "capture": "steps"}
    assert chosen_files(["one", "two"], choices) == {
        "one/cluster/mine.yaml": Path("one/cluster/mine.yaml")
    }
    digests, values = config_inputs(["two", "one"], choices)
    assert digests == {"two/cluster/mine.yaml": hashlib.sha256(CLUSTER).hexdigest()}
    assert values["two/cluster/mine.yaml"] == {
        "cluster.env.A": '"1"',
        "cluster.name": '"x"',
        "defaults: _self_": "true",
        "defaults: override /capture": '"steps"',
        "defaults: p5": "true",
    }


def test_values_go_under_the_key_their_package_names() -> None:
    assert file_values(b"# @package _global_\ncapture:\n  delay: 3\n", "experiment") == {
        "capture.delay": "3"
    }
    assert file_values(b"# @package _group_.sub\nx: 1\nempty: {}\n", "workload") == {
        "workload.sub.empty": "{}",
        "workload.sub.x": "1",
    }


def test_long_values_are_recorded_by_digest_and_unreadable_files_as_nothing() -> None:
    args = b"[" + b", ".join(b"%d" % i for i in range(60)) + b"]"
    (value,) = file_values(b"args: " + args + b"\n", "workload").values()
    assert value.startswith("sha256:") and len(value) == len("sha256:") + 16
    assert file_values(b"a: [1\n", "g") == {}  # composing it reports the YAML error
    assert file_values(b"- 1\n", "g") == {}


def test_changed_keys_say_what_each_was_and_is() -> None:
    before = {"a": "1", "b": '"x"', "c": "sha256:ab", "d": '" pad"', "e": "same", "g": "[1]"}
    after = {"a": "2", "b": '"y"', "c": "sha256:cd", "d": '" pad2"', "e": "same", "f": "true"}
    assert changed_keys(before, after) == [
        "a (was 1, now 2)",
        "b (was x, now y)",  # text shown without its JSON quotes
        "c (was a long value, now a long value)",
        'd (was " pad", now " pad2")',  # quotes kept where spaces would hide
        "f (added: true)",
        "g (removed; was [1])",
    ]
