"""What a cluster's links give a collective, in one place: nccl-tests' bus-bandwidth definition
(its doc/PERFORMANCE.md), a collective's fixed latency, and the link that bounds a job. The
nccl-tests run estimate (nsysgen/profile/nccl_run.py) and the analysis's fabric yardstick
(nsysgen/analyze/judge/fabric.py) both read them, so the plan and the report cannot disagree."""

from __future__ import annotations

# Per collective: the launch and a small message's round trip.
COLLECTIVE_LATENCY_S = 30e-6


def bus_factor(name: str, ranks: int) -> float:
    """Bytes on the bus per byte of the message, from an operation's or an nccl-tests binary's
    name (AllReduce, ncclDevKernel_AllReduce..., all_reduce_perf)."""
    if ranks < 2:
        return 1.0
    plain = name.lower().replace("_", "")
    if "allreduce" in plain:
        return 2 * (ranks - 1) / ranks
    if any(k in plain for k in ("allgather", "reducescatter", "alltoall")):
        return (ranks - 1) / ranks
    return 1.0  # broadcast, reduce, send/recv


def spans_nodes(ranks: int, gpus_per_node: int) -> bool:
    """A job of `ranks` one-GPU ranks crosses nodes once it holds more than a node's GPUs."""
    return ranks > gpus_per_node


def bounding_link(
    spans_nodes: bool, nvlink_GBps: float | None, efa_Gbps: float | None
) -> tuple[float, str] | None:
    """(the bus bandwidth in GB/s the links allow, the link in words): within a node NVLink per
    GPU and direction, across nodes the node's EFA (Gbps / 8); None when that figure is
    unknown."""
    if spans_nodes:
        return (efa_Gbps / 8, f"EFA {efa_Gbps:g} Gbps per node") if efa_Gbps else None
    return (nvlink_GBps, f"NVLink {nvlink_GBps:g} GB/s per GPU") if nvlink_GBps else None
