"""The lints of what every recorded task runs and writes (lints/tasks.py), called on a plan: the
last of repeated switches, --duration and a capture range's end without --kill=none, reports
outside the shared filesystem by path not by prefix, %q{VAR} the target does not set, a noexec
TMPDIR in containers, and the slowdown counted in recorded ranks."""

from __future__ import annotations

import dataclasses

import pytest

from nsysgen.profile.lints import tasks
from tests.profile.configs import planned


def test_a_switch_is_its_last_value_of_exactly_its_name() -> None:
    args = ("--kill=none", "--duration=5", "--kill=sigterm", "--killer=x")
    assert tasks.switch(args, "--kill") == "sigterm"
    assert tasks.switch(args, "--duration") == "5"
    assert tasks.switch(args, "--capture-range") is None


@pytest.mark.parametrize(
    ("extra", "duration", "range_end"),
    [
        (("--duration=60",), True, False),
        (("--duration=0",), False, False),
        (("--duration=60", "--kill=none"), False, False),
        (("--capture-range=nvtx",), False, True),  # ends by stop-shutdown, nsys's default
        (("--capture-range=nvtx", "--capture-range-end=repeat:3"), False, False),
        (("--capture-range=none", "--capture-range-end=stop-shutdown"), False, False),
        (
            ("--capture-range=nvtx", "--capture-range-end=stop-shutdown", "--kill=none"),
            False,
            False,
        ),
    ],
)
def test_switches_that_end_the_program(
    extra: tuple[str, ...], duration: bool, range_end: bool
) -> None:
    config, plan = planned("capture.delay=0", "capture.duration=0")
    plan = dataclasses.replace(plan, profile_args=(*plan.profile_args, *extra))
    assert bool(list(tasks.duration_kills(config, plan))) is duration
    assert bool(list(tasks.range_end_shuts_down(config, plan))) is range_end


@pytest.mark.parametrize(
    ("report_dir", "outside"),
    [("/fsx", False), ("/fsx/", False), ("/fsx/a/../b", False), ("/fsx/../etc", True)],
)
def test_reports_on_the_shared_filesystem_by_normalised_path(
    report_dir: str, outside: bool
) -> None:
    config, plan = planned()
    moved = dataclasses.replace(
        config, capture=dataclasses.replace(config.capture, report_dir=report_dir)
    )
    assert bool(list(tasks.outside_shared_fs(moved, plan))) is outside


def test_variables_in_report_names_that_the_target_does_not_set() -> None:
    config, plan = planned("capture.report_name='r_%q{HOSTNAME}_%q{MY_VAR}_%q{SLURM_PROCID}'")
    assert list(tasks.unset_variables(config, plan)) == [
        (
            "capture.report_name",
            "%q{HOSTNAME} is the batch host in every Slurm task, not the node that runs it "
            "(allowed: %q{SLURMD_NODENAME})",
        ),
        (
            "capture.report_name",
            "%q{MY_VAR} is not set by target slurm, so nsys leaves it literally in every report "
            "name",
        ),
    ]
    config, plan = planned("capture.report_dir='/fsx/r/%q{MY_VAR}'")
    assert [path for path, _ in tasks.unset_variables(config, plan)] == ["capture.report_dir"]


def test_a_noexec_tmpdir_matters_only_in_containers() -> None:
    assert list(tasks.tmpdir_in_containers(*planned("+cluster.env.TMPDIR=/dev/shm/x/"))) == [
        (
            "cluster.env.TMPDIR",
            "nsys stages its injection libraries in TMPDIR (/dev/shm/x); a container's /tmp and "
            "/dev/shm may be mounted noexec, which breaks injection",
        )
    ]
    assert list(tasks.tmpdir_in_containers(*planned("+cluster.env.TMPDIR=/tmpdir"))) == []
    bare = planned("cluster=local", "workload=python", "+cluster.env.TMPDIR=/tmp")
    assert not bare[1].in_container and list(tasks.tmpdir_in_containers(*bare)) == []


def test_the_slowdown_counts_the_ranks_a_node_report_records() -> None:
    config, plan = planned("workload=fsdp", "workload.estimate.kernels_per_second=20000")
    [(path, message)] = tasks.slows_the_job(config, plan)
    # One report of node 0's torchrun: its 8 ranks, not 1.
    assert path == "capture.ranks" and message.startswith("recording 8 of 16 ranks is expected")
    config, plan = planned(
        "workload=fsdp",
        "workload.estimate.kernels_per_second=20000",
        "cluster.nodes=1",
        "cluster.gpus_per_node=1",
    )
    assert plan.slowdown.job_percent > 2 and list(tasks.slows_the_job(config, plan)) == []
