"""nsysgen verify without a cluster: the expectations agree with the plan, report names become
the right patterns, and the checks of a report's contents say what is wrong."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

from nsysgen import model
from nsysgen.config.compose import Composer
from nsysgen.drivers import pipeline
from nsysgen.profile.lints import Finding, run_lints
from nsysgen.profile.plan import build_plan
from nsysgen.profile.teardown import sbatch_options, write_seconds
from nsysgen.reports.contract import Expect
from nsysgen.shipped.verify import Contents, check_contents, expected_reports, main, read_contents
from nsysgen.targets import TARGETS
from nsysgen.targets.expect import expectations, generic_regex
from tests.conftest import EXPERIMENTS


def config(*overrides: str) -> model.Config:
    return pipeline.typed(Composer().compose(list(overrides)).data)


def expect_of(cfg: model.Config) -> Expect:
    """What the compile writes into nsysgen-expect.json: from its plan, on its target."""
    target = TARGETS[cfg.target.name]
    return expectations(cfg, build_plan(cfg, target), target)


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_verify_expects_every_report_plan_promises(experiment: str) -> None:
    cfg = config(f"experiment={experiment}")
    plan = build_plan(cfg, TARGETS[cfg.target.name])
    expect = expectations(cfg, plan, TARGETS[cfg.target.name])
    entries = list(expected_reports(expect))
    assert len(entries) == len(plan.recorded) > 0
    for entry, task in zip(entries, plan.recorded, strict=True):
        assert (entry["task"], entry["node"], entry["collectors"]) == (
            task.task,
            task.node,
            task.collectors,
        )
        # The planned name, with its run-time parts filled in, is what the pattern matches.
        name = Path(task.report).name
        filled = re.sub(r"<jobid>", "4242", name)
        filled = re.sub(r"<host\d+>", "ip-10-0-0-1", filled)
        filled = re.sub(r"<[a-z]+>", "123", filled)
        match = re.fullmatch(entry["regex"], filled)
        assert match, (entry["regex"], filled)
        assert re.fullmatch(expect["generic_regex"], filled)
    assert expect["trace"] == list(cfg.capture.trace)
    assert expect["capture"]["mode"] == cfg.capture.mode


@pytest.mark.parametrize("ranks", ["all", "one_per_node", "[0,9]"])
def test_expectations_do_not_grow_with_the_job(ranks: str) -> None:
    """nsysgen-expect.json keeps a grid as a shape and a name pattern: the same size for 2 and
    for 100,000 nodes, and expanding it gives the plan's reports, name for name."""
    sizes = []
    for nodes in (2, 100_000):
        cfg = config("cluster=p5", f"cluster.nodes={nodes}", f"capture.ranks={ranks}")
        plan = build_plan(cfg, TARGETS[cfg.target.name])
        expect = expectations(cfg, plan, TARGETS[cfg.target.name])
        sizes.append(len(json.dumps(expect)))
        entries = expected_reports(expect)
        for task in itertools.islice(plan.recorded, 50):
            entry = next(entries)
            assert (entry["task"], entry["node"], entry["collectors"]) == (
                task.task,
                task.node,
                task.collectors,
            )
            assert re.fullmatch(
                entry["regex"],
                Path(task.report).name.replace("<jobid>", "7").replace(f"<host{task.node}>", "h"),
            )
    assert sizes[1] - sizes[0] < 20  # the node count's digits (in the grid and the fabric)


def test_a_job_name_that_looks_like_a_coordinate() -> None:
    """A name pattern built from sentinel numbers must not take a job name's digits for one."""
    cfg = config("cluster=local", "cluster.nodes=3", "capture.ranks=all", "job.name=r9100000019")
    plan = build_plan(cfg, TARGETS[cfg.target.name])
    names = [e["name"] for e in expected_reports(expectations(cfg, plan, TARGETS[cfg.target.name]))]
    assert [n.format(job="1", node="h") for n in names] == [
        Path(t.report).name.replace("<jobid>", "1").replace(f"<host{t.node}>", "h")
        for t in plan.recorded
    ]


def test_generic_pattern_names_the_slurm_variables() -> None:
    regex = generic_regex("j_job%q{SLURM_JOB_ID}_rank%q{SLURM_PROCID}_%q{SLURMD_NODENAME}")
    match = re.fullmatch(regex, "j_job7_rank3_node2")
    assert match and match.groupdict() == {
        "SLURM_JOB_ID": "7",
        "SLURM_PROCID": "3",
        "SLURMD_NODENAME": "node2",
    }


