"""The link facts the plan's nccl-tests estimate and the analysis's yardstick share."""

from __future__ import annotations

import pytest

from nsysgen.links import bounding_link, bus_factor, spans_nodes


@pytest.mark.parametrize(
    ("name", "factor"),
    [
        ("all_reduce_perf", 1.75),
        ("AllReduce", 1.75),
        ("ncclDevKernel_AllGather_RING_LL", 0.875),
        ("reduce_scatter_perf", 0.875),
        ("alltoall_perf", 0.875),
        ("Broadcast", 1.0),
        ("sendrecv_perf", 1.0),
    ],
)
def test_bus_factor_is_nccl_tests_definition_for_8_ranks(name: str, factor: float) -> None:
    assert bus_factor(name, 8) == factor


def test_one_rank_moves_its_bytes_once() -> None:
    assert bus_factor("AllReduce", 1) == 1.0


def test_the_link_is_nvlink_within_a_node_and_efa_across_nodes() -> None:
    assert bounding_link(False, 450.0, 3200.0) == (450.0, "NVLink 450 GB/s per GPU")
    assert bounding_link(True, 450.0, 3200.0) == (400.0, "EFA 3200 Gbps per node")
    assert bounding_link(True, 450.0, None) is None
    assert bounding_link(False, None, 3200.0) is None


def test_a_job_crosses_nodes_once_it_holds_more_than_a_node_s_gpus() -> None:
    assert (spans_nodes(8, 8), spans_nodes(9, 8), spans_nodes(1, 8)) == (False, True, False)
