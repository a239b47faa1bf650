"""EKS, a job of the user's own (target.manifest): nsysgen's JSON patch applied to the team's
PyTorchJob and TrainJob of tests/user_jobs/k8s/ by the real kubectl (its kustomize, through the
folder's Component, and `kubectl patch`), then checked as nsysgen's own jobs are: strictly
against the CRDs, the operator's and the Trainer's admission rules, the Pod schema, the
injector's webhook; and nothing of the user's own is changed or dropped."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from nsysgen.cli import main
from tests.conftest import REPO, RunCli
from tests.k8s_checks import (
    crd_problems,
    crd_problems_against,
    inject,
    pod_spec_problems,
    webhook_problems,
)
from tests.trainer_merge import admission_problems, kubectl, runtime, trainer_pods, trainjob_crd

OWN = REPO / "tests" / "user_jobs" / "k8s"
EKS = ["target=eks", "workload=fsdp", "workload.container_image=registry.example.com/fsdp:1"]
# slow: every stack's manifests merged and checked (about 16 s on 2 cores).
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        kubectl() is None, reason="kubectl missing (tests/infra/install-system-deps.sh installs it)"
    ),
]


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # target.manifest is relative to the working directory


def compile_own(tmp_path: Path, manifest: Path, name: str, *overrides: str) -> Path:
    out = tmp_path / "out"
    relative = manifest.relative_to(REPO)
    args = [*EKS, f"target.manifest={relative}", f"job.name={name}", "target.namespace=training"]
    args += overrides
    assert main([*args, f"output_dir={out}"]) == 0
    return out / name


def kustomized(folder: Path, manifest: Path, tmp_path: Path) -> dict[str, Any]:
    """The user's kustomization: their job in resources, nsysgen's folder as a component."""
    mine = tmp_path / "mine"
    mine.mkdir(exist_ok=True)
    shutil.copy(manifest, mine / manifest.name)
    component = Path("..") / folder.relative_to(tmp_path)
    (mine / "kustomization.yaml").write_text(
        f"resources:\n- {manifest.name}\ncomponents:\n- {component}\n"
    )
    done = subprocess.run([str(kubectl()), "kustomize", str(mine)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    job: dict[str, Any] = yaml.safe_load(done.stdout)
    return job


def patched(folder: Path, manifest: Path) -> dict[str, Any]:
    done = subprocess.run(
        [str(kubectl()), "patch", "--local", "-f", str(manifest), "--type", "json"]
        + ["--patch-file", str(folder / "profile-patch.yaml"), "-o", "yaml"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    job: dict[str, Any] = yaml.safe_load(done.stdout)
    return job


def kept(original: Any, result: Any, path: str = "") -> list[str]:
    """What of `original` is missing or changed in `result` (a list must start with the
    original's items; maps keep every key)."""
    if isinstance(original, dict):
        if not isinstance(result, dict):
            return [path]
        return [p for k, v in original.items() for p in kept(v, result.get(k), f"{path}.{k}")]
    if isinstance(original, list):
        if not isinstance(result, list) or len(result) < len(original):
            return [path]
        return [p for i, v in enumerate(original) for p in kept(v, result[i], f"{path}[{i}]")]
    return [] if original == result else [path]


@pytest.mark.parametrize("injector", ["sidecar", "operator-1", "operator-26"])
@pytest.mark.parametrize("capture", ["window", "steps"])
def test_own_pytorchjob_patched_as_nsysgens_own(
    tmp_path: Path, injector: str, capture: str
) -> None:
    manifest = OWN / "pytorchjob.yaml"
    folder = compile_own(
        tmp_path,
        manifest,
        "llama-fsdp",
        "target.job=pytorchjob",
        f"target.injector={injector}",
        f"capture={capture}",
        "capture.ranks=all",
    )
    assert not (folder / "pytorchjob.yaml").exists()
    job = kustomized(folder, manifest, tmp_path)
    assert job == patched(folder, manifest)  # both ways give the same job
    original = yaml.safe_load(manifest.read_text())
    # The user's own: all there, unchanged, but their PYTHONPATH, which the step helper's
    # folder now leads.
    changed = kept(original, job)
    pythonpath = ".spec.pytorchReplicaSpecs.Master.template.spec.containers[0].env[1].value"
    assert changed == ([pythonpath] if capture == "steps" else [])
    assert crd_problems(job) == [] and webhook_problems(job) == []
    values = yaml.safe_load((folder / "values-injector.yaml").read_text())
    label = "nvidia-nsight-profile" if injector != "sidecar" else "nvidia-devtools-sidecar-injector"
    for kind, replica in job["spec"]["pytorchReplicaSpecs"].items():
        template = replica["template"]
        assert template["metadata"]["labels"][label] == "enabled", kind
        spec = template["spec"]
        assert pod_spec_problems(inject(spec, values)) == [], kind
        [container] = spec["containers"]
        env = {e["name"]: e for e in container["env"]}
        assert env["TMPDIR"]["value"] == "/nsys-tmp"
        if capture == "steps":
            assert env["NSYSGEN_PROFILE_FIRST_STEP"]["value"] == "10"
            if kind == "Master":  # theirs kept, nsysgen's helper first
                assert env["PYTHONPATH"]["value"] == "/nsysgen-site:/workspace/lib"
        if injector != "operator-26":
            assert "NSYSGEN_POD" in env
            assert {v["name"] for v in spec["volumes"]} >= {"nsys-reports", "nsys-tmp"}
        assert spec["terminationGracePeriodSeconds"] >= 60


@pytest.mark.parametrize("version", ["2.2", "2.3", "2.4"])
@pytest.mark.parametrize("injector", ["sidecar", "operator-26"])
def test_own_trainjob_patched_as_nsysgens_own(tmp_path: Path, version: str, injector: str) -> None:
    manifest = OWN / "trainjob.yaml"
    folder = compile_own(
        tmp_path,
        manifest,
        "llama-tj",
        f"target.trainer_version={version}",
        f"target.injector={injector}",
        "capture=steps",
    )
    job = kustomized(folder, manifest, tmp_path)
    assert job == patched(folder, manifest)
    assert kept(yaml.safe_load(manifest.read_text()), job) == []
    assert crd_problems_against(job, trainjob_crd(version)) == []
    assert admission_problems(job, runtime(version, "torch_distributed.yaml")) == []
    pods = trainer_pods(version, job, "torch_distributed.yaml")
    node = pods["node"]
    label = (
        "nvidia-nsight-profile" if injector == "operator-26" else "nvidia-devtools-sidecar-injector"
    )
    assert node["metadata"]["labels"][label] == "enabled"
    assert pod_spec_problems(node["spec"]) == []
    [container] = node["spec"]["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["NCCL_DEBUG"]["value"] == "WARN"  # theirs
    assert env["NSYSGEN_PROFILE_LAST_STEP"]["value"] == "14"
    assert {m["mountPath"] for m in container["volumeMounts"]} >= {"/nsys-tmp", "/nsysgen-site"}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["job.name=other"], "job.name: 'other' is not the name of the job in"),
        (["job.name=llama-fsdp", "cluster.nodes=4"], "cluster.nodes: 4 nodes, but the job in"),
        (["job.name=llama-fsdp", "target.job=trainjob"], "holds 0 TrainJob objects"),
        (
            ["job.name=llama-fsdp", "target.torchrun_path=/opt/conda/bin/torchrun"],
            "Master runs '/usr/local/bin/torchrun', but the injector's pattern matches",
        ),
    ],
)
def test_own_manifest_mismatches_are_refused(
    run_cli: RunCli, tmp_path: Path, overrides: list[str], message: str
) -> None:
    manifest = OWN / "pytorchjob.yaml"
    result = run_cli(
        *EKS,
        "target.job=pytorchjob",
        f"target.manifest={manifest.relative_to(REPO)}",
        "target.namespace=training",
        *overrides,
        f"output_dir={tmp_path}",
    )
    assert result.code == 2, result.err
    assert message in result.err
    assert "Traceback" not in result.err and not any(tmp_path.iterdir())


