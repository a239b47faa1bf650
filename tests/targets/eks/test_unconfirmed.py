"""What an EKS setup relies on of the Nsight Operator 26.x that no public source confirms
(nsysgen/targets/eks/unconfirmed.py): only the keys the setup really writes that its schemas
mark x-unconfirmed, and the behaviours no key shows, each with how to check it; `plan` prints
the list and the folder's README holds it (issue 49 item 6)."""

from __future__ import annotations

from pathlib import Path

from nsysgen.targets.eks.unconfirmed import AFTER_A_RUN, marked, points
from tests.conftest import RunCli
from tests.profile.configs import planned

EKS = ("experiment=fsdp-p5-eks",)  # operator-26, flat Helm values, the program opens the window
BEHAVIOURS = [
    "whether the include pattern is matched against the process name or its whole command line",
    "how the operator names the reports in the bucket",
]


def test_marked_names_only_what_is_written() -> None:
    schema = {
        "properties": {
            "a": {"properties": {"b": {"x-unconfirmed": True}, "c": {}}},
            "rules": {"items": {"properties": {"name": {"x-unconfirmed": True}}}},
            "whole": {"x-unconfirmed": True, "properties": {"inner": {"x-unconfirmed": True}}},
        }
    }
    value = {"a": {"c": 1}, "rules": [{"name": "x"}, {"name": "y"}], "whole": {"inner": 1}}
    assert list(marked(schema, value)) == ["rules[].name", "whole"]
    assert list(marked(schema, {"a": {"b": 1}})) == ["a.b"]


def test_flat_values_rely_on_the_behaviours_only() -> None:
    found = points(*planned(*EKS))
    whats = [what for what, _ in found]
    assert len(whats) == 3 and [whats[0], whats[2]] == BEHAVIOURS
    assert "what coordinator: false does in 26.x" in found[1][0]
    assert found[1][1] == AFTER_A_RUN


def test_the_profile_config_resource_names_its_guessed_keys_with_kubectl_explain() -> None:
    found = dict(points(*planned(*EKS, "target.profile_config=resource")))
    assert found["the profile config's spec.injectionRules[]"] == (
        "`kubectl explain nsightoperatorprofileconfig.spec.injectionRules`"
    )
    assert found["the profile config's apiVersion"] == (
        "`kubectl api-resources --api-group=nvidia.com`"
    )
    assert "the profile config's spec.nsightToolConfigs[].coordinator" in found


def test_coordinator_mode_is_named_as_such() -> None:
    window = [*EKS, "capture=window", "~capture.first_step", "~capture.last_step",
              "capture.delay=30", "capture.duration=20"]  # fmt: skip
    found = [what for what, _ in points(*planned(*window))]
    assert any(what.startswith("that the coordinator opens the window") for what in found)


def test_other_injectors_have_none() -> None:
    assert points(*planned("experiment=fsdp-p4de-eks")) == ()


def test_plan_and_the_readme_list_the_same_points(run_cli: RunCli, tmp_path: Path) -> None:
    found = points(*planned(*EKS))
    text = " ".join(run_cli("plan", *EKS).out.split())
    assert "not confirmed for this injector (each line: what, how to check):" in text
    for what, how in found:
        assert f"{what} check: {how}" in text
    assert run_cli(*EKS, f"output_dir={tmp_path}").code == 0
    readme = " ".join((tmp_path / "fsdp-p5-eks" / "README.md").read_text().split())
    assert "## Not confirmed for this injector" in readme
    for what, how in found:
        assert f"- {what}: {how}" in readme
    assert "not confirmed" not in run_cli("plan", "experiment=fsdp-p4de-eks").out
