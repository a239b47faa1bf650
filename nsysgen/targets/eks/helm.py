"""The injector's Helm values: the Nsight Operator 1.x and 26.x, the sidecar injector."""

from __future__ import annotations

from typing import Any

from nsysgen.model import Config
from nsysgen.profile.plan_types import ProfilePlan
from nsysgen.targets.eks.injection import (
    injection_pattern,
)
from nsysgen.targets.eks.names import coordinator_mode, eks_settings, injector


def devtool_args(plan: ProfilePlan) -> str:
    # One nsys per profiled pod, and a pod is a node: collectors run once per node.
    return " ".join(["profile", *plan.profile_args, *plan.collector_args])


_OPERATOR_OWNED = ("--output", "--force-overwrite")  # 26.x names and uploads reports itself


_WINDOW_SWITCHES = ("--delay", "--duration", "--kill")  # the coordinator's, in Coordinator Mode


def owned_switches(config: Config) -> tuple[str, ...]:
    """The switches the injector sets itself: the Nsight Operator 26's, and its coordinator's
    window in Coordinator Mode."""
    if eks_settings(config).injector != "operator-26":
        return ()
    return _OPERATOR_OWNED + (_WINDOW_SWITCHES if coordinator_mode(config) else ())


def tool_args(config: Config, plan: ProfilePlan) -> str:
    """nsightToolArgs: nsys flags only (no `profile`, no -o), one string."""
    return " ".join(plan.handed_over((*plan.profile_args, *plan.collector_args)))


def helm_values(config: Config, plan: ProfilePlan) -> dict[str, Any]:
    target = eks_settings(config)
    if target.injector == "operator-26":
        return helm_values_26(config, plan)
    # No profile.volumes/volumeMounts: the job's pod spec declares the reports volume (and the
    # mounts that create the report folder); the webhook would add a second volume of the same
    # name, which the API server rejects.
    profile: dict[str, Any] = {"devtoolArgs": devtool_args(plan)}
    if target.injector == "sidecar":
        profile["injectionMatch"] = injection_pattern(config)
    else:
        profile["injectionIncludePatterns"] = [injection_pattern(config)]
    return {
        "devtoolBinariesImage": {
            "image": target.nsight_image,
            "imagePullPolicy": "IfNotPresent",
        },
        "profile": profile,
    }


def helm_values_26(config: Config, plan: ProfilePlan) -> dict[str, Any]:
    """Values of the nsight-operator chart 26.x (schemas/helm-nsight-operator-26.schema.json)."""
    target = eks_settings(config)
    injector_values: dict[str, Any] = {"privileged": target.privileged}
    if target.profile_config == "values":
        injector_values["nsightToolConfig"] = {
            "coordinator": coordinator_mode(config),
            "nsightToolArgs": tool_args(config, plan),
            "injectionIncludePatterns": [injection_pattern(config)],
        }
    cloud: dict[str, Any] = {"enabled": True}
    if config.capture.s3_uri:
        cloud["minio"] = {"enabled": False}
        cloud["secretRef"] = {"name": target.storage_secret}
    else:
        cloud["minio"] = {"enabled": True}
    values: dict[str, Any] = {"nsight-injector": injector_values, "cloudStorage": cloud}
    if not target.machine_config:
        values["machineConfig"] = None
    return values


def profile_config(config: Config, plan: ProfilePlan) -> dict[str, Any]:
    """The 26.3 NsightOperatorProfileConfig for this job (its rule schema is unconfirmed)."""
    target = eks_settings(config)
    name = config.job.name
    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "NsightOperatorProfileConfig",
        "metadata": {"name": f"{name}-profile", "namespace": target.namespace},
        "spec": {
            "nsightToolConfigs": [
                {
                    "name": name,
                    "coordinator": coordinator_mode(config),
                    "nsightToolArgs": tool_args(config, plan),
                }
            ],
            "injectionRules": [
                {
                    "name": name,
                    "podSelector": {"matchLabels": {injector(config).label: "enabled"}},
                    "injectionIncludePatterns": [injection_pattern(config)],
                    "nsightToolConfig": name,
                }
            ],
        },
    }
