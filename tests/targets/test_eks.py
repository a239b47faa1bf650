"""EKS target: artifacts validated offline against the real CRD, the operator's webhook rules,
the Kubernetes schemas and the charts' value schemas; the guide's mistakes rejected."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from nsysgen.cli import main
from nsysgen.output.render import header, render_template
from nsysgen.shipped import source_text
from tests.conftest import REPO, RunCli
from tests.k8s_checks import (
    crd_problems,
    fetch_kubectl,
    helm_problems,
    load_generated_yaml,
    pod_problems,
    profile_config_problems,
    webhook_problems,
)

EKS_EXPERIMENTS = ["fsdp-p4de-eks", "fsdp-p5-eks"]
IMAGE = "workload.container_image=registry.example.com/fsdp:1"
MATRIX = [
    [
        f"cluster={cluster}",
        "target=eks",
        "workload=fsdp",
        IMAGE,
        f"capture={capture}",
        f"target.job={job}",
        f"target.injector={injector}",
        f"capture.ranks={ranks}",
        f"job.name=eks-{i}",
        *extra,
        # Nsight Operator 26.x brings nsys 2026.x, whose CUDA trace on Blackwell is hardware.
        *(["nsight=2026.4.1"] if (cluster, injector) == ("p6-b200", "operator-26") else []),
    ]
    for i, (cluster, capture, job, injector, ranks, extra) in enumerate(
        itertools.product(
            ["p4de", "p5", "p5en", "p6-b200"],
            ["window", "steps", "nvtx"],
            ["trainjob", "pytorchjob"],
            ["sidecar", "operator-1", "operator-26"],
            ["[0]", "all"],
            [[], ["capture.s3_uri=s3://bucket-1/p", "target.profile_config=resource"]],
        )
    )
    if not extra or injector == "operator-26"
]


def job_file(folder: Path) -> Path:
    trainjob = folder / "trainjob.yaml"
    return trainjob if trainjob.exists() else folder / "pytorchjob.yaml"


@pytest.fixture(scope="module")
def eks_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("eks")
    for overrides in [[f"experiment={e}"] for e in EKS_EXPERIMENTS]:
        assert main([*overrides, f"output_dir={out}"]) == 0, overrides
    return out


@pytest.fixture(scope="module")
def eks_matrix(eks_tree: Path) -> Path:
    for overrides in MATRIX:
        assert main([*overrides, f"output_dir={eks_tree}"]) == 0, overrides
    return eks_tree


def folders(tree: Path) -> list[Path]:
    return sorted(p for p in tree.iterdir() if p.is_dir())


@pytest.mark.slow
def test_every_job_passes_crd_webhook_and_pod_schemas(eks_matrix: Path) -> None:
    eks_tree = eks_matrix
    assert len(folders(eks_tree)) == len(EKS_EXPERIMENTS) + len(MATRIX)
    kinds = set()
    for folder in folders(eks_tree):
        job = load_generated_yaml(job_file(folder))
        kinds.add(job["kind"])
        assert crd_problems(job) == [], folder.name
        if job["kind"] == "PyTorchJob":
            assert webhook_problems(job) == [], folder.name
        assert pod_problems(job) == [], folder.name
    assert kinds == {"TrainJob", "PyTorchJob"}


@pytest.mark.slow
def test_every_helm_values_file_passes_its_chart_schema(eks_matrix: Path) -> None:
    eks_tree = eks_matrix
    for folder in folders(eks_tree):
        values = load_generated_yaml(folder / "values-injector.yaml")
        if "nsight-injector" in values:
            assert helm_problems(values, "operator-26") == [], folder.name
            if (folder / "profile-config.yaml").exists():
                resource = load_generated_yaml(folder / "profile-config.yaml")
                assert profile_config_problems(resource) == [], folder.name
                assert "nsightToolConfig" not in values["nsight-injector"]
            continue
        injector = "sidecar" if "injectionMatch" in values["profile"] else "operator-1"
        assert helm_problems(values, injector) == [], folder.name
        args = values["profile"]["devtoolArgs"]
        assert args.startswith("profile ") and "%q{" not in args
        if "--duration=" in args:
            assert "--kill=none" in args


@pytest.mark.slow
def test_validators_catch_the_guides_manifest() -> None:
    """The guide's FSDP manifest: a GPU resource with no value, bash -c, etcd rendezvous."""
    guide: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "fsdp"},
        "spec": {
            "elasticPolicy": {
                "rdzvBackend": "etcd",
                "rdzvHost": "etcd",
                "rdzvPort": 2379,
                "minReplicas": 1,
                "maxReplicas": 96,
                "maxRestarts": 100,
            },
            "pytorchReplicaSpecs": {
                "Worker": {
                    "replicas": 2,
                    "restartPolicy": "OnFailure",
                    "template": {
                        "metadata": {
                            "labels": {"app": "fsdp", "nvidia-devtools-sidecar-injector": "enabled"}
                        },
                        "spec": {
                            "containers": [
                                {
                                    "name": "pytorch",
                                    "image": "fsdp:pytorch2.2",
                                    "command": [
                                        "bash",
                                        "-c",
                                        "torchrun --nproc_per_node=8 train.py",
                                    ],
                                    "resources": {
                                        "requests": {"nvidia.com/gpu": None},
                                        "limits": {"nvidia.com/gpu": None},
                                    },
                                }
                            ]
                        },
                    },
                }
            },
        },
    }
    assert any("None is not valid" in p for p in crd_problems(guide))
    assert "Worker requests nvidia.com/gpu has no value" in webhook_problems(guide)
    typo = {
        **guide,
        "spec": {
            **guide["spec"],
            "pytorchReplicaSpecs": {
                "Worker": {**guide["spec"]["pytorchReplicaSpecs"]["Worker"], "replica": 2}
            },
        },
    }
    assert any("'replica' was unexpected" in p for p in crd_problems(typo))
    no_master_one = {
        **guide,
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 2, "template": {"spec": {"containers": [{"name": "main"}]}}}
            }
        },
    }
    assert webhook_problems(no_master_one) == [
        "Master has no container named pytorch",
        "Master container main has no image",
        "Master.replicas must be 1",
    ]


