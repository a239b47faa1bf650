"""Offline stand-ins for what a live EKS cluster would check.

- the PyTorchJob CRD schema (kubeflow/training-operator v1.9.0), with unknown fields made
  errors as `kubectl --validate=strict` does;
- the training operator's validating-webhook rules, re-implemented from its source;
- the pod template as a Pod, against the Kubernetes schemas that kubernetes-validate ships;
- Helm values against the JSON Schemas in schemas/ written from the charts' documented keys.
"""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

REPO = Path(__file__).resolve().parent.parent
# A copy of the CRD (provenance: kubeflow.org_pytorchjobs.SOURCE.txt beside it).
CRD = REPO / "tests" / "data" / "kubeflow.org_pytorchjobs.yaml"
KUBERNETES_VERSION = "1.31"
# Kubeflow Trainer v2 (provenance: kubeflow-trainer-v2.SOURCE.txt beside them).
TRAINJOB_CRD = REPO / "tests" / "data" / "trainer.kubeflow.org_trainjobs.yaml"
TORCH_RUNTIME = REPO / "tests" / "data" / "kubeflow-trainer-torch-distributed.yaml"
HELM_SCHEMAS = {
    "sidecar": "helm-devtools-sidecar-injector-1.0.schema.json",
    "operator-1": "helm-nsight-operator-1.schema.json",
    "operator-26": "helm-nsight-operator-26.schema.json",
}
PROFILE_CONFIG_SCHEMA = "nsight-operator-profile-config-26.3.schema.json"
_DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")


def _strict(node: Any) -> Any:
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node:
            node.setdefault("additionalProperties", False)
        for value in node.values():
            _strict(value)
    elif isinstance(node, list):
        for value in node:
            _strict(value)
    return node


@cache
def _crd_validator(path: Path = CRD) -> jsonschema.Draft4Validator:
    crd = yaml.safe_load(path.read_text())
    schema = copy.deepcopy(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    return jsonschema.Draft4Validator(_strict(schema))


def crd_problems(job: dict[str, Any]) -> list[str]:
    """The PyTorchJob or TrainJob against its CRD copy, unknown fields rejected."""
    return crd_problems_against(job, TRAINJOB_CRD if job.get("kind") == "TrainJob" else CRD)


@cache
def _torch_runtime() -> dict[str, Any]:
    # A Helm template: drop the lines with chart helpers, keep the plain YAML.
    lines = [line for line in TORCH_RUNTIME.read_text().splitlines() if "{{" not in line]
    runtime: dict[str, Any] = yaml.safe_load("\n".join(lines))
    return runtime


def trainjob_pod(job: dict[str, Any]) -> dict[str, Any]:  # noqa: C901
    """The pod the trainer would create: torch-distributed's pod template, the trainer block
    applied to the `node` container, then the runtimePatches (labels, volumes, mounts, ...)."""
    runtime = _torch_runtime()
    [step] = [
        r for r in runtime["spec"]["template"]["spec"]["replicatedJobs"] if r["name"] == "node"
    ]
    template = copy.deepcopy(step["template"]["spec"]["template"])
    spec = template["spec"]
    [container] = [c for c in spec["containers"] if c["name"] == "node"]
    trainer = job["spec"]["trainer"]
    container.update(
        {k: trainer[k] for k in ("image", "command", "args", "env") if k in trainer},
    )
    if "resourcesPerNode" in trainer:
        container["resources"] = trainer["resourcesPerNode"]
    metadata = template.setdefault("metadata", {})
    for patch in job["spec"].get("runtimePatches", []):
        for rjob in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]:
            if rjob["name"] != "node":
                continue
            pod = rjob["template"]["spec"]["template"]
            metadata.setdefault("labels", {}).update(pod.get("metadata", {}).get("labels", {}))
            for key, value in pod.get("spec", {}).items():
                if key == "containers":
                    for change in value:
                        [target] = [c for c in spec["containers"] if c["name"] == change["name"]]
                        for field, items in change.items():
                            if field != "name":
                                target.setdefault(field, []).extend(items)
                elif isinstance(value, list):
                    spec.setdefault(key, []).extend(value)
                else:
                    spec[key] = value
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{job['metadata']['name']}-node-0-0", **metadata},
        "spec": spec,
    }


