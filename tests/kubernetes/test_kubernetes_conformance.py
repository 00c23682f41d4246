"""The adapter contract's conformance suite, for the Kubernetes adapter."""

from __future__ import annotations

import pytest

from evalmanifest.testing.conformance import AdapterConformance

from runner_replay import replayed_run_dir


class TestKubernetesConformance(AdapterConformance):
    adapter_name = "kubernetes"
    image = "busybox:1.36"

    @pytest.fixture
    def conformance_run_dir(self, tmp_path):
        # made by the runner's own loop through the real client against tests/kubernetes/cluster_sim.py
        return replayed_run_dir(tmp_path / "run")