BROKEN = [
    # (what changes in the team's manifest, the message)
    (
        "metadata:\n  name: llama-fsdp\n  namespace: training",
        "metadata:\n  name: llama-fsdp\n  namespace: other",
        "target.namespace: 'training' is not the namespace",
    ),
    (
        "    Master:\n      replicas: 1",
        "    Master:\n      replicas: two",
        "Master.replicas is 'two'",
    ),
    (
        "                - name: NCCL_DEBUG\n                  value: WARN",
        "                - name: TMPDIR\n                  value: /scratch",
        "Master sets TMPDIR",
    ),
    (
        "                  value: /workspace/lib",
        "                  valueFrom: {configMapKeyRef: {name: c, key: k}}",
        "sets PYTHONPATH from a reference",
    ),
    ("    Master:\n", "    Launcher:\n", "spec.pytorchReplicaSpecs.Master is missing"),
]


@pytest.mark.parametrize(("old", "new", "message"), BROKEN)
def test_own_manifest_that_would_lose_the_profile_is_refused(
    run_cli: RunCli,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    old: str,
    new: str,
    message: str,
) -> None:
    text = (OWN / "pytorchjob.yaml").read_text()
    assert old in text
    (tmp_path / "job.yaml").write_text(text.replace(old, new))
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    result = run_cli(
        *EKS,
        "target.job=pytorchjob",
        "target.injector=sidecar",
        "capture=steps",
        "target.manifest=job.yaml",
        "target.namespace=training",
        "job.name=llama-fsdp",
        f"output_dir={out}",
    )
    assert result.code == 2, result.err
    assert message in result.err
    assert "Traceback" not in result.err and not out.exists()


