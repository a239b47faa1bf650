"""A PyTorchJob or TrainJob of the user's own (target.manifest): read it to check and name
things, and write what profiling adds to it as a JSON patch (RFC 6902).

The patch adds, and changes nothing else: the injector label on the pods that record, the
volumes and mounts nsysgen's own job has (the reports volume and nsys's TMPDIR folder, the step
helper's ConfigMap), the env (the step window, TMPDIR, the pod's name), the grace period. A JSON
patch, not a strategic merge one: kustomize and kubectl merge custom resources as plain JSON,
which would replace the user's lists of containers, volumes and env instead of extending them.
So every operation is written for the lists the manifest has (append to one, or add the list).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from nsysgen.errors import Issue
from nsysgen.model import Config
from nsysgen.profile.plan_types import ProfilePlan
from nsysgen.targets.eks.jobs import (
    grace_seconds,
    profiling_env,
    profiling_volumes,
    runtime_patch,
)
from nsysgen.targets.eks.names import (
    eks_settings,
    injector,
    profiled_replicas,
    reports_on_volume,
)

FIELD = "target.manifest"
KINDS = {
    "pytorchjob": ("kubeflow.org/v1", "PyTorchJob"),
    "trainjob": (
        "trainer.kubeflow.org/v1alpha1",
        "TrainJob",
    ),
}


def manifest_inputs(config: Config) -> dict[str, str]:
    """target.manifest and its sha256 (the patch holds its list positions)."""
    path = eks_settings(config).manifest
    if path is None:
        return {}
    return {path: hashlib.sha256(Path(path).read_bytes()).hexdigest()}


def read_manifest(config: Config) -> dict[str, Any] | Issue:
    """The user's job, or why it cannot be used."""
    path = eks_settings(config).manifest
    assert path is not None
    api, kind = KINDS[eks_settings(config).job]
    try:
        docs = [d for d in yaml.safe_load_all(Path(path).read_text(encoding="utf-8")) if d]
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        reason = getattr(error, "strerror", None) or str(error).splitlines()[0]
        return Issue(
            FIELD,
            f"cannot read {path} ({reason}) (allowed: a YAML file, its path "
            "relative to the current directory)",
        )
    jobs = [d for d in docs if isinstance(d, dict) and d.get("kind") == kind]
    if len(jobs) != 1 or jobs[0].get("apiVersion") != api:
        return Issue(
            FIELD,
            f"{path} holds {len(jobs)} {kind} objects (allowed: exactly one "
            f"{api} {kind}, as target.job={eks_settings(config).job} says)",
        )
    return jobs[0]


def manifest_issues(config: Config) -> Iterator[Issue]:
    job = read_manifest(config)
    if isinstance(job, Issue):
        yield job
        return
    where = eks_settings(config).manifest
    shape = _shape_problem(job)
    if shape is not None:
        yield Issue(FIELD, f"{where}: {shape} (allowed: a {job['kind']} as its CRD defines it)")
        return
    settings = eks_settings(config)
    metadata = job["metadata"]
    if metadata["name"] != config.job.name:
        yield Issue(
            "job.name",
            f"{config.job.name!r} is not the name of the job in {where} "
            f"({metadata['name']!r}): reports, pods and verify are named by it (allowed: "
            f"job.name={metadata['name']})",
        )
    namespace = metadata.get("namespace", settings.namespace)
    if namespace != settings.namespace:
        yield Issue(
            "target.namespace",
            f"{settings.namespace!r} is not the namespace of the job in {where} "
            f"({namespace!r}): the helper's ConfigMap and fetch-reports.sh go there "
            f"(allowed: target.namespace={namespace})",
        )
    nodes, per_node = _nodes(job)
    if nodes != config.cluster.nodes:
        yield Issue(
            "cluster.nodes",
            f"{config.cluster.nodes} nodes, but the job in {where} runs {nodes} pods "
            f"(allowed: cluster.nodes={nodes})",
        )
    if per_node is not None and per_node != config.cluster.gpus_per_node:
        yield Issue(
            "cluster.gpus_per_node",
            f"{config.cluster.gpus_per_node} GPUs per node, but the job in {where} starts "
            f"{per_node} processes per pod (allowed: cluster.gpus_per_node={per_node})",
        )
    yield from _container_issues(config, job, where)


def _shape_problem(job: dict[str, Any]) -> str | None:
    """The first part of the job that is not what the patch must address, or None."""
    metadata, spec = job.get("metadata"), job.get("spec")
    if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
        return "metadata.name is missing"
    if not isinstance(spec, dict):
        return "spec is missing"
    if job["kind"] == "TrainJob":
        return _trainjob_shape(spec)
    replicas = spec.get("pytorchReplicaSpecs")
    if not isinstance(replicas, dict) or not isinstance(replicas.get("Master"), dict):
        return "spec.pytorchReplicaSpecs.Master is missing (nsysgen's node 0)"
    for kind, replica in replicas.items():
        problem = _replica_shape(kind, replica)
        if problem:
            return problem
    return None


