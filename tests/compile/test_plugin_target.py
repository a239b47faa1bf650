"""A target is a plug-in: one registered class compiles end to end, touching no core module.

This keeps CONTRIBUTING.md's "Add a target" honest: the fake `k8s-job` target below (a plain
Kubernetes Job, one pod per node, no injector) is defined here, registered in TARGETS, given its
conf/target/k8s-job.yaml through --config-dir, and compiled, planned and checked by the CLI.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from nsysgen.errors import Issue
from nsysgen.model import Block, Config, TargetSettings, settings_as, typed_block
from nsysgen.output.render import ArtifactSpec
from nsysgen.profile.plan_types import (
    Facts,
    JobEnv,
    LaunchShell,
    Lint,
    ProfilePlan,
    RecordedTask,
    expand_name,
    report_path,
)
from nsysgen.targets import TARGETS
from nsysgen.targets.common import recipes_script, workload_files
from tests.conftest import REPO, RunCli


@dataclass(frozen=True)
class JobSettings(TargetSettings):
    namespace: str


def _no_script_in_images(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    if config.workload.container_image is None:
        yield ("workload.container_image", "a Kubernetes Job runs an image")


class K8sJob:
    name = "k8s-job"
    unit = "pod"
    variables = frozenset({"HOSTNAME", "JOB_COMPLETION_INDEX"})
    misleading_variables: Mapping[str, str] = {}
    lints = (Lint("NSG901", "a Job without an image", "set one", "warning", _no_script_in_images),)
    schema: Mapping[str, Any] = {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "namespace"],
        "properties": {"name": {"const": "k8s-job"}, "namespace": {"type": "string"}},
    }
    shell = LaunchShell("${NNODES}", "${JOB_UID}", "${HEAD}")

    def settings(self, block: Block) -> TargetSettings:
        settings: JobSettings = typed_block(JobSettings, block)
        return settings

    def tasks_per_node(self, config: Config) -> int:
        return 1

    def report_output(self, config: Config) -> str:
        name = f"{config.job.name}_pod%q{{JOB_COMPLETION_INDEX}}"
        return report_path(config.capture.report_dir, config.capture.report_name, name)

    def launch_shell(self, config: Config) -> LaunchShell:
        return self.shell

    def started_command(self, config: Config) -> tuple[str, ...]:
        return ()

    def unconfirmed(self, config: Config, plan: ProfilePlan) -> tuple[tuple[str, str], ...]:
        return ()

    def recorded(self, config: Config, facts: Facts) -> Iterator[RecordedTask]:
        template = self.report_output(config)
        collectors = bool(facts.collector_args)
        for node in range(config.cluster.nodes):
            env = {"JOB_COMPLETION_INDEX": str(node)}
            name = expand_name(template, env, host=f"pod{node}", pid="1")
            yield RecordedTask(node, node, 0, name, collectors)

    def in_container(self, config: Config) -> bool:
        return True

    def opens_window(self, config: Config) -> bool:
        return False

    def owned_switches(self, config: Config) -> tuple[str, ...]:
        return ()

    def checks(self, config: Config, env: JobEnv) -> Iterator[Issue]:
        if settings_as(config.target.settings, JobSettings).namespace == "kube-system":
            yield Issue("target.namespace", "not in kube-system (allowed: another namespace)")

    def prerequisites(self, config: Config) -> tuple[tuple[str, str, str], ...]:
        return ()

    def notes(self, config: Config, plan: ProfilePlan, folder: str) -> tuple[str, ...]:
        return ()

    def inputs(self, config: Config) -> Mapping[str, str]:
        return {}

    def artifacts(self, config: Config, plan: ProfilePlan) -> list[ArtifactSpec]:
        settings = settings_as(config.target.settings, JobSettings)
        assert plan.program is not None  # launch_shell gives the plan one
        words = [str(word) for word in plan.program.command]
        command = ["nsys", "profile", *plan.profile_args, *words]
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": config.job.name, "namespace": settings.namespace},
            "spec": {"completions": plan.nodes, "completionMode": "Indexed"},
            "command": command,
        }
        return [
            ArtifactSpec("job.yaml", "common/yaml.j2", {"data": job}),
            recipes_script(config, plan),
            *workload_files(config, plan),
        ]


@pytest.fixture
def k8s_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setitem(TARGETS, "k8s-job", K8sJob())
    conf = tmp_path / "conf"
    (conf / "target").mkdir(parents=True)
    (conf / "target" / "k8s-job.yaml").write_text("name: k8s-job\nnamespace: training\n")
    return conf


ARGS = ["target=k8s-job", "workload=fsdp", "cluster=p4de", "workload.container_image=img:1"]


def test_a_target_registered_outside_nsysgen_compiles_plans_and_checks(
    k8s_job: Path, tmp_path: Path, run_cli: RunCli
) -> None:
    out = tmp_path / "out"
    result = run_cli("--config-dir", str(k8s_job), *ARGS, f"output_dir={out}")
    assert result.code == 0, result.err
    folder = out / "fsdp-p4de-k8s-job"
    job = yaml.safe_load((folder / "job.yaml").read_text())
    assert job["metadata"] == {"name": "fsdp-p4de-k8s-job", "namespace": "training"}
    assert "--nnodes=${NNODES}" in job["command"]
    output = next(a for a in job["command"] if a.startswith("--output="))
    assert output.endswith("/fsdp-p4de-k8s-job_pod%q{JOB_COMPLETION_INDEX}")
    assert (folder / "recipes.sh").is_file()

    plan = run_cli("plan", "--config-dir", str(k8s_job), *ARGS, "--json")
    assert plan.code == 0, plan.err
    facts = json.loads(plan.out)
    assert facts["target"] == "k8s-job" and facts["tasks_per_node"] == 1
    assert "1 pod per node" in facts["launch"]
    reports = [task["report"] for task in facts["recording"]]
    assert [r.rsplit("/", 1)[1] for r in reports] == [
        "fsdp-p4de-k8s-job_pod0",
        "fsdp-p4de-k8s-job_pod1",
    ]

    assert run_cli("check", f"output_dir={out}").code == 0


@pytest.mark.slow
def test_its_schema_checks_and_lints_are_the_targets_own(
    k8s_job: Path, tmp_path: Path, run_cli: RunCli
) -> None:
    args = ["--config-dir", str(k8s_job), *ARGS]
    typo = run_cli(*args, "+target.namspace=x", f"output_dir={tmp_path}")
    assert typo.code == 2 and "target.namspace" in typo.err
    system = run_cli(*args, "target.namespace=kube-system", f"output_dir={tmp_path}")
    assert system.code == 2 and "not in kube-system" in system.err
    no_image = run_cli(*args, "workload.container_image=null", f"output_dir={tmp_path}")
    assert no_image.code == 0 and "NSG901" in no_image.err


CORE = sorted(
    p for p in (REPO / "nsysgen").rglob("*.py") if "targets" not in p.relative_to(REPO).parts
)


@pytest.mark.parametrize("path", CORE, ids=lambda p: str(p.relative_to(REPO)))
def test_no_core_module_names_a_target(path: Path) -> None:
    # cluster.slurm.* (how a cluster's Slurm is set up) is a fact of the cluster block.
    text = path.read_text().replace('["slurm"]', "")
    named = re.findall(
        r"""["'](?:eks|slurm)["']|target\.name ==|on_eks|targets\.(?:eks|slurm)""", text
    )
    assert not named, f"{path.name} names a target: {named}"
