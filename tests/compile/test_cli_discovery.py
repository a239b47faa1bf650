"""A CLI people can discover, errors that help, output that reviews cleanly (issue 13)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from nsysgen import __version__
from nsysgen.config.compose import Composer
from nsysgen.profile.lints import markdown_table
from nsysgen.targets import target_lints
from tests.conftest import EXPERIMENTS, REPO, CliResult, run_nsysgen_process

Run = Callable[..., CliResult]


@pytest.mark.parametrize("verb", ["", "plan", "check", "show", "analyze", "completion"])
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_every_verb_answers_help_and_does_nothing_else(
    verb: str, flag: str, tmp_path: Path, run_cli: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = [verb, flag] if verb else [flag]
    try:
        result = run_cli(*args)
    except SystemExit as exit_info:  # argparse (analyze) prints its help and exits 0
        assert exit_info.code == 0
        return
    assert result.code == 0, result
    assert result.out.startswith("usage: nsysgen" if verb else "nsysgen ")
    assert not any(tmp_path.iterdir())


def test_version(run_cli: Run) -> None:
    assert run_cli("--version").out == f"nsysgen {__version__}\n"


def test_help_lists_groups_options_and_keys_with_descriptions(run_cli: Run) -> None:
    out = run_cli("--help").out
    assert "  cluster:    local, p4d, p4de, p5*, p5e, p5en, p6-b200" in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  capture.")}
    assert "capture.delay" in lines and "second" in lines["capture.delay"]
    assert "cluster.gpus_per_node" in out


def test_check_refuses_options_it_does_not_take(run_cli: Run) -> None:
    result = run_cli("check", "-m")
    assert result.code == 2
    assert result.err.startswith("error: check does not take -m\nusage: nsysgen check")


@pytest.mark.slow
def test_show_prints_the_composed_config_that_round_trips(run_cli: Run) -> None:
    result = run_cli("show", "capture=steps", "workload=fsdp")
    assert result.code == 0
    assert result.out.startswith(
        "# groups: capture=steps cluster=p5 nsight=2025.3.1 target=slurm workload=fsdp\n"
    )
    composed = Composer().compose(["capture=steps", "workload=fsdp"])
    assert yaml.safe_load(result.out) == composed.data
    documented = run_cli("show", "--all").out
    assert "  # integer: GPUs in each node" in documented
    assert yaml.safe_load(documented) == Composer().compose([]).data


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["capture.dealy=5"],
            "  capture.dealy: unknown key (did you mean delay?) (allowed keys: cpuctxsw, "
            "cuda_trace,",
        ),
        (
            ["capture=window", "capture.first_step=3"],
            "  capture.first_step: capture=window ignores first_step; only capture=steps reads it "
            "(allowed: leave it unset, or choose capture=steps)",
        ),
        (
            ["capture.delay=1e9"],
            "  capture.delay: 1000000000.0 is not allowed (allowed: a whole number of seconds "
            ">= 0, or auto)",
        ),
        (
            ["cluster=p55"],
            "error: cluster=p55: no option 'p55' in group cluster (did you mean p5 or p5e?) "
            "(allowed: local, p4d, p4de, p5, p5e, p5en, p6-b200)",
        ),
    ],
)
def test_errors_suggest_and_say_what_is_allowed(
    args: list[str], expected: str, tmp_path: Path, run_cli: Run
) -> None:
    result = run_cli(*args, f"output_dir={tmp_path}")
    assert result.code == 2
    assert any(line.startswith(expected) for line in result.err.splitlines()), result.err


def test_config_dir_errors_name_the_file_and_the_expected_type(
    tmp_path: Path, run_cli: Run
) -> None:
    conf = tmp_path / "my" / "cluster"
    conf.mkdir(parents=True)
    base = yaml.safe_load((REPO / "conf/cluster/p5.yaml").read_text())
    del base["gpus_per_node"]
    (conf / "mine.yaml").write_text(yaml.safe_dump(base))
    result = run_cli("--config-dir", str(tmp_path / "my"), "cluster=mine", "output_dir=x")
    assert result.code == 2
    assert (
        f"  cluster.gpus_per_node: missing (required; integer: GPUs in each node (count)) "
        f"[in {conf / 'mine.yaml'}]"
    ) in result.err.splitlines()


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_one_value_changes_only_the_files_that_carry_it(tmp_path: Path, run_cli: Run) -> None:
    assert run_cli("experiment=fsdp-p4de", f"output_dir={tmp_path}").code == 0
    before = _tree(tmp_path)
    assert (
        run_cli("experiment=fsdp-p4de", "capture.last_step=15", f"output_dir={tmp_path}").code == 0
    )
    after = _tree(tmp_path)
    changed = sorted(name for name in before if before[name] != after.get(name))
    assert changed == [
        "fsdp-p4de/README.md",
        "fsdp-p4de/analyze.sbatch",  # sized from the reports' estimate, which the window sets
        "fsdp-p4de/job.sbatch",
        "fsdp-p4de/nsysgen-expect.json",  # what verify checks: steps 10..15 now
        "fsdp-p4de/nsysgen-manifest.json",
    ]


@pytest.mark.slow
def test_group_sweeps_name_each_point_from_its_own_config(tmp_path: Path, run_cli: Run) -> None:
    # Delays inside the nccl-tests' estimated run on both clusters (NSG018).
    result = run_cli("-m", "cluster=p4de,p5", "capture.delay=8,2", f"output_dir={tmp_path}")
    assert result.code == 0, result
    root = tmp_path / "nccl-p4de+p5-slurm"
    assert result.out == f"{root}: sweep of 4 points (4 new); files: 28 created\n"
    sbatch = (root / "cluster-p4de_delay-2" / "job.sbatch").read_text()
    assert "#SBATCH --job-name=nccl-p4de-slurm-cluster-p4de-delay-2" in sbatch
    index = json.loads((root / "nsysgen-sweep.json").read_text())
    assert [p["name"] for p in index["points"]] == [
        "cluster-p4de_delay-2",
        "cluster-p4de_delay-8",
        "cluster-p5_delay-2",
        "cluster-p5_delay-8",
    ]
    again = run_cli("-m", "cluster=p4de,p5", "capture.delay=2,4", f"output_dir={tmp_path}")
    assert again.out == (
        f"{root}: sweep of 4 points (2 new, 2 unchanged); removed 2 point(s) no longer in the "
        "sweep; files: 14 created, 14 unchanged\n"
    )
    assert run_cli("check", f"output_dir={tmp_path}").code == 0


def test_plan_takes_sweeps_one_row_per_point(run_cli: Run) -> None:
    result = run_cli("plan", "workload=fsdp", "-m", "capture.delay=30,120")
    assert result.code == 0, result.err
    rows = result.out.splitlines()
    assert rows[0].split() == ["point", "job", "recording", "window", "reports", "lints"]
    assert [row.split()[0] for row in rows[1:]] == ["delay-30", "delay-120"]


@pytest.mark.slow
def test_check_works_from_any_directory(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "my" / "cluster").mkdir(parents=True)
    (repo / "my" / "cluster" / "mine.yaml").write_text(
        (REPO / "conf/cluster/p5.yaml").read_text().replace("name: p5", "name: mine")
    )
    (repo / "train").mkdir()
    shutil.copy(REPO / "tests/training_scripts/plain_loop.py", repo / "train" / "train.py")
    args = [
        "--config-dir",
        "my",
        "cluster=mine",
        "workload=python",
        "capture=steps",
        "workload.python.source=train/train.py",
        "workload.python.script=/fsx/repo/train/train.py",
    ]
    assert run_nsysgen_process(*args, cwd=repo).code == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run_nsysgen_process("check", f"output_dir={repo / 'generated'}", cwd=elsewhere)
    assert result.code == 0, result.out + result.err
    script = repo / "train" / "train.py"
    script.write_text("import os\n" + script.read_text())  # the step loop moves a line down
    result = run_nsysgen_process("check", f"output_dir={repo / 'generated'}", cwd=elsewhere)
    assert result.code == 1
    assert "what nsysgen decides from train/train.py changed" in result.out


def test_plan_and_compile_refuse_the_same_inputs(tmp_path: Path, run_cli: Run) -> None:
    args = ["workload=python", "capture=steps", "workload.python.source=missing.py"]
    compiled = run_cli(*args, f"output_dir={tmp_path}")
    planned = run_cli("plan", *args)
    assert compiled.code == planned.code == 2
    assert "workload.python.source: cannot read missing.py" in compiled.err
    assert "workload.python.source: cannot read missing.py" in planned.err


@pytest.mark.parametrize("args", [[], *[[f"experiment={e}"] for e in EXPERIMENTS]])
def test_default_and_experiments_compile_without_warnings(
    args: list[str], tmp_path: Path, run_cli: Run
) -> None:
    result = run_cli(*args, f"output_dir={tmp_path}")
    assert result.code == 0 and result.err == "", result.err


def test_readme_lint_table_is_the_registry() -> None:
    readme = (REPO / "README.md").read_text()
    table = readme.split("<!-- lint-table")[1].split("-->", 1)[1].split("<!-- /lint-table -->")[0]
    assert table.strip() == markdown_table(target_lints())


CORPUS = REPO / "tests" / "training_scripts" / "corpus"


def test_no_citations_of_files_outside_the_repository() -> None:
    hits = []
    for folder in ("nsysgen", "conf", "schemas", "tests", "bench", "generated"):
        for path in (REPO / folder).rglob("*"):
            if CORPUS in path.parents:
                continue  # public training scripts, verbatim: their own words and links
            if path.is_file() and path.suffix in {".py", ".j2", ".yaml", ".json", ".sh", ".md"}:
                text = path.read_text(errors="replace")
                if "reference/" in text and "test_cli_discovery" not in path.name:
                    hits.append(str(path.relative_to(REPO)))
    assert hits == []


def test_generated_readmes_name_only_real_helpers() -> None:
    for readme in (REPO / "generated").rglob("README.md"):
        assert "StepWindow" not in readme.read_text()


def test_completion_install_is_documented() -> None:
    readme = (REPO / "README.md").read_text()
    assert 'eval "$(nsysgen completion bash)"' in readme