@pytest.mark.slow
def test_pytorchjob_carries_label_resources_efa_and_secret_refs(eks_tree: Path) -> None:
    job = load_generated_yaml(eks_tree / "fsdp-p4de-eks" / "pytorchjob.yaml")
    specs = job["spec"]["pytorchReplicaSpecs"]
    assert (specs["Master"]["replicas"], specs["Worker"]["replicas"]) == (1, 1)
    for spec in specs.values():
        template = spec["template"]
        assert template["metadata"]["labels"]["nvidia-devtools-sidecar-injector"] == "enabled"
        container = template["spec"]["containers"][0]
        assert container["resources"]["limits"] == {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 4}
        assert container["command"] == ["/usr/local/bin/torchrun"]
        assert {
            "name": "HF_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}},
        } in container["env"]
        assert {"name": "dshm", "emptyDir": {"medium": "Memory"}} in template["spec"]["volumes"]
        assert spec["restartPolicy"] == "Never"


def test_trainjob_carries_runtime_label_resources_secrets_and_step_window(eks_tree: Path) -> None:
    job = load_generated_yaml(eks_tree / "fsdp-p5-eks" / "trainjob.yaml")
    spec = job["spec"]
    assert spec["runtimeRef"] == {
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
        "name": "torch-distributed",
    }
    trainer = spec["trainer"]
    assert (trainer["numNodes"], trainer["numProcPerNode"]) == (2, 8)
    assert trainer["resourcesPerNode"]["limits"] == {
        "nvidia.com/gpu": 8,
        "vpc.amazonaws.com/efa": 32,
    }
    assert trainer["command"] == ["/usr/local/bin/torchrun"]
    assert {
        "name": "HF_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}},
    } in trainer["env"]
    assert {"name": "NSYSGEN_PROFILE_RANKS", "value": "all"} in trainer["env"]
    [patch] = spec["runtimePatches"]
    [rjob] = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    pod = rjob["template"]["spec"]["template"]
    assert pod["metadata"]["labels"]["nvidia-nsight-profile"] == "enabled"
    assert "fsx-pvc" not in str(pod)  # 26.x uploads reports: no shared volume needed
    values = load_generated_yaml(eks_tree / "fsdp-p5-eks" / "values-injector.yaml")
    tool = values["nsight-injector"]["nsightToolConfig"]
    assert tool["coordinator"] is False  # the program opens a step window
    assert "--capture-range=cudaProfilerApi" in tool["nsightToolArgs"]
    assert "--output" not in tool["nsightToolArgs"]
    assert values["cloudStorage"]["secretRef"] == {"name": "nsight-s3-storage"}
    secret = (eks_tree / "fsdp-p5-eks" / "storage-secret.sh").read_text()
    assert "AWS_SECRET_ACCESS_KEY:?" in secret
    assert "entry bucket_name example-nsight-reports" in secret


