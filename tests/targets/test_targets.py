"""The target registry (nsysgen/targets/__init__.py): each registered target is found under its
own name, with its config option, templates and lints; the targets' lints have IDs of their own,
none shared with another target or with the core lints, so one severity table serves all."""

from __future__ import annotations

import yaml

from nsysgen.profile.lints import CORE_LINTS, all_lints
from nsysgen.resources import CONF_DIR, TEMPLATES_DIR
from nsysgen.targets import TARGETS, target_lints


def test_each_target_is_registered_under_its_name_with_its_option_and_templates() -> None:
    assert sorted(TARGETS) == ["eks", "slurm"]
    for name, target in TARGETS.items():
        assert target.name == name
        option = yaml.safe_load((CONF_DIR / "target" / f"{name}.yaml").read_text())
        assert option["name"] == name
        assert any((TEMPLATES_DIR / name).glob("*.j2")), name
    assert sorted(p.stem for p in (CONF_DIR / "target").glob("*.yaml")) == sorted(TARGETS)


def test_target_lints_are_every_targets_own_in_registry_order() -> None:
    ids = [lint.id for lint in target_lints()]
    assert ids == [lint.id for target in TARGETS.values() for lint in target.lints]
    assert ids == ["NSG014", "NSG019", "NSG020", "NSG025", "NSG011", "NSG026"]


def test_lint_ids_are_unique_across_targets_and_the_core() -> None:
    every = [lint.id for lint in all_lints(target_lints())]
    assert len(every) == len(set(every)) == len(CORE_LINTS) + len(target_lints())
    assert every == sorted(every)
