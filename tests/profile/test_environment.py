"""The job's environment: what nsysgen sets for the tasks, per cluster and workload, and why.

The variables and values are written out here by hand (the facts they follow: EFA with the
aws-ofi-nccl plugin, Megatron's need for CUDA_DEVICE_MAX_CONNECTIONS=1), not read back from the
config, so that a change of the packaged files shows as a failing test. Each compile is checked
where the tasks get the variables (job.sbatch run by bash; the EKS job's container env;
nsysgen-env.sh and the patch for jobs of the user's own) and in the README, with its reason.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from nsysgen.config.compose import Composer
from nsysgen.drivers.pipeline import typed
from nsysgen.model import Config
from nsysgen.output.render import md_text
from nsysgen.profile.environment import job_env
from tests.conftest import EXPERIMENTS, REPO, RunCli
from tests.k8s_checks import load_generated_yaml

CLUSTERS = sorted(p.stem for p in (REPO / "conf" / "cluster").glob("*.yaml"))
WORKLOADS = sorted(p.stem for p in (REPO / "conf" / "workload").glob("*.yaml"))
EFA_CLUSTERS = ("p4d", "p4de", "p5", "p5e", "p5en", "p6-b200")
# PyTorch programs whose data loaders fork worker processes.
FORKING = ("fsdp", "python", "megatron", "nemo", "bridge")
# Megatron-LM, and the frameworks built on it.
MEGATRON = ("megatron", "nemo", "bridge")
EFA_NAMES = ("FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA", "FI_EFA_FORK_SAFE", "FI_EFA_USE_HUGE_PAGE")
IMAGE = ["workload.container_image=registry.example.com/fsdp:1"]  # EKS needs one
HOSTILE = 'it\'s "q" $(touch PWNED) `touch PWNED` ; | <!-- *x* \\| end\\'


def expected(cluster: str, workload: str) -> dict[str, str]:
    env: dict[str, str] = {}
    efa = cluster in EFA_CLUSTERS
    if efa:
        env |= {"FI_PROVIDER": "efa", "NCCL_DEBUG": "INFO"}
    if cluster in ("p4d", "p4de"):
        # GPUDirect RDMA: needed on stacks before aws-ofi-nccl 1.7, which p4d/p4de may run.
        env["FI_EFA_USE_DEVICE_RDMA"] = "1"
    if efa and workload in FORKING:
        env |= {"FI_EFA_FORK_SAFE": "1", "FI_EFA_USE_HUGE_PAGE": "0"}
    if workload in MEGATRON:
        env["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
    return env


def group_file(group: str, option: str) -> dict[str, Any]:
    data = yaml.safe_load((REPO / "conf" / group / f"{option}.yaml").read_text())
    assert isinstance(data, dict)
    return data


def reasons(cluster: str, workload: str) -> dict[str, str]:
    """The packaged reason of each default, the workload's winning for the same name."""
    found = {}
    for group, option in (("cluster", cluster), ("workload", workload)):
        for name, entry in (group_file(group, option).get("env_defaults") or {}).items():
            found[name] = entry["reason"]
    return found


def exported(script: Path) -> dict[str, str]:
    """What job.sbatch's export lines give the tasks, as bash runs them."""
    lines = [line for line in script.read_text().splitlines() if line.startswith("export ")]
    return bash_env("\n".join(lines), script.parent / "run")


def cells(row: str) -> list[str]:
    """A Markdown table row's cells, split as GitHub does: at every `|` that no backslash
    escapes (a backslash escapes the character after it, also inside code)."""
    out, cell, chars = [], "", iter(row.strip())
    for char in chars:
        if char == "\\":
            cell += char + next(chars, "")
        elif char == "|":
            out.append(cell.strip())
            cell = ""
        else:
            cell += char
    out.append(cell.strip())
    assert out[0] == "" and out[-1] == "", row  # the row starts and ends with a separator
    return out[1:-1]


