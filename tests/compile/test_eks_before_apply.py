"""EKS runs as generated (issue 40): every setup has the training script where its pods run it,
every window and fetch script waits for pods to exist before waiting for them to be Ready, and
the folder's README says what must be on the cluster, with the command that checks it."""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from nsysgen.cli import main
from nsysgen.config.compose import Composer
from nsysgen.drivers.pipeline import build_config
from nsysgen.targets.eks import TARGET

# slow: every EKS setup compiled and its scripts run (about 8 s on 2 cores).
pytestmark = pytest.mark.slow

IMAGE = "workload.container_image=registry.example.com/fsdp:1"
ON_FS = "/fsx/awsome-distributed-training/3.test_cases/pytorch/FSDP/src/train.py"  # the default
IN_IMAGE = "/workspace/fsdp/train.py"
SETUPS = [
    (job, injector, version, script)
    for job, injector, version, script in itertools.product(
        ["trainjob", "pytorchjob"],
        ["operator-26", "operator-1", "sidecar"],
        ["2.2", "2.3", "2.4"],
        [ON_FS, IN_IMAGE],
    )
    if job == "trainjob" or version == "2.4"  # the Trainer's version is a TrainJob's only
]


def _compile(out: Path, *overrides: str) -> Path:
    assert main(["target=eks", "workload=fsdp", IMAGE, *overrides, f"output_dir={out}"]) == 0
    [folder] = [p for p in out.iterdir() if p.is_dir()]
    return folder


def _pods(folder: Path) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """(volumes, the torchrun container's mounts) of every kind of pod the job makes."""
    trainjob = folder / "trainjob.yaml"
    if trainjob.exists():
        job = yaml.safe_load(trainjob.read_text())
        [patch] = job["spec"]["runtimePatches"]
        [replicated] = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
        spec = replicated["template"]["spec"]["template"]["spec"]
        [container] = spec["containers"]
        return [(spec["volumes"], container["volumeMounts"])]
    job = yaml.safe_load((folder / "pytorchjob.yaml").read_text())
    found = []
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        spec = replica["template"]["spec"]
        [container] = [c for c in spec["containers"] if c["name"] == "pytorch"]
        found.append((spec["volumes"], container["volumeMounts"]))
    return found


def _runs(folder: Path) -> str:
    trainjob = folder / "trainjob.yaml"
    if trainjob.exists():
        return str(yaml.safe_load(trainjob.read_text())["spec"]["trainer"]["args"][1])
    job = yaml.safe_load((folder / "pytorchjob.yaml").read_text())
    return str(
        job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["args"][1]
    )


@pytest.mark.parametrize(("job", "injector", "version", "script"), SETUPS)
def test_every_pod_has_the_script_where_it_runs_it(
    tmp_path: Path, job: str, injector: str, version: str, script: str
) -> None:
    """A script under cluster.shared_fs: every pod mounts the fsx-pvc claim at /fsx (before
    issue 40, operator-26's pods mounted nothing there and torchrun found no script). Any other
    absolute path is the image's: no mount hides it, and no lint fires."""
    folder = _compile(
        tmp_path,
        f"target.job={job}",
        f"target.injector={injector}",
        f"target.trainer_version={version}",
        f"workload.fsdp.script={script}",
    )
    assert _runs(folder) == script
    for volumes, mounts in _pods(folder):
        claims = {
            v["name"]: v["persistentVolumeClaim"]["claimName"]
            for v in volumes
            if "persistentVolumeClaim" in v
        }
        covering = [m for m in mounts if script.startswith(m["mountPath"].rstrip("/") + "/")]
        if script == ON_FS:
            assert [(m["mountPath"], claims.get(m["name"])) for m in covering] == [
                ("/fsx", "fsx-pvc")
            ]
            assert "subPath" not in covering[0] and "subPathExpr" not in covering[0]
        else:
            assert covering == []
    readme = (folder / "README.md").read_text()
    where = "on the shared file system" if script == ON_FS else "in the image"
    assert f"the training script {script} {where}" in readme
    assert "NSG025" not in (folder / "nsysgen-manifest.json").read_text()


def test_operator_26_mounts_no_file_system_for_a_script_in_the_image(tmp_path: Path) -> None:
    """The committed experiment's shape (the script in the image): operator-26 pods mount no
    claim at all, as before."""
    folder = _compile(tmp_path, f"workload.fsdp.script={IN_IMAGE}")
    [(volumes, _)] = _pods(folder)
    assert not [v for v in volumes if "persistentVolumeClaim" in v]


# ---------------------------------------------------------------------------------------------
# Window and fetch scripts against a kubectl whose pods do not exist yet

