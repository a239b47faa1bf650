"""Workload plug-ins: one module each (nccl, nemo, fsdp, megatron, bridge, command, python),
each implementing `base.Workload`, listed in `registry.WORKLOADS`; `steps` holds what
capture=steps means whatever the workload."""

from __future__ import annotations