def _trainjob_shape(spec: dict[str, Any]) -> str | None:
    trainer = spec.get("trainer")
    if not isinstance(trainer, dict) or not isinstance(trainer.get("numNodes"), int):
        return "spec.trainer.numNodes is missing"
    for key in ("env", "command"):
        if not isinstance(trainer.get(key, []), list):
            return f"spec.trainer.{key} is not a list"
    if not isinstance(spec.get("runtimePatches", []), list):
        return "spec.runtimePatches is not a list"
    return _items_problem(trainer.get("env", []), "spec.trainer.env")


def _replica_shape(kind: str, replica: Any) -> str | None:
    at = f"spec.pytorchReplicaSpecs.{kind}"
    if kind not in ("Master", "Worker") or not isinstance(replica, dict):
        return f"{at} is not a Master or Worker replica"
    count = replica.get("replicas", 1)
    if not isinstance(count, int) or count < 1 or (kind == "Master" and count != 1):
        return f"{at}.replicas is {count!r} (Master: 1, Worker: at least 1)"
    template = replica.get("template")
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        return f"{at}.template.spec is missing"
    metadata = template.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        return f"{at}.template.metadata is not a mapping"
    if isinstance(metadata, dict) and not isinstance(metadata.get("labels", {}), dict):
        return f"{at}.template.metadata.labels is not a mapping"
    pod = template["spec"]
    problems = [
        _items_problem(pod.get("containers"), f"{at}.template.spec.containers"),
        _items_problem(pod.get("volumes", []), f"{at}.template.spec.volumes"),
    ]
    for index, container in enumerate(pod.get("containers") or []):
        inner = f"{at}.template.spec.containers[{index}]"
        if not isinstance(container, dict):
            break  # named above
        problems.append(_items_problem(container.get("env", []), f"{inner}.env"))
        problems.append(_items_problem(container.get("volumeMounts", []), f"{inner}.volumeMounts"))
        if not isinstance(container.get("command", []), list):
            problems.append(f"{inner}.command is not a list")
    return next((p for p in problems if p), None)


def _items_problem(items: Any, at: str) -> str | None:
    if not isinstance(items, list) or not all(
        isinstance(i, dict) and isinstance(i.get("name"), str) for i in items
    ):
        return f"{at} is not a list of named items"
    return None


def _container_issues(config: Config, job: dict[str, Any], where: str | None) -> Iterator[Issue]:
    settings = eks_settings(config)
    if job["kind"] == "TrainJob":
        found: list[tuple[str, dict[str, Any] | None]] = [("trainer", job["spec"]["trainer"])]
    else:
        found = _containers(job)
    for label, container in found:
        if container is None:
            yield Issue(
                FIELD,
                f"{where}: {label} has no container named pytorch, which the injector "
                "profiles (allowed: a PyTorchJob whose pods run container pytorch)",
            )
            continue
        command = container.get("command") or []
        runs = command[0] if command else None
        if settings.injection_match is None and runs != settings.torchrun_path:
            # The injector's pattern is built from torchrun's path: another first word (a
            # shell wrapper, the image's entrypoint) is never profiled.
            yield Issue(
                FIELD,
                f"{where}: {label} runs {runs!r}, but the injector's pattern matches "
                f"{settings.torchrun_path!r} started by {settings.torchrun_interpreter!r} "
                "(allowed: command [torchrun's path], target.torchrun_path set to what the "
                "job runs, or target.injection_match)",
            )
        env = {e["name"]: e for e in container.get("env") or []}
        if "PYTHONPATH" in env and "value" not in env["PYTHONPATH"]:
            yield Issue(
                FIELD,
                f"{where}: {label} sets PYTHONPATH from a reference, which nsysgen cannot "
                "put its step helper in front of (allowed: a PYTHONPATH value, or none)",
            )
        if "TMPDIR" in env and reports_on_volume(config):
            yield Issue(
                FIELD,
                f"{where}: {label} sets TMPDIR, where nsys would then write its capture: a "
                "report the pod's end cut off would be lost with it (allowed: no TMPDIR in "
                "the job; nsysgen's is a folder of the reports volume)",
            )


def _nodes(job: dict[str, Any]) -> tuple[int, int | None]:
    """Its pods, and the processes each starts where it says (None: not said)."""
    spec = job["spec"]
    if job["kind"] == "TrainJob":
        per_node = spec["trainer"].get("numProcPerNode")
        return spec["trainer"]["numNodes"], per_node if isinstance(per_node, int) else None
    replicas = spec["pytorchReplicaSpecs"]
    nproc = str(spec.get("nprocPerNode", ""))
    pods = sum(int(replica.get("replicas", 1)) for replica in replicas.values())
    return pods, int(nproc) if nproc.isdigit() else None


