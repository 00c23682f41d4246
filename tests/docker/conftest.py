"""Real-engine fixtures: a Docker client, the busybox test image, and a manifest factory.

Tests here skip when no engine answers, and FAIL instead when EVALMANIFEST_REQUIRE_DOCKER=1 (CI).
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

REQUIRE = os.environ.get("EVALMANIFEST_REQUIRE_DOCKER") == "1"


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.docker)


@pytest.fixture(scope="session")
def docker_client():
    try:
        import docker
    except ImportError as e:  # pragma: no cover
        if REQUIRE:
            pytest.fail(f"EVALMANIFEST_REQUIRE_DOCKER=1 but the docker SDK is missing: {e}")
        pytest.skip("docker SDK not installed")
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as e:
        if REQUIRE:
            pytest.fail(f"EVALMANIFEST_REQUIRE_DOCKER=1 but no Docker engine answers: {e}")
        pytest.skip(f"no Docker engine: {e}")
    yield client
    client.close()


@pytest.fixture(scope="session")
def test_image(docker_client) -> str:
    from evalmanifest.testing.images import ensure_test_image

    return ensure_test_image(docker_client)


@pytest.fixture
def uid() -> str:
    """A unique token to keep task ids (and container labels) of concurrent tests apart."""
    return uuid.uuid4().hex[:8]


@pytest.fixture
def make_manifest(test_image):
    """Build an EvalManifest (and optionally write it) from a few knobs."""
    from evalmanifest.models.manifest import EvalManifest

    def build(
        tasks: list[dict[str, Any]],
        method: str | None = "banded",
        memory: dict[str, Any] | None = None,
        cpu: dict[str, Any] | None = None,
        pids: dict[str, Any] | None = None,
        total_sec: float = 60,
        grace_sec: float = 2,
        attempts: int = 1,
        retries: int = 0,
        internet: str = "denied",
        write_to: Path | None = None,
        **extra: Any,
    ):
        defaults: dict[str, Any] = {}
        if memory is not None:
            defaults["memory"] = memory
        if cpu is not None:
            defaults["cpu"] = cpu
        if pids is not None:
            defaults["pids"] = pids
        for t in tasks:
            t.setdefault("image", test_image)
        doc: dict[str, Any] = {
            "apiVersion": "evalmanifest.dev/v1alpha1",
            "kind": "EvalManifest",
            "metadata": {"name": "docker-test"},
            "benchmark": {"name": "docker-test", "version": "1"},
            "subject": {"model": {"id": "none"}},
            "tasks": tasks,
            "resources": {"defaults": defaults},
            "enforcement": {"method": method, "mechanism": "docker.hostconfig"} if method else {},
            "timeouts": {"defaults": {"total_sec": total_sec}, "kill": {"grace_sec": grace_sec}},
            "trials": {"attempts": attempts, "infra_error_policy": {"retries": retries}},
            "network": {"internet": internet},
        }
        doc.update(extra)
        m = EvalManifest.model_validate(doc)
        if write_to is not None:
            write_to.write_text(json.dumps(doc, indent=1))  # JSON is YAML
        return m

    return build