def readme_env(readme: Path) -> dict[str, list[str]]:
    """The README's environment table: NAME -> [value, set by, why]."""
    text = readme.read_text()
    section = text.split("## Environment\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    table = {}
    for row in rows:
        found = cells(row)
        assert len(found) == 4, row
        table[found[0].strip("`")] = found[1:]
    return table


def container_env(folder: Path) -> dict[str, str]:
    """The env of the EKS job's training container (TrainJob's trainer, or PyTorchJob's)."""
    if (folder / "trainjob.yaml").exists():
        items = load_generated_yaml(folder / "trainjob.yaml")["spec"]["trainer"]["env"]
    else:
        job = load_generated_yaml(folder / "pytorchjob.yaml")
        items = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"]
        items = items[0]["env"]
    return {item["name"]: item["value"] for item in items if "value" in item}


def nsysgens_own(env: dict[str, str]) -> dict[str, str]:
    """Without what profiling itself sets (the step window, nsys's TMPDIR, the helper)."""
    profiling = ("NSYSGEN_", "TMPDIR", "PYTHONPATH")
    return {k: v for k, v in env.items() if not k.startswith(profiling)}


def compile_one(run_cli: RunCli, tmp_path: Path, *overrides: str) -> Path:
    result = run_cli(*overrides, "job.name=envtest", f"output_dir={tmp_path}")
    assert result.code == 0, result.err
    return tmp_path / "envtest"


def groups_of(experiment: str) -> tuple[str, str, str]:
    """cluster, workload and target an experiment chooses."""
    choices = {"target": "slurm"}
    for entry in group_file("experiment", experiment)["defaults"]:
        for key, option in entry.items():
            choices[key.removeprefix("override /")] = option
    return choices["cluster"], choices["workload"], choices["target"]


@pytest.fixture(scope="module")
def blocks() -> dict[str, Config]:
    """One composed config per cluster and per workload (a pair is put together from them:
    the groups are independent, and 14 compositions cost a fraction of 49)."""
    composer = Composer()
    found = {f"cluster={c}": [f"cluster={c}"] for c in CLUSTERS}
    found |= {f"workload={w}": [f"workload={w}"] for w in WORKLOADS}
    return {name: typed(composer.compose(args).data) for name, args in found.items()}


@pytest.mark.slow  # 49 compiles
@pytest.mark.parametrize("cluster", CLUSTERS)
@pytest.mark.parametrize("workload", WORKLOADS)
def test_every_cluster_and_workload_gets_its_variables(
    cluster: str, workload: str, blocks: dict[str, Config]
) -> None:
    config = dataclasses.replace(
        blocks[f"workload={workload}"], cluster=blocks[f"cluster={cluster}"].cluster
    )
    env = job_env(config)
    assert dict(env.pairs()) == expected(cluster, workload)
    known = reasons(cluster, workload)
    for var in env.variables:
        assert var.reason == known[var.name] and var.key.endswith(f"env_defaults.{var.name}")


def test_no_variable_forces_nccls_choices_or_old_guidance() -> None:
    """NCCL picks protocol and algorithm (what a profile is for); aws-ofi-nccl >= 1.7 and the
    images pick the rest; GPUDirect RDMA is explicit only where old stacks may need it."""
    for cluster in CLUSTERS:
        for workload in WORKLOADS:
            names = set(expected(cluster, workload))
            assert not names & {"NCCL_PROTO", "NCCL_ALGO", "NCCL_SOCKET_IFNAME", "RDMAV_FORK_SAFE"}
    for cluster in ("p5", "p5e", "p5en", "p6-b200"):
        assert "FI_EFA_USE_DEVICE_RDMA" not in group_file("cluster", cluster)["env_defaults"]


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_each_experiment_sets_its_variables_with_reasons(
    experiment: str, tmp_path: Path, run_cli: RunCli
) -> None:
    cluster, workload, target = groups_of(experiment)
    want = expected(cluster, workload)
    folder = compile_one(run_cli, tmp_path, f"experiment={experiment}")
    if target == "slurm":
        assert nsysgens_own(exported(folder / "job.sbatch")) == want
    else:
        assert nsysgens_own(container_env(folder)) == want
    table = readme_env(folder / "README.md")
    known = reasons(cluster, workload)
    assert sorted(table) == sorted(want)
    for name, (value, key, why) in table.items():
        assert value == f"`{want[name]}`"
        assert key in (f"`cluster.env_defaults.{name}`", f"`workload.env_defaults.{name}`")
        assert why == md_text(known[name])


def test_the_megatron_reason_says_why_and_what_nsys_does_with_it(
    tmp_path: Path, run_cli: RunCli
) -> None:
    for workload in MEGATRON:
        why = group_file("workload", workload)["env_defaults"]["CUDA_DEVICE_MAX_CONNECTIONS"]
        assert "sequence" in why["reason"] and "--cuda-event-trace=false" in why["reason"]
    # ... and nsysgen does pass it, so CUDA event tracing does not depend on the variable.
    folder = compile_one(run_cli, tmp_path, "experiment=megatron-p5")
    assert "--cuda-event-trace=false" in (folder / "nsys-exec").read_text()


@pytest.mark.parametrize("target", ["slurm", "eks"])
def test_the_users_cluster_env_wins(target: str, tmp_path: Path, run_cli: RunCli) -> None:
    args = [f"target={target}", "workload=fsdp", "cluster=p5", *IMAGE]
    overrides = ["+cluster.env.NCCL_DEBUG=WARN", "+cluster.env.MY_VAR=mine"]
    folder = compile_one(run_cli, tmp_path, *args, *overrides)
    if target == "slurm":
        got = exported(folder / "job.sbatch")
        assert (folder / "job.sbatch").read_text().count("export NCCL_DEBUG=") == 1
    else:
        got = container_env(folder)
    want = expected("p5", "fsdp") | {"NCCL_DEBUG": "WARN", "MY_VAR": "mine"}
    assert nsysgens_own(got) == want
    table = readme_env(folder / "README.md")
    value, key, why = table["NCCL_DEBUG"]
    assert (value, key) == ("`WARN`", "`cluster.env.NCCL_DEBUG`")
    assert why.startswith("your setting, in place of nsysgen's default INFO (")
    assert table["MY_VAR"] == ["`mine`", "`cluster.env.MY_VAR`", "your setting"]


@pytest.mark.parametrize(
    ("override", "name", "key"),
    [
        ("cluster.env_defaults.NCCL_DEBUG=null", "NCCL_DEBUG", "cluster.env_defaults"),
        (
            "workload.env_defaults.CUDA_DEVICE_MAX_CONNECTIONS=null",
            "CUDA_DEVICE_MAX_CONNECTIONS",
            "workload.env_defaults",
        ),
    ],
)
def test_null_removes_a_default(
    override: str, name: str, key: str, tmp_path: Path, run_cli: RunCli
) -> None:
    folder = compile_one(run_cli, tmp_path, "experiment=megatron-p5", override)
    want = dict(expected("p5", "megatron"))
    del want[name]
    assert nsysgens_own(exported(folder / "job.sbatch")) == want
    readme = (folder / "README.md").read_text()
    assert name not in readme_env(folder / "README.md")
    assert f"`{name}` (`{key}.{name}`: null in the config)" in readme


def test_no_efa_devices_no_efa_variables(tmp_path: Path, run_cli: RunCli) -> None:
    """The test cluster (local) has no EFA; nor has a p5 told it has none."""
    for where, cluster in (("local", "cluster=local"), ("p5", "cluster.efa_devices=0")):
        folder = compile_one(run_cli, tmp_path / where, cluster, "workload=megatron")
        assert nsysgens_own(exported(folder / "job.sbatch")) == expected("local", "megatron")
        readme = (folder / "README.md").read_text()
        assert "`FI_EFA_FORK_SAFE` (`workload.env_defaults.FI_EFA_FORK_SAFE`: EFA only" in readme
    folder = compile_one(run_cli, tmp_path / "nccl", "cluster=local", "workload=nccl")
    assert "export " not in (folder / "job.sbatch").read_text()
    assert "nsysgen sets no variables of its own" in (folder / "README.md").read_text()


def bash_env(script: str, folder: Path, *preset: str) -> dict[str, str]:
    """The environment after bash runs `script` in a clean environment (plus `preset`
    NAME=value), in an empty folder that must stay empty (nothing ran)."""
    folder.mkdir()
    command = ["env", "-i", *preset, "bash", "--norc", "--noprofile", "-c", script + "\nenv -0"]
    done = subprocess.run(command, cwd=folder, capture_output=True, check=True)
    assert list(folder.iterdir()) == []
    env = dict(item.split("=", 1) for item in done.stdout.decode().split("\0") if item)
    return {k: v for k, v in env.items() if k not in ("PWD", "SHLVL", "_", "OLDPWD")}


def with_file(tmp_path: Path, data: dict[str, Any]) -> list[str]:
    """`data` as an experiment of a --config-dir (the way a config someone else wrote
    arrives: any text, which the override grammar could not all carry)."""
    folder = tmp_path / "conf" / "experiment"
    folder.mkdir(parents=True)
    text = "# @package _global_\n" + yaml.safe_dump(data, allow_unicode=True)
    (folder / "hv.yaml").write_text(text)
    return ["--config-dir", str(tmp_path / "conf"), "experiment=hv"]


def test_own_job_script_sets_defaults_only_where_the_job_has_none(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """target.job_script=yours: nsysgen-env.sh sets the defaults (with the user's cluster.env
    value for such a name) only where the job's environment has no value; the rest of
    cluster.env stays the job script's."""
    mine = {"cluster": {"env": {"FI_PROVIDER": HOSTILE, "MY_VAR": "mine"}}}
    args = ["target.job_script=yours", "cluster=p4de", "workload=megatron"]
    folder = compile_one(run_cli, tmp_path, *with_file(tmp_path, mine), *args)
    text = (folder / "nsysgen-env.sh").read_text()
    lines = [line for line in text.splitlines() if "+x}" in line]
    got = bash_env("\n".join(lines), tmp_path / "run", "NCCL_DEBUG=WARN")
    assert got == expected("p4de", "megatron") | {"NCCL_DEBUG": "WARN", "FI_PROVIDER": HOSTILE}
    assert "MY_VAR" not in text
    assert sorted(readme_env(folder / "README.md")) == sorted(expected("p4de", "megatron"))


def test_own_manifest_gets_defaults_its_container_does_not_set(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)  # target.manifest is relative to the working directory
    manifest = REPO / "tests" / "user_jobs" / "k8s" / "pytorchjob.yaml"
    job = yaml.safe_load(manifest.read_text())
    theirs = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert {"name": "NCCL_DEBUG", "value": "WARN"} in theirs["env"]
    result = run_cli(
        *("target=eks", "target.job=pytorchjob", "workload=fsdp", "cluster=p5", *IMAGE),
        f"target.manifest={manifest.relative_to(REPO)}",
        f"job.name={job['metadata']['name']}",
        "target.namespace=training",
        f"output_dir={tmp_path}",
    )
    assert result.code == 0, result.err
    patch = load_generated_yaml(tmp_path / job["metadata"]["name"] / "profile-patch.yaml")
    added = {
        op["value"]["name"]: op["value"].get("value")
        for op in patch
        if op["op"] == "add" and op["path"].endswith("/env/-")
    }
    want = dict(expected("p5", "fsdp"))
    del want["NCCL_DEBUG"]  # their container sets it: theirs wins
    assert nsysgens_own(added) == want


def test_hostile_values_arrive_intact(tmp_path: Path, run_cli: RunCli) -> None:
    """Quotes, command substitutions, backticks, Markdown table and comment syntax in a
    default's value and reason: one intact value in bash and in YAML, one table row in the
    README, nothing run."""
    entry = {"HV": {"value": HOSTILE, "reason": HOSTILE}}
    slurm = tmp_path / "slurm"
    config = with_file(slurm, {"cluster": {"env_defaults": entry}})
    folder = compile_one(run_cli, slurm, *config)
    assert exported(folder / "job.sbatch")["HV"] == HOSTILE
    value, key, why = readme_env(folder / "README.md")["HV"]
    assert key == "`cluster.env_defaults.HV`" and why == md_text(HOSTILE)
    assert "<" not in why.replace("\\<", "") and "`" not in why.replace("\\`", "")
    eks = tmp_path / "eks"
    config = with_file(eks, {"workload": {"env_defaults": entry}})
    folder = compile_one(run_cli, eks, *config, "target=eks", "workload=fsdp", *IMAGE)
    assert container_env(folder)["HV"] == HOSTILE
    assert readme_env(folder / "README.md")["HV"][2] == md_text(HOSTILE)


@pytest.mark.parametrize(
    ("group", "entries", "path", "message"),
    [
        ("cluster", {"HV": {"value": "a\nb", "reason": "x"}}, "cluster.env_defaults.HV.value",
         "line feed"),
        ("cluster", {"HV": {"value": "a", "reason": "x\ny"}}, "cluster.env_defaults.HV.reason",
         "line feed"),
        ("cluster", {"A;B": {"value": "a", "reason": "x"}}, "cluster.env_defaults.A;B",
         "key not allowed (allowed: an environment variable name"),
        ("workload", {"X": {"value": "a"}}, "workload.env_defaults.X.reason", "missing"),
        ("workload", {"X": {"value": "a", "reason": ""}}, "workload.env_defaults.X.reason",
         "at least 1 character"),
        ("workload", {"X": {"value": True, "reason": "x"}}, "workload.env_defaults.X.value",
         "wrong type"),  # an integer is its text, as in cluster.env; true is no guess
    ],
)  # fmt: skip
def test_bad_entries_are_refused_with_their_path(
    group: str, entries: dict[str, Any], path: str, message: str, tmp_path: Path, run_cli: RunCli
) -> None:
    config = with_file(tmp_path, {group: {"env_defaults": entries}})
    out = tmp_path / "out"
    result = run_cli(*config, f"output_dir={out}")
    assert result.code == 2, result
    lines = [line.strip() for line in result.err.splitlines()]
    assert any(line.startswith(f"{path}:") and message in line for line in lines), result.err
    assert not out.exists()


def test_job_sbatch_points_at_the_reasons() -> None:
    text = (REPO / "generated" / "megatron-p5" / "job.sbatch").read_text()
    assert "README.md says why each variable is set" in text
    assert re.search(r"^export CUDA_DEVICE_MAX_CONNECTIONS=1$", text, re.M)
