"""The injector's process filter (nsysgen/targets/eks/injection.py): the command lines a pod
really runs (torchrun through its interpreter, shell wrappers, torchrun's workers), the derived
pattern with special characters bracketed so that it matches only the torchrun line, and each
problem of a configured pattern, all at once where several apply."""

from __future__ import annotations

import re

import pytest

from nsysgen.config.compose import Composer
from nsysgen.drivers.pipeline import typed
from nsysgen.model import Config
from nsysgen.targets.eks.injection import (
    ProcessLines,
    injection_issues,
    injection_pattern,
    process_lines,
    torchrun_args,
)

SHORT = ["experiment=fsdp-p5-eks", 'workload.fsdp.args=["--steps=3"]']


@pytest.fixture(scope="module")
def composer() -> Composer:
    return Composer()


def config_of(composer: Composer, *overrides: str) -> Config:
    return typed(composer.compose([*SHORT, *overrides]).data)


def test_the_lines_a_pod_runs(composer: Composer) -> None:
    config = config_of(composer)
    assert torchrun_args(config) == ["--nproc_per_node=8", "/fsdp/train.py", "--steps=3"]
    assert process_lines(config) == ProcessLines(
        torchrun="/usr/bin/python3 /usr/local/bin/torchrun --nproc_per_node=8 /fsdp/train.py "
        "--steps=3",
        wrappers=(
            "/bin/bash -c torchrun --nproc_per_node=8 /fsdp/train.py --steps=3",
            "/bin/bash -c /usr/local/bin/torchrun --nproc_per_node=8 /fsdp/train.py --steps=3",
        ),
        worker="/usr/bin/python3 -u /fsdp/train.py --steps=3",
    )


def test_the_derived_pattern_brackets_special_characters_and_matches_only_torchrun(
    composer: Composer,
) -> None:
    config = config_of(
        composer,
        "target.torchrun_interpreter=/opt/conda/bin/python3.10",
        "target.torchrun_path=/opt/c++/bin/torchrun",
    )
    pattern = injection_pattern(config)
    assert pattern == "^/opt/conda/bin/python3[.]10 /opt/c[+][+]/bin/torchrun .*$"
    lines = process_lines(config)
    assert re.search(pattern, lines.torchrun)
    assert not any(re.search(pattern, line) for line in (*lines.wrappers, lines.worker))
    assert not re.search(pattern, lines.torchrun.replace("python3.10", "python3x10"))
    assert list(injection_issues(config)) == []


def test_a_configured_pattern_is_used_as_written(composer: Composer) -> None:
    config = config_of(composer, "target.injection_match='python3 /usr/local/bin/torchrun'")
    assert injection_pattern(config) == "python3 /usr/local/bin/torchrun"
    assert list(injection_issues(config)) == []


def test_every_problem_of_a_pattern_is_named_at_once(composer: Composer) -> None:
    issues = list(injection_issues(config_of(composer, "target.injection_match='bash'")))
    assert [i.path for i in issues] == ["target.injection_match"] * 2
    assert issues[0].message.startswith("'bash' matches nothing: the pod runs '/usr/bin/python3 ")
    assert issues[1].message.startswith(
        "'bash' also matches a shell wrapper such as '/bin/bash -c torchrun "
    )


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("\\d+", "'\\\\d+' uses '\\\\d', which the injector's regex engine may not support"),
        ("(?i)x", "'(?i)x' uses '(?', which the injector's regex engine may not support"),
        ("a{2}", "'a{2}' uses '{2', which the injector's regex engine may not support"),
        ("(", "'(' is not a valid regex (missing ), unterminated subpattern at position 0)"),
    ],
)
def test_an_unportable_or_broken_pattern_is_one_issue(
    composer: Composer, pattern: str, message: str
) -> None:
    config = config_of(composer, f"target.injection_match='{pattern}'")
    (issue,) = injection_issues(config)
    assert issue.message.startswith(message)
