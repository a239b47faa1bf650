"""What `nsysgen plan` says about CUDA graphs: what nsys records of them and what analyze sees."""

from __future__ import annotations

import json

import pytest

from tests.conftest import RunCli


@pytest.mark.parametrize(
    ("extra", "value", "says"),
    [
        ((), "graph", "capture.extra_args=['--cuda-graph-trace=node']"),
        (("capture.extra_args=['--cuda-graph-trace=node']",), "node", "reads the kernels"),
        (
            ("capture.extra_args=['--cuda-graph-trace=graph:host-only']",),
            "graph:host-only",
            "sees no GPU work of a graph",
        ),
    ],
)
def test_plan_says_what_analyze_sees_of_cuda_graphs(
    run_cli: RunCli, extra: tuple[str, ...], value: str, says: str
) -> None:
    data = json.loads(run_cli("plan", "--json", "workload=fsdp", *extra).out)
    assert data["cuda_graph_trace"] == value
    text = " ".join(run_cli("plan", "workload=fsdp", *extra).out.split())
    assert "cuda graphs " in text
    assert says in text
