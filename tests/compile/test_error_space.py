"""The error space, one table: every source of user input with malformed cases, each run as the
exact command a user types, in a fresh working directory.

Each case must exit 2 (never 3: a user's mistake is not nsysgen's bug), say what is wrong with
the config path or the file (and line) it comes from, and write nothing.

Sources: overrides (values, groups, deletions, list syntax), each kind of --config-dir file
(cluster, workload, capture, target, nsight, experiment), interpolations, the sweep grammar
(plain and paired), verb names, and the flags of every verb; and the message classes of issue
40 (a list typed as a sweep, misspelt flags, the key an interpolation names, durations in lints,
archived exports, the EKS image, and `check` naming the input that changed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import RunCli, tree_bytes

# Files of a user's --config-dir, written as found in the wild (relative to the directory).
USER_FILES = {
    "cluster/broken.yaml": "name: broken\nnodes: 2\nenv: [1, 2\n",
    "cluster/interp.yaml": "defaults:\n  - p5\n  - _self_\nnodes: ${cluster.gpus}\n",
    "cluster/typo.yaml": "defaults:\n  - p5\n  - _self_\nnodez: 2\n",
    "workload/mine.yaml": "defaults:\n  - fsdp\n  - _self_\nkind: tensorflow\n",
    "capture/late.yaml": "defaults:\n  - window\n  - _self_\ndelay: soon\n",
    "target/k8s.yaml": "defaults:\n  - eks\n  - _self_\nnamespace: Not_A_DNS_Name\n",
    "nsight/old.yaml": "defaults:\n  - 2025.3.1\n  - _self_\nversion: 12\n",
    "experiment/x.yaml": "# @package _global_\ndefaults:\n  - override /cluster: ourp6\n",
    "experiment/y.yaml": "# @package _global_\ncapture:\n  delay: -3\n",
    # Exports archived as they often are, which analyze does not read.
    "reports/r_job5_rank0.sqlite.xz": "",
    "reports/r_job5_rank1.sqlite.xz": "",
}


@dataclass(frozen=True)
class Case:
    argv: tuple[str, ...]
    says: tuple[str, ...]  # each must appear in what nsysgen prints
    files: dict[str, str] = field(default_factory=dict)


UC = ("--config-dir", "uc")
PAIRED = "capture.first_step+capture.last_step=10:14,204:200"
CASES: dict[str, Case] = {
    # --- overrides
    "unknown-key": Case(("+unknown.key=1",), ("unknown: unknown key", "allowed keys")),
    "bad-value": Case(("capture.delay=-5",), ("capture.delay: -5 is not allowed", "allowed")),
    "unknown-option": Case(("cluster=p55",), ("no option 'p55' in group cluster", "p5")),
    "group-as-float": Case(("nsight=2099.1",), ("no option '2099.1' in group nsight",)),
    "list-element": Case(("capture.ranks=[0,-1]",), ("capture.ranks[1]: -1",)),
    "list-element-type": Case(("capture.ranks=[0,x]",), ("capture.ranks[1]: 'x'",)),
    "list-with-equals": Case(
        ("workload=fsdp", "workload.fsdp.args=[--max_steps=200,--lr=1e-4]"),
        ("workload.fsdp.args", "list items holding '=' need quotes"),
    ),
    "min-over-max": Case(
        ("workload=nccl", "workload.nccl.min_bytes=4G", "workload.nccl.max_bytes=1G"),
        ("workload.nccl.min_bytes: 4G is more than workload.nccl.max_bytes 1G",),
    ),
    "delete-required": Case(("~output_dir",), ("output_dir: missing (required",)),
    "lone-equals": Case(("=",), ("an override needs a key before '='",)),
    "env-boolean": Case(("cluster.env.NCCL_DEBUG_X=true",), ("cluster.env.NCCL_DEBUG_X",)),
    "env-float-added": Case(
        ("+cluster.env.OMP_NUM_THREADS=1.5",),
        (
            "cluster.env.OMP_NUM_THREADS: 1.5 has the wrong type",
            "'cluster.env.OMP_NUM_THREADS=\"1.5\"'",
        ),
    ),
    "lint-id": Case(
        ("+lints.severity.NSG999=off",),
        ("lints.severity.NSG999: unknown lint ID NSG999", "allowed: NSG001, NSG002"),
    ),
    "control-character": Case(("job.name=a\tb",), ("control characters",)),
    # --- each kind of --config-dir file
    "yaml-syntax": Case(
        (*UC, "cluster=broken"), ("uc/cluster/broken.yaml:4:1: not valid YAML", "line 3")
    ),
    "cluster-file-key": Case((*UC, "cluster=typo"), ("cluster.nodez", "uc/cluster/typo.yaml")),
    "workload-file": Case((*UC, "workload=mine"), ("workload.kind", "uc/workload/mine.yaml")),
    "capture-file": Case((*UC, "capture=late"), ("capture.delay", "uc/capture/late.yaml")),
    "target-file": Case((*UC, "target=k8s"), ("target.namespace", "uc/target/k8s.yaml")),
    "nsight-file": Case((*UC, "nsight=old"), ("nsight.version", "uc/nsight/old.yaml")),
    "experiment-override": Case(
        (*UC, "experiment=x"), ("cluster=ourp6: no option 'ourp6'", "uc/experiment/x.yaml")
    ),
    "experiment-value": Case((*UC, "experiment=y"), ("capture.delay: -3",)),
    "missing-config-dir": Case(("--config-dir", "nope"), ("--config-dir nope: no such",)),
    # --- interpolations
    "interpolation-file": Case(
        (*UC, "cluster=interp"),
        ("cluster.nodes: refers to cluster.gpus", "did you mean", "uc/cluster/interp.yaml"),
    ),
    "interpolation-override": Case(
        ("cluster.nodes=${cluster.gpu_per_node}",),
        ("cluster.nodes: refers to cluster.gpu_per_node", "cluster.gpus_per_node"),
    ),
    "resolver": Case(("job.name=${oc.env:HOME}",), ("job.name",)),
    # the key the user typed, not capture.report_dir, which interpolates it
    "interpolation-of-typed-key": Case(
        ("job.name=${foo}",), ("error: job.name: refers to foo", "nsysgen show lists them")
    ),
    # --- sweep grammar
    "sweep-without-m": Case(("capture.delay=30,60",), ("a sweep needs -m",)),
    "list-as-sweep": Case(
        ("capture.ranks=0,8",), ("for a list of ranks write capture.ranks=[0,8]",)
    ),
    "list-as-sweep-trace": Case(
        ("capture.trace=cuda,nvtx",), ("for a list write capture.trace=[cuda,nvtx]",)
    ),
    "paired-without-m": Case(
        ("capture.delay+capture.duration=30:60,90:30",), ("a paired sweep needs -m",)
    ),
    "paired-arity": Case(
        ("-m", "capture.delay+capture.duration=30:60,90"), ("needs 2 values joined by ':'",)
    ),
    "paired-bad-point": Case(
        ("-m", "workload=fsdp", "capture=steps", PAIRED),
        ("point first-step-204_last-step-200:", "capture.first_step: first step 204"),
    ),
    "sweep-repeated-key": Case(
        ("-m", "capture.delay=30,60", "capture.delay=90"), ("capture.delay is given 2 times",)
    ),
    "sweep-syntax": Case(("-m", "capture.delay=range(1,"), ("capture.delay=range(1,",)),
    "sweep-empty": Case(("-m", "capture.delay=range(5,1)"), ("the sweep has no points",)),
    "sweep-point-invalid": Case(
        ("-m", "capture.delay=5,-1"), ("point delay-1:", "capture.delay: -1 is not allowed")
    ),
    # --- verb names
    "verb-typo": Case(("compille",), ("compille: not a verb", "did you mean compile")),
    "verb-typo-plan": Case(("pln",), ("pln: not a verb", "did you mean plan")),
    "bare-group": Case(("show", "cluster"), ("cluster: a group takes an option",)),
    "verb-second": Case(("show", "plan"), ("plan: the verb comes first",)),
    "hydra-cfg": Case(("--cfg", "job"), ("--cfg is Hydra's flag", "nsysgen show")),
    # --- flags of every verb
    "compile-flag": Case(("--json",), ("compile does not take --json",)),
    "plan-expand": Case(("plan", "--expand", "x"), ("--expand 'x': not a count",)),
    "plan-ranks": Case(("plan", "--ranks", "9-2"), ("--ranks '9-2'", "9 > 2")),
    "show-flag": Case(("show", "--json"), ("show does not take --json",)),
    "check-word": Case(("check", "bogus=1"), ("check takes only output_dir=DIR",)),
    "regenerate-flag": Case(("regenerate", "--bogus"), ("regenerate does not take --bogus",)),
    "config-dir-value": Case(("--config-dir",), ("--config-dir needs a directory",)),
    "analyze-workers": Case(("analyze", "--workers", "-1", "."), ("--workers -1",)),
    "analyze-path": Case(("analyze", "nowhere"), ("nowhere: no such file or folder",)),
    "analyze-flag": Case(("analyze", ".", "--bogus"), ("--bogus",)),
    "verify-path": Case(("verify", "nowhere"), ("nowhere/nsysgen-expect.json not found",)),
    "verify-flag": Case(("verify", "--bogus"), ("--bogus",)),
    "completion-shell": Case(("completion", "fish"), ("completion takes one shell",)),
    # --- misspelt flags of every verb: the flag meant
    "compile-flag-typo": Case(
        ("--config_dir", "uc"), ("compile does not take --config_dir (did you mean --config-dir?)",)
    ),
    "plan-flag-typo": Case(("plan", "--jsno"), ("did you mean --json?",)),
    "show-flag-typo": Case(("show", "--al"), ("did you mean --all?",)),
    "regenerate-flag-typo": Case(("regenerate", "--froce"), ("did you mean --force?",)),
    "analyze-flag-typo": Case(("analyze", ".", "--job_id", "4"), ("did you mean --job-id?",)),
    "verify-flag-typo": Case(("verify", ".", "--job_id", "4"), ("did you mean --job-id?",)),
    "completion-flag-typo": Case(("completion", "--hlep"), ("did you mean --help?",)),
    # --- lints made errors print numbers a person reads: fixed notation, a unit that fits
    "lint-duration": Case(
        ("workload=fsdp", "capture.duration=5000000", "job.time_limit_min=100000")
        + ("capture.ranks=all", "+lints.severity.NSG023=error"),
        ("capture: [NSG023]", "~51.7 days", "more than half the collective timeout, 600 s"),
    ),
    # --- the mission's EKS example without the image its pods run
    "eks-without-image": Case(
        ("target=eks", "workload=fsdp"),
        (
            "workload.container_image: target eks needs the image your trainer pods run",
            "add workload.container_image=IMAGE",
        ),
    ),
    # --- what analyze found instead of reports
    "analyze-archived": Case(
        ("analyze", "uc/reports"),
        ("found and skipped 2 file(s)", "unpack them first: xz -dk uc/reports/*.sqlite.xz"),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_every_input_source_refuses_malformed_input_by_name(
    name: str, run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = CASES[name]
    for relative, text in USER_FILES.items():
        (tmp_path / "uc" / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "uc" / relative).write_text(text)
    monkeypatch.chdir(tmp_path)
    before = tree_bytes(tmp_path)
    result = run_cli(*case.argv)
    said = result.out + result.err
    assert result.code == 2, said
    assert "internal error" not in said and "Traceback" not in said, said
    for text in case.says:
        assert text in said, (text, said)
    assert "e+0" not in said  # no number in scientific notation
    assert tree_bytes(tmp_path) == before  # nothing written, not even a partial folder


def test_check_names_the_changed_input_first(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one message class of issue 40 that is not an input error: `check` after a
    --config-dir edit exits 1 (the documented "differences found"), never 2 or 3, and its first
    line names the file, the key, its old and new value, and the command that fixes it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "uc" / "capture").mkdir(parents=True)
    mine = tmp_path / "uc" / "capture" / "mine.yaml"
    mine.write_text("defaults:\n  - window\n  - _self_\ndelay: 30\n")
    assert run_cli(*UC, "workload=fsdp", "capture=mine", "output_dir=out").code == 0
    mine.write_text("defaults:\n  - window\n  - _self_\ndelay: 45\n")
    result = run_cli("check", "output_dir=out")
    said = result.out + result.err
    assert result.code == 1, said
    assert "internal error" not in said and "Traceback" not in said, said
    assert said.splitlines()[0] == (
        "out/fsdp-p5-slurm: cause: uc/capture/mine.yaml changed: capture.delay (was 30, now 45) "
        "(regenerate: nsysgen --config-dir uc workload=fsdp capture=mine output_dir=out)"
    )


def test_fixed_false_alarms_compile(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The seed's own recipe kernels are names, not secrets; an integer in cluster.env is the
    environment's text, added with `+` or set."""
    monkeypatch.chdir(tmp_path)
    kernels = (
        "[ncclDevKernel_ReduceScatter_Sum_f32_RING_LL,ncclDevKernel_AllReduce_Sum_bf16_RING_LL]"
    )
    result = run_cli(
        "workload=fsdp",
        f"capture.pace_kernels={kernels}",
        "capture.recipes=[cuda_gpu_kern_pace]",
        "cluster.env.NCCL_NCHANNELS_PER_NET_PEER=4",
        "+cluster.env.OMP_NUM_THREADS=4",
    )
    assert result.code == 0, result.err
    sbatch = (tmp_path / "generated" / "fsdp-p5-slurm" / "job.sbatch").read_text()
    assert "NCCL_NCHANNELS_PER_NET_PEER=4" in sbatch
    assert "OMP_NUM_THREADS=4" in sbatch
