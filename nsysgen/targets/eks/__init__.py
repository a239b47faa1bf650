"""EKS target: injector Helm values, a TrainJob or PyTorchJob, and the scripts around them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from nsysgen.errors import Issue
from nsysgen.model import Block, Config, ScriptSettings, TargetSettings, typed_block
from nsysgen.output.render import ArtifactSpec
from nsysgen.profile.plan_types import SITE_DIR, Facts, JobEnv, Lint, ProfilePlan, RecordedTasks
from nsysgen.targets.common import recipes_script, upload_script, workload_files
from nsysgen.targets.eks import unconfirmed
from nsysgen.targets.eks.checks import (
    EVERY_POD_LINT,
    GRACE_LINT,
    PATCHED_IMAGE_LINT,
    SCRIPT_PLACE_LINT,
    checks,
    job_kind,
)
from nsysgen.targets.eks.helm import helm_values, owned_switches, profile_config, tool_args
from nsysgen.targets.eks.injection import (
    injection_pattern,
    process_lines,
    torchrun_args,
)
from nsysgen.targets.eks.jobs import (
    fetch_pod_overrides,
    grace_seconds,
    pytorchjob,
    site_configmap,
    trainjob,
    uses_helper,
)
from nsysgen.targets.eks.names import (
    EKS_POD_VARS,
    SITE_CONFIGMAP_FILE,
    STATE_DIR,
    bucket,
    coordinator_mode,
    eks_settings,
    injector,
    pod_selector,
    profiled_replicas,
    recorded,
    recording_nodes,
    report_output,
    reports_on_volume,
    state_pods,
)
from nsysgen.targets.eks.own import KINDS, manifest_inputs, profile_patch
from nsysgen.targets.eks.prerequisites import Prerequisite, cli_source, prerequisites
from nsysgen.targets.eks.settings import EksSettings
from nsysgen.targets.expect import verify_files


def _scripts_context(config: Config) -> dict[str, Any]:
    target = eks_settings(config)
    flavor = injector(config)
    uri = config.capture.s3_uri
    return {
        "job_name": config.job.name,
        "job_kind": job_kind(config),
        "job_file": f"{target.job}.yaml",
        "namespace": target.namespace,
        "operator_namespace": target.operator_namespace,
        "release": target.release,
        "chart": target.charts[target.injector],
        "injector": target.injector,
        "label": flavor.label,
        "leftovers": flavor.leftovers,
        "report_dir": config.capture.report_dir,
        "fetch_overrides": fetch_pod_overrides(config),
        "s3_uri": uri,
        "bucket": bucket(uri) if uri else None,
        "storage_secret": target.storage_secret,
        "profile_config": target.profile_config == "resource",
        "coordinator": coordinator_mode(config),
        "delay": config.capture.delay_s,
        "duration": config.capture.duration,
        "pods": config.cluster.nodes,
        "selector": pod_selector(config),
        "cli_source": cli_source(config),
    }


# Where a report that the pod's end cut off goes, for nsysgen-verify.py.
CUT_OFF_LOST = (
    "a report nsys was still writing when the pod ended is lost: Nsight Operator 26.x stages it "
    "inside the container and uploads it only once written (see README, Teardown)"
)


def _verify_extra(config: Config) -> dict[str, Any]:
    if reports_on_volume(config):
        return {"pods": state_pods(config)}  # each pod's TMPDIR folder under .nsysgen/
    return {"cut_off": CUT_OFF_LOST}


PATCH_FILE = "profile-patch.yaml"
APPLY_SITE = "apply-site.sh"  # the tree's one helper ConfigMap into this job's namespace


def _apply_job(config: Config, files: list[str]) -> str:
    """How the README says to start the job (nsysgen's, or the user's patched one)."""
    # The helper's ConfigMap first: a pod that starts without it cannot mount it.
    first = f"`./{APPLY_SITE}` (the step helper's ConfigMap), then " if APPLY_SITE in files else ""
    manifest = eks_settings(config).manifest
    if manifest is None:
        return f"{first}`kubectl apply -f {eks_settings(config).job}.yaml`"
    return f"{first}your job with the patch (below: `kubectl apply -k` or `kubectl patch`)."


def _job_files(config: Config, plan: ProfilePlan) -> list[ArtifactSpec]:
    """nsysgen's own job, or (target.manifest) the patch for the user's and a kustomize
    Component that applies it."""
    target = eks_settings(config)
    if target.manifest is None:
        job = trainjob(config, plan) if target.job == "trainjob" else pytorchjob(config, plan)
        return [ArtifactSpec(f"{target.job}.yaml", "common/yaml.j2", {"data": job})]
    patch = profile_patch(config, plan)
    api, kind = KINDS[target.job]
    group, version = api.split("/")
    component = {
        "apiVersion": "kustomize.config.k8s.io/v1alpha1",
        "kind": "Component",
        "patches": [
            {
                "path": PATCH_FILE,
                "target": {
                    "group": group,
                    "version": version,
                    "kind": kind,
                    "name": config.job.name,
                },
            }
        ],
    }
    return [
        ArtifactSpec(PATCH_FILE, "common/yaml.j2", {"data": patch}),
        ArtifactSpec("kustomization.yaml", "common/yaml.j2", {"data": component}),
    ]


def artifacts(config: Config, plan: ProfilePlan) -> list[ArtifactSpec]:
    target = eks_settings(config)
    context = _scripts_context(config)
    specs = [
        ArtifactSpec("values-injector.yaml", "common/yaml.j2", {"data": helm_values(config, plan)}),
        *_job_files(config, plan),
        recipes_script(config, plan),
        # The zero-patch helper reaches the pods through a ConfigMap, not a file of the folder.
        *[
            spec
            for spec in workload_files(config, plan)
            if not spec.path.startswith(SITE_DIR + "/")
        ],
        *verify_files(config, plan, TARGET, _verify_extra(config)),
    ]
    if uses_helper(plan):
        specs.append(
            ArtifactSpec(
                SITE_CONFIGMAP_FILE, "common/yaml.j2", {"data": site_configmap()}, shared=True
            )
        )
        specs.append(ArtifactSpec(APPLY_SITE, "eks/apply-site.sh.j2", context, True))
    upload = upload_script(config)
    if upload is not None:
        specs.append(upload)
    if target.injector == "operator-26":
        specs += [
            # Only here: the 1.x injectors write to a folder that only the job's own pods mount.
            ArtifactSpec("label-namespace.sh", "eks/label-namespace.sh.j2", context, True),
            ArtifactSpec("install-injector.sh", "eks/install-operator-26.sh.j2", context, True),
            ArtifactSpec("upgrade-injector.sh", "eks/upgrade-operator-26.sh.j2", context, True),
            ArtifactSpec("uninstall-injector.sh", "eks/uninstall-operator-26.sh.j2", context, True),
            ArtifactSpec("fetch-reports.sh", "eks/fetch-reports-26.sh.j2", context, True),
        ]
        if target.profile_config == "resource":
            data = {"data": profile_config(config, plan)}
            specs.append(ArtifactSpec("profile-config.yaml", "common/yaml.j2", data))
        if config.capture.s3_uri:
            specs.append(
                ArtifactSpec("storage-secret.sh", "eks/storage-secret.sh.j2", context, True)
            )
        if coordinator_mode(config):
            specs.append(
                ArtifactSpec("capture-window.sh", "eks/capture-window.sh.j2", context, True)
            )
    else:
        specs += [
            ArtifactSpec("install-injector.sh", "eks/install-injector.sh.j2", context, True),
            ArtifactSpec("uninstall-injector.sh", "eks/uninstall-injector.sh.j2", context, True),
            ArtifactSpec("fetch-reports.sh", "eks/fetch-reports.sh.j2", context, True),
        ]
    readme = {
        **context,
        "config": config,
        "target": target,
        "files": sorted(s.path for s in specs),
        "labelled": profiled_replicas(config),
        "recording_nodes": recording_nodes(config),
        "process": process_lines(config).torchrun,
        "pattern": injection_pattern(config),
        "report_pattern": report_output(config) + ".nsys-rep",
        "names_reports": injector(config).names_reports,
        "tool_args": tool_args(config, plan),
        "collector_args": list(plan.collector_args),
        "step_env": dict(plan.facts.steps.env),
        "steps": plan.steps,
        "recipe_folders": [run.folder for run in plan.facts.recipes],
        "deadline_s": plan.time_limit_s,
        "grace_s": grace_seconds(config, plan),
        "write_s": plan.teardown.write_s,
        "grace_patched": target.job != "trainjob" or target.trainer_version != "2.2",
        "patched_script": plan.facts.steps.method == "patch",
        "on_volume": reports_on_volume(config),
        "manifest": target.manifest,
        "apply_job": _apply_job(config, [s.path for s in specs]),
        "state_dir": f"{config.capture.report_dir}/{STATE_DIR}",
        "job_env": plan.facts.own_job_env if target.manifest is not None else plan.facts.job_env,
        "prerequisites": prerequisites(config),
        "unconfirmed": unconfirmed.points(config, plan),
    }
    specs.append(ArtifactSpec("README.md", "eks/README.md.j2", readme, comment="<!--"))
    return specs


class Eks:
    name = "eks"
    unit = "pod"
    variables = EKS_POD_VARS
    misleading_variables: Mapping[str, str] = {}
    lints: tuple[Lint, ...] = (EVERY_POD_LINT, PATCHED_IMAGE_LINT, GRACE_LINT, SCRIPT_PLACE_LINT)
    schema = None

    def settings(self, block: Block) -> TargetSettings:
        # `target.trainer_version=2.3` reaches here as the number Hydra reads in it.
        version = block["trainer_version"]
        block = {**block, "trainer_version": version if isinstance(version, str) else f"{version}"}
        settings: EksSettings = typed_block(EksSettings, block)
        return settings

    def tasks_per_node(self, config: Config) -> int:
        return 1  # one pod per node, whatever the launch

    def report_output(self, config: Config) -> str:
        return report_output(config)

    def launch_shell(self, config: Config) -> None:
        return None  # the pod's container runs torchrun itself (injection.torchrun_args)

    def started_command(self, config: Config) -> tuple[str, ...]:
        # The process the injector matches: torchrun as its interpreter runs it (a workload
        # without a script is refused by the checks, which may run after the plan).
        if not isinstance(config.workload.settings, ScriptSettings):
            return ()
        target = eks_settings(config)
        return (target.torchrun_interpreter, target.torchrun_path, *torchrun_args(config))

    def recorded(self, config: Config, facts: Facts) -> RecordedTasks:
        return recorded(config, facts)

    def in_container(self, config: Config) -> bool:
        return True  # a pod runs containers

    def opens_window(self, config: Config) -> bool:
        return coordinator_mode(config)  # the Nsight Operator's coordinator opens it

    def owned_switches(self, config: Config) -> tuple[str, ...]:
        return owned_switches(config)

    def checks(self, config: Config, env: JobEnv) -> Iterator[Issue]:
        return checks(config, env)

    def artifacts(self, config: Config, plan: ProfilePlan) -> list[ArtifactSpec]:
        return artifacts(config, plan)

    def inputs(self, config: Config) -> Mapping[str, str]:
        return manifest_inputs(config)

    def unconfirmed(self, config: Config, plan: ProfilePlan) -> tuple[tuple[str, str], ...]:
        return unconfirmed.points(config, plan)

    def notes(self, config: Config, plan: ProfilePlan, folder: str) -> tuple[str, ...]:
        return ()  # the README and the lints say it all

    def prerequisites(self, config: Config) -> tuple[Prerequisite, ...]:
        """What must be on the cluster before `kubectl apply`: (what, the command that checks
        it, where it comes from), as the folder's README lists them under "Before you apply"."""
        return prerequisites(config)


TARGET = Eks()
