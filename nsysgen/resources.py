"""Where the packaged config tree, schemas and templates live.

In a wheel, conf/ and schemas/ are copied into nsysgen/_data/; in a source checkout (editable
install, tests) they are the top-level folders of the repository.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

PACKAGE_DIR = Path(__file__).resolve().parent
TEMPLATES_DIR = PACKAGE_DIR / "templates"


def _data_dir(name: str) -> Path:
    bundled = PACKAGE_DIR / "_data" / name
    if bundled.is_dir():
        return bundled
    return PACKAGE_DIR.parent / name


CONF_DIR = _data_dir("conf")
SCHEMAS_DIR = _data_dir("schemas")


@cache
def schema(name: str) -> dict[str, Any]:
    """One packaged JSON Schema file (schemas/NAME), parsed once."""
    data = json.loads((SCHEMAS_DIR / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict), name
    return data
