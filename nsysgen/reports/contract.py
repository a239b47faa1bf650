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
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypedDict, cast, final

EXPECT_FILE = "nsysgen-expect.json"
EXPECT_FORMAT = 3


class StepsContract(TypedDict):
    """How a report shows its training steps: profile/plan_types/facts.py StepRanges, as JSON."""

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


def grid_tasks(group: GridGroup) -> Iterator[tuple[int, int, int]]:
    """(task, node, local id) of every report a grid group expects, in node order: one at a
    time, so that a 100,000-node grid is never held whole."""
    per_node, (start, stop) = group["per_node"], group["nodes"]
    for node in range(start, stop):
        for local in group["locals"]:
            yield node * per_node + local, node, local


def expected_ranks(expect: Expect) -> Iterator[int]:
    """The rank of every report the contract expects (groups counted by rank only)."""
    for group in expect["reports"]:
        if group["unit"] != "rank":
            continue
        if "tasks" in group:
            yield from (task[0] for task in group["tasks"])
        else:
            yield from (task for task, _, _ in grid_tasks(group))


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
    _bounded(cast(Expect, data), where)
    return cast(Expect, data)


# What a contract may ask the verifier to walk: nsysgen compiles for up to 100,000 nodes.
MAX_NODES = 100_000
MAX_PER_NODE = 1_024


def _check(data: Any, kind: Any, where: str) -> None:
    """`data` is a `kind` (a TypedDict of this module, nested): every required key there, every
    value of its type. A damaged or edited file is refused here, by its first wrong field,
    never met later as a crash."""
    if not isinstance(data, dict):
        raise ContractError(f"{where}: not a JSON object")
    missing = sorted(set(kind.__required_keys__) - set(data))
    if missing:
        raise ContractError(f"{where}: no {', '.join(missing)} (an incomplete expectations file)")
    hints = typing.get_type_hints(kind)
    for key, value in data.items():
        if key in hints:
            _value(value, hints[key], f"{where}: {key}")


# The JSON values each plain type takes (an int is a number; true is not an integer).
_PLAIN: dict[Any, tuple[type, ...]] = {
    type(None): (type(None),),
    bool: (bool,),
    int: (int,),
    float: (int, float),
    str: (str,),
}


def _value(value: Any, hint: Any, where: str) -> None:
    """`value` (parsed JSON) of the type `hint`: int, float, str, bool, None, list[X], a union,
    Any, or a TypedDict."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        _one_of(value, args, where)
    elif origin is list:
        if not isinstance(value, list):
            raise ContractError(f"{where}: {_shown(value)} is not a list")
        for index, item in enumerate(value):
            _value(item, args[0] if args else Any, f"{where}[{index}]")
    elif isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__required_keys__"):
        _check(value, hint, where)
    elif hint is not Any:
        allowed = _PLAIN.get(hint)
        if allowed is None:
            raise ContractError(f"{where}: of a type this verifier does not know ({hint})")
        if not isinstance(value, allowed) or (hint is not bool and isinstance(value, bool)):
            raise ContractError(f"{where}: {_shown(value)} is not {_name(hint)}")


def _one_of(value: Any, options: tuple[Any, ...], where: str) -> None:
    for option in options:
        try:
            _value(value, option, where)
            return
        except ContractError:
            continue
    names = " or ".join(_name(option) for option in options)
    raise ContractError(f"{where}: {_shown(value)} is not {names}")


def _name(hint: Any) -> str:
    return {type(None): "null", bool: "true/false", int: "an integer", float: "a number",
            str: "text"}.get(hint, getattr(hint, "__name__", str(hint)))  # fmt: skip


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


_TASK = (int, int, int, str, bool)  # [task, node, local id, report name, holds collectors]


def _task(task: list[Any], where: str) -> None:
    kinds = [type(value) for value in task]
    if len(task) != len(_TASK) or any(k is not want for k, want in zip(kinds, _TASK, strict=False)):
        raise ContractError(
            f"{where}: {_shown(task)} is not [task, node, local id, name, collects]"
        )


def _bounded(expect: Expect, where: str) -> None:
    """What the contract asks the verifier to walk stays within what nsysgen compiles."""
    for index, group in enumerate(expect["reports"]):
        at = f"{where}: reports[{index}]"
        if "tasks" in group:
            if len(group["tasks"]) > MAX_NODES * MAX_PER_NODE:
                raise ContractError(f"{at}: more tasks than {MAX_NODES:,} nodes hold")
            for row, task in enumerate(group["tasks"]):
                _task(task, f"{at}: tasks[{row}]")
            continue
        nodes, per_node = group["nodes"], group["per_node"]
        if len(nodes) != 2 or not 0 <= nodes[0] <= nodes[1] or nodes[1] - nodes[0] > MAX_NODES:
            raise ContractError(
                f"{at}: nodes {_shown(nodes)} is not [first, end) of at most {MAX_NODES:,} nodes"
            )
        if not 0 <= per_node <= MAX_PER_NODE or len(group["locals"]) > MAX_PER_NODE:
            raise ContractError(f"{at}: more than {MAX_PER_NODE:,} reports a node")


def read_expect(path: Path) -> Expect:
    """The contract in the file `path`. OSError and ValueError (not JSON) pass to the caller,
    which words them for its user; ContractError: JSON, but no contract."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        raise ContractError(f"{path}: JSON nested too deep to be an expectations file") from None
    return converted(data, str(path))


def dumps(expect: Expect) -> str:
    """The file's text, as nsysgen writes it: sorted keys, so that it is deterministic."""
    return json.dumps(expect, indent=1, sort_keys=True)