# Pod queries (get pods, wait pods) answer as before the controller made the pods for the first
# LATE calls (kubectl's own words, on stderr), then as with POD_COUNT pods; every other call
# answers enough for the script to go on.
STANDIN_KUBECTL = r"""#!/bin/bash
printf '%s\n' "kubectl $*" >>"$CALLS"
count=$(cat "$COUNTER" 2>/dev/null || echo 0)
case "$1 $2" in
  "get pods"|"wait pods")
    count=$((count + 1))
    echo "$count" >"$COUNTER"
    if [ "$count" -le "$LATE" ]; then
      if [ "$1" = wait ]; then
        echo "error: no matching resources found" >&2
        exit 1
      fi
      if [ "$3" = -l ] || [ "${3#-}" != "$3" ] || [ "$#" -le 4 ]; then
        echo "No resources found in default namespace." >&2
        exit 0
      fi
      echo "Error from server (NotFound): pods \"$3\" not found" >&2
      exit 1
    fi
    if [ "$1" = get ]; then
      for ((i = 0; i < POD_COUNT; i++)); do echo "pod/p$i"; done
    fi
    ;;
  "exec "*)
    tar -cf - -T /dev/null
    ;;
esac
case " $* " in *"{.metadata.creationTimestamp}"*) echo 2026-12-02T03:00:00Z ;; esac
exit 0
"""


def _bin(folder: Path) -> Path:
    folder.mkdir()
    tools = {
        "kubectl": STANDIN_KUBECTL,
        # nsight_operator.py, nsysgen-verify.py: what they do is tested elsewhere.
        "python3": '#!/bin/bash\nprintf "%s\\n" "python3 $*" >>"$CALLS"\n',
        "nsight_operator.py": "#!/bin/bash\n",
        # The polls count, not the clock: a sleep that returns at once keeps the test fast.
        "sleep": '#!/bin/bash\nprintf "%s\\n" "sleep $*" >>"$CALLS"\n',
    }
    for name, body in tools.items():
        (folder / name).write_text(body)
        (folder / name).chmod(0o755)
    return folder


WAITING = {
    # name -> overrides; each writes a capture-window.sh or fetch-reports.sh
    "trainjob-26-window": ["capture=window"],
    "pytorchjob-26-window": ["capture=window", "target.job=pytorchjob"],
    "trainjob-26-steps": ["capture=steps"],
    "trainjob-operator-1": ["target.injector=operator-1"],
    "pytorchjob-sidecar": ["target.job=pytorchjob", "target.injector=sidecar"],
}


def _scripts(folder: Path) -> list[Path]:
    return [folder / n for n in ("capture-window.sh", "fetch-reports.sh") if (folder / n).exists()]


def _run(
    script: Path, bin_dir: Path, tmp: Path, late: int, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(script), str(tmp / "reports")],
        cwd=tmp,
        env={
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "HOME": str(tmp),
            "CALLS": str(tmp / "calls"),
            "COUNTER": str(tmp / "counter"),
            "LATE": str(late),
            "POD_COUNT": "2",
            **env,
        },
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("name", sorted(WAITING))
def test_scripts_wait_for_pods_to_exist_then_to_be_ready(tmp_path: Path, name: str) -> None:
    folder = _compile(tmp_path / "out", *WAITING[name])
    bin_dir = _bin(tmp_path / "bin")
    scripts = _scripts(folder)
    assert scripts
    for script in scripts:
        for stale in ("calls", "counter"):
            (tmp_path / stale).unlink(missing_ok=True)
        result = _run(script, bin_dir, tmp_path, late=3)
        assert result.returncode == 0, (script.name, result.stderr)
        calls = (tmp_path / "calls").read_text().splitlines()
        pod_calls = [c for c in calls if c.startswith(("kubectl get pods", "kubectl wait pods"))]
        waits = [i for i, c in enumerate(pod_calls) if c.startswith("kubectl wait")]
        if script.name == "fetch-reports.sh" and not waits:
            # operator-26: reports come from the operator's storage, no pod to wait for.
            assert "download" in (folder / script.name).read_text()
            continue
        # The first three answers said "no pods yet": the script polled, slept, and waited
        # for readiness only once the pods were there.
        assert pod_calls[:3] == [pod_calls[0]] * 3 and pod_calls[0].startswith("kubectl get pods")
        assert waits == [len(pod_calls) - 1] and len(pod_calls) == 5, pod_calls
        assert "--for=condition=Ready" in pod_calls[-1]
        assert sum(c.startswith("sleep ") for c in calls) >= 3


@pytest.mark.parametrize("name", sorted(WAITING))
def test_scripts_stop_with_a_clear_message_when_pods_never_appear(
    tmp_path: Path, name: str
) -> None:
    folder = _compile(tmp_path / "out", *WAITING[name])
    bin_dir = _bin(tmp_path / "bin")
    for script in _scripts(folder):
        if "wait_for_pods" not in script.read_text():
            continue  # operator-26's fetch: no pod
        (tmp_path / "counter").unlink(missing_ok=True)
        short = {"NSYSGEN_POLL_S": "1", "NSYSGEN_PODS_TIMEOUT_S": "3"}
        result = _run(script, bin_dir, tmp_path, late=10**6, **short)
        assert result.returncode == 1, (script.name, result.stderr)
        want = "2" if script.name == "capture-window.sh" else "1"
        assert f"{script.name}: 0 of {want} pod(s)" in result.stderr
        assert "after 3 s" in result.stderr and "NSYSGEN_PODS_TIMEOUT_S" in result.stderr
        bad = _run(script, bin_dir, tmp_path, late=0, NSYSGEN_POLL_S="0")
        assert bad.returncode == 2 and "whole seconds" in bad.stderr