def _container_problems(kind: str, replica: dict[str, Any]) -> list[str]:
    problems = []
    containers = replica.get("template", {}).get("spec", {}).get("containers", [])
    if not containers:
        problems.append(f"{kind} has no container")
    if not any(c.get("name") == "pytorch" for c in containers):
        problems.append(f"{kind} has no container named pytorch")
    for container in containers:
        if not container.get("image"):
            problems.append(f"{kind} container {container.get('name')} has no image")
        for section in ("requests", "limits"):
            for resource, amount in container.get("resources", {}).get(section, {}).items():
                if amount is None:
                    problems.append(f"{kind} {section} {resource} has no value")
    return problems


def webhook_problems(job: dict[str, Any]) -> list[str]:
    """The training operator's admission rules (pkg/webhooks/pytorch/pytorchjob_webhook.go)."""
    problems = []
    if not _DNS_1035.match(job.get("metadata", {}).get("name", "")):
        problems.append("metadata.name is not a DNS-1035 label")
    spec = job.get("spec", {})
    replicas = spec.get("pytorchReplicaSpecs", {})
    for kind, replica in replicas.items():
        if kind not in ("Master", "Worker"):
            problems.append(f"replica type {kind} is not Master or Worker")
        problems += _container_problems(kind, replica)
    if "Master" in replicas and replicas["Master"].get("replicas") != 1:
        problems.append("Master.replicas must be 1")
    if "Worker" in replicas and replicas["Worker"].get("replicas", 1) < 1:
        problems.append("Worker.replicas must be >= 1")
    elastic = spec.get("elasticPolicy")
    if elastic is not None and "Worker" not in replicas:
        problems.append("elasticPolicy needs a Worker")
    if elastic is not None and "nProcPerNode" in elastic and "nprocPerNode" in spec:
        problems.append("elasticPolicy.nProcPerNode and nprocPerNode are exclusive")
    return problems


