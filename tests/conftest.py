"""Shared fixtures. ``../shared`` (real third-party data) is optional: tests that need it skip cleanly."""

from __future__ import annotations

from pathlib import Path

import pytest

from spec_paths import SHARED


@pytest.fixture
def shared_data() -> Path:
    p = SHARED / "data"
    if not p.is_dir():
        pytest.skip("../shared/data is not present (real third-party data used only when available)")
    return p
