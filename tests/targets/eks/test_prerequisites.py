"""What must be on the cluster before `kubectl apply` (nsysgen/targets/eks/prerequisites.py):
the list in install order for each job API and injector, the claim named with what the pods use
it for, the script checked where the pods find it, and every check command read-only with its
values shell-quoted."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from nsysgen.config.compose import Composer
from nsysgen.drivers.pipeline import typed
from nsysgen.model import Config
from nsysgen.targets.eks.prerequisites import chart_version, cli_source, prerequisites

EKS = ["experiment=fsdp-p5-eks"]  # TrainJob, operator-26, S3 storage, script in the image
P4DE = ["experiment=fsdp-p4de-eks"]  # PyTorchJob, sidecar, reports on the shared volume
# The commands a check may run: reads only.
READ_ONLY = re.compile(
    r"^(kubectl (get|describe) |helm status |ls |command -v |grep |tr |"
    r"docker run --rm --entrypoint (ls|sh) )"
)


@pytest.fixture(scope="module")
def composer() -> Composer:
    return Composer()


def config_of(composer: Composer, *overrides: str) -> Config:
    return typed(composer.compose(list(overrides)).data)


def test_a_trainjob_on_operator_26_in_install_order(composer: Composer) -> None:
    found = [what for what, _, _ in prerequisites(config_of(composer, *EKS))]
    assert found == [
        "2 node(s) of p5.48xlarge, each with 8 allocatable nvidia.com/gpu and 32 "
        "vpc.amazonaws.com/efa",
        "the NVIDIA device plugin (nvidia.com/gpu)",
        "the EFA device plugin (vpc.amazonaws.com/efa)",
        "Kubeflow Trainer 2.4 (the TrainJob CRD, and JobSet, which runs a TrainJob)",
        "the ClusterTrainingRuntime torch-distributed, with a replicated job node whose "
        "container is node",
        "Nsight Operator 26.x: release nsight-injector in namespace nsight-operator, its "
        "injector Running",
        "the Nsight Operator CLI, nsight_operator.py (capture-window.sh, fetch-reports.sh and "
        "upgrade-injector.sh run it)",
        "Secret nsight-s3-storage (the bucket's storage-config.yaml)",
        "the image's torchrun starts as /usr/bin/python3 /usr/local/bin/torchrun (the "
        "injector's injectionMatch; else nothing is recorded): the check prints "
        "/usr/local/bin/torchrun and #!/usr/bin/python3",
        "the training script /fsdp/train.py in the image",
        "Secret hf-token with key token (for HF_TOKEN)",
    ]


def test_a_pytorchjob_with_the_sidecar_needs_the_claim_for_its_reports(composer: Composer) -> None:
    found = {
        what: (check, source) for what, check, source in prerequisites(config_of(composer, *P4DE))
    }
    assert "the Kubeflow Training Operator (v1) and its PyTorchJob CRD" in found
    assert (
        found["DevTools sidecar injector: release nsight-injector and its mutating webhook"][0]
        == "helm status nsight-injector && kubectl get mutatingwebhookconfigurations"
    )
    claim = next(what for what in found if what.startswith("PersistentVolumeClaim fsx-pvc"))
    assert claim.endswith("(every pod mounts it at /fsx, for the reports)")
    assert not any("Kubeflow Trainer" in what for what in found)


def test_a_script_on_the_volume_and_a_runtime_of_ones_own(composer: Composer) -> None:
    config = config_of(
        composer, *EKS, "target.injector=operator-1", "workload.fsdp.script=/fsx/t.py",
        "target.runtime_kind=TrainingRuntime", "target.runtime=mine", "cluster.efa_devices=0",
    )  # fmt: skip
    found = {what: check for what, check, _ in prerequisites(config)}
    claim = next(what for what in found if what.startswith("PersistentVolumeClaim"))
    assert claim.endswith("for the training script and the reports)")
    assert found["the training script /fsx/t.py on the shared file system (check on a host "
                 "that mounts it at /fsx)"] == "ls -l /fsx/t.py"  # fmt: skip
    assert found[
        "the TrainingRuntime mine, with a replicated job node whose container is node"
    ] == (
        "kubectl get trainingruntime mine --namespace default -o "
        "jsonpath='{.spec.template.spec.replicatedJobs[*].name}'"
    )
    assert not any("EFA" in what for what in found)


@pytest.mark.parametrize(
    "overrides",
    [EKS, P4DE, [*EKS, "target.namespace=a b", "target.profile_config=resource",
                 "target.operator_namespace='$(x)'"]],
    ids=["trainjob", "pytorchjob", "hostile-names"],
)  # fmt: skip
def test_every_check_only_reads_and_quotes_its_values(
    composer: Composer, overrides: list[str]
) -> None:
    for what, check, _ in prerequisites(config_of(composer, *overrides)):
        for segment in re.split(r" && | \|\| | \| ", check):
            assert READ_ONLY.match(segment), (what, segment)
        words = shlex.split(check)  # a hostile name stays one word, never expanded
        assert "b" not in words and "$(x)" not in check.replace("'$(x)'", ""), check
        if "--namespace" in words:
            assert words[words.index("--namespace") + 1] in (
                "default",
                "nsight-operator",
                "a b",
                "$(x)",
            )


def test_chart_versions_and_where_the_cli_comes_from(composer: Composer) -> None:
    assert chart_version("https://x/charts/nsight-operator-26.3.1.tgz") == "26.3.1"
    assert chart_version("https://x/charts/nsight-operator.tgz") is None
    assert cli_source(config_of(composer, *EKS)).startswith(
        "nsight_operator.py from NGC's nsight-operator-resources bundle, version 26.3.1 as the "
        "chart"
    )


def test_the_image_probe_prints_what_the_injector_matches(
    composer: Composer, tmp_path: Path
) -> None:
    """The check, run with a stand-in docker that runs the probe here, on an image whose
    torchrun is /usr/local/bin/torchrun under /usr/bin/python3: it prints what the item says."""
    found = {what: check for what, check, _ in prerequisites(config_of(composer, *EKS))}
    [check] = [c for what, c in found.items() if what.startswith("the image's torchrun")]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    torchrun = bin_dir / "torchrun"
    torchrun.write_text("#!/usr/bin/python3\nprint('torchrun')\n")
    torchrun.chmod(0o755)
    docker = bin_dir / "docker"
    # docker run --rm --entrypoint sh IMAGE -c PROBE  ->  sh -c PROBE
    docker.write_text('#!/bin/sh\nshift 4\nshift\nexec sh "$@"\n')
    docker.chmod(0o755)
    done = subprocess.run(
        ["bash", "-c", check],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.splitlines() == [str(torchrun), "#!/usr/bin/python3"]
    assert check.startswith("docker run --rm --entrypoint sh ")