def pod_problems(job: dict[str, Any]) -> list[str]:
    problems = []
    if job["kind"] == "TrainJob":
        try:
            kubernetes_validate.validate(trainjob_pod(job), KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            problems.append(f"node: {error.message} at {list(error.path)}")
        return problems
    for kind, replica in job["spec"]["pytorchReplicaSpecs"].items():
        template = replica["template"]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{job['metadata']['name']}-{kind.lower()}-0",
                **template.get("metadata", {}),
            },
            "spec": template["spec"],
        }
        try:
            kubernetes_validate.validate(pod, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            problems.append(f"{kind}: {error.message} at {list(error.path)}")
    return problems


@cache
def _helm_validator(injector: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((REPO / "schemas" / HELM_SCHEMAS[injector]).read_text())
    return jsonschema.Draft202012Validator(schema)


def helm_problems(values: dict[str, Any], injector: str) -> list[str]:
    return [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
        for e in _helm_validator(injector).iter_errors(values)
    ]


def load_generated_yaml(path: Path) -> Any:
    """A generated YAML file, checking that it is block YAML behind a comment header."""
    text = path.read_text()
    assert text.startswith("# Generated by nsysgen. DO NOT EDIT"), path
    return yaml.safe_load(text)


def profile_config_problems(resource: dict[str, Any]) -> list[str]:
    """A 26.3 NsightOperatorProfileConfig against schemas/ (fields marked x-unconfirmed)."""
    schema = json.loads((REPO / "schemas" / PROFILE_CONFIG_SCHEMA).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    return [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(resource)
    ]


_ENV_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def pod_spec_problems(spec: dict[str, Any]) -> list[str]:
    """What the API server's pod validation refuses and a JSON schema cannot see: volume names
    that repeat, a container's mount paths that repeat, a mount of no volume, a subPathExpr
    that names a variable the container does not define (the kubelet would leave it as is)."""
    problems = []
    names = [v["name"] for v in spec.get("volumes", [])]
    problems += [f"volume {n!r} declared twice" for n in sorted(set(names)) if names.count(n) > 1]
    for container in spec.get("containers", []) + spec.get("initContainers", []):
        mounts = container.get("volumeMounts", [])
        paths = [m["mountPath"] for m in mounts]
        label = container["name"]
        problems += [
            f"{label}: {p!r} mounted twice" for p in sorted(set(paths)) if paths.count(p) > 1
        ]
        defined = {e["name"] for e in container.get("env", [])}
        for mount in mounts:
            if mount["name"] not in names:
                problems.append(f"{label}: mount of undeclared volume {mount['name']!r}")
            for var in _ENV_REF.findall(mount.get("subPathExpr", "")):
                if var not in defined:
                    problems.append(f"{label}: subPathExpr names undefined variable {var}")
    return problems


def inject(spec: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """A labelled pod's spec after the 1.x injector's webhook: its profile.volumes appended to
    the pod's, its profile.volumeMounts to each container's (as the guide's values expect)."""
    profile = values.get("profile", {})
    out = copy.deepcopy(spec)
    out["volumes"] = out.get("volumes", []) + profile.get("volumes", [])
    for container in out["containers"]:
        container["volumeMounts"] = container.get("volumeMounts", []) + profile.get(
            "volumeMounts", []
        )
    return out


def crd_problems_against(job: dict[str, Any], crd: Path) -> list[str]:
    """The job against one CRD copy (a release's), unknown fields rejected, and the keys of its
    keyed lists (x-kubernetes-list-type: map) unique, as the API server requires."""
    validator = _crd_validator(crd)
    problems = [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
        for e in sorted(validator.iter_errors(job), key=lambda e: list(e.absolute_path))
    ]
    schema = yaml.safe_load(crd.read_text())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return problems + _list_key_problems(schema, job, "")


def _list_key_problems(schema: dict[str, Any], value: Any, path: str) -> list[str]:
    problems = []
    if isinstance(value, dict):
        for key, item in value.items():
            sub = schema.get("properties", {}).get(key)
            if sub is None and isinstance(schema.get("additionalProperties"), dict):
                sub = schema["additionalProperties"]
            if sub is not None:
                problems += _list_key_problems(sub, item, f"{path}.{key}")
    elif isinstance(value, list):
        keys = schema.get("x-kubernetes-list-map-keys")
        if schema.get("x-kubernetes-list-type") == "map" and keys:
            seen = [tuple(item.get(k) for k in keys) for item in value if isinstance(item, dict)]
            problems += [
                f"{path}: duplicate {dict(zip(keys, key, strict=True))}"
                for key in sorted(set(seen), key=str)
                if seen.count(key) > 1
            ]
        for index, item in enumerate(value):
            problems += _list_key_problems(schema.get("items", {}), item, f"{path}[{index}]")
    return problems


def fetch_kubectl(busybox: str, created: str, volume: Path) -> str:
    """A stand-in `kubectl` for fetch-reports.sh: `get` answers the job's creation time, and
    `exec` runs the helper pod's own `sh -c SCRIPT sh DIR SINCE` under BusyBox, with the pod's
    /fsx (the reports volume) at `volume`."""
    return (
        'case "$1" in\n'
        f'  get) echo "{created}" ;;\n'
        '  exec) while [ "$1" != -- ]; do shift; done; shift\n'
        f'    exec {busybox} sh -c "$3" sh "{volume}${{5#/fsx}}" "$6" ;;\n'
        "esac\n"
    )
