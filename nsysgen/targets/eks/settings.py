"""The EKS target's typed `target` block."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from nsysgen.model import TargetSettings

JobKind = Literal["trainjob", "pytorchjob"]
InjectorKind = Literal["operator-26", "operator-1", "sidecar"]
TrainerVersion = Literal["2.2", "2.3", "2.4"]


@dataclass(frozen=True)
class EksSettings(TargetSettings):
    namespace: str
    job: JobKind
    runtime: str  # the TrainJob's runtimeRef.name
    runtime_kind: Literal["ClusterTrainingRuntime", "TrainingRuntime"]
    runtime_job: str  # the runtime's replicated job that runs torchrun (runtimePatches name it)
    trainer_version: TrainerVersion  # the Kubeflow Trainer the TrainJob is written for
    injector: InjectorKind
    charts: Mapping[str, str]  # injector -> Helm chart URL
    release: str
    operator_namespace: str  # where the 26.x chart is installed
    profile_config: Literal["values", "resource"]  # 26.x: flat 26.2 keys or the 26.3 CR
    coordinator: Literal["auto"] | bool
    storage_secret: str  # 26.x: Secret with storage-config.yaml (for capture.s3_uri)
    machine_config: bool
    privileged: bool
    nsight_image: str
    reports_pvc: str
    torchrun_interpreter: str
    torchrun_path: str
    injection_match: str | None
    manifest: str | None  # a PyTorchJob or TrainJob of the user's own: nsysgen patches it
    restart_policy: str
    termination_grace_period_s: int | None  # None: sized from the report-size estimate
    secret_env: Mapping[str, Mapping[str, str]]  # variable -> {secret, key}
    extra_resources: Mapping[str, Any]
