"""The size of the analysis job (analyze.sbatch) and how long it should take, before any report
exists: from the report count and the report size model (nsysgen/profile/estimate.py), unless the
`analysis` block sets them.

Per report, the analysis exports the report to SQLite once (`nsys export`, cached next to the
report) and reduces the export to per-rank tables; workers take one report at a time. The
throughput figures below are measured on one core of the GPU machine with nsys 2025.3.1, on
reports of 6-98 MB of a launch-bound CUDA loop (bench/gpu/export_rate.sh,
bench/gpu/results/export-rate-2026-12-01.json): export and reduce both grow with the report's
size, 7.8 MB/s and 9.3 MB/s, with well under a second of fixed cost per report.
"""

from __future__ import annotations

import math

from nsysgen.model import Config
from nsysgen.profile.plan_types import AnalysisJob

# nsys export --type sqlite, bytes of report per second on one core.
EXPORT_BYTES_PER_S = 7.8e6
# nsysgen's reduce of the export (steps, kernels, NCCL calls), bytes of report per second.
REDUCE_BYTES_PER_S = 9.3e6
# nsys and worker start-up per report, seconds.
PER_REPORT_S = 0.3
# Aim for at most this many reports per worker before adding nodes.
REPORTS_PER_WORKER = 8
DEFAULT_WORKERS_PER_NODE = 4


def seconds_per_report(bytes_per_report: float) -> float:
    return (
        PER_REPORT_S + bytes_per_report / EXPORT_BYTES_PER_S + bytes_per_report / REDUCE_BYTES_PER_S
    )


def analysis_job(config: Config, reports: int, bytes_per_report: float) -> AnalysisJob:
    block = config.analysis
    per_node = block.workers_per_node or min(DEFAULT_WORKERS_PER_NODE, max(1, reports))
    wanted = math.ceil(max(1, reports) / (per_node * REPORTS_PER_WORKER))
    nodes = block.nodes or max(1, min(config.cluster.nodes, wanted))
    workers = nodes * per_node
    # A worker holds one report's export being read; nsys export itself needs about 3x the report.
    memory = block.worker_memory_gb or max(4, math.ceil(3 * bytes_per_report / 1e9))
    # Reports are dealt to workers in waves.
    estimate = math.ceil(reports / workers) * seconds_per_report(bytes_per_report) if reports else 0
    limit = block.time_limit_min or max(10, math.ceil(1.5 * estimate / 60) + 5)
    return AnalysisJob(reports, nodes, per_node, memory, limit, estimate)
