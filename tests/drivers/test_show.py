"""`nsysgen show` (nsysgen/drivers/show.py): the composed config as YAML that reads back to the same
data, quoting what YAML would read otherwise, and with `--all` each key's type and description
as a comment above it."""

from __future__ import annotations

from typing import Any

import yaml

from nsysgen.config.compose import Composed, Composer
from nsysgen.drivers.show import show_config

DATA: dict[str, Any] = {
    "cluster": {"efa_devices": 4, "nick": "yes", "none": None, "empty": {}},
    "list": [1, "x y"],
    "n: x": 1.0,
}


def test_show_prints_the_groups_then_yaml_that_reads_back_as_the_data() -> None:
    composed = Composed(data=DATA, choices={"workload": "nccl", "cluster": "p5"}, overrides=())
    text = show_config(composed)
    assert text == (
        "# groups: cluster=p5 workload=nccl\n"
        "cluster:\n"
        "  efa_devices: 4\n"
        "  nick: 'yes'\n"
        "  none: null\n"
        "  empty: {}\n"
        "list: [1, x y]\n"
        "'n: x': 1.0\n"
    )
    assert yaml.safe_load(text) == DATA


def test_show_with_keys_documents_each_key_the_schemas_know() -> None:
    composed = Composed(data=DATA, choices={}, overrides=())
    lines = show_config(composed, with_keys=True).splitlines()
    assert lines[1] == "# object: the machines (config group cluster)"
    assert lines[2] == "cluster:"
    assert lines[3] == "  # integer: EFA network devices in each node (count; 0 = no EFA)"
    assert lines[4] == "  efa_devices: 4"
    assert lines[5] == "  nick: 'yes'"  # not a key of the schemas: no comment


def test_the_default_config_shows_every_group_and_reads_back() -> None:
    composed = Composer().compose([])
    text = show_config(composed)
    assert yaml.safe_load(text) == composed.data
    for group in ("cluster", "workload", "capture", "target", "nsight"):
        assert f"{group}=" in text.splitlines()[0]
