"""Kubeflow Trainer's merge of a TrainJob's runtimePatches into its runtime, per release.

The merge itself is Kubernetes' strategic merge patch, the apimachinery code the Trainer calls
(`strategicpatch.StrategicMergePatch`), run here by `kubectl patch --local --type strategic` on
a batch/v1 Job: kubectl reads the same struct tags (volumes, containers and env merged by name,
volume mounts by path) for the Job template the Trainer merges. What differs between releases
is what it is applied to (tests/data/kubeflow-trainer-versions.SOURCE.txt):
- 2.2: each patched replicated job's template, only where the runtime has that job;
- 2.3 and later: the whole JobSet spec, whose replicatedJobs (JobSet v0.12.0) merge by name:
  a job of the same name merges as in 2.2, a new name is appended.
Then, as the Trainer's torch plugin does, the trainer block's env is upserted into the `node`
container and its image, command and arguments set.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import REPO

DATA = REPO / "tests" / "data"
VERSIONS = {"2.2": "kubeflow-trainer-v2.2.0", "2.3": "kubeflow-trainer-v2.3.0"}
# 2.4 has no public source here; its API is 2.3's, with shorter job names (checked by nsysgen).
CRD_OF = {"2.2": "2.2", "2.3": "2.3", "2.4": "2.3"}
RUNTIMES = ("torch_distributed.yaml", "torch_distributed_with_cache.yaml")


def kubectl() -> str | None:
    return shutil.which("kubectl")


def runtime(version: str, name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DATA / VERSIONS[CRD_OF[version]] / name).read_text())
    return loaded


def trainjob_crd(version: str) -> Path:
    return DATA / VERSIONS[CRD_OF[version]] / "trainer.kubeflow.org_trainjobs.yaml"


def admission_problems(trainjob: dict[str, Any], source: dict[str, Any]) -> list[str]:
    """The TrainJob webhook's checks of runtimePatches against the runtime (both releases:
    pkg/runtime/framework/plugins/jobset/jobset.go): a patched replicated job and its
    containers must exist in the runtime, and the initializer and node containers take no env
    from a patch."""
    jobs = {
        job["name"]: {c["name"] for c in job["template"]["spec"]["template"]["spec"]["containers"]}
        | {c["name"] for c in job["template"]["spec"]["template"]["spec"].get("initContainers", [])}
        for job in source["spec"]["template"]["spec"]["replicatedJobs"]
    }
    problems = []
    for entry in trainjob["spec"].get("runtimePatches", []):
        spec = ((entry.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}
        for job in spec.get("replicatedJobs", []):
            if job["name"] not in jobs:
                problems.append(f"replicated job {job['name']!r} is not in the runtime")
                continue
            pod = ((job.get("template") or {}).get("spec") or {}).get("template") or {}
            for container in (pod.get("spec") or {}).get("containers", []) + (
                pod.get("spec") or {}
            ).get("initContainers", []):
                if container["name"] not in jobs[job["name"]]:
                    problems.append(f"container {container['name']!r} is not in {job['name']}")
                elif container.get("env") and container["name"] in (
                    "dataset-initializer",
                    "model-initializer",
                    "node",
                ):
                    problems.append(f"env for container {container['name']!r}")
    return problems


def merge_template(template: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """A JobTemplateSpec with a strategic merge patch applied, by kubectl."""
    tool = kubectl()
    assert tool, "kubectl missing: run tests/infra/install-system-deps.sh"
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "merge", **template.get("metadata", {})},
        "spec": template.get("spec", {}),
    }
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "job.json"
        source.write_text(json.dumps(job))
        done = subprocess.run(
            [tool, "patch", "--local", "-f", str(source), "--type", "strategic"]
            + ["-p", json.dumps(patch), "-o", "json"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    merged: dict[str, Any] = json.loads(done.stdout)
    metadata = {k: v for k, v in merged.get("metadata", {}).items() if k != "name"}
    return {"metadata": metadata, "spec": merged["spec"]}


def merge_runtime_patches(
    version: str, jobset_spec: dict[str, Any], patches: list[dict[str, Any]]
) -> dict[str, Any]:
    """The runtime's JobSet spec after the TrainJob's runtimePatches, as `version` merges them."""
    spec = copy.deepcopy(jobset_spec)
    for entry in patches:
        template = (entry.get("trainingRuntimeSpec") or {}).get("template") or {}
        patch_spec = template.get("spec")
        if patch_spec is None:
            continue
        for job_patch in patch_spec.get("replicatedJobs", []):
            if job_patch.get("template") is None:
                continue
            same = [job for job in spec["replicatedJobs"] if job["name"] == job_patch["name"]]
            for job in same:
                job["template"] = merge_template(job["template"], job_patch["template"])
            if not same and CRD_OF[version] != "2.2":
                spec["replicatedJobs"].append(copy.deepcopy(job_patch))
    return spec


def trainer_pods(version: str, trainjob: dict[str, Any], runtime_file: str) -> dict[str, Any]:
    """replicated job name -> its pod template, once the TrainJob is applied to the runtime."""
    source = runtime(version, runtime_file)
    spec = merge_runtime_patches(
        version, source["spec"]["template"]["spec"], trainjob["spec"].get("runtimePatches", [])
    )
    trainer = trainjob["spec"]["trainer"]
    pods = {}
    for job in spec["replicatedJobs"]:
        pod = copy.deepcopy(job["template"]["spec"]["template"])
        labels = job["template"].get("metadata", {}).get("labels", {})
        if labels.get("trainer.kubeflow.org/trainjob-ancestor-step") == "trainer":
            for container in pod["spec"]["containers"]:
                if container["name"] == "node":
                    _apply_trainer(container, trainer)
        pods[job["name"]] = pod
    return pods


def _apply_trainer(container: dict[str, Any], trainer: dict[str, Any]) -> None:
    for key in ("image", "command", "args"):
        if key in trainer:
            container[key] = trainer[key]
    env = {item["name"]: item for item in container.get("env", [])}
    env.update({item["name"]: item for item in trainer.get("env", [])})  # upsert by name
    container["env"] = list(env.values())
    if "resourcesPerNode" in trainer:
        container["resources"] = trainer["resourcesPerNode"]
