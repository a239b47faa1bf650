"""One module per workload plug-in, each in the registry, each with its conf/workload file:
adding a workload is one new module and one registry line (and its config and schema)."""

from __future__ import annotations

import ast
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


# Where a kind's name may still be compared, with why: nowhere (the EKS target reads the
# workload's pytorch_job from the config's setup).
NAMED_BY: dict[str, set[str]] = {}


def test_no_module_outside_the_plug_ins_compares_a_kind_name() -> None:
    """Workloads say what they can (runs_nccl_tests, auto_window, launches, checks): a module
    that compared `workload.kind` with a name would be a second place for the workload."""
    kinds = set(WORKLOADS)
    compared: dict[str, set[str]] = {}
    for path in sorted((REPO / "nsysgen").rglob("*.py")):
        name = str(path.relative_to(REPO))
        if name.startswith("nsysgen/profile/workloads/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                found = {str(s.value) for s in sides if isinstance(s, ast.Constant)} & kinds
                if found and "kind" in ast.unparse(node):
                    compared.setdefault(name, set()).update(found)
    assert compared == NAMED_BY
