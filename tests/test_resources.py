"""Where the config tree, schemas and templates are found (nsysgen/resources.py): the copies
bundled in a wheel (nsysgen/_data/) when present, else the checkout's top-level folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsysgen import resources
from tests.conftest import REPO


def test_a_checkout_reads_the_top_level_conf_and_schemas() -> None:
    assert resources.CONF_DIR == REPO / "conf"
    assert resources.SCHEMAS_DIR == REPO / "schemas"
    assert (resources.CONF_DIR / "config.yaml").is_file()
    assert resources.TEMPLATES_DIR.is_dir()


def test_a_wheel_reads_its_bundled_copy_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site-packages" / "nsysgen"
    (package / "_data" / "conf").mkdir(parents=True)
    monkeypatch.setattr(resources, "PACKAGE_DIR", package)
    assert resources._data_dir("conf") == package / "_data" / "conf"
    # Not bundled: the folder beside the package, as in a source checkout.
    assert resources._data_dir("schemas") == tmp_path / "site-packages" / "schemas"


def test_a_schema_is_read_once_from_the_schemas_folder() -> None:
    found = resources.schema("config.schema.json")
    assert found["$id"] and found is resources.schema("config.schema.json")
