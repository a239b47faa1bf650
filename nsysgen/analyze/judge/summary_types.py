"""The summary of `nsysgen analyze` as one typed value (Summary), and its file form, summary.json:
per rank x step figures, stragglers, and NCCL bandwidth per message size, in one machine-readable
file that `--baseline` compares. nsysgen/analyze/judge/summary.py builds it,
nsysgen/analyze/render/summary_files.py writes it and the CSVs, and every reader takes it typed
(a file read back goes through Summary.from_json).

Medians per rank leave out the window's edges, as the straggler analysis does: the first
recorded step (warm-up, and the pause when the capture opens) and the last one (the pause when
it closes: seconds, nsysgen/profile/pause.py). steps.csv and summary.json mark both.

Keys added for issue 39 (every older key is still written): - per step of a rank (ranks[].steps[]):
gpu_ms (nsys's projected range; step_ms is now the step on the GPU's timeline, from when the CPU
entered it: nsysgen/analyze/read/steps.py), comm_wait_ms (waiting for the last peer to arrive),
comm_transfer_ms (the rest of the exposed communication), host_gap_ms (GPU idle, the CPU still to
launch the work), waited_for (the rank it waited for most, None: no wait), graph_launches. On GPU
steps compute_busy_ms + comm_wait_ms + comm_transfer_ms + other_ms + host_gap_ms + idle_ms = step_ms
(nsysgen/analyze/judge/waiting.py); exposed_comm_ms stays the NCCL time not under compute. -
ranks[].totals: graph_ms, graph_launches; medians_without_window_edges: the new figures too. -
by_step: one entry per step over the ranks: the job's step (the slowest rank's), the late rank and
who waited for it (waiting.StepVerdict). - job_median_step_ms: the median over judged steps of the
job's step. - verdict: the answer, figures and one sentence (verdict.Verdict): "rank 1 late on 4 of
6 judged steps (9, 12, 13, 14) by 49.4 ms on average; rank 0 waited". - cuda_graphs (when a report
holds graph launches): launches, traced ("graph": nsys's default, launches counted as compute,
kernels inside unseen; "node": their kernels read), note. - fabric (None: no cluster known, and a
limit says "no fabric figures: pass --cluster") and, per nccl_by_size row, expected_busbw_GBps,
fraction_of_expected and flag (a sentence: why the size is flagged; None: not),
nsysgen/analyze/judge/fabric.py. - per nccl_by_size row, transfer_median_us, transfer_algbw_GBps and
transfer_busbw_GBps: each call's kernel time less its wait for the last peer, the figures the fabric
judges; calls_not_corrected, and a limit counting them (nsysgen/analyze/judge/bandwidth.py).
median_us, algbw_GBps and busbw_GBps keep their meaning: the whole kernel time, waiting included. -
baseline (with --baseline): the comparison's verdict and changes (nsysgen/analyze/judge/regress.py).
- limits is the list of what was not judged, and why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict, get_args

from nsysgen.analyze.judge import fabric as yardstick
from nsysgen.analyze.judge import verdict as answer
from nsysgen.analyze.judge import waiting
from nsysgen.analyze.judge.bandwidth import SizeEntry
from nsysgen.analyze.judge.late_ranks import Straggler
from nsysgen.analyze.judge.window import JudgedWindow, step_or_none

SCHEMA = "nsysgen-analyze-summary/1"
StepField = Literal[
    "step_ms", "compute_ms", "nccl_ms", "compute_busy_ms", "exposed_comm_ms", "other_ms", "idle_ms"
]
STEP_FIELDS: tuple[StepField, ...] = get_args(StepField)
# The figures issue 39 added, per step and in the medians.
SplitField = Literal["gpu_ms", "comm_wait_ms", "comm_transfer_ms", "host_gap_ms"]
MEDIAN_FIELDS: tuple[str, ...] = (*STEP_FIELDS, *get_args(SplitField))

# summary.json, typed: each entry's keys in the order the file holds them.
StepColumn = Literal[
    "step", "source", "cpu_ms", StepField, "wait_ms", "late_ms", "kernels", "window_edge",
    SplitField, "waited_for", "graph_launches",
]  # fmt: skip
TotalsColumn = Literal[
    "kernel_ms", "kernels", "nccl_kernel_ms", "nccl_kernels", "steps", "graph_ms", "graph_launches"
]


class StepEntry(TypedDict):
    step: int
    source: str  # "gpu": from the step's kernels; "cpu": the NVTX range alone
    cpu_ms: float
    step_ms: float | None
    compute_ms: float | None
    nccl_ms: float | None
    compute_busy_ms: float | None
    exposed_comm_ms: float | None
    other_ms: float | None
    idle_ms: float | None
    kernels: int
    wait_ms: float | None
    late_ms: float | None
    window_edge: str | None  # "open" (first recorded step), "close" (last), None: inside
    gpu_ms: float | None  # nsys's projected range of the step's GPU work
    comm_wait_ms: float | None  # waiting for the last peer to arrive
    comm_transfer_ms: float | None
    host_gap_ms: float | None  # GPU idle while the CPU had the next work still to launch
    waited_for: int | None  # the rank it waited for most on this step
    graph_launches: int


class Totals(TypedDict):
    kernel_ms: float
    kernels: int
    nccl_kernel_ms: float
    nccl_kernels: int
    steps: int
    graph_ms: float  # CUDA graph launches traced as graphs (their kernels unseen)
    graph_launches: int


class RankEntry(TypedDict):
    rank: int
    report: str
    pid: int
    device: int | None
    medians_without_window_edges: dict[str, float | None]  # STEP_FIELDS and cpu_ms
    totals: Totals
    steps: list[StepEntry]


class CudaGraphs(TypedDict):
    launches: int
    traced: str  # "graph": launches timed as a whole; "node": the kernels inside were traced
    note: str


@dataclass
class Summary:
    """What one analysis found. The fields are summary.json's keys; `judged` is the window the
    verdict judged, decided once when the summary is built (or read back)."""

    reports: list[str]
    world_size: int
    first_step_ignored: int | None
    last_step_ignored: int | None
    thresholds: dict[str, float]
    collectives_matched: int
    # How: "operationId" (nsys's advanced NCCL tracing) or "order in step" (without it).
    collectives_matched_by: list[str]
    steps_with_unequal_collective_counts: list[int]
    ranks: list[RankEntry]
    stragglers: list[Straggler]
    nccl_by_size: list[SizeEntry]
    # What the figures cannot say, and why, in words: never a number that is silently wrong.
    limits: list[str]
    by_step: list[waiting.StepVerdict]
    job_median_step_ms: float | None
    verdict: answer.Verdict
    fabric: yardstick.Fabric | None
    judged: JudgedWindow
    cuda_graphs: CudaGraphs | None = None
    label: str = ""  # the job, run and report count the analysis read
    # nccl-tests' own figures from its log: [bytes, time in us, bus bandwidth in GB/s or None].
    nccl_tests: list[tuple[int, float, float | None]] = field(default_factory=list)
    baseline: dict[str, Any] | None = None  # regress.Comparison: the --baseline comparison

    def as_json(self) -> dict[str, Any]:
        """summary.json's object, keys in the file's order (the optional ones only when set)."""
        found: dict[str, Any] = {
            "schema": SCHEMA,
            "reports": self.reports,
            "world_size": self.world_size,
            "first_step_ignored": self.first_step_ignored,
            "last_step_ignored": self.last_step_ignored,
            # Which steps are the window's edges, and whether stragglers and medians count them.
            "window_edges": {
                "open": self.first_step_ignored,
                "close": self.last_step_ignored,
                "in_stragglers": False,
                "in_medians": False,
            },
            "thresholds": self.thresholds,
            "collectives_matched": self.collectives_matched,
            "collectives_matched_by": self.collectives_matched_by,
            "steps_with_unequal_collective_counts": self.steps_with_unequal_collective_counts,
            "ranks": self.ranks,
            "stragglers": self.stragglers,
            "nccl_by_size": self.nccl_by_size,
            "limits": self.limits,
            "by_step": self.by_step,
            "job_median_step_ms": self.job_median_step_ms,
            "verdict": self.verdict,
            "fabric": self.fabric,
        }
        if self.cuda_graphs is not None:
            found["cuda_graphs"] = self.cuda_graphs
        if self.label:
            found["label"] = self.label
        if self.nccl_tests:
            found["nccl_tests"] = self.nccl_tests
        if self.baseline is not None:
            found["baseline"] = self.baseline
        return found

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Summary:
        """A summary.json read back (a --baseline). One written by an older nsysgen lacks the
        keys added since: each reads as empty, and its judged window as its edges say."""
        return cls(
            reports=list(data.get("reports") or []),
            world_size=int(data.get("world_size") or 0),
            first_step_ignored=step_or_none(data.get("first_step_ignored")),
            last_step_ignored=step_or_none(data.get("last_step_ignored")),
            thresholds=dict(data.get("thresholds") or {}),
            collectives_matched=int(data.get("collectives_matched") or 0),
            collectives_matched_by=list(data.get("collectives_matched_by") or []),
            steps_with_unequal_collective_counts=list(
                data.get("steps_with_unequal_collective_counts") or []
            ),
            ranks=list(data.get("ranks") or []),
            stragglers=list(data.get("stragglers") or []),
            nccl_by_size=list(data.get("nccl_by_size") or []),
            limits=list(data.get("limits") or []),
            by_step=list(data.get("by_step") or []),
            job_median_step_ms=data.get("job_median_step_ms"),
            verdict=_verdict(data.get("verdict")),
            fabric=data.get("fabric"),
            judged=JudgedWindow.read_back(data),
            cuda_graphs=data.get("cuda_graphs"),
            label=str(data.get("label") or ""),
            nccl_tests=[tuple(row) for row in data.get("nccl_tests") or []],
            baseline=data.get("baseline"),
        )


def _verdict(value: object) -> answer.Verdict:
    """A verdict read back: what it holds over one that says nothing (a summary.json written
    before verdicts were, or before a key of it was)."""
    said = answer.said_nothing()
    if isinstance(value, Mapping):
        said.update(value)  # type: ignore[typeddict-item]
    return said
