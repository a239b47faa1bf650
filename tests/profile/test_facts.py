"""The plan's facts (facts.py): derived once from the config, whatever the target: the job's
environment (and the part a job of the user's own gets), the step window, the program's files and
overrides, the recipes, which tasks record and which run the node-wide collectors."""

from __future__ import annotations

from nsysgen.profile.facts import derive
from nsysgen.profile.plan_types import SITE_FILE, SITE_HELPER_FILE, RankSelection, TaskSet
from tests.profile.configs import config

NODE_ZERO = RankSelection(TaskSet("listed", (0,)), TaskSet("listed", (0,)))


def test_a_step_window_of_fsdp_with_gpu_metrics() -> None:
    facts = derive(config("workload=fsdp", "capture=steps", "capture.gpu_metrics=true"))
    assert facts.steps.method == "hook"
    assert facts.files == facts.steps.files == (SITE_FILE, SITE_HELPER_FILE)
    assert facts.overrides == ()
    assert facts.selection == NODE_ZERO  # rank 0 of a torchrun per node: node 0
    assert facts.collector_args == ("--gpu-metrics-devices=all",)
    assert not facts.extra_collectors
    assert [run.recipe for run in facts.recipes][-3:] == [
        "nccl_sum",
        "nccl_gpu_time_util_map",
        "gpu_metric_util_map",
    ]


def test_nemo_in_a_window_with_efa_metrics_and_a_collector_of_its_own() -> None:
    facts = derive(
        config(
            "workload=nemo",
            "capture.efa_metrics=true",
            "capture.extra_args=['--enable=nvml_metrics']",
        )
    )
    assert facts.steps.method is None and facts.steps.env == ()
    assert facts.files == ("nemo-overrides.txt",)
    assert facts.overrides[-1] == "model.nsys_profile.enabled=false"
    assert facts.collector_args == ("--enable=efa_metrics",)
    assert facts.extra_collectors  # --enable in extra_args runs in every recorded task
    assert facts.recipes[-1].recipe == "network_map_aws"


def test_a_job_of_the_users_own_gets_only_nsysgens_defaults() -> None:
    facts = derive(config("+cluster.env.MY_SETTING=1", "cluster.env.FI_PROVIDER=tcp"))
    assert "MY_SETTING" in facts.job_env.names()
    assert "MY_SETTING" not in facts.own_job_env.names()
    # A default the user set keeps the user's value in both.
    for env in (facts.job_env, facts.own_job_env):
        found = env.get("FI_PROVIDER")
        assert found is not None and (found.value, found.key) == ("tcp", "cluster.env.FI_PROVIDER")
