"""EKS: the pods nsysgen's jobs become. The TrainJob applied to each Trainer release's runtimes
by that release's merge (tests/trainer_merge.py), validated against its CRD; the injector's
webhook applied to the labelled pods; deadlines, grace periods and the checks of the new keys."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from nsysgen.cli import main
from tests.conftest import RunCli
from tests.k8s_checks import crd_problems_against, inject, pod_spec_problems
from tests.trainer_merge import (
    CRD_OF,
    RUNTIMES,
    admission_problems,
    kubectl,
    merge_runtime_patches,
    runtime,
    trainer_pods,
    trainjob_crd,
)

# slow: every Trainer release and runtime merged (about 16 s on 2 cores).
pytestmark = pytest.mark.slow

IMAGE = "workload.container_image=registry.example.com/fsdp:1"
EKS = ["target=eks", "workload=fsdp", IMAGE]
VOLUME_INJECTORS = ["sidecar", "operator-1"]


def compile_one(tmp_path: Path, *overrides: str) -> Path:
    out = tmp_path / "out"
    assert main([*EKS, *overrides, "job.name=tj", f"output_dir={out}"]) == 0
    return out / "tj"


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


needs_kubectl = pytest.mark.skipif(
    kubectl() is None, reason="kubectl missing (tests/infra/install-system-deps.sh installs it)"
)


@pytest.mark.parametrize("version", ["2.2", "2.3", "2.4"])
@pytest.mark.parametrize("injector", ["operator-26", *VOLUME_INJECTORS])
def test_trainjob_passes_its_release_crd(tmp_path: Path, version: str, injector: str) -> None:
    folder = compile_one(
        tmp_path, f"target.trainer_version={version}", f"target.injector={injector}"
    )
    job = load(folder / "trainjob.yaml")
    assert crd_problems_against(job, trainjob_crd(version)) == []
    assert job["spec"]["activeDeadlineSeconds"] == 3600  # job.time_limit_min: 60
    pod = job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"][
        "replicatedJobs"
    ][0]["template"]["spec"]["template"]["spec"]
    assert ("terminationGracePeriodSeconds" in pod) == (version != "2.2")


def test_release_difference_is_real(tmp_path: Path) -> None:
    """2.3's pod patch (grace period) is refused by 2.2's CRD: the outputs must differ."""
    job = load(compile_one(tmp_path, "target.trainer_version=2.3") / "trainjob.yaml")
    problems = crd_problems_against(job, trainjob_crd("2.2"))
    assert any("terminationGracePeriodSeconds" in p for p in problems), problems


@needs_kubectl
@pytest.mark.parametrize("runtime_file", RUNTIMES)
@pytest.mark.parametrize("version", ["2.2", "2.3", "2.4"])
@pytest.mark.parametrize("injector", ["operator-26", "sidecar"])
def test_patch_merges_into_the_runtime_as_the_trainer_does(
    tmp_path: Path, version: str, injector: str, runtime_file: str
) -> None:
    """The recorded pods get exactly the label, env, volumes and mounts nsysgen meant, merged
    into the runtime's (whose own env and other jobs stay), and no job is appended."""
    folder = compile_one(
        tmp_path,
        f"target.trainer_version={version}",
        f"target.injector={injector}",
        "capture=steps",
    )
    job = load(folder / "trainjob.yaml")
    source = runtime(version, runtime_file)
    assert admission_problems(job, source) == []
    assert crd_problems_against(job, trainjob_crd(version)) == []
    pods = trainer_pods(version, job, runtime_file)
    source_jobs = [j["name"] for j in source["spec"]["template"]["spec"]["replicatedJobs"]]
    assert list(pods) == source_jobs  # merged, nothing appended
    [patch] = job["spec"]["runtimePatches"]
    [meant] = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    meant_pod = meant["template"]["spec"]["template"]
    node = pods["node"]
    label = (
        "nvidia-nsight-profile" if injector == "operator-26" else "nvidia-devtools-sidecar-injector"
    )
    assert node["metadata"]["labels"][label] == "enabled"
    spec = node["spec"]
    assert pod_spec_problems(spec) == []
    assert [v["name"] for v in spec["volumes"]] == [v["name"] for v in meant_pod["spec"]["volumes"]]
    [container] = [c for c in spec["containers"] if c["name"] == "node"]
    assert container["volumeMounts"] == meant_pod["spec"]["containers"][0]["volumeMounts"]
    env = {e["name"]: e for e in container["env"]}
    for item in job["spec"]["trainer"]["env"]:
        assert env[item["name"]] == item
    if runtime_file == "torch_distributed_with_cache.yaml":  # the runtime's own env stays
        assert "TRAIN_JOB_NAME" in env
        assert pods["dataset-initializer"] == next(
            j["template"]["spec"]["template"]
            for j in source["spec"]["template"]["spec"]["replicatedJobs"]
            if j["name"] == "dataset-initializer"
        )
    assert ("terminationGracePeriodSeconds" in spec) == (version != "2.2")
    if injector == "sidecar":  # nsys's TMPDIR: the pod's folder of the report folder
        [tmp] = [m for m in container["volumeMounts"] if m["mountPath"] == "/nsys-tmp"]
        assert tmp == {
            "name": "nsys-tmp",
            "mountPath": "/nsys-tmp",
            "subPathExpr": "nsight-reports/tj/.nsysgen/$(NSYSGEN_POD)",
        }
        claims = {v["name"]: v.get("persistentVolumeClaim") for v in spec["volumes"]}
        assert claims["nsys-tmp"] == claims["nsys-reports"] == {"claimName": "fsx-pvc"}
        assert env["NSYSGEN_POD"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}


