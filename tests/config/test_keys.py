"""The key catalog (nsysgen/config/keys.py) read from the schemas: every key that a composed
config of any target or workload holds is in it (under maps of names, the map), keys of one
option only come from the schemas' if/then branches, each key's type reads as a person writes
it, and children, list keys and suggestions are what help and completion print."""

from __future__ import annotations

import pytest

from nsysgen.config.compose import Composer
from nsysgen.config.hygiene import walk
from nsysgen.config.keys import _kind, catalog, children, suggest, takes_list

# Keys whose children are names the user picks (variables, plugins, lint IDs).
MAPS = ("cluster.env.", "cluster.env_defaults.", "workload.env_defaults.", "nsight.plugins.",
        "lints.severity.")  # fmt: skip


@pytest.mark.parametrize(
    "overrides",
    [[], ["target=eks", "workload=fsdp"], ["workload=python"], ["workload=megatron"]],
    ids=["default", "eks-fsdp", "python", "megatron"],
)
def test_every_composed_key_is_in_the_catalog(overrides: list[str]) -> None:
    paths = {key.path for key in catalog()}
    data = Composer().compose(overrides).data
    composed = {path for path, _, _ in walk(data) if "[" not in path}
    assert sorted(p for p in composed - paths if not p.startswith(MAPS)) == []
    assert {p.rsplit(".", 1)[0] for p in paths if "." in p} <= paths  # every parent listed


def test_the_catalog_names_each_key_once_with_its_type_and_description() -> None:
    keys = {key.path: key for key in catalog()}
    assert len(keys) == len(catalog())
    assert keys["capture.mode"].kind == 'one of "window", "steps", "nvtx"'
    assert keys["cluster.efa_devices"].kind == "integer"
    assert keys["capture.ranks"].takes_list and not keys["capture.mode"].takes_list
    assert all(key.description for key in catalog())
    # Only the eks target has a namespace: its key comes from an if/then branch.
    assert (
        keys["target.namespace"].description == "Kubernetes namespace of the job and the injector"
    )


def test_kind_reads_type_lists_enums_and_constants() -> None:
    assert _kind({"type": ["string", "null"]}) == "string or null"
    assert _kind({"enum": ["a", 1]}) == 'one of "a", 1'
    assert _kind({"const": None}) == "null"
    assert _kind({"oneOf": []}) == "see schema"


def test_children_list_takes_and_suggest() -> None:
    assert children("") == [
        "analysis", "capture", "cluster", "job", "lints", "nsight", "output_dir", "target",
        "workload",
    ]  # fmt: skip
    assert {"delay", "duration", "ranks", "trace"} <= set(children("capture"))
    assert children("capture.delay") == []
    assert (takes_list("capture.trace"), takes_list("capture.delay"), takes_list("no.such")) == (
        True,
        False,
        False,
    )
    assert suggest("nccll", ["nccl", "fsdp", "nemo"]) == " (did you mean nccl?)"
    assert suggest("zzz", ["nccl"]) == ""
