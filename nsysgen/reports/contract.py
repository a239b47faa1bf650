"""The run contract: what a compiled setup promises of its job's reports (nsysgen-expect.json).

targets/expect.py writes it, the shipped verifier and `nsysgen analyze` read it, all through
the types and the reader and writer here; schemas/expect.schema.json describes the same file
for other tools, and a test holds the two together. Files of an older format are read through
a converter chain (CONVERTERS), never patched by hand: format 2 had no run folders (every
report straight in the report folder). The `fabric` block (the cluster's links, for the
analysis's bandwidth yardstick) is optional: files written before it lack it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict, cast, final

EXPECT_FILE = "nsysgen-expect.json"
EXPECT_FORMAT = 3


class StepsContract(TypedDict):
    """How a report shows its training steps: profile/workloads.py StepRanges, as JSON."""

    regex: str  # the NVTX range name of one step; group 1 its number where `numbered`
    numbered: bool
    unopened: str  # the likely cause when the window never opened, other than a short job
    unmarked: str | None  # why a report may hold no such range though the window opened


class CaptureContract(TypedDict):
    mode: str  # window | steps | nvtx
    delay: float | None
    duration: float | None
    first_step: int | None
    last_step: int | None
    nvtx_range: str | None
    steps: StepsContract | None
    optimizer_steps: int | None  # optimizer steps per training step, where the helper marks them


class CollectorsContract(TypedDict):
    gpu_metrics: bool
    efa_metrics: bool


@final  # so that `"tasks" in group` tells the two kinds apart (mypy)
class GridGroup(TypedDict):
    """Expected reports as a grid: every node of [nodes[0], nodes[1]) times `locals`, named by
    the pattern `name` (literal text, and 0/1/2 for the task, node and local id)."""

    unit: str  # rank | node | pod
    per_node: int
    nodes: list[int]
    locals: list[int]
    collecting_locals: list[int]  # the local ids whose reports hold the node's collectors
    name: list[str | int]


@final
class ListGroup(TypedDict):
    """Expected reports as a list: [task, node, local, name, collects] each."""

    unit: str
    tasks: list[list[Any]]


class Fabric(TypedDict):
    """The cluster's links (conf/cluster/*.yaml): what the analysis holds bus bandwidth
    against. None: unknown."""

    gpus_per_node: int
    nodes: int
    nvlink_GBps: float | None  # NVLink bandwidth per GPU and direction
    efa_Gbps: float | None  # EFA bandwidth of a node, all its devices


class _Optional(TypedDict, total=False):
    _generated: str  # JSON has no comments: the ownership marker, as a key
    pods: list[str]  # EKS: the pods' names (node 0's, and the others' with {node}/{worker})
    cut_off: str  # the likely cause of a missing report that only the target knows
    fabric: Fabric


class Expect(_Optional):
    format: int
    job: str
    target: str
    nsys_version: str
    nsys: str | None
    importer: str | None
    report_dir: str
    job_in_name: bool  # report names hold the Slurm job id
    run_folders: bool  # each run writes into job<ID>/ of the report folder
    reports: list[GridGroup | ListGroup]
    generic_regex: str  # any name nsys's -o pattern makes; %q{VAR} as named groups
    capture: CaptureContract
    trace: list[str]
    collectors: CollectorsContract
    tolerance_s: float


class ContractError(Exception):
    """A file that is not a run contract this code reads: the message says why."""


def _from_2(data: dict[str, Any]) -> dict[str, Any]:
    # Format 2 (before runs had folders): every run wrote straight into the report folder.
    return {**data, "format": 3, "run_folders": False}


# Format N -> the next one, applied in turn until the current format.
CONVERTERS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {2: _from_2}


def converted(data: Any, where: str) -> Expect:
    """`data` (a parsed file) as the current format's contract; ContractError if it is none."""
    if not isinstance(data, dict) or not isinstance(data.get("format"), int):
        raise ContractError(f"{where}: not an nsysgen expectations file")
    found = data["format"]
    while data["format"] in CONVERTERS:
        data = CONVERTERS[data["format"]](data)
    if data["format"] != EXPECT_FORMAT:
        readable = ", ".join(map(str, [*sorted(CONVERTERS), EXPECT_FORMAT]))
        raise ContractError(
            f"{where}: an nsysgen expectations file of format {found}, which this verifier "
            f"does not read (allowed: {readable}): compile the setup again"
        )
    _check(data, Expect, where)
    _check(data["capture"], CaptureContract, f"{where}: capture")
    return cast(Expect, data)


def _check(data: Any, kind: Any, where: str) -> None:
    """Every key `kind` requires is there; the types are the writer's, checked by the schema
    in the tests."""
    if not isinstance(data, dict):
        raise ContractError(f"{where}: not a JSON object")
    missing = sorted(set(kind.__required_keys__) - set(data))
    if missing:
        raise ContractError(f"{where}: no {', '.join(missing)} (an incomplete expectations file)")


def read_expect(path: Path) -> Expect:
    """The contract in the file `path`. OSError and ValueError (not JSON) pass to the caller,
    which words them for its user; ContractError: JSON, but no contract."""
    return converted(json.loads(path.read_text(encoding="utf-8")), str(path))


def dumps(expect: Expect) -> str:
    """The file's text, as nsysgen writes it: sorted keys, so that it is deterministic."""
    return json.dumps(expect, indent=1, sort_keys=True)