@needs_kubectl
@pytest.mark.parametrize("version", ["2.2", "2.3"])
def test_merge_and_admission_emulation_can_fail(version: str) -> None:
    """The emulation is not a pass-through: the webhook refuses a patch for a job or container
    the runtime lacks, or env for `node`; 2.3's merge over the JobSet spec would append a new
    job where 2.2's skips it; a patch for `node` merges its lists instead of replacing them;
    and the CRD check sees a container mounting one volume twice (mounts keyed by name)."""
    source = runtime(version, "torch_distributed.yaml")
    base = source["spec"]["template"]["spec"]

    def trainjob(job: dict[str, Any]) -> dict[str, Any]:
        patch = {"trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [job]}}}}
        return {"spec": {"runtimePatches": [patch]}}

    stray = {"name": "trainer", "template": {"spec": {"template": {"spec": {"volumes": []}}}}}
    assert admission_problems(trainjob(stray), source) == [
        "replicated job 'trainer' is not in the runtime"
    ]
    names = [
        j["name"]
        for j in merge_runtime_patches(version, base, trainjob(stray)["spec"]["runtimePatches"])[
            "replicatedJobs"
        ]
    ]
    assert names == (["node"] if version == "2.2" else ["node", "trainer"])
    with_env = {"containers": [{"name": "node", "env": [{"name": "B", "value": "2"}]}]}
    node = {"name": "node", "template": {"spec": {"template": {"spec": with_env}}}}
    assert admission_problems(trainjob(node), source) == ["env for container 'node'"]
    withenv = copy.deepcopy(base)
    withenv["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "A", "value": "1"}
    ]
    merged = merge_runtime_patches(version, withenv, trainjob(node)["spec"]["runtimePatches"])
    container = merged["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
    assert sorted(e["name"] for e in container["env"]) == ["A", "B"]
    twice = {
        "containers": [
            {
                "name": "node",
                "volumeMounts": [
                    {"name": "v", "mountPath": "/a"},
                    {"name": "v", "mountPath": "/b", "subPath": "x"},
                ],
            }
        ]
    }
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "x"},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            **trainjob({"name": "node", "template": {"spec": {"template": {"spec": twice}}}})[
                "spec"
            ],
        },
    }
    assert any(
        "duplicate {'name': 'v'}" in p for p in crd_problems_against(job, trainjob_crd(version))
    )


@pytest.mark.parametrize("job", ["trainjob", "pytorchjob"])
@pytest.mark.parametrize("injector", VOLUME_INJECTORS)
def test_injected_pods_declare_each_volume_once(tmp_path: Path, job: str, injector: str) -> None:
    """The webhook adds its values' volumes to labelled pods: nsysgen's values add none, so the
    pods the API server sees hold each volume once. The guide's values (the reports volume in
    both places) would be refused: the check can fail."""
    folder = compile_one(tmp_path, f"target.job={job}", f"target.injector={injector}")
    assert not (folder / "label-namespace.sh").exists()  # other pods have no report folder
    values = load(folder / "values-injector.yaml")
    assert "volumes" not in values["profile"] and "volumeMounts" not in values["profile"]
    manifest = load(folder / f"{job}.yaml")
    if job == "pytorchjob":
        specs = [r["template"]["spec"] for r in manifest["spec"]["pytorchReplicaSpecs"].values()]
    else:
        specs = [pod["spec"] for pod in _naive_pods(manifest)]
    guide = {
        "profile": {
            "volumes": [
                {"name": "nsys-reports", "persistentVolumeClaim": {"claimName": "fsx-pvc"}}
            ],
            "volumeMounts": [{"name": "nsys-reports", "mountPath": "/fsx"}],
        }
    }
    for spec in specs:
        assert pod_spec_problems(inject(spec, values)) == []
        assert "volume 'nsys-reports' declared twice" in pod_spec_problems(inject(spec, guide))


def _naive_pods(trainjob: dict[str, Any]) -> list[dict[str, Any]]:
    """The patch's own pod template (what nsysgen adds), without a runtime: enough for the
    webhook's additions, which only meet what nsysgen declares."""
    [patch] = trainjob["spec"]["runtimePatches"]
    jobs = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    pods = []
    for job in jobs:
        pod = copy.deepcopy(job["template"]["spec"]["template"])
        for container in pod["spec"]["containers"]:
            container["env"] = trainjob["spec"]["trainer"]["env"]
        pods.append(pod)
    return pods


