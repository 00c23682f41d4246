"""Paths shared by the tests (a plain module: several folders have their own conftest.py)."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SPEC = REPO / "spec"
VALID = sorted((SPEC / "examples" / "valid").glob("*.yaml"))
INVALID = sorted((SPEC / "examples" / "invalid").glob("*.yaml"))
