"""Synthetic exports of a data-parallel job shaped as real DDP reports are, with stragglers of
known size planted: for proving that `nsysgen analyze` measures the time each rank cost.

Each rank, each step: the forward's kernels, the loss read back to the host (a memcpy the host
waits for), the backward's kernels, one NCCL all-reduce per bucket of gradients launched as the
bucket is ready (on its own stream, after the bucket's last kernel and after the previous
bucket's all-reduce), the optimizer's kernels once the last all-reduce has ended, and a sync.
What real reports show and this reproduces:

- the bucket all-reduces overlap the backward, and every one waits for the last rank;
- SM contention: a rank's compute kernels that start while one of its NCCL kernels waits for a
  peer run CONTENTION times as long (on 2 x H200 the same GEMM ran ~1.25x longer there);
- each node's clock is off by its own amount; kernels and arrivals jitter by a few microseconds.

Planted (`Plant`): a host delay before the backward on given ranks and steps (a sleep; the
host has just waited for the loss, so the GPU idles exactly that long), and GPUs slower by a
factor on every kernel. `job()` writes one export per rank, named as nsysgen's wrapper names
them, and returns each step's gate-to-gate time (the job's step) for comparison: the same job
without the plant is the control.

    python bench/synth_ddp.py OUT_DIR --ranks 8 [--host RANK:STEP,STEP:MS] [--slow RANK:FACTOR]
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synth_export import _write  # noqa: E402  (bench/synth_export.py)

US = 1_000
MS = 1_000_000
CONTENTION = 1.25
COMPUTE, NCCL_STREAM = 7, 13
GEMM, ELEMENTWISE, NCCL_KERNEL, LAUNCH, NCCL_LAUNCH, MEMCPY = 1, 2, 5, 8, 9, 10


@dataclass(frozen=True)
class Shape:
    ranks: int = 8
    steps: range = range(8, 16)
    forward: int = 20  # kernels
    buckets: int = 6
    per_bucket: int = 4  # backward kernels per bucket
    optimizer: int = 4
    kernel_us: tuple[int, int] = (300, 700)
    transfer_us: int = 800  # each bucket's all-reduce once every rank has arrived
    gpus_per_node: int = 8
    job: int = 1
    seed: int = 0


@dataclass(frozen=True)
class Plant:
    host_ms: dict[int, dict[int, float]] = field(default_factory=dict)  # rank -> step -> ms
    slow: dict[int, float] = field(default_factory=dict)  # rank -> factor on every kernel

    def delay(self, rank: int, step: int) -> int:
        return int(self.host_ms.get(rank, {}).get(step, 0.0) * MS)


def report_name(shape: Shape, rank: int) -> str:
    return f"ddp_job{shape.job}_rank{rank}_node{rank // shape.gpus_per_node}"


@dataclass
class _Rank:
    rows: dict[str, list[tuple[Any, ...]]]
    host: int  # the host's clock (global time; the node's offset is added when written)
    gpu: int  # when the compute stream is free
    nccl: int  # when the NCCL stream is free
    p2p: int = 0  # when the send/recv stream is free (bench/synth_pp.py)
    waits: list[tuple[int, int]] = field(default_factory=list)  # its NCCL kernels' waiting heads
    corr: int = 0
    extra: int = 0  # a slow GPU's extra kernel time since the last gate


class _Job:
    def __init__(self, shape: Shape, plant: Plant) -> None:
        self.shape, self.plant = shape, plant
        self.rng = random.Random(shape.seed)
        self.lengths = {
            step: [self.rng.randint(*shape.kernel_us) * US for _ in range(self._kernels())]
            for step in shape.steps
        }
        self.ranks = [
            _Rank({"nvtx": [], "runtime": [], "kernel": [], "memcpy": []}, 0, 0, 0)
            for _ in range(shape.ranks)
        ]
        self.gates: dict[int, int] = {}
        self.extra: dict[tuple[int, int], float] = {}  # (rank, step) -> slow GPU's extra (ms)

    def report_name(self, rank: int) -> str:
        return report_name(self.shape, rank)

    def _scale(self, rank: int) -> float:
        """How much longer the rank's kernels are by the work it runs (not by its GPU)."""
        return 1.0

    def _kernels(self) -> int:
        s = self.shape
        return s.forward + s.buckets * s.per_bucket + s.optimizer

    def _jitter(self, *parts: int) -> int:
        value = 0
        for part in parts:
            value = (value * 1_000_003 + part * 2_654_435_761) % 4_294_967_291
        return value % (3 * US)

    def _launch(self, rank: int, name: int, begin: int, length: int, stream: int) -> int:
        """One kernel on a rank: launched now by its host, run from `begin` (at the earliest)."""
        r = self.ranks[rank]
        r.corr += 1
        at = r.host
        r.rows["runtime"].append((at, at + 3 * US, 1, 0, r.corr, LAUNCH, 0, None))
        start = max(begin, at + 4 * US)
        if stream == COMPUTE and any(a <= start < b for a, b in r.waits[-4:]):
            length = int(length * CONTENTION)
        end = start + length
        r.rows["kernel"].append(
            (start, end, 0, 1, None, stream, r.corr, 0, name, name, name, 1, 1, 1, 128, 1, 1,
             32, 0, 0, 0)
        )  # fmt: skip
        r.host += 5 * US
        return end

    def _compute(self, rank: int, step: int, index: int) -> None:
        r = self.ranks[rank]
        length = int(self.lengths[step][index] * self._scale(rank)) + self._jitter(
            rank, step, index
        )
        slow = int(length * self.plant.slow.get(rank, 1.0))
        r.extra += slow - length
        r.gpu = self._launch(rank, GEMM if index % 2 else ELEMENTWISE, r.gpu, slow, COMPUTE)

    def _sync(self, rank: int) -> None:
        """A copy to the host that the host waits for (the loss read back, a step's end)."""
        r = self.ranks[rank]
        r.corr += 1
        r.rows["runtime"].append((r.host, r.host + 3 * US, 1, 0, r.corr, MEMCPY, 0, None))
        start = max(r.gpu, r.host + 4 * US)
        r.gpu = start + 2 * US
        r.rows["memcpy"].append((start, r.gpu, 0, 1, COMPUTE, r.corr, 0, 4, 2))
        r.host = r.gpu + 10 * US

    def _launch_collective(self, rank: int) -> tuple[int, int]:
        """A collective launched now by the rank's host on its NCCL stream: (when its kernel
        starts: once the rank's compute and previous collective are done, its correlation)."""
        r = self.ranks[rank]
        r.corr += 1
        r.rows["runtime"].append((r.host, r.host + 3 * US, 1, 0, r.corr, NCCL_LAUNCH, 0, None))
        start = max(r.gpu, r.nccl, r.host + 4 * US)
        r.host += 5 * US
        return start, r.corr

    def _collective(
        self, step: int, starts: dict[int, tuple[int, int]], transfer: int, key: int
    ) -> int:
        """The collective's kernels on its ranks (`starts`: each rank's launch): all end once
        the last has arrived and the transfer is done; when it ends. Each waiting head is kept
        (SM contention) and each rank's NCCL stream is busy to its end."""
        last = max(start for start, _ in starts.values())
        end = last + transfer
        for rank, (start, corr) in starts.items():
            r = self.ranks[rank]
            finish = end + self._jitter(rank, step, key) // 3
            r.rows["kernel"].append(
                (start, finish, 0, 1, None, NCCL_STREAM, corr, 0, NCCL_KERNEL, NCCL_KERNEL,
                 NCCL_KERNEL, 1, 1, 1, 128, 1, 1, 32, 0, 0, 0)
            )  # fmt: skip
            r.waits.append((start, last))
            r.nccl = finish
        return end

    def step(self, step: int) -> None:
        s, ranks = self.shape, range(self.shape.ranks)
        entries = {rank: self.ranks[rank].host for rank in ranks}
        for rank in ranks:
            for i in range(s.forward):
                self._compute(rank, step, i)
            self._sync(rank)
            self.ranks[rank].host += self.plant.delay(rank, step)
        k = s.forward
        end = 0
        for _bucket in range(s.buckets):
            starts = {}
            for rank in ranks:
                for i in range(k, k + s.per_bucket):
                    self._compute(rank, step, i)
                starts[rank] = self._launch_collective(rank)
            end = self._collective(step, starts, s.transfer_us * US, 1000 + k)
            k += s.per_bucket
        self.gates[step] = end
        for rank in ranks:
            r = self.ranks[rank]
            self.extra[(rank, step)], r.extra = r.extra / MS, 0
            r.gpu = max(r.gpu, r.nccl)  # the optimizer waits for the gradients
            for i in range(k, k + s.optimizer):
                self._compute(rank, step, i)
            self._sync(rank)
            r.rows["nvtx"].append((entries[rank], r.host, 59, None, None, None, f"step {step}",
                                   0, None, None, 0, *(None,) * 9))  # fmt: skip
            r.host += 20 * US


