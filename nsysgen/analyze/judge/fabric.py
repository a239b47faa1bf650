"""NCCL bus bandwidth per message size against what the cluster's fabric should give.

The fabric comes from `--cluster NAME|FILE.yaml` (conf/cluster/NAME.yaml: network.nvlink_GBps,
NVLink per GPU and direction; network.efa_Gbps, EFA per node; gpus_per_node, nodes), else from
the `fabric` block of the run's nsysgen-expect.json beside the reports (the compiled setup's
cluster). The yardstick, as nsysgen's nccl-tests estimate uses it (nsysgen/profile/nccl_run.py):
a job within one node moves at NVLink's rate; one spanning nodes at the node's EFA rate
(efa_Gbps / 8 GB/s), which its bus bandwidth cannot exceed.

Flagged sizes (summary.json's nccl_by_size "flag", a sentence; None: not flagged), judged on the
size's transfer figures (each call's kernel time less its wait for the last peer,
nsysgen/analyze/judge/bandwidth.py), never on a late rank's delay:
- below the fabric: bus bandwidth under BELOW (25 %) of the expected, for a size large enough to
  be bandwidth-bound: moving it at the expected rate takes at least BOUND_LATENCIES (4) times a
  collective's latency (30 us, nsysgen/links.py); smaller sizes are latency-bound, and judged
  only by the next rule;
- slower than a larger size: a size whose median time exceeds a larger size's of the same
  operation by more than 10 % and 2 us (e.g. 64 KiB in 33.8 us, 1 MiB in 12.3 us): a protocol
  or algorithm choice, or contention, worth a look whatever the fabric.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

import yaml

from nsysgen.analyze.errors import AnalyzeError
from nsysgen.analyze.read.expected import beside
from nsysgen.links import COLLECTIVE_LATENCY_S, bounding_link, spans_nodes
from nsysgen.reports.contract import ContractError, read_expect
from nsysgen.resources import CONF_DIR

BELOW = 0.25
BOUND_LATENCIES = 4
SLOWER_FRACTION, SLOWER_MIN_US = 0.10, 2.0
NO_FABRIC = "no fabric figures: pass --cluster (a conf/cluster name or a cluster YAML file)"


class Fabric(TypedDict):
    source: str  # where the figures came from: "--cluster p5", "nsysgen-expect.json"
    gpus_per_node: int
    nodes: int
    nvlink_GBps: float | None  # per GPU and direction
    efa_Gbps: float | None  # per node, all its devices


def cluster_names() -> list[str]:
    return sorted(p.stem for p in (CONF_DIR / "cluster").glob("*.yaml"))


def from_cluster(value: str) -> Fabric:
    """`--cluster NAME` (conf/cluster/NAME.yaml), `--cluster FILE.yaml`, or `--cluster
    nsysgen-expect.json` (a compiled setup's contract, whose fabric block is its cluster's: what
    the generated analyze.sbatch can pass, its reports being elsewhere)."""
    path = Path(value)
    if value.endswith(".json"):
        found = _contract_fabric(path, f"--cluster {value}")
        if found is None:
            raise AnalyzeError(
                f"--cluster {value}: no fabric block in it (a setup compiled before nsysgen "
                "wrote one: compile it again, or pass a cluster name or YAML file)"
            )
        return found
    if not value.endswith((".yaml", ".yml")):
        path = CONF_DIR / "cluster" / f"{value}.yaml"
        if not path.is_file():
            raise AnalyzeError(
                f"--cluster {value}: no such cluster (allowed: {', '.join(cluster_names())}, "
                "or a cluster YAML file)"
            )
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AnalyzeError(f"--cluster {value}: cannot read it ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise AnalyzeError(f"--cluster {value}: not YAML ({exc})") from None
    network = data.get("network") if isinstance(data, dict) else None
    if not isinstance(network, dict):
        raise AnalyzeError(
            f"--cluster {value}: no network block (network.nvlink_GBps, network.efa_Gbps)"
        )
    return {
        "source": f"--cluster {value}",
        "gpus_per_node": _count(data.get("gpus_per_node"), f"--cluster {value}: gpus_per_node"),
        "nodes": _count(data.get("nodes", 1), f"--cluster {value}: nodes"),
        "nvlink_GBps": _rate(network.get("nvlink_GBps"), f"--cluster {value}: network.nvlink_GBps"),
        "efa_Gbps": _rate(network.get("efa_Gbps"), f"--cluster {value}: network.efa_Gbps"),
    }


def _count(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise AnalyzeError(f"{where}: {value!r} is not a whole number of at least 1")
    return value


def _rate(value: object, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise AnalyzeError(f"{where}: {value!r} is not a positive number (or null: unknown)")
    return float(value)


def _contract_fabric(path: Path, source: str) -> Fabric | None:
    try:
        block = read_expect(path).get("fabric")
    except (OSError, ValueError, ContractError):
        if source.startswith("--cluster"):
            raise AnalyzeError(f"{source}: not a readable nsysgen-expect.json") from None
        return None
    if not block:
        return None
    return {
        "source": source,
        "gpus_per_node": int(block["gpus_per_node"]),
        "nodes": int(block["nodes"]),
        "nvlink_GBps": block.get("nvlink_GBps"),
        "efa_Gbps": block.get("efa_Gbps"),
    }


def from_expect(reports: Path) -> Fabric | None:
    """The fabric block of the nsysgen-expect.json beside the reports (the run's folder or
    the report folder above it); None where there is none or it cannot be read."""
    contract = beside(reports)
    return None if contract is None else _contract_fabric(contract, str(contract))


def expected(fabric: Fabric, world: int) -> tuple[float, str] | None:
    """(bus bandwidth in GB/s the fabric should give a job of `world` ranks, the link), or None
    when the link's figure is unknown or one rank has no bus bandwidth."""
    if world < 2:
        return None
    crosses = spans_nodes(world, fabric["gpus_per_node"])
    return bounding_link(crosses, fabric["nvlink_GBps"], fabric["efa_Gbps"])