def test_trainjob_rank_selection_through_the_step_window(tmp_path: Path, run_cli: RunCli) -> None:
    """Every TrainJob pod is injected; with steps only node 0's ranks open the window, and the
    plan and NSG014 say what the other pod pays."""
    base = ["target=eks", "workload=fsdp", IMAGE, "capture=steps", "capture.ranks=[0]"]
    result = run_cli("plan", "--json", *base)
    assert result.code == 0, result.err
    plan = json.loads(result.out)
    # Node 0's report holds its 8 ranks; with the packaged capture.ranks=[0], said in the plan's
    # summary, not warned (NSG024 warns where the ranks were chosen: below).
    assert [lint["id"] for lint in plan["lints"]] == ["NSG014"]
    assert "the other 1 pay the injection too" in plan["lints"][0]["message"]
    assert run_cli(*base, f"output_dir={tmp_path}").code == 0
    [folder] = folders(tmp_path)
    env = load_generated_yaml(folder / "trainjob.yaml")["spec"]["trainer"]["env"]
    assert {"name": "NSYSGEN_PROFILE_RANKS", "value": "0,1,2,3,4,5,6,7"} in env
    window = run_cli("plan", "--json", "target=eks", "workload=fsdp", IMAGE, "capture.ranks=[0,1]")
    lint, ranks = json.loads(window.out)["lints"]
    assert lint["id"] == "NSG014" and "2 pods record" in lint["message"]
    assert ranks["id"] == "NSG024" and "records 16 ranks in 2 report(s)" in ranks["message"]


def test_old_stack_is_one_switch_away(tmp_path: Path) -> None:
    args = [
        "target=eks",
        "workload=fsdp",
        IMAGE,
        "target.job=pytorchjob",
        "target.injector=sidecar",
    ]
    assert main([*args, f"output_dir={tmp_path}"]) == 0
    [folder] = folders(tmp_path)
    assert (folder / "pytorchjob.yaml").is_file() and not (folder / "trainjob.yaml").exists()
    values = load_generated_yaml(folder / "values-injector.yaml")
    assert values["profile"]["devtoolArgs"].startswith("profile ")


