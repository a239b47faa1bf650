"""Every generated script parses (bash -n) and is shellcheck-clean, over a matrix of setups."""

from __future__ import annotations

import itertools
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import EXPERIMENTS, REPO

pytestmark = pytest.mark.slow  # shellcheck/bash over every setup; a corpus of scripts

SLURM_SCRIPTS = ("job.sbatch", "nsys-exec", "install-nsight.sh", "recipes.sh")
EKS_SCRIPTS = (
    "install-injector.sh",
    "uninstall-injector.sh",
    "fetch-reports.sh",
    "recipes.sh",
)
# A job script of the user's own (target.job_script=yours) sources this instead of job.sbatch.
OWN_SCRIPT_FILES = ("nsysgen-env.sh", "nsys-exec", "install-nsight.sh", "recipes.sh")
# Present only for some setups: S3 copies, operator-26 upgrades, storage, coordinator and
# namespace labels.
OPTIONAL_SCRIPTS = (
    "upload-reports.sh",
    "upgrade-injector.sh",
    "storage-secret.sh",
    "capture-window.sh",
    "label-namespace.sh",
    "apply-site.sh",
)
SHELL_FILES = set(SLURM_SCRIPTS + EKS_SCRIPTS + OPTIONAL_SCRIPTS + OWN_SCRIPT_FILES)

MATRIX = [
    [
        f"cluster={cluster}",
        f"workload={workload}",
        f"capture={capture}",
        f"capture.ranks={ranks}",
        f"job.name=m-{i}",
    ]
    for i, (cluster, workload, capture, ranks) in enumerate(
        itertools.product(
            ["p4de", "p5en", "local"],
            ["nccl", "nemo", "fsdp", "python"],
            ["window", "steps", "nvtx"],
            ["[0,9]", "one_per_node", "all"],
        )
    )
    if not (workload == "nccl" and capture == "steps")
]
EKS_IMAGE = "workload.container_image=registry.example.com/fsdp:1"
S3_SETUPS = [
    ["workload=nccl", "capture.s3_uri=s3://bucket-1/prefix", "job.name=s3-slurm"],
    *(
        [
            "target=eks",
            "workload=fsdp",
            EKS_IMAGE,
            f"capture={capture}",
            f"target.injector={injector}",
            f"target.profile_config={config}",
            "capture.s3_uri=s3://bucket-1/prefix",
            f"job.name=s3-eks-{i}",
        ]
        for i, (capture, injector, config) in enumerate(
            itertools.product(
                ["window", "steps"], ["operator-26", "sidecar"], ["values", "resource"]
            )
        )
    ),
]
OWN_SETUPS = [
    [
        "target.job_script=yours",
        "workload=command",
        "workload.command.argv=[bash,own-train.sh]",
        f"workload.launch={launch}",
        f"capture={capture}",
        f"cluster={cluster}",
        f"job.name=own-{i}",
    ]
    for i, (launch, capture, cluster) in enumerate(
        itertools.product(["per_gpu", "per_node"], ["window", "steps"], ["p5", "local"])
    )
]
# Words that look like expansions: they stay literal, and shellcheck sees none (SC2016).
HOSTILE_ARGV = "workload.command.argv=[bash,-c,'echo $(touch /tmp/x) `id` $HOME \\$']"
HOSTILE_SETUPS = [
    ["workload=command", HOSTILE_ARGV, "job.name=hostile-sbatch"],
    ["workload=command", HOSTILE_ARGV, "target.job_script=yours", "job.name=hostile-own"],
]
SETUPS = (
    [[f"experiment={e}"] for e in EXPERIMENTS] + MATRIX + S3_SETUPS + OWN_SETUPS + HOSTILE_SETUPS
)


@pytest.fixture(scope="module")
def compiled_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from nsysgen.cli import main

    out = tmp_path_factory.mktemp("matrix")
    for overrides in SETUPS:
        assert main([*overrides, f"output_dir={out}"]) == 0, overrides
    return out


def _scripts(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.name in SHELL_FILES)


def test_matrix_covers_every_setup(compiled_tree: Path) -> None:
    # The setups (the tree's shared nsysgen-site/ is none of them).
    folders = sorted(p for p in compiled_tree.iterdir() if (p / "nsysgen-manifest.json").exists())
    assert len(folders) == len(SETUPS)
    for folder in folders:
        eks = (folder / "pytorchjob.yaml").exists() or (folder / "trainjob.yaml").exists()
        own = (folder / "nsysgen-env.sh").exists()
        expected = EKS_SCRIPTS if eks else OWN_SCRIPT_FILES if own else SLURM_SCRIPTS
        names = [p.name for p in _scripts(folder)]
        assert sorted(set(names) - set(OPTIONAL_SCRIPTS)) == sorted(expected), folder.name
    assert set(OPTIONAL_SCRIPTS) <= {p.name for p in _scripts(compiled_tree)}


def test_bash_parses_every_script(compiled_tree: Path) -> None:
    for script in _scripts(compiled_tree):
        proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert proc.returncode == 0, f"{script}: {proc.stderr}"


def test_shellcheck_is_clean(compiled_tree: Path) -> None:
    assert shutil.which("shellcheck"), (
        "shellcheck is missing: run tests/infra/install-system-deps.sh"
    )
    scripts = [str(p) for p in _scripts(compiled_tree)]
    proc = subprocess.run(
        ["shellcheck", "--severity=style", "--shell=bash", *scripts],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[:4000]


def test_python_helper_compiles(compiled_tree: Path) -> None:
    helpers = sorted(compiled_tree.rglob("nsysgen_window.py"))
    sites = sorted(compiled_tree.rglob("sitecustomize.py"))
    assert sites  # zero-patch, the default for the script workloads
    for helper in helpers + sites:
        compile(helper.read_text(), str(helper), "exec")


def test_wrappers_exec_and_quote(compiled_tree: Path) -> None:
    slurm_experiments = [e for e in EXPERIMENTS if not e.endswith("-eks")]
    # + 1: the S3 setup of Slurm
    expected = len(MATRIX) + len(slurm_experiments) + 1 + len(OWN_SETUPS) + len(HOSTILE_SETUPS)
    assert len(list(compiled_tree.rglob("nsys-exec"))) == expected
    for wrapper in compiled_tree.rglob("nsys-exec"):
        text = wrapper.read_text()
        assert 'exec "$nsys" profile' in text
        assert "HOSTNAME" not in text.replace("SLURMD_NODENAME", "")
        assert text.rstrip().endswith('"$@"')
    for sbatch in compiled_tree.rglob("job.sbatch"):
        assert "\nexec srun " in sbatch.read_text()


def test_repository_scripts_are_shellcheck_clean() -> None:
    scripts = sorted(str(p) for p in (REPO / "tests" / "infra").glob("*.sh"))
    proc = subprocess.run(
        ["shellcheck", *scripts, str(REPO / ".ci" / "run")], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout
