"""The workload registry: `workload.<kind>` -> its plug-in. Adding a workload is one module of
this package and one line here."""

from __future__ import annotations

from nsysgen.model import Config
from nsysgen.profile.workloads import bridge, command, fsdp, megatron, nccl, nemo, python
from nsysgen.profile.workloads.base import Workload

WORKLOADS: dict[str, Workload] = {
    "nccl": nccl.WORKLOAD,
    "nemo": nemo.WORKLOAD,
    "fsdp": fsdp.WORKLOAD,
    "megatron": megatron.WORKLOAD,
    "bridge": bridge.WORKLOAD,
    "command": command.WORKLOAD,
    "python": python.WORKLOAD,
}


def workload_kind(config: Config) -> Workload:
    return WORKLOADS[config.workload.kind]
