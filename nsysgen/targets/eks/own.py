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

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from nsysgen.errors import Issue
from nsysgen.model import Config
from nsysgen.targets.eks.names import eks_settings

FIELD = "target.manifest"
KINDS = {
    "pytorchjob": ("kubeflow.org/v1", "PyTorchJob"),
    "trainjob": (
        "trainer.kubeflow.org/v1alpha1",
        "TrainJob",
    ),
}


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
    name = (job.get("metadata") or {}).get("name")
    if name != config.job.name:
        yield Issue(
            "job.name",
            f"{config.job.name!r} is not the name of the job in "
            f"{eks_settings(config).manifest} ({name!r}): reports, pods and verify "
            f"are named by it (allowed: job.name={name})",
        )
    nodes = _nodes(job)
    if nodes != config.cluster.nodes:
        yield Issue(
            "cluster.nodes",
            f"{config.cluster.nodes} nodes, but the job in "
            f"{eks_settings(config).manifest} runs {nodes} pods (allowed: "
            f"cluster.nodes={nodes})",
        )
    commands = [(label, c.get("command")) for label, c in _containers(job) if c is not None]
    if job["kind"] == "TrainJob":
        commands = [("trainer", ((job.get("spec") or {}).get("trainer") or {}).get("command"))]
    for label, container in _containers(job):
        if container is None:
            yield Issue(
                FIELD,
                f"{label} has no container named pytorch, which the injector "
                "profiles (allowed: a PyTorchJob whose pods run container pytorch)",
            )
    settings = eks_settings(config)
    for label, command in commands:
        runs = command[0] if isinstance(command, list) and command else None
        if settings.injection_match is None and runs != settings.torchrun_path:
            # The injector's pattern is built from torchrun's path: another first word (a
            # shell wrapper, the image's entrypoint) is never profiled.
            yield Issue(
                FIELD,
                f"{label} runs {runs!r}, but the injector's pattern matches "
                f"{settings.torchrun_path!r} started by {settings.torchrun_interpreter!r} "
                "(allowed: command [torchrun's path], target.torchrun_path set to what the "
                "job runs, or target.injection_match)",
            )


def _nodes(job: dict[str, Any]) -> int | None:
    spec = job.get("spec") or {}
    if job["kind"] == "TrainJob":
        value = (spec.get("trainer") or {}).get("numNodes")
        return value if isinstance(value, int) else None
    replicas = spec.get("pytorchReplicaSpecs") or {}
    return sum(int((replicas.get(t) or {}).get("replicas", 1)) for t in replicas)


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
            ops.append({"op": "replace", "path": f"{path}/env/{index}/value", "value": value})
    return ops + _extend(container, path, "env", added)


def profile_patch(
    config: Config,
    labels: Mapping[str, str],
    volumes: list[dict[str, Any]],
    mounts: list[dict[str, Any]],
    env: list[dict[str, Any]],
    grace: int | None,
    recorded: tuple[str, ...],
) -> list[dict[str, Any]]:
    """The JSON patch for the user's job: profiling's additions and nothing else (each value
    its own copy: the YAML of the patch holds no anchors)."""
    # A JSON round trip, not deepcopy (which keeps shared items shared, as YAML anchors).
    patch: list[dict[str, Any]] = json.loads(
        json.dumps(_patch(config, labels, volumes, mounts, env, grace, recorded))
    )
    return patch


def _patch(
    config: Config,
    labels: Mapping[str, str],
    volumes: list[dict[str, Any]],
    mounts: list[dict[str, Any]],
    env: list[dict[str, Any]],
    grace: int | None,
    recorded: tuple[str, ...],
) -> list[dict[str, Any]]:
    job = read_manifest(config)
    assert not isinstance(job, Issue)  # checks refused it before
    ops: list[dict[str, Any]] = []
    if job["kind"] == "TrainJob":
        spec = job.get("spec") or {}
        pod_spec: dict[str, Any] = {
            "volumes": volumes,
            "containers": [{"name": "node", "volumeMounts": mounts}],
        }
        if grace is not None:
            pod_spec["terminationGracePeriodSeconds"] = grace
        entry = {
            "manager": "nsysgen",
            "trainingRuntimeSpec": {
                "template": {
                    "spec": {
                        "replicatedJobs": [
                            {
                                "name": eks_settings(config).runtime_job,
                                "template": {
                                    "spec": {
                                        "template": {
                                            "metadata": {"labels": dict(labels)},
                                            "spec": pod_spec,
                                        }
                                    }
                                },
                            }
                        ]
                    }
                }
            },
        }
        ops += _extend(spec, "/spec", "runtimePatches", [entry])
        ops += _env_ops(spec.get("trainer") or {}, "/spec/trainer", env)
        return ops
    for kind, replica in sorted(job["spec"]["pytorchReplicaSpecs"].items()):
        if kind not in recorded:
            continue
        base = f"/spec/pytorchReplicaSpecs/{_escape(kind)}/template"
        template = replica["template"]
        ops += _labels(template, base, labels)
        spec = template["spec"]
        ops += _extend(spec, f"{base}/spec", "volumes", volumes)
        if grace is not None:
            ops.append(
                {"op": "add", "path": f"{base}/spec/terminationGracePeriodSeconds", "value": grace}
            )
        index = next(i for i, c in enumerate(spec["containers"]) if c.get("name") == "pytorch")
        container = spec["containers"][index]
        path = f"{base}/spec/containers/{index}"
        ops += _extend(container, path, "volumeMounts", mounts)
        ops += _env_ops(container, path, env)
    return ops
