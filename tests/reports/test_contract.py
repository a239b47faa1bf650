"""The run contract (nsysgen-expect.json): one typed class, read and written by the same code,
described by schemas/expect.schema.json; every committed contract holds to the schema, and the
older format on disk (tests/data/gpu-steps24, format 2) is read through the converter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from nsysgen.config.compose import Composer
from nsysgen.drivers import pipeline
from nsysgen.reports.contract import (
    CONVERTERS,
    EXPECT_FILE,
    EXPECT_FORMAT,
    CaptureContract,
    ContractError,
    Expect,
    Fabric,
    GridGroup,
    ListGroup,
    StepsContract,
    converted,
    dumps,
    read_expect,
)
from nsysgen.targets.expect import fabric
from tests.conftest import REPO

SCHEMA = json.loads((REPO / "schemas" / "expect.schema.json").read_text(encoding="utf-8"))
COMMITTED = sorted(
    [*REPO.glob(f"generated/**/{EXPECT_FILE}"), *REPO.glob(f"tests/golden/**/{EXPECT_FILE}")]
)
OLD = sorted((REPO / "tests" / "data" / "gpu-steps24").glob("*.expect.json"))


def errors(data: Any) -> list[str]:
    validator = Draft202012Validator(SCHEMA)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(data)]


def test_the_schema_is_a_valid_json_schema() -> None:
    Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(REPO)))
def test_every_committed_contract_holds_to_the_schema(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert errors(data) == []
    # And reads back through the typed reader, written again byte for byte.
    assert dumps(read_expect(path)) == path.read_text(encoding="utf-8").rstrip("\n")


@pytest.mark.parametrize("path", OLD, ids=lambda p: p.name)
def test_an_older_contract_is_read_through_the_converter(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == 2 and errors(data) != []  # not today's format as it is on disk
    expect = read_expect(path)
    assert expect["format"] == EXPECT_FORMAT and expect["run_folders"] is False
    assert errors(expect) == []
    assert "fabric" not in expect  # optional: files of before it lack it


def typed_keys(kind: Any) -> tuple[set[str], set[str]]:
    return set(kind.__required_keys__), set(kind.__annotations__) | set(kind.__optional_keys__)


@pytest.mark.parametrize(
    ("kind", "where"),
    [
        (Expect, SCHEMA),
        (CaptureContract, SCHEMA["$defs"]["capture"]),
        (StepsContract, SCHEMA["$defs"]["steps"]),
        (Fabric, SCHEMA["$defs"]["fabric"]),
        (GridGroup, SCHEMA["$defs"]["grid"]),
        (ListGroup, SCHEMA["$defs"]["list"]),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_the_schema_and_the_typed_class_name_the_same_keys(kind: Any, where: Any) -> None:
    required, every = typed_keys(kind)
    assert set(where["required"]) == required
    assert set(where["properties"]) == every


def test_the_converters_lead_to_the_current_format() -> None:
    for start in CONVERTERS:
        data: dict[str, Any] = {"format": start}
        while data["format"] in CONVERTERS:
            data = CONVERTERS[data["format"]](data)
        assert data["format"] == EXPECT_FORMAT


def test_what_is_not_a_contract_is_refused_by_name() -> None:
    with pytest.raises(ContractError, match=r"x\.json: not an nsysgen expectations file"):
        converted([1], "x.json")
    with pytest.raises(ContractError, match=r"of format 1, which .* \(allowed: 2, 3\)"):
        converted({"format": 1}, "x.json")
    (path,) = COMMITTED[:1]
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["generic_regex"], data["capture"]["mode"]
    with pytest.raises(ContractError, match="x.json: no generic_regex"):
        converted(data, "x.json")
    data["generic_regex"] = ""
    with pytest.raises(ContractError, match="x.json: capture: no mode"):
        converted(data, "x.json")


@pytest.mark.parametrize(
    ("cluster", "expected"),
    [
        ("p5", Fabric(gpus_per_node=8, nodes=2, nvlink_GBps=450.0, efa_Gbps=3200.0)),
        ("local", Fabric(gpus_per_node=8, nodes=2, nvlink_GBps=None, efa_Gbps=None)),
    ],
)
def test_the_fabric_comes_from_the_cluster_config(cluster: str, expected: Fabric) -> None:
    config = pipeline.typed(Composer().compose([f"cluster={cluster}", "cluster.nodes=2"]).data)
    found = fabric(config)
    assert found == expected
    assert errors({**json.loads(COMMITTED[0].read_text()), "fabric": found}) == []