def test_a_job_of_your_own_is_waited_for_by_its_controller_label(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """target.manifest: the patch adds no `app` label; the pods carry their controller's."""
    monkeypatch.chdir(tmp_path)  # target.manifest is relative to the working directory
    manifest = tmp_path / "mine.yaml"
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "mine"},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 2, "numProcPerNode": 8, "command": ["/usr/local/bin/torchrun"]},
        },
    }
    manifest.write_text(yaml.safe_dump(job))
    folder = _compile(
        tmp_path / "out", "capture=window", "job.name=mine", "target.manifest=mine.yaml"
    )
    assert (
        "wait_for_pods 2 -l jobset.sigs.k8s.io/jobset-name=mine"
        in (folder / "capture-window.sh").read_text()
    )


# ---------------------------------------------------------------------------------------------
# Before you apply


def _prerequisites(*overrides: str) -> tuple[tuple[str, str, str], ...]:
    """What `nsysgen plan` gets from the target (the lead's plan report prints it)."""
    composed = Composer().compose(["target=eks", "workload=fsdp", IMAGE, *overrides])
    config, _, _ = build_config(composed)
    return TARGET.prerequisites(config)


@pytest.mark.parametrize(
    "overrides",
    [
        [],
        ["capture=window", "capture.s3_uri=s3://bucket-1/p", "target.profile_config=resource"],
        ["target.job=pytorchjob", "target.injector=sidecar"],
        [
            "target.injector=operator-1",
            "target.runtime_kind=TrainingRuntime",
            "target.runtime=mine",
        ],
        [
            f"workload.fsdp.script={IN_IMAGE}",
            "+target.secret_env.HF_TOKEN={secret: hf, key: token}",
        ],
        ["cluster=p4de", "target.trainer_version=2.2"],
    ],
)
def test_readme_says_what_must_be_on_the_cluster(tmp_path: Path, overrides: list[str]) -> None:
    folder = _compile(tmp_path, *overrides)
    readme = (folder / "README.md").read_text()
    section = readme.split("## Before you apply", 1)[1].split("\n## ", 1)[0]
    text = " ".join(overrides)
    trainjob = "pytorchjob" not in text
    must = ["kubectl get nodes -l", "nvidia-device-plugin", "vpc.amazonaws.com/efa"]
    if trainjob:
        must += ["kubectl get crd trainjobs.trainer.kubeflow.org", "Kubeflow Trainer "]
        if "TrainingRuntime" in text:
            must += ["kubectl get trainingruntime mine --namespace default"]
        else:
            must += ["kubectl get clustertrainingruntime torch-distributed"]
        version = "2.2" if "2.2" in text else "2.4"
        must += [f"Kubeflow Trainer v{version}.x"]
    else:
        must += ["kubectl get crd pytorchjobs.kubeflow.org", "training-operator"]
    if "operator-1" in text or "sidecar" in text:
        must += [
            "helm status nsight-injector",
            "devtools-sidecar-injector-1.0.0.tgz"
            if "sidecar" in text
            else "nsight-operator-1.1.0.tgz",
        ]
    else:
        must += [
            "helm status nsight-injector --namespace nsight-operator",
            "nsight-operator-26.3.1.tgz",
            "nsight_operator.py from NGC's nsight-operator-resources bundle, version 26.3.1",
        ]
    if "s3_uri" in text:
        must += ["kubectl get secret nsight-s3-storage --namespace nsight-operator"]
    if "resource" in text:
        must += ["kubectl get crd nsightoperatorprofileconfigs.nvidia.com"]
    if IN_IMAGE in text:
        must += [f"docker run --rm --entrypoint ls registry.example.com/fsdp:1 -l {IN_IMAGE}"]
        must += ["kubectl describe secret hf --namespace default"]
    if IN_IMAGE not in text or "operator-1" in text or "sidecar" in text:
        must += [
            "kubectl get pvc fsx-pvc --namespace default -o 'jsonpath={.status.phase} "
            "{.spec.accessModes}'",
            'Bound ["ReadWriteMany"]',
        ]
    for line in must:
        assert line in section, (line, section)
    # The README lists exactly what `nsysgen plan` gets from the target.
    listed = _prerequisites(*overrides)
    assert _commands(section) == [command for _, command, _ in listed]
    assert all(isinstance(part, str) and part for item in listed for part in item)
    # Every check is a command bash can read, and read-only.
    for command in _commands(section):
        assert subprocess.run(["bash", "-n", "-c", command], check=False).returncode == 0
        assert not any(word in command.split() for word in ("apply", "delete", "create", "install"))


def _commands(section: str) -> list[str]:
    return [
        line.split(": `", 1)[1].rsplit("`", 1)[0] for line in section.splitlines() if ": `" in line
    ]
