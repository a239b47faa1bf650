"""The injector's Helm values (nsysgen/targets/eks/helm.py): nsys's switches split between the
values and what the Nsight Operator 26 sets itself (its output, and its coordinator's window in
Coordinator Mode); each injector's keys for the pattern and the args; 26.x storage in S3 or
in-cluster MinIO, its machineConfig and privileged switches, and its profile-config object."""

from __future__ import annotations

import pytest

from nsysgen.targets.eks.helm import (
    devtool_args,
    helm_values,
    owned_switches,
    profile_config,
    tool_args,
)
from tests.profile.configs import planned

EKS = ["experiment=fsdp-p5-eks"]  # operator-26, steps (the program opens the window), S3
WINDOW = [*EKS, "capture=window", "~capture.first_step", "~capture.last_step",
          "capture.delay=30", "capture.duration=20"]  # fmt: skip
PATTERN = "^/usr/bin/python3 /usr/local/bin/torchrun .*$"
FLAGS = "--trace=cuda,nvtx --sample=none --cpuctxsw=none"


def test_operator_26_sets_the_output_itself_and_the_window_in_coordinator_mode() -> None:
    config, plan = planned(*EKS)
    assert owned_switches(config) == ("--output", "--force-overwrite")
    assert tool_args(config, plan) == (
        f"{FLAGS} --capture-range=cudaProfilerApi --capture-range-end=stop "
        "--cuda-event-trace=false --enable=efa_metrics"
    )
    config, plan = planned(*WINDOW)
    assert owned_switches(config) == (
        "--output", "--force-overwrite", "--delay", "--duration", "--kill",
    )  # fmt: skip
    assert tool_args(config, plan) == f"{FLAGS} --cuda-event-trace=false --enable=efa_metrics"
    assert "--delay=30 --duration=20" in devtool_args(plan)  # the plan still holds them


def test_operator_26_values_with_s3_storage() -> None:
    config, plan = planned(*EKS)
    assert helm_values(config, plan) == {
        "nsight-injector": {
            "privileged": False,
            "nsightToolConfig": {
                "coordinator": False,
                "nsightToolArgs": tool_args(config, plan),
                "injectionIncludePatterns": [PATTERN],
            },
        },
        "cloudStorage": {
            "enabled": True,
            "minio": {"enabled": False},
            "secretRef": {"name": "nsight-s3-storage"},
        },
    }


def test_operator_26_values_with_minio_a_profile_object_and_no_machine_config() -> None:
    config, plan = planned(
        *WINDOW, "~capture.s3_uri", "target.machine_config=false",
        "target.profile_config=resource", "target.privileged=true",
    )  # fmt: skip
    assert helm_values(config, plan) == {
        "nsight-injector": {"privileged": True},  # the flags are in profile-config.yaml
        "cloudStorage": {"enabled": True, "minio": {"enabled": True}},
        "machineConfig": None,
    }
    spec = profile_config(config, plan)["spec"]
    assert spec["nsightToolConfigs"] == [
        {"name": "fsdp-p5-eks", "coordinator": True, "nsightToolArgs": tool_args(config, plan)}
    ]
    assert spec["injectionRules"][0]["podSelector"] == {
        "matchLabels": {"nvidia-nsight-profile": "enabled"}
    }


@pytest.mark.parametrize(
    ("overrides", "pattern_key"),
    [
        (["target.injector=operator-1"], "injectionIncludePatterns"),
        (["target.injector=sidecar", "target.job=pytorchjob"], "injectionMatch"),
    ],
)
def test_operator_1_and_the_sidecar_get_the_whole_nsys_command(
    overrides: list[str], pattern_key: str
) -> None:
    config, plan = planned(*EKS, *overrides)
    assert owned_switches(config) == ()
    values = helm_values(config, plan)
    assert values["devtoolBinariesImage"] == {
        "image": "nvcr.io/nvidia/devtools/nsight-systems-cli:2025.3.1-ubuntu22.04",
        "imagePullPolicy": "IfNotPresent",
    }
    assert values["profile"]["devtoolArgs"] == devtool_args(plan)
    assert devtool_args(plan).startswith(f"profile {FLAGS} ")
    assert "--output=/fsx/nsight-reports/fsdp-p5-eks/fsdp-p5-eks_" in devtool_args(plan)
    expected = [PATTERN] if pattern_key == "injectionIncludePatterns" else PATTERN
    assert values["profile"][pattern_key] == expected
