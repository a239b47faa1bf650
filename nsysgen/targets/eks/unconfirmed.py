"""What this setup relies on of the Nsight Operator 26.x that no public source confirms, each
point with the command that checks it on the cluster.

Two kinds: keys nsysgen writes that its schemas mark `x-unconfirmed` (the Helm values, and the
NsightOperatorProfileConfig of `target.profile_config=resource`), found by walking what this
setup writes against the schema, so only keys it really sets are named; and the operator's
behaviours that no key shows (what an include pattern is matched against, how reports are named
in the bucket). `nsysgen plan` prints the list and the folder's README holds it, where the
people who apply the job read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from nsysgen.model import Config
from nsysgen.profile.plan_types import ProfilePlan
from nsysgen.resources import schema
from nsysgen.targets.eks.helm import helm_values_26, profile_config
from nsysgen.targets.eks.names import coordinator_mode, eks_settings

Point = tuple[str, str]  # (what is not confirmed, how to check it: commands in backticks)
AFTER_A_RUN = "after a first run, `./fetch-reports.sh`, then `nsysgen verify` on the reports"

HELM_SCHEMA = "helm-nsight-operator-26.schema.json"
PROFILE_SCHEMA = "nsight-operator-profile-config-26.3.schema.json"


def marked(node: Mapping[str, Any], value: Any, path: str = "") -> Iterator[str]:
    """The paths in `value` whose schema (`node`) is marked x-unconfirmed (a marked object's
    own keys are not named again: the whole object is the point)."""
    if node.get("x-unconfirmed"):
        yield path
        return
    if isinstance(value, dict):
        properties = node.get("properties") or {}
        for key, sub in value.items():
            if key in properties:
                yield from marked(properties[key], sub, f"{path}.{key}" if path else key)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for item in value[:1]:  # every item has the same schema
            yield from marked(node["items"], item, f"{path}[]")


def points(config: Config, plan: ProfilePlan) -> tuple[Point, ...]:
    """This setup's unconfirmed points; () unless it installs the Nsight Operator 26.x."""
    target = eks_settings(config)
    if target.injector != "operator-26":
        return ()
    chart = target.charts.get("operator-26", "<the chart>")
    found: list[Point] = [
        (f"the Helm value {key}", f"`helm show values {chart} | grep -n '{key.split('.')[-1]}'`")
        for key in marked(schema(HELM_SCHEMA), helm_values_26(config, plan))
    ]
    if target.profile_config == "resource":
        for key in marked(schema(PROFILE_SCHEMA), profile_config(config, plan)):
            field = key.replace("[]", "")
            check = (
                "`kubectl api-resources --api-group=nvidia.com`"
                if key == "apiVersion"
                else f"`kubectl explain nsightoperatorprofileconfig.{field}`"
            )
            found.append((f"the profile config's {key}", check))
        found.append(
            (
                f"a profile config read from the job's namespace ({target.namespace}) under "
                "another name than default-profile-config",
                f"`kubectl get nsightoperatorprofileconfigs -A` lists {config.job.name}-profile, "
                "and a first run's reports pass `nsysgen verify`",
            )
        )
    found.append(
        (
            "whether the include pattern is matched against the process name or its whole "
            "command line",
            "the probe under 'Before you apply' prints the image's torchrun command line; after "
            "a first run, `nsysgen verify` on its reports",
        )
    )
    window = (
        "that the coordinator opens the window the capture asks for (--delay and --duration "
        "are the coordinator's in Coordinator Mode)"
        if coordinator_mode(config)
        else "what coordinator: false does in 26.x (nsysgen relies on it leaving the window "
        "to nsys's own switches, or to the program's cudaProfilerStart/Stop)"
    )
    found.append((window, AFTER_A_RUN))
    found.append(
        (
            "how the operator names the reports in the bucket",
            AFTER_A_RUN + " (it names a report it cannot match)",
        )
    )
    return tuple(found)
