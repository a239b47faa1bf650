"""Synthetic exports of a pipeline-parallel job (stages of data-parallel peers), with stragglers
of known size planted: for proving that `nsysgen analyze` prices a late rank on the step's
critical path across the stages' send/recv pairs, and takes no pipeline bubble for lateness.

The job's ranks are `stages` contiguous blocks (Megatron's and torchtitan's order: the pipeline
outermost), each of `ranks / stages` data-parallel peers. Each step runs a GPipe schedule:

- forward: every microbatch through the stages in turn; a stage receives the activation from
  the previous stage and sends its own to the next (one `ncclDevKernel_SendRecv` kernel on each
  side, on a stream of its own, as NCCL names sends and receives alike): both kernels end
  together once both sides have arrived, and the receiver's compute waits for its receive;
- the host waits for its GPU (the loss read back), then the backward in reverse order, the
  gradients sent back stage by stage;
- one all-reduce of each stage's gradients among its data-parallel peers (SM contention as in
  bench/synth_ddp.py), the optimizer, a sync.

The stages' kernels differ in length (a stage's layers are not another's), so kernels are
comparable only among a stage's peers. Each node's clock is its own. Planted (bench/
synth_ddp.py's `Plant`): a host delay before the backward (the GPU idles exactly that long) and
GPUs slower by a factor.

    python bench/synth_pp.py OUT_DIR --ranks 8 --stages 2 [--host RANK:STEP,STEP:MS]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth_ddp  # noqa: E402  (bench/synth_ddp.py)
from synth_ddp import MS, US, Plant, Truth  # noqa: E402

P2P_STREAM, P2P_KERNEL = 17, 11  # ncclDevKernel_SendRecv (bench/synth_export.py's names)


@dataclass(frozen=True)
class Shape(synth_ddp.Shape):
    stages: int = 2
    microbatches: int = 4
    forward: int = 3  # kernels per microbatch and stage
    backward: int = 5
    transfer_us: int = 300  # a send/recv pair's transfer, and the all-reduce's (x 3)


class _Pipe(synth_ddp._Job):
    shape: Shape

    def report_name(self, rank: int) -> str:
        return f"pp_job{self.shape.job}_rank{rank}_node{rank // self.shape.gpus_per_node}"

    def _kernels(self) -> int:
        s = self.shape
        return s.microbatches * (s.forward + s.backward) + s.optimizer

    @property
    def peers(self) -> int:
        return self.shape.ranks // self.shape.stages

    def _scale(self, rank: int) -> float:
        # A stage's layers are its own: its kernels 20 % longer a stage down the pipeline.
        return 1 + 0.2 * (rank // self.peers)

    def _post(self, rank: int, after_compute: bool) -> tuple[int, int]:
        """A send (after the compute that made its data) or a receive, launched now on the
        rank's send/recv stream: (when it can start, its correlation id)."""
        r = self.ranks[rank]
        r.corr += 1
        r.rows["runtime"].append((r.host, r.host + 3 * US, 1, 0, r.corr, synth_ddp.NCCL_LAUNCH,
                                  0, None))  # fmt: skip
        start = max(r.p2p, r.host + 4 * US, r.gpu if after_compute else 0)
        r.host += 5 * US
        return start, r.corr

    def _pair(self, sender: int, send: tuple[int, int], receiver: int) -> None:
        """A send/recv pair: both kernels end together once both sides arrived; the receiver's
        compute waits for its receive."""
        recv = self._post(receiver, after_compute=False)
        end = max(send[0], recv[0]) + self.shape.transfer_us * US
        for rank, (start, corr) in ((sender, send), (receiver, recv)):
            r = self.ranks[rank]
            r.rows["kernel"].append(
                (start, end, 0, 1, None, P2P_STREAM, corr, 0, P2P_KERNEL, P2P_KERNEL,
                 P2P_KERNEL, 1, 1, 1, 128, 1, 1, 32, 0, 0, 0)
            )  # fmt: skip
            r.p2p = end
        self.ranks[receiver].gpu = max(self.ranks[receiver].gpu, end)

    def _phase(self, step: int, forward: bool) -> None:
        """Every microbatch through the stages, forward or back: receive from the stage
        before (in this direction), compute, send to the next."""
        s, peers = self.shape, self.peers
        order = range(s.stages) if forward else range(s.stages)[::-1]
        ahead = 1 if forward else -1
        kernels = s.forward if forward else s.backward
        pending: dict[int, tuple[int, int]] = {}  # sender rank -> its send
        for micro in range(s.microbatches):
            base = micro * kernels + (0 if forward else s.microbatches * s.forward)
            for stage in order:
                for pos in range(peers):
                    rank = stage * peers + pos
                    if 0 <= stage - ahead < s.stages:
                        sender = (stage - ahead) * peers + pos
                        self._pair(sender, pending.pop(sender), rank)
                    for i in range(base, base + kernels):
                        self._compute(rank, step, i)
                    if 0 <= stage + ahead < s.stages:
                        pending[rank] = self._post(rank, after_compute=True)

    def _all_reduce(self, step: int, members: range) -> int:
        """The stage's gradients all-reduced among its data-parallel peers; when it ends."""
        starts = {rank: self._launch_collective(rank) for rank in members}
        return self._collective(step, starts, 3 * self.shape.transfer_us * US, 7)

    def step(self, step: int) -> None:
        s, peers = self.shape, self.peers
        entries = {rank: self.ranks[rank].host for rank in range(s.ranks)}
        self._phase(step, forward=True)
        for rank in range(s.ranks):  # the host waits for the loss, then (planted) sleeps
            self._sync(rank)
            self.ranks[rank].host += self.plant.delay(rank, step)
        self._phase(step, forward=False)
        ends = []
        for stage in range(s.stages):
            members = range(stage * peers, (stage + 1) * peers)
            if peers > 1:
                ends.append(self._all_reduce(step, members))
            else:
                ends.append(max(self.ranks[rank].p2p for rank in members))
        self.gates[step] = max(ends)
        first = s.microbatches * (s.forward + s.backward)
        for rank in range(s.ranks):
            r = self.ranks[rank]
            self.extra[(rank, step)], r.extra = r.extra / MS, 0
            r.gpu = max(r.gpu, r.nccl)
            for i in range(first, first + s.optimizer):
                self._compute(rank, step, i)
            self._sync(rank)
            r.rows["nvtx"].append((entries[rank], r.host, 59, None, None, None, f"step {step}",
                                   0, None, None, 0, *(None,) * 9))  # fmt: skip
            r.host += 20 * US


def job(folder: Path, shape: Shape, plant: Plant) -> Truth:
    """Write the pipeline job's exports into `folder`; what they hold."""
    return synth_ddp.run(folder, _Pipe(shape, plant))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--stages", type=int, default=2)
    parser.add_argument("--host", action="append", default=[], metavar="RANK:STEP,STEP:MS")
    args = parser.parse_args()
    truth = job(args.out, Shape(ranks=args.ranks, stages=args.stages),
                Plant(synth_ddp._pairs(args.host)))  # fmt: skip
    for step, ms in truth.step_ms.items():
        print(f"step {step}: {ms:.3f} ms")


if __name__ == "__main__":
    main()