INVALID = {
    "gpu-resource-without-value": (
        ["target.extra_resources={nvidia.com/gpu: null}"],
        "target.extra_resources.nvidia.com/gpu: null has the wrong type (allowed: a Kubernetes "
        "quantity such as 4, 5120Mi (never empty))",
    ),
    "namespace-expansion-bug": (
        ["target.namespace=${example-ns}"],
        None,  # Hydra resolves ${...}: a compose error naming the interpolation
    ),
    "namespace-not-a-name": (
        ["target.namespace='example-ns}'"],
        "target.namespace: 'example-ns}' is not allowed (allowed: a DNS-1123 label: lower-case "
        "letters, digits and '-', at most 63 characters)",
    ),
    "token-in-env": (
        ["cluster.env={HF_TOKEN: hf_abcdefghijklmnopqrstuvwxyz123456}"],
        "cluster.env.HF_TOKEN: [NSG010] holds what looks like a Hugging Face token, and "
        "generated files are committed (allowed: no secrets in configs; pass them at run time, "
        "e.g. exported before sbatch, or from a Kubernetes Secret through target.secret_env)",
    ),
    "duration-without-kill-none": (
        ["capture=steps", 'capture.extra_args=["--duration=60"]'],
        "capture.extra_args: [NSG004] --duration=60 without --kill=none: nsys ends the program "
        "when the window closes (and a restart policy profiles it again)",
    ),
    "match-also-bash-wrapper": (
        ["target.injection_match='^.*torchrun.*$'"],
        "target.injection_match: '^.*torchrun.*$' also matches a shell wrapper such as '/bin/bash "
        "-c torchrun --nproc_per_node=8 /fsdp/train.py', which would be profiled too (allowed: a "
        "pattern anchored on the interpreter, e.g. null)",
    ),
    "match-nothing": (
        ["target.injection_match='^/opt/conda/bin/python3 .*torchrun.*$'"],
        "target.injection_match: '^/opt/conda/bin/python3 .*torchrun.*$' matches nothing: the pod "
        "runs '/usr/bin/python3 /usr/local/bin/torchrun --nproc_per_node=8 /fsdp/train.py' "
        "(allowed: a pattern matching that line, e.g. null for the exact one)",
    ),
    "match-workers": (
        ["target.injection_match='^/usr/bin/python3 .*$'"],
        "target.injection_match: '^/usr/bin/python3 .*$' also matches torchrun's worker processes "
        "('/usr/bin/python3 -u /fsdp/train.py'): one report per GPU instead of one per pod "
        "(allowed: a pattern matching only the torchrun line, e.g. null)",
    ),
    "match-unportable": (
        ["target.injection_match='^/usr/bin/python3\\s.*$'"],
        "target.injection_match: '^/usr/bin/python3\\\\s.*$' uses '\\\\s', which the injector's "
        "regex engine may not support (allowed: ^ $ . * + ? [] () | and literal text)",
    ),
    "ranks-on-a-worker-only": (
        ["target.job=pytorchjob", "capture.ranks=[8]"],
        "capture.ranks: ranks [8] run on nodes [1]; the injector label selects the Master pod "
        "(node 0) or every pod (allowed: ranks on node 0, ranks on every node, one_per_node, all)",
    ),
    "nccl-on-eks": (
        ["workload=nccl"],
        "workload.kind: target eks runs PyTorch jobs with one torchrun per pod; 'nccl' is not one "
        "(allowed: workload=fsdp)",
    ),
    "job-name-not-dns-1035": (
        ["job.name=9lives"],
        "job.name: '9lives' is not a TrainJob name (allowed: a DNS-1035 label: lower-case "
        "letters, digits and '-', starting with a letter)",
    ),
}


@pytest.mark.parametrize("name", sorted(INVALID))
def test_guide_mistakes_are_input_errors(name: str, tmp_path: Path, run_cli: RunCli) -> None:
    overrides, expected = INVALID[name]
    base = [
        "cluster=p4de",
        "workload=fsdp",
        "target=eks",
        IMAGE,
        "workload.fsdp.args=[]",
        "workload.fsdp.script=/fsdp/train.py",
    ]
    if name == "nccl-on-eks":
        base = ["target=eks"]
    result = run_cli(*base, *overrides, f"output_dir={tmp_path}")
    assert result.code == 2, result
    assert "Traceback" not in result.err
    if expected is None:
        assert "example-ns" in result.err
    else:
        assert f"  {expected}" in result.err.splitlines(), result.err
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_eks_scripts_quote_the_namespace_and_clean_up_leftovers(eks_tree: Path) -> None:
    folder = eks_tree / "fsdp-p4de-eks"
    uninstall = (folder / "uninstall-injector.sh").read_text()
    for leftover in (
        "kubectl delete namespace nvidia-devtools-sidecar-injector",
        "sidecar-injector-webhook",
        "nvidia-devtools-sidecar-injector-webhook",
        "nvidia-devtools-sidecar-injector-custom",
    ):
        assert leftover in uninstall
    assert not (folder / "label-namespace.sh").exists()  # sidecar: no folder for other pods
    label = (eks_tree / "fsdp-p5-eks" / "label-namespace.sh").read_text()
    assert "namespace=${1:-default}" in label and '"$namespace"' in label
    assert "example-ns" not in label