def expect_for(*overrides: str) -> Expect:
    return expect_of(config("cluster=local", "workload=python", *overrides))


def test_steps_must_be_exactly_the_window() -> None:
    expect = expect_for("capture=steps", "capture.first_step=3", "capture.last_step=5")
    ok = Contents(["step 3", "step 4", "step 5"], 10, 0, 0, 1.0)
    assert check_contents(expect, ok, False).status == "ok"
    short = Contents(["step 3", "step 4"], 10, 0, 0, 1.0)
    found = check_contents(expect, short, False)
    assert found.problems == ["holds steps 3..4, asked 3..5"]
    assert found.causes == ["the job ended (or was stopped) before step 5"]
    never = check_contents(expect, Contents([], 0, 0, 0, 1.0), False)
    assert "no step ranges: asked steps 3..5" in never.problems
    assert never.causes[0].startswith("window never reached: the job ended before step 3")
    assert "no CUDA kernels although cuda is traced" in never.problems


def test_window_length_nvtx_range_and_collectors() -> None:
    window = expect_for("capture=window", "capture.delay=5", "capture.duration=30")
    assert check_contents(window, Contents(["x"], 1, 0, 0, 29.0), False).status == "ok"
    found = check_contents(window, Contents(["x"], 1, 0, 0, 9.0), False)
    assert found.problems == ["capture lasted 9.0 s, asked 30 s (tolerance 3.0 s)"]
    nvtx = expect_for("capture=nvtx", "capture.nvtx_range=profile", "capture.gpu_metrics=true")
    found = check_contents(nvtx, Contents(["step 1"], 1, 0, 5, None), False)
    assert "no NVTX range 'profile'" in found.problems
    assert "GPU metrics in a report that should not collect them" in found.problems
    assert check_contents(nvtx, Contents(["profile"], 1, 0, 0, None), True).problems == [
        "no GPU metrics although this report should hold them"
    ]


