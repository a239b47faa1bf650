"""The compile pipeline, in order: validate -> model -> plan -> render -> manifest.

Compose and write are the callers' side effects, so that a sweep can compose once per group
choice, compile every point in memory, and write only when every point is valid.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nsysgen import model
from nsysgen.config.compose import Composed
from nsysgen.config.hygiene import value_issues
from nsysgen.config.validate import schema_issues
from nsysgen.errors import InvalidConfig, Issue
from nsysgen.output.manifest import Manifest, build_manifest
from nsysgen.output.render import RenderedFile, render
from nsysgen.profile.environment import job_env
from nsysgen.profile.inputs import decided, training_patch
from nsysgen.profile.lints import Finding, all_lints, run_lints
from nsysgen.profile.plan import build_plan
from nsysgen.profile.plan_types import ProfilePlan
from nsysgen.profile.semantic import semantic_issues
from nsysgen.profile.workloads.registry import WORKLOADS
from nsysgen.targets import TARGETS, target_lints
from nsysgen.targets.base import Target


@dataclass(frozen=True)
class Compiled:
    config: model.Config
    files: list[RenderedFile]
    manifest: Manifest
    warnings: list[Finding]
    steps: tuple[tuple[str, str], ...] = ()  # the plan's step detection (capture=steps)
    plan: ProfilePlan | None = None
    target: Target | None = None
    # Files one copy of which at the output root serves every folder (the step helper).
    shared: tuple[RenderedFile, ...] = ()


def regenerate_command(
    args: Sequence[str], config_dirs: Sequence[str] = (), multirun: bool = False
) -> str:
    """The command that rebuilds a folder; output_dir is left out (it is where, not what)."""
    words = ["nsysgen"]
    for directory in config_dirs:
        words += ["--config-dir", directory]
    if multirun:
        words.append("-m")
    words += [a for a in args if not a.startswith("output_dir=")]
    return shlex.join(words)


def typed(data: dict[str, Any]) -> model.Config:
    """A schema-valid composed config as typed objects, its blocks typed by the registries."""
    return model.from_dict(
        data,
        {kind: workload.settings for kind, workload in WORKLOADS.items()},
        {name: target.settings for name, target in TARGETS.items()},
        {kind: workload.auto_window for kind, workload in WORKLOADS.items()},
        {kind: workload.step_methods for kind, workload in WORKLOADS.items()},
        frozenset(kind for kind, workload in WORKLOADS.items() if workload.pytorch_job),
    )


def unknown_lint_ids(config: model.Config) -> list[Issue]:
    """A severity for an ID that no lint has: a typo would switch nothing off, silently. The
    lints of every target are known, so one severity table serves configs of any target."""
    known = [lint.id for lint in all_lints(target_lints())]
    return [
        Issue(
            f"lints.severity.{lint_id}", f"unknown lint ID {lint_id} (allowed: {', '.join(known)})"
        )
        for lint_id in sorted(config.lints.severity)
        if lint_id not in known
    ]


def build_config(
    composed: Composed, stop_on_lint_errors: bool = True
) -> tuple[model.Config, ProfilePlan, list[Finding]]:
    """Validate a composed config and type it: schema first, then every semantic rule, target
    rule and lint at once. Returns the profile plan and the lint findings not raised: the
    warnings, or all of them when lint errors should not stop (`nsysgen plan` shows them)."""
    schemas = {name: target.schema for name, target in TARGETS.items()}
    issues = value_issues(composed.data) or schema_issues(composed.data, schemas)
    if issues:
        raise InvalidConfig(_with_origins(issues, composed), composed.choices, composed.sources)
    config = typed(composed.data)
    target = TARGETS[config.target.name]
    env = job_env(config)
    issues = semantic_issues(config) + list(target.checks(config, env)) + unknown_lint_ids(config)
    patch = training_patch(config) if not issues else None
    if isinstance(patch, Issue):
        issues.append(patch)
    elif patch is not None:
        config = dataclasses.replace(config, training_patch=patch)
    plan = build_plan(config, target)
    findings = run_lints(config, plan, target.lints)
    if stop_on_lint_errors:
        issues += [
            Issue(f.path, f"[{f.lint}] {f.message}") for f in findings if f.severity == "error"
        ]
        findings = [f for f in findings if f.severity == "warning"]
    if issues:
        raise InvalidConfig(_with_origins(issues, composed), composed.choices, composed.sources)
    return config, plan, findings


def compile_config(
    composed: Composed, command: str, config_dirs: Sequence[str] = (), root: str = ""
) -> Compiled:
    """Everything one output folder holds, in memory. `root` is the working directory relative
    to the folder; the manifest records it only when the compile read paths relative to it."""
    config, plan, warnings = build_config(composed)
    specs = TARGETS[config.target.name].artifacts(config, plan)
    rendered = render(specs, command)
    files = [f for f in rendered if not f.shared]
    overrides = tuple(o for o in composed.overrides if not o.startswith("output_dir="))
    patch = config.training_patch
    inputs = {patch.source: decided(patch)} if patch else {}
    inputs.update(TARGETS[config.target.name].inputs(config))
    manifest = build_manifest(
        files,
        command,
        overrides,
        tuple(config_dirs),
        composed.choices,
        inputs=inputs,
        root=root if (config_dirs or inputs) else "",
    )
    return Compiled(
        config=config,
        files=files,
        manifest=manifest,
        warnings=warnings,
        steps=plan.steps,
        plan=plan,
        target=TARGETS[config.target.name],
        shared=tuple(f for f in rendered if f.shared),
    )


def _with_origins(issues: list[Issue], composed: Composed) -> list[Issue]:
    """Issues about a value that interpolates others also name those (what the user set)."""
    out = []
    for issue in issues:
        origins = composed.derived.get(issue.path)
        if origins:
            issue = Issue(
                issue.path, f"{issue.message} (its value comes from {', '.join(origins)})"
            )
        out.append(issue)
    return out
