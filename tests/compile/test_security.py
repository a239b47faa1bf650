"""Hostile trees and configs: nothing outside the output folder is written or deleted, tampered
files are input errors, concurrent compiles serialise, secrets are found wherever they are."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from nsysgen.output.manifest import MANIFEST_NAME
from tests.conftest import CliResult

Run = Callable[..., CliResult]
SWEEP = ["-m", "capture.delay=1,2", "job.name=sw"]


def test_tampered_sweep_index_cannot_delete_outside(tmp_path: Path, run_cli: Run) -> None:
    out = tmp_path / "out"
    assert run_cli(*SWEEP, f"output_dir={out}").code == 0
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    index = out / "sw" / "nsysgen-sweep.json"
    data = json.loads(index.read_text())
    data["points"].append({"name": "../../v2", "overrides": []})
    index.write_text(json.dumps(data))
    (tmp_path / "v2").mkdir()
    (tmp_path / "v2" / MANIFEST_NAME).write_text(
        json.dumps(
            {
                "generated_by": "nsysgen 0.1.0",
                "command": "x",
                "overrides": [],
                "config_dirs": [],
                "choices": {},
                "files": {"../precious.txt": {"sha256": "0", "mode": "0644"}},
            }
        )
    )
    result = run_cli(*SWEEP, f"output_dir={out}")
    assert result.code == 2
    assert f"{index}: its points are not folder names of this sweep" in result.err
    assert precious.read_text() == "keep me"
    check = run_cli("check", f"output_dir={out}")
    assert check.code == 1 and "invalid" in check.out


def test_tampered_manifest_is_an_error_naming_it(tmp_path: Path, run_cli: Run) -> None:
    assert run_cli("job.name=j", f"output_dir={tmp_path}").code == 0
    manifest = tmp_path / "j" / MANIFEST_NAME
    data = json.loads(manifest.read_text())
    data["files"]["../outside.txt"] = {"sha256": "0", "mode": "0644"}
    manifest.write_text(json.dumps(data))
    (tmp_path / "outside.txt").write_text("x")
    result = run_cli("job.name=j", "capture.delay=5", f"output_dir={tmp_path}")
    assert result.code == 2
    assert f"{manifest}: lists '../outside.txt'" in result.err
    assert (tmp_path / "outside.txt").read_text() == "x"
    manifest.write_text("{not json")
    result = run_cli("job.name=j", f"output_dir={tmp_path}")
    assert result.code == 2 and f"{manifest}: not readable as JSON" in result.err


def test_symlinks_are_never_followed(tmp_path: Path, run_cli: Run) -> None:
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    # A link planted at the old fixed staging name, and one at the folder itself.
    (out / ".j.nsysgen-staging").symlink_to(elsewhere)
    assert run_cli("job.name=j", f"output_dir={out}").code == 0
    assert not any(elsewhere.iterdir())
    assert (out / "j").is_dir() and not (out / "j").is_symlink()
    (out / "k").symlink_to(elsewhere)
    result = run_cli("job.name=k", f"output_dir={out}")
    assert result.code == 2 and "is a symbolic link" in result.err
    assert not any(elsewhere.iterdir())
    # A link inside the folder where a planned file goes is replaced, never written through.
    (out / "j" / "README.md").unlink()
    (out / "j" / "README.md").symlink_to(elsewhere / "readme")
    assert run_cli("job.name=j", "capture.delay=7", f"output_dir={out}").code == 0
    assert not (out / "j" / "README.md").is_symlink()
    assert not any(elsewhere.iterdir())


def test_unwritable_output_dir_is_an_input_error(tmp_path: Path, run_cli: Run) -> None:
    result = run_cli("output_dir=/dev/null/x")
    assert result.code == 2 and result.err == "error: output_dir /dev/null/x: Not a directory\n"


def _compile(out: Path, delay: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "nsysgen", "job.name=same", f"capture.delay={delay}"]
        + [f"output_dir={out}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_concurrent_compiles_serialise(tmp_path: Path, run_cli: Run) -> None:
    out = tmp_path / "out"
    for _ in range(3):
        procs = [_compile(out, delay) for delay in (5, 6, 7, 8)]
        results = [(p.communicate(timeout=120)[1], p.returncode) for p in procs]
        assert all(code == 0 for _, code in results), results
        names = sorted(p.name for p in out.iterdir())
        assert names == ["nsysgen-verify.py", "same"], names  # no staging debris
        check = run_cli("check", f"output_dir={out}")
        assert check.code == 0, check.out
        delays = {d for d in (5, 6, 7, 8) if f"--delay={d}" in (out / "same/nsys-exec").read_text()}
        assert len(delays) == 1


@pytest.mark.slow
def test_interrupted_sweep_is_flagged_by_check(tmp_path: Path, run_cli: Run) -> None:
    out = tmp_path / "out"
    args = ["-m", "workload=fsdp", "capture.delay=range(1,400)", "job.name=big",
            f"output_dir={out}"]  # fmt: skip
    assert run_cli(*args[:-1], "capture.duration=1", f"output_dir={out}").code == 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "nsysgen", *args, "capture.duration=2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    index = out / "big" / "nsysgen-sweep.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        data = json.loads(index.read_text())
        if data.get("complete") is False:
            break
        time.sleep(0.01)
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    check = run_cli("check", f"output_dir={out}")
    if json.loads(index.read_text()).get("complete") is False:
        assert check.code == 1 and "incomplete" in check.out
    else:  # finished before the kill: then it must be current
        assert check.code == 0


@pytest.mark.parametrize(
    ("override", "path", "what"),
    [
        (
            "nsight.install.urls=['https://example.com/nsys.deb?token=abc123']",
            "nsight.install.urls[0]",
            "a credential in a URL query",
        ),
        (
            "+cluster.env.AWS_SAK=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "cluster.env.AWS_SAK",
            "a random key or token",
        ),
        ("+cluster.env.GH=ghp_" + "a1" * 18, "cluster.env.GH", "a GitHub token"),
        ("+cluster.env.KEYID=AKIAIOSFODNN7EXAMPLE", "cluster.env.KEYID", "an AWS access key id"),
        (
            "workload.python.args=['--token=hf_abcdefghijklmnopqrstuvwx']",
            "workload.python.args[0]",
            "a Hugging Face token",
        ),
    ],
)
def test_secrets_are_found_in_every_block_at_their_path(
    tmp_path: Path, run_cli: Run, override: str, path: str, what: str
) -> None:
    result = run_cli("workload=python", override, f"output_dir={tmp_path}")
    assert result.code == 2
    assert f"  {path}: [NSG010] holds what looks like {what}" in result.err
    assert not any(tmp_path.iterdir())


def test_resolvers_that_read_the_environment_are_refused(
    tmp_path: Path, run_cli: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NSYSGEN_TEST_SECRET", "s3cr3t-value")
    for override in ("+cluster.env.X=${oc.env:NSYSGEN_TEST_SECRET}", "job.name=${oc.decode:'a'}"):
        result = run_cli(override, f"output_dir={tmp_path}")
        assert result.code == 2, result
        assert "calls the resolver" in result.err and "s3cr3t" not in result.err
    conf = tmp_path / "conf" / "cluster"
    conf.mkdir(parents=True)
    (conf / "mine.yaml").write_text(
        "defaults: [p5]\nenv:\n  LEAK: ${oc.env:NSYSGEN_TEST_SECRET}\n", encoding="utf-8"
    )
    result = run_cli("--config-dir", str(tmp_path / "conf"), "cluster=mine", "output_dir=x")
    assert result.code == 2 and "cluster.env.LEAK: calls the resolver 'oc.env'" in result.err


@pytest.mark.parametrize(
    "args",
    [
        ["nsight=null"],
        ["cluster=null"],
        ["nsight=2024.4"],
        ["cluster=5"],
        ["workload.estimate.kernels_per_second=inf"],
        ["workload.estimate.kernels_per_second=nan"],
        ["workload.estimate.kernels_per_second=1e308"],
        ["nsight.layout.importer=QdstrmImporter"],
        ["target.sbatch=[a]", "target.sbatch.comment=x"],
        ["capture.delay=1e9"],
        ["job.name=abc\n"],
        ["cluster.partition='gpu\n'"],
        ["target=eks", "target.torchrun_path=/usr/bin/torch\\run"],
        ["plan", "workload.estimate.kernels_per_second=inf"],
        ["-m", "capture.delay=range(0)"],  # found by the fuzzer: an empty sweep used to hang
        ["plan", "-m", "capture.delay=range(0)"],
    ],
)
def test_input_mistakes_exit_2_not_3(tmp_path: Path, run_cli: Run, args: list[str]) -> None:
    result = run_cli(*args, f"output_dir={tmp_path}")
    assert result.code == 2, result
    assert "internal error" not in result.err and "Traceback" not in result.err
    assert not any(tmp_path.iterdir())


def test_experiment_null_is_the_default(tmp_path: Path, run_cli: Run) -> None:
    assert run_cli("experiment=null", f"output_dir={tmp_path}").code == 0


def test_schema_patterns_refuse_a_trailing_newline_on_their_own() -> None:
    from nsysgen.config.validate import _validator

    errors = list(_validator("job").iter_errors({"name": "abc\n", "time_limit_min": 5}))
    assert [e.message for e in errors] == ["'abc\\n' does not match '^[a-z0-9][a-z0-9._-]*$'"]


def test_sbatch_directive_values_cannot_end_their_line(tmp_path: Path, run_cli: Run) -> None:
    value = "nightly # build; $(touch x)"
    assert run_cli(f"+target.sbatch.comment='{value}'", f"output_dir={tmp_path}").code == 0
    lines = (tmp_path / "nccl-p5-slurm/job.sbatch").read_text().splitlines()
    assert f'#SBATCH --comment="{value}"' in lines
    result = run_cli("+target.sbatch.comment='a\"b'", f"output_dir={tmp_path}/x")
    assert result.code == 2 and "text without double quotes or backslashes" in result.err


@pytest.mark.slow
def test_plan_into_a_closed_pipe_is_not_a_bug(tmp_path: Path) -> None:
    command = f"{sys.executable} -m nsysgen plan --json cluster.nodes=1000 | head -c 1"
    proc = subprocess.run(
        ["bash", "-c", f'set -o pipefail; {command}; echo "rc=${{PIPESTATUS[0]}}"'],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.stdout.endswith("rc=0\n"), proc
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_job_sbatch_survives_a_100000_node_allocation(tmp_path: Path, run_cli: Run) -> None:
    """Under `set -euo pipefail`, a pipe whose reader stops early kills the writer with SIGPIPE
    and fails the job; the head node of a 100,000-node list must not do that."""
    assert run_cli("experiment=fsdp-p4de", f"output_dir={tmp_path}").code == 0
    folder = tmp_path / "fsdp-p4de"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(
        '#!/bin/bash\nfor ((i = 0; i < 100000; i++)); do echo "node$i"; done\n'
    )
    (bin_dir / "srun").write_text('#!/bin/bash\necho "srun $*" > "$SRUN_LOG"\n')
    for tool in ("scontrol", "srun"):
        (bin_dir / tool).chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "NSYSGEN_DIR": str(folder),
        "SLURM_JOB_ID": "1",
        "SLURM_JOB_NODELIST": "node[0-99999]",
        "SLURM_JOB_NUM_NODES": "100000",
        "SRUN_LOG": str(tmp_path / "srun.log"),
    }
    for _ in range(3):  # SIGPIPE is a race: a pipe that can break does so in some runs
        proc = subprocess.run(
            ["bash", str(folder / "job.sbatch")], env=env, capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
    assert "--rdzv_endpoint=node0:29500" in (tmp_path / "srun.log").read_text()
