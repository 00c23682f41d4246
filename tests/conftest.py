"""Shared fixtures. ``../shared`` (real third-party data) is optional: tests that need it skip cleanly."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SPEC = REPO / "spec"
VALID = sorted((SPEC / "examples" / "valid").glob("*.yaml"))
INVALID = sorted((SPEC / "examples" / "invalid").glob("*.yaml"))


@pytest.fixture
def shared_data() -> Path:
    p = SHARED / "data"
    if not p.is_dir():
        pytest.skip("../shared/data is not present (real third-party data used only when available)")
    return p
