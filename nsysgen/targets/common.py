"""Artifacts targets share: the Nsight install script, the recipes script, workload files."""

from __future__ import annotations

import posixpath

from nsysgen.model import Config
from nsysgen.output.render import ArtifactSpec
from nsysgen.profile.plan_types import (
    NEMO_OVERRIDES_FILE,
    PATCH_FILE,
    SITE_FILE,
    SITE_HELPER_FILE,
    WINDOW_HELPER_FILE,
    ProfilePlan,
)
from nsysgen.shipped import source_text


def importer_link(config: Config) -> tuple[str, str] | None:
    """(link, target) that puts the importer where nsys looks for it, if the layout needs one.

    nsys runs `<dir of its real path>/../host-linux-x64/QdstrmImporter`. Debian splits target and
    host into different trees, so without this link every report stays a .qdstrm.
    """
    nsight = config.nsight
    target_dir = posixpath.dirname(posixpath.dirname(nsight.nsys_relpath))
    expected = posixpath.join(target_dir, "host-linux-x64")
    host_dir = posixpath.dirname(nsight.importer_relpath)
    if host_dir == expected:
        return None
    return expected, posixpath.relpath(host_dir, posixpath.dirname(expected))


def install_script(config: Config) -> ArtifactSpec:
    nsight = config.nsight
    return ArtifactSpec(
        path="install-nsight.sh",
        template="common/install-nsight.sh.j2",
        executable=True,
        context={
            "version": nsight.version,
            "full_version": nsight.full_version,
            "method": nsight.install_method,
            "urls": nsight.install_urls,
            "prefix": nsight.package_prefix,
            "root": config.cluster.nsight_root,
            "nsys_rel": nsight.nsys_relpath,
            "importer_rel": nsight.importer_relpath,
            "importer_link": importer_link(config),
            "create_dirs": nsight.create_dirs,
            "shared_fs": config.cluster.shared_fs,
        },
    )


def recipes_script(config: Config, plan: ProfilePlan) -> ArtifactSpec:
    return ArtifactSpec(
        path="recipes.sh",
        template="common/recipes.sh.j2",
        executable=True,
        context={
            "job_name": config.job.name,
            "version": config.nsight.version,
            "nsys": config.nsys_path,
            "importer": config.importer_path,
            "report_dir": config.capture.report_dir,
            "runs": list(plan.facts.recipes),
            "upload": config.capture.s3_uri is not None,
        },
    )


def upload_script(config: Config) -> ArtifactSpec | None:
    """upload-reports.sh: reports and recipe outputs to capture.s3_uri, if one is set."""
    if config.capture.s3_uri is None:
        return None
    return ArtifactSpec(
        path="upload-reports.sh",
        template="common/upload-reports.sh.j2",
        executable=True,
        context={
            "job_name": config.job.name,
            "report_dir": config.capture.report_dir,
            "s3_uri": config.capture.s3_uri,
        },
    )


def training_patch(config: Config) -> ArtifactSpec:
    """training-loop.patch for the workload's own script, read and patched during validation."""
    patch = config.training_patch
    assert patch is not None, "build_config reads the script before artifacts are planned"
    return ArtifactSpec(
        path=PATCH_FILE,
        template="common/training-loop.patch.j2",
        context={"diff": patch.diff, "source": patch.source, "detected": patch.detected},
    )


def workload_files(config: Config, plan: ProfilePlan) -> list[ArtifactSpec]:
    """Files the program itself reads: NeMo overrides, the step-window patch or helper."""
    specs = []
    files = plan.facts.files
    if PATCH_FILE in files:
        specs.append(training_patch(config))
    if NEMO_OVERRIDES_FILE in files:
        specs.append(
            ArtifactSpec(
                path=NEMO_OVERRIDES_FILE,
                template="common/nemo-overrides.txt.j2",
                context={"overrides": list(plan.facts.overrides)},
            )
        )
    # The step helper and its site hook: one copy at the top of the generated tree for every
    # folder and sweep point (nsysgen/output/shared.py); the launch finds them there.
    if SITE_FILE in files:
        specs.append(ArtifactSpec(SITE_FILE, "common/sitecustomize.py.j2", {}, shared=True))
    if SITE_HELPER_FILE in files or WINDOW_HELPER_FILE in files:
        helper = {"source": source_text("step_window")}
        specs.append(
            ArtifactSpec(SITE_HELPER_FILE, "common/nsysgen_window.py.j2", helper, shared=True)
        )
    return specs
