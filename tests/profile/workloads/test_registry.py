"""One module per workload plug-in, each in the registry, each with its conf/workload file:
adding a workload is one new module and one registry line (and its config and schema)."""

from __future__ import annotations

import importlib

from nsysgen.profile.workloads.registry import WORKLOADS
from tests.conftest import REPO

PACKAGE = REPO / "nsysgen" / "profile" / "workloads"
NOT_PLUGINS = {"__init__", "base", "registry", "steps"}


def test_every_workload_module_is_registered_under_its_name() -> None:
    modules = {p.stem for p in PACKAGE.glob("*.py")} - NOT_PLUGINS
    assert modules == set(WORKLOADS)
    for name in modules:
        module = importlib.import_module(f"nsysgen.profile.workloads.{name}")
        assert WORKLOADS[name] is module.WORKLOAD


def test_every_workload_config_has_a_plugin() -> None:
    configs = {p.stem for p in (REPO / "conf" / "workload").glob("*.yaml")}
    assert configs == set(WORKLOADS)


def test_a_default_step_method_is_one_the_workload_supports() -> None:
    for name, workload in WORKLOADS.items():
        if workload.step_capture:
            assert workload.step_methods, name
        if workload.native is not None:
            assert "native" in workload.step_methods, name