def _fake_bin(folder: Path, tools: dict[str, str]) -> Path:
    """Executables NAME -> bash body, first on PATH for a generated script."""
    folder.mkdir()
    for name, body in tools.items():
        path = folder / name
        path.write_text(f"#!/bin/bash\n{body}\n")
        path.chmod(0o755)
    return folder


def _run(script: Path, cwd: Path, bin_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(script)],
        cwd=cwd,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(cwd), **env},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_storage_secret_writes_yaml_strings_whatever_the_values(tmp_path: Path) -> None:
    """storage-config.yaml as the operator reads it: an all-digit bucket stays a string, and a
    quote in a credential neither ends its value nor breaks the file."""
    out = tmp_path / "out"
    args = ["target=eks", "workload=fsdp", IMAGE, "capture.s3_uri=s3://123/p", f"output_dir={out}"]
    assert main(args) == 0
    [folder] = folders(out)
    saved = tmp_path / "storage-config.yaml"
    copy = f'for a in "$@"; do case $a in --from-file=*) cp "${{a##*=}}" {saved};; esac; done'
    bin_dir = _fake_bin(tmp_path / "bin", {"kubectl": copy})
    result = _run(
        folder / "storage-secret.sh",
        tmp_path,
        bin_dir,
        AWS_ACCESS_KEY_ID="AKIDEXAMPLE",
        AWS_SECRET_ACCESS_KEY="it's\"$(x)`y`",
        AWS_DEFAULT_REGION="us-west-2",
        AWS_ENDPOINT_URL="http://127.0.0.1:9000",
    )
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(saved.read_text()) == {
        "storage_type": "s3",
        "bucket_name": "123",
        "region_name": "us-west-2",
        "aws_access_key_id": "AKIDEXAMPLE",
        "aws_secret_access_key": "it's\"$(x)`y`",
        "endpoint_url": "http://127.0.0.1:9000",
    }


def test_operator_cli_is_found_on_path_or_named(tmp_path: Path) -> None:
    """`python3 nsight_operator.py` alone looks only in the current directory: the scripts run
    the CLI found on PATH (or named by NSIGHT_OPERATOR_CLI), and say so when there is none."""
    out = tmp_path / "out"
    assert main(["target=eks", "workload=fsdp", IMAGE, "capture=window", f"output_dir={out}"]) == 0
    [folder] = folders(out)
    calls = tmp_path / "calls"
    record = f'printf "%s\\n" "${{0##*/}} $*" >>{calls}'
    tools = {name: record for name in ("python3", "helm", "sleep")}
    # The job's pods exist: capture-window.sh waits for them first.
    kubectl = f'{record}\ncase "$1 $2" in "get pods") printf "pod/p0\\npod/p1\\n" ;; esac'
    tools["kubectl"] = kubectl
    bin_dir = _fake_bin(tmp_path / "bin", {**tools, "nsight_operator.py": record})
    upgrade = _run(folder / "upgrade-injector.sh", tmp_path, bin_dir)
    window = _run(folder / "capture-window.sh", tmp_path, bin_dir)
    assert upgrade.returncode == window.returncode == 0, upgrade.stderr + window.stderr
    lines = calls.read_text().splitlines()
    cli = bin_dir / "nsight_operator.py"
    assert f"python3 {cli} session-end" in lines  # upgrade: the session is ended first
    assert f"python3 {cli} session-begin --title {folder.name}" in lines
    assert f"python3 {cli} profiler-stop" in lines

    calls.unlink()
    (bin_dir / "nsight_operator.py").unlink()
    upgrade = _run(folder / "upgrade-injector.sh", tmp_path, bin_dir)
    assert upgrade.returncode == 0 and "end an open session yourself" in upgrade.stderr
    fetch = _run(folder / "fetch-reports.sh", tmp_path, bin_dir)
    assert fetch.returncode == 1
    assert "Nsight Operator CLI 'nsight_operator.py' is neither a file nor on PATH" in fetch.stderr
    named = tmp_path / "tools" / "cli.py"
    named.parent.mkdir()
    named.write_text("")
    window = _run(folder / "capture-window.sh", tmp_path, bin_dir, NSIGHT_OPERATOR_CLI=str(named))
    assert window.returncode == 0, window.stderr
    assert f"python3 {named} profiler-start" in calls.read_text().splitlines()