class Judged(TypedDict):
    expected_busbw_GBps: float | None
    fraction_of_expected: float | None
    flag: str | None


def judge(rows: list[dict[str, Any]], fabric: Fabric | None, world: int) -> list[Judged]:
    """Each nccl_by_size row's yardstick and flag, in the rows' order (rows: op, size_bytes,
    size, median_us, busbw_GBps: the transfer figures, bandwidth.nccl_by_size passes them)."""
    link = expected(fabric, world) if fabric is not None else None
    out: list[Judged] = []
    for row in rows:
        reasons = []
        bus, fraction = row.get("busbw_GBps"), None
        if link is not None and bus is not None:
            fraction = round(bus / link[0], 4)
            bound = row["size_bytes"] >= link[0] * 1e9 * BOUND_LATENCIES * COLLECTIVE_LATENCY_S
            if bound and fraction < BELOW:
                reasons.append(
                    f"bus bandwidth {bus:.1f} GB/s is {100 * fraction:.0f} % of what "
                    f"{link[1]} should give ({link[0]:g} GB/s)"
                )
        faster = [
            other
            for other in rows
            if other["op"] == row["op"]
            and other["size_bytes"] > row["size_bytes"]
            and row["median_us"] > other["median_us"] * (1 + SLOWER_FRACTION)
            and row["median_us"] - other["median_us"] > SLOWER_MIN_US
        ]
        if faster:
            best = min(faster, key=lambda o: o["median_us"])
            reasons.append(
                f"{row['size']} takes {row['median_us']:.1f} us, longer than the larger "
                f"{best['size']} ({best['median_us']:.1f} us)"
            )
        out.append(
            {
                "expected_busbw_GBps": None if link is None else round(link[0], 3),
                "fraction_of_expected": fraction,
                "flag": "; ".join(reasons) or None,
            }
        )
    return out


def describe(fabric: Fabric, world: int) -> str:
    link = expected(fabric, world)
    where = f"{fabric['source']}: {fabric['gpus_per_node']} GPUs per node"
    if link is None:
        return f"{where}; no link figure for a job of {world} rank(s): sizes not held against it"
    return f"{where}; {world} rank(s) held against {link[1]} ({link[0]:g} GB/s bus bandwidth)"