def test_grace_period_follows_the_report_estimate(tmp_path: Path) -> None:
    """Bigger reports, longer grace: the same estimate as Slurm's --signal=TERM@S."""
    small = load(compile_one(tmp_path / "a", "target.job=pytorchjob") / "pytorchjob.yaml")
    big = load(
        compile_one(
            tmp_path / "b",
            "target.job=pytorchjob",
            "capture.duration=900",
            "job.time_limit_min=120",
        )
        / "pytorchjob.yaml"
    )

    def grace(job: dict[str, Any]) -> int:
        value: int = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"][
            "terminationGracePeriodSeconds"
        ]
        return value

    assert grace(small) == 60  # the floor
    assert grace(big) > grace(small)
    assert big["spec"]["runPolicy"]["activeDeadlineSeconds"] == 7200
    fixed = load(
        compile_one(tmp_path / "c", "target.job=pytorchjob", "target.termination_grace_period_s=45")
        / "pytorchjob.yaml"
    )
    assert grace(fixed) == 45


def test_trainer_24_job_name_limit(run_cli: RunCli, tmp_path: Path) -> None:
    name = "target.runtime_job=a-very-long-trainer-job"  # 23 characters
    refused = run_cli(*EKS, name, f"output_dir={tmp_path}")
    assert refused.code == 2
    assert "target.runtime_job: 'a-very-long-trainer-job' has 23 characters" in refused.err
    assert "Traceback" not in refused.err and not any(tmp_path.iterdir())
    older = run_cli(*EKS, name, "target.trainer_version=2.3", f"output_dir={tmp_path}")
    assert older.code == 0, older.err


def test_report_folder_outside_the_volume_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    """With NSG007 switched off, the pods still could not mount the folder: refused."""
    result = run_cli(
        *EKS,
        "target.injector=sidecar",
        "capture.report_dir=/scratch/reports",
        "+lints.severity.NSG007=off",
        f"output_dir={tmp_path}",
    )
    assert result.code == 2
    assert "capture.report_dir: '/scratch/reports' is not a folder inside the shared volume" in (
        result.err
    )


def test_patched_script_says_rebuild(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli(*EKS, "capture=steps", "capture.step_method=patch", f"output_dir={tmp_path}")
    assert result.code == 0, result.err
    assert "[NSG019]" in result.err
    readme = next(tmp_path.glob("*/README.md")).read_text()
    assert "**Rebuild the image**" in readme
    hook = run_cli(*EKS, "capture=steps", f"output_dir={tmp_path / 'h'}")
    assert "[NSG019]" not in hook.err
    assert "Rebuild the image" not in next((tmp_path / "h").glob("*/README.md")).read_text()


@pytest.mark.parametrize("version", sorted(CRD_OF))
def test_every_release_has_a_crd(version: str) -> None:
    assert trainjob_crd(version).is_file()


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("capture.report_dir=/fsx/r/%h", "capture.report_dir: '/fsx/r/%h' holds '%'"),
        ("+cluster.env.NSYSGEN_POD=x", "cluster.env.NSYSGEN_POD: NSYSGEN_POD is nsysgen's own"),
        (
            "job.name=a-very-long-job-name-that-makes-pod-names-too-long",
            "which Kubernetes cuts at 58",
        ),
    ],
)
def test_volume_injector_inputs_that_would_lose_reports(
    run_cli: RunCli, tmp_path: Path, override: str, message: str
) -> None:
    result = run_cli(*EKS, "target.injector=sidecar", override, f"output_dir={tmp_path}")
    assert result.code == 2, result.err
    assert message in result.err
    assert "Traceback" not in result.err and not any(tmp_path.iterdir())


def test_verify_finds_each_pods_folder_by_its_name(tmp_path: Path) -> None:
    """JobSet pods carry a random suffix after <job>-<rjob>-0-<node>: node 1's folder is not
    node 10's, and of a retried pod's folders the newest counts."""
    import os

    from nsysgen.shipped.verify import _state_dirs, expected_reports

    folder = compile_one(tmp_path, "target.injector=sidecar", "cluster.nodes=12")
    expect = json.loads((folder / "nsysgen-expect.json").read_text())
    entries = {e["node"]: e for e in expected_reports(expect)}
    assert entries[1]["pod"] == "tj-node-0-1" and entries[10]["pod"] == "tj-node-0-10"
    state = tmp_path / "run" / ".nsysgen"
    for name, mtime in [
        ("tj-node-0-10-abcde", 100),
        ("tj-node-0-1-zzzzz", 100),
        ("tj-node-0-1-aaaaa", 200),
    ]:
        (state / name).mkdir(parents=True)
        os.utime(state / name, (mtime, mtime))
    assert [d.name for d in _state_dirs(tmp_path / "run", entries[1])] == [
        "tj-node-0-1-aaaaa",
        "tj-node-0-1-zzzzz",
    ]
    assert [d.name for d in _state_dirs(tmp_path / "run", entries[10])] == ["tj-node-0-10-abcde"]
    pytorch = compile_one(
        tmp_path / "p", "target.injector=sidecar", "target.job=pytorchjob", "capture.ranks=all"
    )
    expect = json.loads((pytorch / "nsysgen-expect.json").read_text())
    assert [e["pod"] for e in expected_reports(expect)] == ["tj-master-0", "tj-worker-0"]
