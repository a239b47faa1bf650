"""The analysis job's size and time (analysis_job.py): derived from the report count and size by
the measured export and reduce rates, bounded by the cluster, or taken as `analysis.*` says."""

from __future__ import annotations

import math

import pytest

from nsysgen.profile.analysis_job import PER_REPORT_S, analysis_job, seconds_per_report
from nsysgen.profile.plan_types import AnalysisJob
from tests.profile.configs import config


def test_a_report_costs_its_start_up_its_export_and_its_reduce() -> None:
    assert seconds_per_report(0) == PER_REPORT_S == 0.3
    # 78 MB: 10 s of export at 7.8 MB/s and 78/9.3 s of reduce at 9.3 MB/s.
    assert seconds_per_report(78e6) == pytest.approx(0.3 + 10 + 78 / 9.3)


def test_sixteen_reports_fit_one_node_of_four_workers() -> None:
    job = analysis_job(config(), 16, 1e9)
    # 16 reports / 32 per node: 1 node; 4 waves of 4 workers; 1.5 x 944 s = 23.6 min -> 24 + 5.
    assert job == AnalysisJob(16, 1, 4, 4, 29, 4 * seconds_per_report(1e9))
    assert job.estimate_s == pytest.approx(944.128, abs=1e-3)


def test_many_big_reports_take_every_node_of_the_cluster_and_more_memory() -> None:
    job = analysis_job(config(), 1000, 2.5e9)  # would want 32 nodes; the cluster has 2
    assert (job.nodes, job.workers_per_node, job.workers) == (2, 4, 8)
    assert job.worker_memory_gb == 8  # nsys export needs about 3 x 2.5 GB
    assert job.estimate_s == math.ceil(1000 / 8) * seconds_per_report(2.5e9)
    assert job.time_limit_min == math.ceil(1.5 * job.estimate_s / 60) + 5


def test_no_reports_get_one_worker_and_the_shortest_limit() -> None:
    assert analysis_job(config(), 0, 0) == AnalysisJob(0, 1, 1, 4, 10, 0)


def test_the_analysis_block_is_taken_as_written() -> None:
    written = config(
        "analysis.nodes=3",
        "analysis.workers_per_node=2",
        "analysis.worker_memory_gb=16",
        "analysis.time_limit_min=30",
    )
    job = analysis_job(written, 16, 1e9)
    assert job == AnalysisJob(16, 3, 2, 16, 30, math.ceil(16 / 6) * seconds_per_report(1e9))