def test_no_nsight_analysis_without_documented_fields(tmp_path: Path, run_cli: RunCli) -> None:
    """NVIDIA documents NsightAnalysis as a service, with no apiVersion or spec fields (README):
    nothing generates one, and asking for one is an unknown key, not a guessed resource."""
    base = ["target=eks", "workload=fsdp", IMAGE, "capture.s3_uri=s3://bucket-1/p"]
    assert run_cli(*base, "target.profile_config=resource", f"output_dir={tmp_path}").code == 0
    kinds = {
        str(doc.get("kind"))
        for path in tmp_path.rglob("*.yaml")
        for doc in yaml.safe_load_all(path.read_text())
        if isinstance(doc, dict)
    }
    assert kinds == {"TrainJob", "NsightOperatorProfileConfig", "None"}  # None: Helm values
    assert "NsightAnalysis" not in "".join(p.read_text() for p in tmp_path.rglob("*.sh"))
    asked = run_cli(*base, "++target.analysis=true", f"output_dir={tmp_path / 'x'}")
    assert asked.code == 2 and "  target.analysis: unknown key" in asked.err


def test_committed_eks_experiments_exist() -> None:
    for experiment in EKS_EXPERIMENTS:
        assert job_file(REPO / "generated" / experiment).is_file()


@pytest.mark.parametrize("job", ["trainjob", "pytorchjob"])
def test_zero_patch_helper_reaches_the_pods(tmp_path: Path, run_cli: RunCli, job: str) -> None:
    """capture=steps on EKS: the helper rides in a ConfigMap mounted on every pod and first on
    PYTHONPATH (after no other: a PYTHONPATH the config sets is kept behind it)."""
    injector = [] if job == "trainjob" else ["target.injector=sidecar"]
    args = ["target=eks", f"target.job={job}", *injector, "workload=fsdp", IMAGE]
    args += ["capture=steps", "+cluster.env.PYTHONPATH=/opt/mine", f"output_dir={tmp_path}"]
    result = run_cli(*args)
    assert result.code == 0, result.err
    [folder] = folders(tmp_path)
    # One ConfigMap at the top of the tree, for every folder; none in the folder.
    assert not (folder / "nsysgen-site-configmap.yaml").exists()
    configmap = load_generated_yaml(tmp_path / "nsysgen-site-configmap.yaml")
    name = configmap["metadata"]["name"]
    assert "namespace" not in configmap["metadata"]  # apply-site.sh applies it into the job's
    site = render_template("common/sitecustomize.py.j2", header=header("#", shared=True))
    helper = render_template(
        "common/nsysgen_window.py.j2",
        header=header("#", shared=True),
        source=source_text("step_window"),
    )
    assert configmap["data"] == {"sitecustomize.py": site, "nsysgen_window.py": helper}
    manifest = (folder / f"{job}.yaml").read_text()
    text = yaml.safe_dump(yaml.safe_load(manifest))
    assert f"name: {name}" in text
    assert "mountPath: /nsysgen-site" in text
    assert "value: /nsysgen-site:/opt/mine" in text
    # What the helper says reaches verify where the pod's folder is on the reports volume.
    on_volume = job == "pytorchjob"  # the sidecar writes to the shared volume; 26.x to S3
    assert ("value: /nsys-tmp/helper.log" in text) is on_volume
    assert not (folder / "nsysgen-site").exists()  # the ConfigMap carries it
    readme = (folder / "README.md").read_text()
    apply = f"`./apply-site.sh` (the step helper's ConfigMap), then `kubectl apply -f {job}.yaml`"
    assert apply in readme


