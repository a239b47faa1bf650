"""The Nsight Systems people install today (issue 30): the 2025.6.1 and 2026.4.1 catalog
entries (from NVIDIA's documentation; no such binary runs here), the Blackwell CUDA-trace rule,
advanced NCCL tracing, --pytorch, and the verifier naming dropped CUPTI events."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
import yaml

from nsysgen.shipped import verify
from tests.conftest import REPO, RunCli

UNTESTED = ("2025.6.1", "2026.4.1")


def plan(run_cli: RunCli, *overrides: str) -> dict[str, object]:
    result = run_cli("plan", "--json", *overrides)
    data = json.loads(result.out)
    assert isinstance(data, dict)
    data["_code"] = result.code
    return data


def command(data: dict[str, object]) -> str:
    words = data["nsys_command"]
    assert isinstance(words, list)
    return " ".join(str(w) for w in words)


def lint_ids(data: dict[str, object]) -> list[str]:
    lints = data["lints"]
    assert isinstance(lints, list)
    return [str(f["id"]) for f in lints]


@pytest.mark.parametrize("version", UNTESTED)
def test_versions_built_from_documents_say_so(version: str, run_cli: RunCli) -> None:
    entry = yaml.safe_load((REPO / "conf" / "nsight" / f"{version}.yaml").read_text())
    assert entry["tested"] is False and entry["sources"]
    assert all(s.startswith("https://docs.nvidia.com/nsight-systems/") for s in entry["sources"])
    data = plan(run_cli, f"nsight={version}")
    assert data["nsys_version_tested"] is False
    text = run_cli("plan", f"nsight={version}").out
    assert f"{version} was built from NVIDIA's documentation" in " ".join(text.split())
    readme = " ".join((REPO / "README.md").read_text().split())
    assert f"{version}" in readme and "built from NVIDIA's documentation" in readme


def test_tested_versions_say_nothing(run_cli: RunCli) -> None:
    assert plan(run_cli)["nsys_version_tested"] is True
    assert "built from NVIDIA's documentation" not in run_cli("plan").out


@pytest.mark.parametrize(
    ("overrides", "trace"),
    [
        # Blackwell, hardware trace by default, a window that starts after launch: cuda-sw.
        (("cluster=p6-b200", "nsight=2026.4.1"), "--trace=cuda-sw,nvtx"),
        (("cluster=p6-b200", "nsight=2026.4.1", "capture=steps", "workload=fsdp"), "cuda-sw"),
        (("cluster=p6-b200", "nsight=2026.4.1", "capture=nvtx", "workload=fsdp"), "cuda-sw"),
        # The whole program: nothing starts or stops while it runs; nsys's default stays.
        (
            ("cluster=p6-b200", "nsight=2026.4.1", "capture.delay=0"),
            "--trace=cuda,nvtx",
        ),
        # A version whose cuda is the software trace, or a GPU without a hardware trace.
        (("cluster=p6-b200", "nsight=2025.6.1"), "--trace=cuda,nvtx"),
        (("cluster=p5", "nsight=2026.4.1"), "--trace=cuda,nvtx"),
        # Asked for explicitly.
        (("cluster=p5", "capture.cuda_trace=hardware"), "--trace=cuda-hw,nvtx"),
        (
            (
                "cluster=p6-b200",
                "nsight=2026.4.1",
                "capture.cuda_trace=software",
                "capture.delay=0",
            ),
            "--trace=cuda-sw,nvtx",
        ),  # fmt: skip
    ],
)
def test_blackwell_windows_trace_cuda_in_software(
    overrides: tuple[str, ...], trace: str, run_cli: RunCli
) -> None:
    data = plan(run_cli, *overrides)
    assert trace in command(data), command(data)
    assert "NSG021" not in lint_ids(data)


def test_forcing_the_hardware_trace_into_a_window_is_refused_with_the_fix(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = ("cluster=p6-b200", "nsight=2026.4.1", "capture.cuda_trace=hardware")
    result = run_cli(*args)
    assert result.code == 2
    assert "[NSG021]" in result.err and "cuda-sw" in result.err
    assert not (tmp_path / "generated").exists()
    # Switched to a warning, the compile goes through with the hardware trace asked for.
    result = run_cli(*args, "lints.severity.NSG021=warning")
    assert result.code == 0 and "[NSG021]" in result.err
    exec_text = (tmp_path / "generated" / "nccl-p6-b200-slurm" / "nsys-exec").read_text()
    assert "--trace=cuda,nvtx" in exec_text


def test_a_trace_the_version_lacks_is_an_input_error(run_cli: RunCli) -> None:
    result = run_cli("plan", "nsight=2023.4.4", "capture.cuda_trace=hardware")
    assert result.code == 2
    assert "capture.cuda_trace: hardware CUDA tracing needs --trace=cuda-hw" in " ".join(
        result.err.split()
    )


def test_advanced_nccl_tracing(run_cli: RunCli) -> None:
    data = plan(run_cli, "nsight=2026.4.1", "capture.nccl_trace=[coll,gpu]")
    assert "--trace=cuda,nvtx,nccl" in command(data)
    assert "--nccl-trace=coll,gpu" in command(data)
    assert "NSG022" in lint_ids(data)  # the NCCL >= 2.28 requirement, which nsysgen cannot see
    old = run_cli("plan", "nsight=2025.3.1", "capture.nccl_trace=[default]")
    assert old.code == 2 and "capture.nccl_trace[0]: 'default' is not known to nsys" in old.err
    bad = run_cli("plan", "nsight=2026.4.1", "capture.nccl_trace=[everything]")
    assert bad.code == 2 and "capture.nccl_trace[0]: 'everything'" in bad.err


def test_nccl_straggler_runs_where_it_can(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert run_cli("nsight=2026.4.1", "capture.nccl_trace=[default]").code == 0
    recipes = (tmp_path / "generated" / "nccl-p5-slurm" / "recipes.sh").read_text()
    assert 'nsys" recipe nccl_straggler' in recipes
    assert run_cli("nsight=2025.6.1", "capture.nccl_trace=[default]").code == 0
    recipes = (tmp_path / "generated" / "nccl-p5-slurm" / "recipes.sh").read_text()
    assert "nccl_straggler" not in recipes  # 2025.6.1 does not ship it
    asked = run_cli("plan", "nsight=2026.4.1", "capture.recipes=[nccl_straggler]")
    assert asked.code == 2 and "nccl_straggler reads advanced NCCL tracing only" in asked.err


def test_pytorch_switch(run_cli: RunCli) -> None:
    data = plan(run_cli, "capture.pytorch=[autograd-nvtx,functions-trace]")
    assert "--pytorch=autograd-nvtx,functions-trace" in command(data)
    shapes = plan(run_cli, "nsight=2026.4.1", "capture.pytorch=[functions-trace-shapes]")
    assert "--pytorch=functions-trace-shapes" in command(shapes)
    old = run_cli("plan", "nsight=2023.4.4", "capture.pytorch=[autograd-nvtx]")
    assert old.code == 2 and "nsys 2023.4.4 has no --pytorch" in old.err


def test_install_script_of_a_version_without_a_url_takes_the_users_package(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """install-nsight.sh of 2026.4.1 asks for the .deb, installs it, and refuses a package of
    another version before copying anything (the root's other files stay). Real dpkg-deb on a
    small package."""
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "root"
    assert run_cli("nsight=2026.4.1", f"cluster.nsight_root={root}").code == 0
    script = tmp_path / "generated" / "nccl-p5-slurm" / "install-nsight.sh"
    asked = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=False)
    assert asked.returncode == 2 and "pass the Nsight Systems 2026.4.1 CLI .deb" in asked.stderr
    root.mkdir()
    (root / "other-tools").write_text("a folder of the user's, never removed")
    for version, code in (("2026.3.2.1-1", 1), ("2026.4.1.1-1", 0)):
        deb = _package(tmp_path / version, version)
        done = subprocess.run(
            ["bash", str(script), str(deb)], capture_output=True, text=True, check=False
        )
        assert done.returncode == code, done.stderr
        assert (root / "target-linux-x64" / "nsys").exists() is (code == 0)
        assert (root / "other-tools").exists()


def _package(folder: Path, version: str) -> Path:
    tree = folder / "pkg"
    nsys = tree / "opt/nvidia/nsight-systems-cli/2026.4.1/target-linux-x64/nsys"
    nsys.parent.mkdir(parents=True)
    nsys.write_text(f'#!/bin/sh\necho "NVIDIA Nsight Systems version {version}"\n')
    nsys.chmod(0o755)
    (tree / "DEBIAN").mkdir()
    (tree / "DEBIAN" / "control").write_text(
        "Package: nsight-test\nVersion: 1\nArchitecture: amd64\nMaintainer: t\nDescription: t\n"
    )
    subprocess.run(["dpkg-deb", "-b", str(tree), str(folder / "p.deb")], check=True,
                   capture_output=True)  # fmt: skip
    return folder / "p.deb"


def test_verify_names_dropped_cupti_events_for_a_report_without_kernels(tmp_path: Path) -> None:
    """A report with CUDA traced, no kernel table, and nsys's diagnostic that it dropped CUPTI
    events (as seen with nsys 2026.3.1 and the hardware trace): the cause says so."""
    export = tmp_path / "r.sqlite"
    with sqlite3.connect(export) as db:
        db.execute(
            "CREATE TABLE DIAGNOSTIC_EVENT (timestamp INTEGER, timestampType INTEGER, source "
            "INTEGER, severity INTEGER, text TEXT, globalPid INTEGER)"
        )
        db.execute(
            "INSERT INTO DIAGNOSTIC_EVENT VALUES (5, 1, 3, 2, "
            "'8400 incomplete CUPTI events dropped.', 0)"
        )
    contents = verify.read_contents(export)
    found = verify.Finding("rank 0", "0", "ok")
    verify._check_traced({"cuda-sw", "nvtx"}, contents, found)
    assert "no CUDA kernels although cuda is traced" in found.problems
    assert any("8400 incomplete CUPTI events dropped" in c and "cuda-sw" in c for c in found.causes)


EKS = ("target=eks", "workload=fsdp", "workload.container_image=x.io/fsdp:1", "cluster=p6-b200")


def test_the_operators_own_window_counts_as_a_window(run_cli: RunCli) -> None:
    """Nsight Operator 26.x opens and closes the window itself (Coordinator Mode), even for a
    capture that capture.* would call the whole program: cuda-sw, and the pause in the plan.
    Its own nsys is 2026.x, so a catalog version without the hardware default is refused."""
    args = (*EKS, "target.injector=operator-26", "nsight=2026.4.1", "capture.delay=0")
    data = plan(run_cli, *args)
    assert "--trace=cuda-sw,nvtx" in command(data), command(data)
    edges = data["pause_at_window_edges"]
    assert isinstance(edges, dict) and edges["close_s"] is not None
    old = run_cli("plan", *EKS, "target.injector=operator-26")
    assert old.code == 2 and "nsight.version: Nsight Operator 26.x runs its own nsys" in old.err
