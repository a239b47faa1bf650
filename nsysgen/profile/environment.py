"""The job's environment: every variable nsysgen sets for the tasks, and why.

Three sources, a later one winning for the same name: `cluster.env_defaults` (what the instance
type's EFA/NCCL stack wants), `workload.env_defaults` (what the framework needs), `cluster.env`
(the user's own). A default whose entry is null is removed, so a user can drop one without
copying the group's file; one marked `efa_only` applies only on a cluster with EFA devices, so
`cluster.efa_devices=0` drops the EFA settings with the devices. Every target emits this one
table, and each README lists it with the reasons: nothing in a job's environment is unexplained.
"""

from __future__ import annotations

from nsysgen.model import Config
from nsysgen.profile.plan_types import YOURS, EnvVar, JobEnv, Unset


def _defaults(config: Config) -> tuple[dict[str, EnvVar], dict[str, Unset]]:
    """The defaults of both groups, the workload's winning for the same name."""
    chosen: dict[str, EnvVar] = {}
    unset: dict[str, Unset] = {}
    groups = (("cluster", config.cluster.env_defaults), ("workload", config.workload.env_defaults))
    for group, entries in groups:
        for name, entry in entries:
            key = f"{group}.env_defaults.{name}"
            chosen.pop(name, None)
            unset.pop(name, None)
            if entry is None:
                unset[name] = Unset(name, key, "null in the config")
            elif entry.efa_only and config.cluster.efa_devices == 0:
                unset[name] = Unset(name, key, "EFA only, and this cluster has no EFA devices")
            else:
                chosen[name] = EnvVar(name, entry.value, key, entry.reason)
    return chosen, unset


def job_env(config: Config, own_job: bool = False) -> JobEnv:
    """The variables every task gets. `own_job`: for a job script or manifest of the user's own,
    whose environment is theirs: only the names nsysgen sets by default (with the user's
    cluster.env value where it names one), which the job's own setting then wins over."""
    chosen, unset = _defaults(config)
    for name, value in config.cluster.env:
        default = chosen.get(name)
        if default is None and own_job:
            continue
        reason = (
            YOURS
            if default is None
            else f"{YOURS}, in place of nsysgen's default {default.value} ({default.reason})"
        )
        chosen[name] = EnvVar(name, value, f"cluster.env.{name}", reason)
        unset.pop(name, None)
    return JobEnv(tuple(chosen[n] for n in sorted(chosen)), tuple(unset[n] for n in sorted(unset)))
