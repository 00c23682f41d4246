"""The shared adapter conformance suite, applied to the Docker adapter (run part on a real engine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalmanifest.testing.conformance import AdapterConformance, minimal_manifest


class TestDockerConformance(AdapterConformance):
    adapter_name = "docker"
    image = "evalmanifest-test/busybox:latest"

    @pytest.fixture
    def conformance_run_dir(self, docker_client, test_image, tmp_path) -> Path:
        from evalmanifest.adapters.docker import DockerAdapter

        m = minimal_manifest(
            "banded",
            test_image,
            command="echo ok",
            trials={"attempts": 2},
            tasks=[
                {"id": "ok", "image": test_image, "command": "echo ok"},
                {"id": "bad", "image": test_image, "command": ["sh", "-c", "exit 1"]},
            ],
        )
        DockerAdapter(client=docker_client, progress=False).run(m, tmp_path / "run", concurrency=2)
        return tmp_path / "run"