def test_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path)]) == 2
    assert "nsysgen-expect.json not found" in capsys.readouterr().err
    (tmp_path / "nsysgen-expect.json").write_text(json.dumps({"format": 1, **expect_for()}))
    assert main([str(tmp_path), "--reports", str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "r").mkdir()
    assert main([str(tmp_path), "--reports", str(tmp_path / "r")]) == 2
    assert "no report or run of job" in capsys.readouterr().err


def teardown(*overrides: str) -> dict[str, str]:
    cfg = config(*overrides)
    return sbatch_options(cfg, build_plan(cfg, TARGETS[cfg.target.name]))


def test_teardown_signal_only_where_the_capture_may_be_open() -> None:
    nvtx = config("capture=nvtx")
    need = write_seconds(build_plan(nvtx, TARGETS[nvtx.target.name]))
    assert teardown("capture=nvtx") == {"signal": f"TERM@{need}"}
    assert teardown("capture=window", "capture.delay=30", "capture.duration=60") == {}
    late = teardown("capture=window", "capture.delay=3500", "capture.duration=60")
    assert late == {"signal": "TERM@60"}


def _lints(cfg: model.Config) -> list[Finding]:
    target = TARGETS[cfg.target.name]
    return run_lints(cfg, build_plan(cfg, target), target.lints)


def test_lint_no_room_to_write_the_report() -> None:
    cfg = config("capture=window", "capture.delay=3500", "capture.duration=60")
    findings = [f for f in _lints(cfg) if f.lint == "NSG013"]
    assert len(findings) == 1 and findings[0].severity == "warning"
    assert "past the time limit of 60.0 min" in findings[0].message
    cfg = config("capture=window", "capture.delay=30", "capture.duration=60")
    assert not [f for f in _lints(cfg) if f.lint == "NSG013"]


GPU_DATA = Path(__file__).parents[1] / "data" / "gpu"


def test_efa_rows_of_a_real_report() -> None:
    """Exports of nsys 2025.3.1 runs with --enable efa_metrics on the GPU machine, its sysfs root
    pointed at a fake EFA tree (bench/gpu/efa_probe.sh): with two device ports, and with a tree
    nic_sampler refused (no ports/1/state file), trimmed to the tables verify reads."""
    sampled = read_contents(GPU_DATA / "efa-metrics-2025.3.1.sqlite")
    assert (sampled.efa_devices, sampled.efa_samples, sampled.plugin_failures) == (2, 150, [])
    failed = read_contents(GPU_DATA / "efa-plugin-failed-2025.3.1.sqlite")
    assert (failed.efa_samples, failed.plugin_failures) == (0, ["Plugin exited with code 1."])
    expect = expect_of(
        config("cluster=p5", "nsight=2025.3.1", "capture=nvtx", "capture.efa_metrics=true")
    )
    sampled.kernels = failed.kernels = 1
    sampled.ranges = failed.ranges = ["profile"]  # capture.nvtx_range
    assert check_contents(expect, sampled, True).notes == [
        "EFA metrics: 150 samples of 2 device ports"
    ]
    found = check_contents(expect, failed, True)
    assert found.problems == ["no EFA metrics although this report should hold them"]
    assert found.causes[0].startswith('nsys says "Plugin exited with code 1.": the efa_metrics')
    assert check_contents(expect, failed, False).status == "ok"
    assert check_contents(expect, sampled, False).problems == [
        "EFA metrics in a report that should not collect them"
    ]


def test_nemo_steps_are_its_optimizer_steps() -> None:
    """A real 2025.3.1 export: a torch loop that opens the window at step 3 and closes it after
    step 5 as NeMo's nsys_profile does, with emit_nvtx on (NeMo's gen_shape=true)."""
    contents = read_contents(GPU_DATA / "emit-nvtx-optimizer-2025.3.1.sqlite")
    nemo = ("cluster=local", "workload=nemo", "capture=steps", "capture.first_step=3")
    assert check_contents(expect_of(config(*nemo, "capture.last_step=5")), contents, False)
    found = check_contents(expect_of(config(*nemo, "capture.last_step=6")), contents, False)
    assert found.problems == ["holds 3 steps, asked 4 (steps 3..6)"]
    assert found.causes == ["the job ended (or was stopped) before step 6"]
    unmarked = Contents(["ncclAllReduce"], contents.kernels, 0, 0, 1.0)  # NCCL's own NVTX
    found = check_contents(expect_of(config(*nemo, "capture.last_step=5")), unmarked, False)
    assert found.status == "ok"
    assert found.notes[0].startswith("NeMo marks its steps only with model.nsys_profile.gen_shape")
    never = check_contents(
        expect_of(config(*nemo, "capture.last_step=5")), Contents([], 0, 0, 0, None), False
    )
    assert "no step ranges: asked steps 3..5" in never.problems
    assert "NeMo did not get its model.nsys_profile overrides" in never.causes[0]


def test_presence_only_without_nsys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("NSYS", raising=False)
    expect = expect_for("cluster.nodes=2", "capture.ranks=one_per_node", "capture=window")
    expect["nsys"] = "/nonexistent/nsys"
    (tmp_path / "nsysgen-expect.json").write_text(json.dumps(expect))
    reports = tmp_path / "reports"
    reports.mkdir()
    entries = list(expected_reports(expect))
    assert len(entries) == 2
    names = [str(e["name"]).format(job="41", node=f"n{e['node']}") for e in entries]
    for name in names:
        (reports / f"{name}.nsys-rep").write_bytes(b"x")
    args = [str(tmp_path), "--reports", str(reports), "--job-id", "41"]
    assert main(args) == 2
    assert "--presence-only" in capsys.readouterr().err
    assert main([*args, "--presence-only"]) == 0
    assert "reports were not read" in capsys.readouterr().out
    (reports / f"{names[1]}.nsys-rep").write_bytes(b"")
    assert main([*args, "--presence-only"]) == 1
    assert "the report is empty (0 bytes)" in capsys.readouterr().out
    (reports / f"{names[1]}.nsys-rep").unlink()
    assert main([*args, "--presence-only"]) == 1
    assert "MISSING" in capsys.readouterr().out


def test_a_missing_report_gets_the_step_helpers_own_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the helper wrote to its task's helper.log (nsys-exec points it there) is given as a
    cause of the task's missing report; a report that is there and whole gets none."""
    expect = expect_for("cluster.nodes=2", "capture.ranks=one_per_node", "capture=window")
    (tmp_path / "nsysgen-expect.json").write_text(json.dumps(expect))
    reports = tmp_path / "reports"
    entries = list(expected_reports(expect))
    names = [str(e["name"]).format(job="41", node=f"n{e['node']}") for e in entries]
    reports.mkdir()
    (reports / f"{names[0]}.nsys-rep").write_bytes(b"x")
    said = "the run ended after 4 training steps (4 optimizer steps), before step 25"
    for entry in entries:
        task = reports / ".nsysgen" / f"task{entry['task']}"
        task.mkdir(parents=True)
        (task / "helper.log").write_text(f"101 nsysgen: {said}: the window never opened\n")
    args = [str(tmp_path), "--reports", str(reports), "--job-id", "41", "--presence-only"]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert out.count(f"the step helper said: {said}") == 1, out
