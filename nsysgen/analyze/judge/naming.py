"""How the judgement names what it found: ranks and steps in words, and the node of a rank
(from its report's name, else by GPUS_PER_NODE ranks to a node). The verdict, the limits and
the report's views all say them so."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

GPUS_PER_NODE = 8  # the group when the summary names no host: p4d/p5 and DGX nodes hold 8


_NODE_IN_NAME = re.compile(r"(?:^|[_.-])node(\d+)(?:[_.-]|$)")


def _named_node(rank: Mapping[str, Any]) -> str | None:
    for key in ("node", "host", "hostname"):
        value = rank.get(key)
        if isinstance(value, str) and value:
            return value
    found = _NODE_IN_NAME.search(str(rank.get("report") or ""))
    return f"node {int(found.group(1))}" if found else None


def node_of(rank: Mapping[str, Any], gpus: int = GPUS_PER_NODE) -> str:
    """The rank's node as the summary or its report's name says, else its block of `gpus`
    consecutive ranks."""
    named = _named_node(rank)
    if named is not None:
        return named
    first = int(rank["rank"]) // gpus * gpus
    return f"ranks {first}-{first + gpus - 1}"


def ranks_text(ranks: list[int], most: int = 6, total: int | None = None) -> str:
    """ "rank 0", "ranks 0, 2 and 3", "ranks 0, 2, 3, 4, 5, 6 and 1,017 more" (`total`: how many
    there are, when `ranks` lists only the first of them)."""
    count = len(ranks) if total is None else max(total, len(ranks))
    if not ranks:
        return "no rank"
    if count == 1:
        return f"rank {ranks[0]}"
    shown = [str(r) for r in ranks[:most]]
    if count > len(shown):
        return f"ranks {', '.join(shown)} and {count - len(shown):,} more"
    return f"ranks {', '.join(shown[:-1])} and {shown[-1]}"


def steps_text(steps: list[int], most: int = 12) -> str:
    if len(steps) <= most:
        return ", ".join(map(str, steps))
    return ", ".join(map(str, steps[:most])) + f" and {len(steps) - most} more"