def _containers(job: dict[str, Any]) -> list[tuple[str, dict[str, Any] | None]]:
    if job["kind"] == "TrainJob":
        return []
    out = []
    for kind, replica in sorted(((job.get("spec") or {}).get("pytorchReplicaSpecs") or {}).items()):
        containers = ((replica or {}).get("template") or {}).get("spec", {}).get("containers", [])
        mine = next((c for c in containers if c.get("name") == "pytorch"), None)
        out.append((kind, mine))
    return out


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _extend(doc: Mapping[str, Any], path: str, key: str, items: list[Any]) -> list[dict[str, Any]]:
    """Append `items` to the list doc[key] at `path`, or add the list."""
    if not items:
        return []
    if isinstance(doc.get(key), list):
        return [{"op": "add", "path": f"{path}/{key}/-", "value": item} for item in items]
    return [{"op": "add", "path": f"{path}/{key}", "value": items}]


def _labels(
    template: Mapping[str, Any], path: str, labels: Mapping[str, str]
) -> list[dict[str, Any]]:
    metadata = template.get("metadata")
    if not isinstance(metadata, dict):
        return [{"op": "add", "path": f"{path}/metadata", "value": {"labels": dict(labels)}}]
    if not isinstance(metadata.get("labels"), dict):
        return [{"op": "add", "path": f"{path}/metadata/labels", "value": dict(labels)}]
    return [
        {"op": "add", "path": f"{path}/metadata/labels/{_escape(k)}", "value": v}
        for k, v in labels.items()
    ]


def _env_ops(
    container: Mapping[str, Any], path: str, env: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The env nsysgen's job sets, without the variables the user's container sets itself
    (PYTHONPATH is put in front of theirs)."""
    theirs = {e.get("name"): i for i, e in enumerate(container.get("env") or [])}
    ops: list[dict[str, Any]] = []
    added = []
    for item in env:
        index = theirs.get(item["name"])
        if index is None:
            added.append(item)
        elif item["name"] == "PYTHONPATH" and "value" in (container["env"][index] or {}):
            value = f"{item['value']}:{container['env'][index]['value']}"
            # A position in the user's list: the patch fails rather than change another item
            # if the job it meets is not the one nsysgen read.
            ops.append({"op": "test", "path": f"{path}/env/{index}/name", "value": "PYTHONPATH"})
            ops.append({"op": "replace", "path": f"{path}/env/{index}/value", "value": value})
    return ops + _extend(container, path, "env", added)


def profile_patch(config: Config, plan: ProfilePlan) -> list[dict[str, Any]]:
    """The JSON patch for the user's job: profiling's additions and nothing else. A JSON round
    trip gives each value its own copy (deepcopy keeps shared items shared: YAML anchors)."""
    patch: list[dict[str, Any]] = json.loads(json.dumps(_patch(config, plan)))
    return patch


def _patch(config: Config, plan: ProfilePlan) -> list[dict[str, Any]]:
    job = read_manifest(config)
    assert not isinstance(job, Issue)  # checks refused it before
    labels = {injector(config).label: "enabled"}
    volumes, mounts = profiling_volumes(config, plan)
    env = profiling_env(config, plan)
    ops: list[dict[str, Any]] = []
    if job["kind"] == "TrainJob":
        spec = job["spec"]
        entry = runtime_patch(config, plan, labels, volumes, mounts)
        ops += _extend(spec, "/spec", "runtimePatches", [entry])
        ops += _env_ops(spec["trainer"], "/spec/trainer", env)
        return ops
    grace = grace_seconds(config, plan)
    recorded = profiled_replicas(config)
    for kind, replica in sorted(job["spec"]["pytorchReplicaSpecs"].items()):
        if kind not in recorded:
            continue
        base = f"/spec/pytorchReplicaSpecs/{_escape(kind)}/template"
        template = replica["template"]
        ops += _labels(template, base, labels)
        spec = template["spec"]
        ops += _extend(spec, f"{base}/spec", "volumes", volumes)
        theirs = spec.get("terminationGracePeriodSeconds")
        if not (isinstance(theirs, int) and theirs >= grace):
            ops.append(
                {"op": "add", "path": f"{base}/spec/terminationGracePeriodSeconds", "value": grace}
            )
        index = next(i for i, c in enumerate(spec["containers"]) if c.get("name") == "pytorch")
        container = spec["containers"][index]
        path = f"{base}/spec/containers/{index}"
        ops.append({"op": "test", "path": f"{path}/name", "value": "pytorch"})
        ops += _extend(container, path, "volumeMounts", mounts)
        ops += _env_ops(container, path, env)
    return ops