def test_a_patched_loop_gets_the_trees_helper_in_its_pods(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """step_method=patch on EKS: the patch adds no file; the pods mount the tree's ConfigMap and
    NSYSGEN_HELPER_DIR names it to the patched loop (not on PYTHONPATH: no site hook runs)."""
    monkeypatch.chdir(REPO)
    source = "tests/training_scripts/plain_loop.py"
    args = ["target=eks", "workload=fsdp", IMAGE, "capture=steps", "capture.step_method=patch"]
    args += [f"workload.fsdp.source={source}", f"workload.fsdp.script=/app/{source}"]
    args += ["workload.fsdp.args=[]", f"output_dir={tmp_path}"]
    result = run_cli(*args)
    assert result.code == 0, result.err
    [folder] = folders(tmp_path)
    assert (
        "+++ b/tests/training_scripts/nsysgen_window.py"
        not in (folder / "training-loop.patch").read_text()
    )
    name = load_generated_yaml(tmp_path / "nsysgen-site-configmap.yaml")["metadata"]["name"]
    text = yaml.safe_dump(yaml.safe_load((folder / "trainjob.yaml").read_text()))
    assert f"name: {name}" in text and "mountPath: /nsysgen-site" in text
    assert "- name: NSYSGEN_HELPER_DIR\n" in text and "value: /nsysgen-site\n" in text
    assert "value: /nsysgen-site:" not in text and "name: PYTHONPATH" not in text
    assert (folder / "apply-site.sh").is_file()


def test_fetch_reports_copies_the_run_of_the_job_now_in_the_cluster(tmp_path: Path) -> None:
    """fetch-reports.sh (injectors that write to the shared volume): the helper pod's own
    commands, run by BusyBox as the busybox image runs them, copy the reports written since the
    job was created into DEST/run-<created>/; the earlier run's, under the same and other names,
    stay behind. --all copies every report."""
    busybox = shutil.which("busybox")
    if busybox is None:
        pytest.skip("BusyBox is not installed (tests/infra/install-system-deps.sh installs it)")
    out = tmp_path / "out"
    args = ["target=eks", "workload=fsdp", IMAGE, "target.injector=operator-1", "job.name=fr"]
    assert main([*args, f"output_dir={out}"]) == 0
    [folder] = folders(out)
    volume = tmp_path / "volume"  # the PVC, mounted at /fsx in the helper pod
    reports = volume / "nsight-reports" / "fr"
    reports.mkdir(parents=True)
    created = "2026-12-02T03:00:00Z"
    files = [
        ("old_pod-0", "2026-12-02 02:00:00"),
        ("same_pod-0", "2026-12-02 02:30:00"),
        ("new_pod-0", "2026-12-02 03:10:00"),
        ("new_pod-1", "2026-12-02 03:10:05"),
    ]
    for name, stamp in files:
        path = reports / f"{name}.nsys-rep"
        path.write_text(name)
        subprocess.run([busybox, "touch", "-d", stamp, str(path)], check=True)
    bin_dir = _fake_bin(tmp_path / "bin", {"kubectl": fetch_kubectl(busybox, created, volume)})
    dest = tmp_path / "fetched"
    fetched = _run_with_args(folder / "fetch-reports.sh", tmp_path, bin_dir, str(dest))
    run = dest / "run-20261202T030000Z"
    assert sorted(p.name for p in run.iterdir()) == ["new_pod-0.nsys-rep", "new_pod-1.nsys-rep"], (
        fetched.stdout + fetched.stderr
    )
    # Then the run's folder is verified (names and presence only: no nsys here).
    assert f"reports expected in {run}" in fetched.stdout, fetched.stdout + fetched.stderr
    every = _run_with_args(folder / "fetch-reports.sh", tmp_path, bin_dir, "--all", str(dest))
    assert len(list((dest / "all").glob("*.nsys-rep"))) == 4, every.stdout + every.stderr


def _run_with_args(
    script: Path, cwd: Path, bin_dir: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(script), *args],
        cwd=cwd,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(cwd)},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
