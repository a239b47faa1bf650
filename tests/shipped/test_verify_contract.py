"""The shipped verifier refuses a damaged run contract (nsysgen-expect.json) before it uses it:
every field of every committed contract given a value of another type is refused by name
(ContractError; exit 2 from nsysgen-verify.py, never a traceback or exit 1, which means
"incomplete"); what a contract asks it to walk is bounded (nodes, nesting); a link in the run's
temp folders is never followed."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nsysgen.reports.contract import ContractError, converted
from nsysgen.shipped.verify.report import _leftovers, _state_dirs
from tests.conftest import REPO

GENERATED = REPO / "generated"
CONTRACTS = sorted(GENERATED.glob("*/nsysgen-expect.json"))
VERIFIER = GENERATED / "nsysgen-verify.py"
# Values of every JSON type: each field is given those not of its own type.
WRONG: list[Any] = ["x", 7, 2.5, True, None, [], {}, [1, "a"]]


def leaves(data: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from leaves(value, (*path, key))
    elif isinstance(data, list) and data:
        for index, value in enumerate(data):
            yield from leaves(value, (*path, index))
    yield path, data


def replaced(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(data)
    if not path:
        return value
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


def same_kind(a: Any, b: Any) -> bool:
    """Values a field of `a`'s type may hold: an int for a number, any object for an object."""
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    if isinstance(a, numbers) and isinstance(b, numbers):
        return True  # a field of numbers may hold either; an integer field: the schema's minimum
    return type(a) is type(b)


def mutations() -> Iterator[tuple[str, dict[str, Any]]]:
    for contract in CONTRACTS:
        data = json.loads(contract.read_text())
        for path, value in leaves(data):
            if not path or path[0] == "_generated":
                continue
            for wrong in WRONG:
                if value is None or same_kind(value, wrong) or wrong == value:
                    continue  # optional fields (null) take several types
                yield (
                    f"{contract.parent.name}:{'.'.join(map(str, path))}={wrong!r}",
                    replaced(data, path, wrong),
                )


CASES = list(mutations())


def refused(data: dict[str, Any]) -> bool:
    try:
        converted(data, "nsysgen-expect.json")
    except ContractError:
        return True
    return False


REFUSED = [(name, data) for name, data in CASES if refused(data)]


def test_every_wrong_type_in_every_committed_contract_is_refused() -> None:
    assert len(CASES) > 1_000
    passed = [name for name, data in CASES if not refused(data)]
    # Only a null where the field may be null (`X | None`), and text for a number or a number
    # for text in a grid's name pattern (`list[str | int]`), pass.
    allowed = [p for p in passed if p.endswith("=None") or ".name." in p]
    assert passed == allowed, [p for p in passed if p not in allowed][:10]


def test_the_committed_contracts_are_read_as_they_are() -> None:
    for contract in CONTRACTS:
        converted(json.loads(contract.read_text()), str(contract))


def setup(tmp_path: Path, data: object) -> Path:
    folder = tmp_path / "setup"
    folder.mkdir()
    (folder / "nsysgen-expect.json").write_text(json.dumps(data))
    return folder


@pytest.mark.parametrize(
    ("name", "data"),
    [REFUSED[i] for i in range(0, len(REFUSED), max(1, len(REFUSED) // 12))],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_the_shipped_verifier_exits_2_on_a_damaged_contract(
    tmp_path: Path, name: str, data: dict[str, Any]
) -> None:
    done = subprocess.run(
        [sys.executable, str(VERIFIER), str(setup(tmp_path, data)), "--job-id", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, (name, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "nsysgen-expect.json" in done.stderr


def test_a_contract_of_a_trillion_nodes_is_refused() -> None:
    data = json.loads((GENERATED / "nccl-allreduce-p4de" / "nsysgen-expect.json").read_text())
    grids = [g for g in data["reports"] if "nodes" in g]
    if not grids:  # a list contract: make one group a grid of the size asked
        data["reports"] = [
            {"unit": "rank", "per_node": 8, "nodes": [0, 10**12], "locals": [0],
             "collecting_locals": [0], "name": ["r", 0]}
        ]  # fmt: skip
    else:
        grids[0]["nodes"] = [0, 10**12]
    with pytest.raises(ContractError, match="at most 100,000 nodes"):
        converted(data, "nsysgen-expect.json")


def test_json_nested_too_deep_is_refused(tmp_path: Path) -> None:
    folder = setup(tmp_path, {})
    (folder / "nsysgen-expect.json").write_text("[" * 100_000 + "]" * 100_000)
    done = subprocess.run(
        [sys.executable, str(VERIFIER), str(folder)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr


def test_a_link_in_the_runs_temp_folders_is_never_followed(tmp_path: Path) -> None:
    run = tmp_path / "job1"
    (run / ".nsysgen").mkdir(parents=True)
    planted = tmp_path / "elsewhere"
    planted.mkdir()
    (planted / "x.qdstrm").write_text("")
    (run / ".nsysgen" / "task0").symlink_to(planted)
    assert _state_dirs(run, {"task": 0}) == []
    real = run / ".nsysgen" / "task1"
    real.mkdir()
    (real / "link.qdstrm").symlink_to(planted / "x.qdstrm")
    (real / "deep").symlink_to(planted)
    (real / "mine.qdstrm").write_text("")
    assert _leftovers(real) == [real / "mine.qdstrm"]


def test_step_numbers_of_any_size_are_text_not_a_range_to_build() -> None:
    from nsysgen.shipped.verify.model import steps_text

    assert steps_text([10, 11, 12]) == "10..12"
    assert steps_text([1, 10**12]) == f"1,{10**12}"
    assert steps_text([5, 10**30]) == f"5,{10**30}"
    assert steps_text(list(range(0, 100, 2))).endswith(", ... (50 in all)")
