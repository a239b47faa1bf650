"""nsysgen-env.sh runs in the user's own job script (target.job_script=yours): it must leave
every variable of that script as it was. Sourced here in a real bash, with a stand-in
`scontrol`, after the script has set every name the file used to define (and every name it
defines now), each set to the user's own value."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import RunCli

# Names nsysgen-env.sh defined before its names were prefixed, and the user's values of them.
USER_VALUES = {"head_node": "users-host", "nemo_overrides": "users-overrides"}
SCONTROL = """#!/bin/bash
case "$1 $2" in
  "show hostnames") printf 'node-a\\nnode-b\\n' ;;
  "show job") echo "   StdOut=/tmp/slurm-7.out" ;;
esac
"""
# What bash itself changes when a file is sourced (not the file's doing).
BASH_OWN = {
    "_",
    "BASH_EXECUTION_STRING",
    "BASH_LINENO",
    "BASH_SOURCE",
    "FUNCNAME",
    "PIPESTATUS",
    "BASH_ARGC",
    "BASH_ARGV",
}


def _variables(script: str, tmp_path: Path) -> dict[str, str]:
    """Every shell variable after `script`, name -> `declare -p` text."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "scontrol").write_text(SCONTROL)
    (bin_dir / "scontrol").chmod(0o755)
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "SLURM_JOB_ID": "7",
        "SLURM_JOB_NUM_NODES": "2",
        "SLURM_JOB_NODELIST": "node-[a-b]",
        "HOME": str(tmp_path),
    }
    full = f"set -euo pipefail\n{script}\ndeclare -p\n"
    proc = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", full],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    found = {}
    for line in proc.stdout.splitlines():
        words = line.split(" ", 2)
        if len(words) == 3 and words[0] == "declare":
            found[words[2].split("=", 1)[0]] = line
    return {name: text for name, text in found.items() if name not in BASH_OWN}


@pytest.mark.parametrize(
    ("workload", "own"), [("fsdp", "NSYSGEN_HEAD_NODE"), ("nemo", "NSYSGEN_NEMO_OVERRIDES")]
)
def test_sourcing_leaves_the_users_variables(
    tmp_path: Path, run_cli: RunCli, workload: str, own: str
) -> None:
    shared = tmp_path / "fsx"
    result = run_cli(
        *("target.job_script=yours", f"workload={workload}", "cluster=p5"),
        f"cluster.shared_fs={shared}",
        f"capture.report_dir={shared}/reports",
        f"output_dir={tmp_path / 'out'}",
    )
    assert result.code == 0, result.err
    (env_file,) = (tmp_path / "out").glob("*/nsysgen-env.sh")
    source = f"source {env_file}"
    fresh = _variables(source, tmp_path)
    # The names the file defines in a shell of nothing but Slurm's variables.
    before_source = _variables(":", tmp_path)
    defined = {name for name in fresh if fresh[name] != before_source.get(name)}
    assert own in defined
    assert not {"head_node", "nemo_overrides"} & defined
    # The user's job script has set each of them, and the old names, first.
    names = sorted({*USER_VALUES, *defined})
    setup = "\n".join(
        f"{name}={USER_VALUES.get(name, 'users-' + name.lower())}; export {name}" for name in names
    )
    before = _variables(setup, tmp_path)
    after = _variables(f"{setup}\n{source}", tmp_path)
    changed = sorted(
        name for name in before if after.get(name) != before[name] and name not in BASH_OWN
    )
    # nsysgen's own names are its to set; every other name stays the user's.
    assert [name for name in changed if not name.startswith("NSYSGEN_")] == []
    for name, value in USER_VALUES.items():
        assert after[name] == before[name], value