def test_command_workload_with_the_programs_own_window(tmp_path: Path, run_cli: RunCli) -> None:
    """workload=command, step_method=native: nsys waits for the program's own
    cudaProfilerStart/Stop; no helper, no step env; verify checks the window, not steps."""
    import json

    out = tmp_path / "out"
    result = run_cli(
        "cluster=local",
        "workload=command",
        "workload.command.argv=[/opt/app/bin/train,--iters,'100']",
        "capture=steps",
        "capture.step_method=native",
        "target.job_script=yours",
        "job.name=native",
        f"output_dir={out}",
    )
    assert result.code == 0, result.err
    folder = out / "native"
    wrapper = (folder / "nsys-exec").read_text()
    assert "--capture-range=cudaProfilerApi" in wrapper and "nsysgen-site" not in wrapper
    assert "NSYSGEN_PROFILE_" not in (folder / "nsysgen-env.sh").read_text()
    assert "method: native (the program calls cudaProfilerStart" in result.out
    expect = json.loads((folder / "nsysgen-expect.json").read_text())
    assert expect["capture"]["steps"]["regex"] == "(?!)"
    assert (
        "source " in result.out and '"$NSYSGEN_EXEC" /opt/app/bin/train --iters 100' in result.out
    )


def test_check_names_the_changed_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: RunCli
) -> None:
    """The manifest is a recorded input: a folder compiled from it is current until the team
    changes it, then `check` names it as the cause and `regenerate` rewrites the patch."""
    (tmp_path / "k8s").mkdir()
    shutil.copy(OWN / "pytorchjob.yaml", tmp_path / "k8s" / "job.yaml")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    args = [*EKS, "target.job=pytorchjob", "target.manifest=k8s/job.yaml"]
    args += ["target.namespace=training", "job.name=llama-fsdp", f"output_dir={out}"]
    assert run_cli(*args).code == 0
    assert run_cli("check", f"output_dir={out}").code == 0
    text = (tmp_path / "k8s" / "job.yaml").read_text()
    (tmp_path / "k8s" / "job.yaml").write_text(
        text.replace("  name: llama-fsdp\n", "  name: llama-fsdp\n  labels: {x: y}\n", 1)
    )
    check = run_cli("check", f"output_dir={out}")
    assert check.code == 1
    assert "k8s/job.yaml changed since this folder was compiled" in check.out, check.out
    regenerate = run_cli("regenerate", f"output_dir={out}")
    assert regenerate.code == 0, regenerate.err
    assert run_cli("check", f"output_dir={out}").code == 0
