"""The compile pipeline (nsysgen/drivers/pipeline.py), called on composed configs: the regenerate
command it records, a lint raised to an error stops the compile (or is returned, for `plan`),
a severity for an unknown lint ID is an input error, an issue on a derived value names what it
comes from, and the manifest keeps the working directory only when paths depend on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsysgen.config.compose import Composed, Composer
from nsysgen.drivers.pipeline import _with_origins, build_config, compile_config, regenerate_command
from nsysgen.errors import InvalidConfig, Issue

# NSG024 warns: the node's launcher is wrapped, and two of its eight ranks are named.
WINDOW = ["workload=fsdp", "capture=window", "capture.ranks=[0,1]"]


@pytest.fixture(scope="module")
def composer() -> Composer:
    return Composer()


def test_the_regenerate_command_quotes_and_leaves_output_dir_out() -> None:
    command = regenerate_command(["a=1", "output_dir=/x", "b=it s"], ["conf mine"], True)
    assert command == "nsysgen --config-dir 'conf mine' -m a=1 'b=it s'"
    assert regenerate_command([]) == "nsysgen"


def test_a_lint_raised_to_error_stops_the_compile_or_is_returned(composer: Composer) -> None:
    _, _, warnings = build_config(composer.compose(WINDOW))
    assert [(f.lint, f.severity) for f in warnings] == [("NSG024", "warning")]
    strict = composer.compose([*WINDOW, "lints.severity.NSG024=error"])
    _, _, findings = build_config(strict, stop_on_lint_errors=False)
    assert [(f.lint, f.severity, f.path) for f in findings] == [
        ("NSG024", "error", "capture.ranks")
    ]
    with pytest.raises(InvalidConfig) as raised:
        build_config(strict)
    assert [i.path for i in raised.value.issues] == ["capture.ranks"]
    assert raised.value.issues[0].message.startswith("[NSG024] each report holds every rank")


def test_the_defaults_compile_without_a_warning(composer: Composer) -> None:
    """A warning must name a setting the user chose: the packaged capture.ranks=[0] on a
    per-node launcher records node 0's ranks, said in the compile's summary, not warned."""
    for workload in ("fsdp", "nccl", "python", "megatron", "nemo", "bridge"):
        for capture in ("window", "steps", "nvtx") if workload != "nccl" else ("window", "nvtx"):
            choices = [f"workload={workload}", f"capture={capture}"]
            _, _, warnings = build_config(composer.compose(choices), stop_on_lint_errors=False)
            assert [f for f in warnings if f.severity == "warning"] == [], choices


def test_a_severity_for_an_unknown_lint_id_is_an_input_error(composer: Composer) -> None:
    with pytest.raises(InvalidConfig) as raised:
        build_config(composer.compose(["lints.severity.NSG999=off"]))
    (issue,) = raised.value.issues
    assert issue.path == "lints.severity.NSG999"
    assert issue.message.startswith("unknown lint ID NSG999 (allowed: NSG001, NSG002, ")


def test_an_issue_on_a_derived_value_names_the_keys_it_comes_from() -> None:
    composed = Composed(
        data={},
        choices={},
        overrides=(),
        derived={"capture.report_dir": ("cluster.shared_fs", "job.name")},
    )
    issues = [Issue("capture.report_dir", "too long"), Issue("job.name", "bad")]
    assert _with_origins(issues, composed) == [
        Issue(
            "capture.report_dir",
            "too long (its value comes from cluster.shared_fs, job.name)",
        ),
        Issue("job.name", "bad"),
    ]


def test_the_manifest_records_the_root_only_for_relative_inputs(
    composer: Composer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no conf/ here: the --config-dir below provides no file
    compiled = compile_config(composer.compose([]), "nsysgen", root="../..")
    assert compiled.manifest.root == ""  # no --config-dir, no training script
    assert compiled.manifest.command == "nsysgen"
    assert sorted(compiled.manifest.files) == sorted(f.path for f in compiled.files)
    with_dirs = compile_config(composer.compose([]), "nsysgen", ["conf"], root="../..")
    assert with_dirs.manifest.root == "../.."
    assert with_dirs.manifest.config_dirs == ("conf",)
    assert with_dirs.manifest.inputs == {}
