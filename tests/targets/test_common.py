"""The files every target shares (nsysgen/targets/common.py): the importer link for a split
Debian layout (which, made on disk, leads nsys to its importer), the install script rendering
that link, the upload script only with an S3 URI, and the workload's own files as the plan
lists them."""

from __future__ import annotations

import posixpath
from pathlib import Path

import pytest

from nsysgen.output.render import render
from nsysgen.targets.common import importer_link, install_script, upload_script, workload_files
from tests.profile.configs import planned


def test_nvidias_layout_needs_no_link() -> None:
    config, _ = planned()
    assert importer_link(config) is None
    assert "ln -sfn" not in render([install_script(config)], "nsysgen")[0].text


def test_debians_split_layout_gets_a_link_that_reaches_the_importer(tmp_path: Path) -> None:
    config, _ = planned("nsight=2023.4.4")
    link = importer_link(config)
    assert link == (
        "usr/lib/x86_64-linux-gnu/nsight-systems/host-linux-x64",
        "../../nsight-systems/host-linux-x64",
    )
    # On disk, as the install script makes it: nsys's ../host-linux-x64 is the importer's folder.
    importer = tmp_path / config.nsight.importer_relpath
    importer.parent.mkdir(parents=True)
    importer.write_text("importer")
    (tmp_path / posixpath.dirname(config.nsight.nsys_relpath)).mkdir(parents=True)
    (tmp_path / link[0]).symlink_to(link[1])
    nsys_dir = tmp_path / posixpath.dirname(config.nsight.nsys_relpath)
    assert (nsys_dir / ".." / "host-linux-x64" / "QdstrmImporter").read_text() == "importer"
    text = render([install_script(config)], "nsysgen")[0].text
    assert f'ln -sfn ../../nsight-systems/host-linux-x64 "$root/"{link[0]}\n' in text


def test_the_upload_script_comes_only_with_an_s3_uri() -> None:
    config, _ = planned("workload=fsdp")
    assert upload_script(config) is None
    config, _ = planned("workload=fsdp", "capture.s3_uri=s3://bucket/prefix/")
    spec = upload_script(config)
    assert spec is not None and spec.executable and spec.path == "upload-reports.sh"
    assert spec.context == {
        "job_name": "fsdp-p5-slurm",
        "report_dir": "/fsx/nsight-reports/fsdp-p5-slurm",
        "s3_uri": "s3://bucket/prefix/",
    }


@pytest.mark.parametrize(
    ("overrides", "paths"),
    [
        ([], []),
        (["workload=nemo", "capture=steps"], ["nemo-overrides.txt"]),
        (
            ["workload=fsdp", "capture=steps"],
            ["nsysgen-site/sitecustomize.py", "nsysgen-site/nsysgen_window.py"],
        ),
    ],
)
def test_workload_files_are_the_ones_the_plan_lists(overrides: list[str], paths: list[str]) -> None:
    config, plan = planned(*overrides)
    specs = workload_files(config, plan)
    assert [spec.path for spec in specs] == paths == list(plan.facts.files)
