"""What Slurm runs and names (nsysgen/targets/slurm/tasks.py): the report name per rank or per
node in the run's job folder, each task's variables (HOSTNAME the batch host, never the node),
the recorded tasks for listed ranks and for one per node, and how a set of tasks reads."""

from __future__ import annotations

import dataclasses

from nsysgen.profile.plan_types import TaskSet
from nsysgen.targets.slurm.tasks import (
    _task_env,
    describe,
    in_container,
    own_script,
    recorded,
    report_output,
    tasks_text,
)
from tests.profile.configs import planned

REPORTS = "/fsx/nsight-reports/nccl-p5-slurm/job<jobid>/"


def test_a_report_per_rank_in_the_runs_job_folder() -> None:
    config, plan = planned("capture.ranks=[0,9,15]")
    assert report_output(config) == (
        "/fsx/nsight-reports/nccl-p5-slurm/job%q{SLURM_JOB_ID}/nccl-p5-slurm_job%q{SLURM_JOB_ID}"
        "_rank%q{SLURM_PROCID}_node%q{SLURM_NODEID}_%q{SLURMD_NODENAME}"
    )
    assert [(t.task, t.node, t.local, t.report) for t in plan.recorded] == [
        (0, 0, 0, REPORTS + "nccl-p5-slurm_job<jobid>_rank0_node0_<host0>"),
        (9, 1, 1, REPORTS + "nccl-p5-slurm_job<jobid>_rank9_node1_<host1>"),
        (15, 1, 7, REPORTS + "nccl-p5-slurm_job<jobid>_rank15_node1_<host1>"),
    ]
    # Listed ranks beyond the job's tasks record nothing (validation refuses them first).
    one_node = dataclasses.replace(config, cluster=dataclasses.replace(config.cluster, nodes=1))
    assert [t.task for t in recorded(one_node, plan.facts)] == [0]


def test_a_launcher_per_node_and_a_report_name_of_ones_own() -> None:
    config, _ = planned("workload=fsdp")
    assert report_output(config).endswith(
        "_job%q{SLURM_JOB_ID}_node%q{SLURM_NODEID}_%q{SLURMD_NODENAME}_allgpus"
    )
    config, plan = planned("workload=fsdp", "capture.report_name=mine")
    assert report_output(config) == "/fsx/nsight-reports/fsdp-p5-slurm/job%q{SLURM_JOB_ID}/mine"
    assert tasks_text(config) == "2 tasks on 2 nodes (one launcher per node)"


def test_one_per_node_records_local_rank_0_of_each_node() -> None:
    config, plan = planned("capture.ranks=one_per_node", "cluster.nodes=3")
    assert [(t.task, t.node, t.local) for t in plan.recorded] == [(0, 0, 0), (8, 1, 0), (16, 2, 0)]
    assert describe(plan.facts.selection.profiled, "rank") == "local rank 0 of every node"
    assert tasks_text(config) == "24 tasks on 3 nodes (8 per node, a task per GPU)"


def test_each_task_sees_slurms_variables_then_the_jobs() -> None:
    env = _task_env({"X": "y", "SLURM_NTASKS": "16"}, 9, 1, 1)
    assert env["SLURM_PROCID"] == "9" and env["SLURM_LOCALID"] == "1"
    assert env["SLURMD_NODENAME"] == "<host1>"
    assert env["HOSTNAME"] == "<host0>"  # the batch host in every task
    assert env["SLURM_JOB_ID"] == "<jobid>" and env["SLURM_NNODES"] == "<SLURM_NNODES>"
    assert (env["X"], env["SLURM_NTASKS"]) == ("y", "16")


def test_task_sets_read_as_a_person_says_them() -> None:
    assert describe(TaskSet("all"), "node") == "every node"
    assert describe(TaskSet("listed", (3,)), "node") == "node 3"
    assert describe(TaskSet("listed", (3, 4)), "rank") == "ranks 3, 4"


def test_container_and_own_script_switches() -> None:
    config, _ = planned()
    assert in_container(config) and not own_script(config)
    config, _ = planned("cluster.container_runtime=none", "target.job_script=yours")
    assert not in_container(config) and own_script(config)
