"""How long nccl-tests run (nccl_run.py): nccl-tests' size syntax, every size from -b to -e
times -f, warm-up + timed + check iterations, each at the bus bandwidth of the link that bounds
the job (EFA across nodes, NVLink within one); no estimate without link figures."""

from __future__ import annotations

import pytest

from nsysgen.links import COLLECTIVE_LATENCY_S
from nsysgen.profile.nccl_run import NcclRun, estimate
from nsysgen.profile.workloads.nccl import size_bytes
from tests.profile.configs import config


@pytest.mark.parametrize(
    ("text", "size"),
    [("8", 8), ("0", 0), ("1K", 1024), ("3M", 3 << 20), ("2G", 2 << 30), ("1T", 1 << 40)],
)
def test_sizes_count_in_powers_of_1024(text: str, size: int) -> None:
    assert size_bytes(text) == size


def collectives(sizes: list[int], factor: float, bus_gbps: float, iterations: int) -> float:
    return iterations * sum(COLLECTIVE_LATENCY_S + n * factor / (bus_gbps * 1e9) for n in sizes)


def test_the_default_all_reduce_on_two_p5_nodes_is_bound_by_efa() -> None:
    run = estimate(config())
    assert run is not None
    sizes = [1 << p for p in range(3, 32)]  # 8 B .. 2 GiB, x2 each
    # 3200 Gbps / 8 x 0.8 = 320 GB/s; all-reduce puts 2 x 15/16 of a message on the bus.
    assert (run.sizes, run.iterations, run.bus_GBps) == (29, 5 + 100 + 1, 320.0)
    assert (run.link, run.startup_s) == ("EFA 3200 Gbps per node", 5.0 + 0.01 * 2)
    assert run.collectives_s == pytest.approx(collectives(sizes, 2 * 15 / 16, 320.0, 106))
    assert run.slow_seconds == pytest.approx(run.startup_s + 2 * run.collectives_s)


def test_one_node_is_bound_by_nvlink_and_a_zero_size_starts_at_one_byte() -> None:
    run = estimate(
        config("cluster.nodes=1", "workload.nccl.min_bytes='0'", "workload.nccl.max_bytes=1K")
    )
    assert run is not None
    assert (run.sizes, run.bus_GBps, run.link) == (11, 360.0, "NVLink 450 GB/s per GPU")
    assert run.collectives_s == pytest.approx(
        collectives([1 << p for p in range(11)], 2 * 7 / 8, 360.0, 106)
    )


def test_no_estimate_without_nccl_tests_or_link_figures() -> None:
    assert estimate(config("workload=fsdp")) is None
    assert estimate(config("cluster=local")) is None  # nvlink_GBps and efa_Gbps are null


def test_the_run_in_words() -> None:
    run = NcclRun(3, 10, 100.0, "NVLink 450 GB/s per GPU", 5.0, 2.0)
    assert (run.seconds, run.slow_seconds) == (7.0, 9.0)
    assert run.text() == (
        "~7 s (5 s start-up, 3 sizes x 10 iterations at ~100 GB/s bus bandwidth, "
        "NVLink 450 GB/s per GPU; 9 s at half of it)"
    )
