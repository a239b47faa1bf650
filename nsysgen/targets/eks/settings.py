"""The EKS target's typed `target` block."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from nsysgen.model import TargetSettings


@dataclass(frozen=True)
class EksSettings(TargetSettings):
    namespace: str
    injector: Literal["sidecar", "operator"]
    charts: Mapping[str, str]  # injector -> Helm chart URL
    release: str
    nsight_image: str
    reports_pvc: str
    torchrun_interpreter: str
    torchrun_path: str
    injection_match: str | None
    restart_policy: str
    termination_grace_period_s: int
    secret_env: Mapping[str, Mapping[str, str]]  # variable -> {secret, key}
    extra_resources: Mapping[str, Any]
