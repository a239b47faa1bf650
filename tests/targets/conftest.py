"""One Composer per test module of nsysgen/targets/ (composing is the slow part)."""

from __future__ import annotations

import pytest

from nsysgen.config.compose import Composer


@pytest.fixture(scope="module")
def composer() -> Composer:
    return Composer()