@dataclass(frozen=True)
class Truth:
    """What was made: each step's gate-to-gate time, and each slow GPU's extra kernel time on
    the step's path (from the previous gate to its last bucket: ms, by (rank, step))."""

    step_ms: dict[int, float]
    extra_ms: dict[tuple[int, int], float]


def job(folder: Path, shape: Shape, plant: Plant) -> Truth:
    """Write the job's exports into `folder`; what they hold."""
    return run(folder, _Job(shape, plant))


def run(folder: Path, sim: _Job) -> Truth:
    """Run `sim` over its steps and write its exports into `folder` (bench/synth_pp.py runs
    its pipeline here too); what they hold."""
    shape = sim.shape
    folder.mkdir(parents=True, exist_ok=True)
    for r in sim.ranks:
        r.host = r.gpu = r.nccl = 1_000_000_000
    for step in shape.steps:
        sim.step(step)
    for rank, r in enumerate(sim.ranks):
        pid = 40_000 + rank
        tid, gpid = (pid << 24) | 1, pid << 24
        offset = (rank // shape.gpus_per_node) * 2_500_000_123  # each node's clock is its own
        rows: dict[str, list[tuple[object, ...]]] = {
            "nvtx": [(offset, None, 75, None, None, None, "NCCL", tid, None, None, 1,
                      *(None,) * 9)],
            "runtime": [(a + offset, b + offset, c, tid, *rest)
                        for a, b, c, _, *rest in r.rows["runtime"]],
            "kernel": [(a + offset, b + offset, d, c, g, st, corr, gpid, *rest)
                       for a, b, d, c, g, st, corr, _, *rest in r.rows["kernel"]],
            "memcpy": [(a + offset, b + offset, d, c, st, corr, gpid, *rest)
                       for a, b, d, c, st, corr, _, *rest in r.rows["memcpy"]],
        }  # fmt: skip
        rows["nvtx"] += [
            (a + offset, b + offset, e, ri, cat, col, text, tid, *rest)
            for a, b, e, ri, cat, col, text, _, *rest in r.rows["nvtx"]
        ]
        _write(folder / f"{sim.report_name(rank)}.sqlite", rows)
    steps = list(shape.steps)
    times = {
        step: (sim.gates[step] - sim.gates[prev]) / MS
        for prev, step in zip(steps, steps[1:], strict=False)
    }
    return Truth(times, sim.extra)


def _pairs(specs: list[str]) -> dict[int, dict[int, float]]:
    found: dict[int, dict[int, float]] = {}
    for spec in specs:
        rank, steps, ms = spec.split(":")
        found.setdefault(int(rank), {}).update({int(s): float(ms) for s in steps.split(",")})
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--host", action="append", default=[], metavar="RANK:STEP,STEP:MS")
    parser.add_argument("--slow", action="append", default=[], metavar="RANK:FACTOR")
    args = parser.parse_args()
    slow = {int(r): float(f) for r, f in (spec.split(":") for spec in args.slow)}
    truth = job(args.out, Shape(ranks=args.ranks), Plant(_pairs(args.host), slow))
    for step, ms in truth.step_ms.items():
        print(f"step {step}: {ms:.3f} ms")


if __name__ == "__main__":
    main()
