"""How long an nccl-tests run lasts, estimated before it runs, so that a window can be checked
against it (a window that opens after the test has ended records nothing of it).

The run is: start-up (MPI/PMIx, CUDA and NCCL initialisation), then, for every message size
from -b to -e (times -f each), nccl-tests' warm-up iterations (5, its default), the timed
iterations (-n) and the checks (-c), each one collective of that size. A collective costs a
fixed latency plus its bytes on the bus over the bus bandwidth, which nccl-tests' own
definition ties to the links: within a node NVLink (per GPU and direction), across nodes the
node's EFA bandwidth. Both get an efficiency (what nccl-tests reaches on these links, roughly);
the run at half that bandwidth bounds how wrong the estimate can plausibly be.
"""

from __future__ import annotations

from dataclasses import dataclass

from nsysgen.links import COLLECTIVE_LATENCY_S, bounding_link, bus_factor, spans_nodes
from nsysgen.model import Config, settings_as
from nsysgen.profile.workloads.nccl import NcclSettings, size_bytes
from nsysgen.profile.workloads.registry import workload_kind

WARMUP_ITERATIONS = 5  # nccl-tests' default -w
EFFICIENCY = 0.8  # bus bandwidth reached, of the link's
STARTUP_S = 5.0  # MPI/PMIx wire-up, CUDA context, NCCL communicator, for a small job
STARTUP_PER_NODE_S = 0.01  # the wire-up grows with the job


@dataclass(frozen=True)
class NcclRun:
    sizes: int
    iterations: int  # per size: warm-up, timed and checks
    bus_GBps: float
    link: str  # which link bounds it, in words
    startup_s: float
    collectives_s: float  # every size's iterations at bus_GBps

    @property
    def seconds(self) -> float:
        return self.startup_s + self.collectives_s

    @property
    def slow_seconds(self) -> float:
        """At half the bus bandwidth: the end a window must not open after."""
        return self.startup_s + 2 * self.collectives_s

    def text(self) -> str:
        return (
            f"~{self.seconds:.0f} s ({self.startup_s:.0f} s start-up, {self.sizes} sizes x "
            f"{self.iterations} iterations at ~{self.bus_GBps:.0f} GB/s bus bandwidth, "
            f"{self.link}; {self.slow_seconds:.0f} s at half of it)"
        )


def _bus_bandwidth(config: Config) -> tuple[float, str] | None:
    cluster = config.cluster
    crosses = spans_nodes(cluster.world_size, cluster.gpus_per_node)
    link = bounding_link(crosses, cluster.nvlink_GBps, cluster.efa_Gbps)
    return None if link is None else (link[0] * EFFICIENCY, link[1])


def estimate(config: Config) -> NcclRun | None:
    """The run's length, for an nccl-tests workload on a cluster with link figures."""
    if not workload_kind(config).runs_nccl_tests:
        return None
    bandwidth = _bus_bandwidth(config)
    if bandwidth is None:
        return None
    bus_GBps, link = bandwidth
    s = settings_as(config.workload.settings, NcclSettings)
    low, high = size_bytes(s.min_bytes), size_bytes(s.max_bytes)
    sizes, size = [], max(low, 1)
    while size <= high:
        sizes.append(size)
        size *= s.step_factor
    iterations = WARMUP_ITERATIONS + s.iterations + s.check
    factor = bus_factor(s.binary, config.cluster.world_size)
    per_round = sum(COLLECTIVE_LATENCY_S + n * factor / (bus_GBps * 1e9) for n in sizes)
    startup = STARTUP_S + STARTUP_PER_NODE_S * config.cluster.nodes
    return NcclRun(len(sizes), iterations, bus_GBps, link, startup, per_round * iterations)
