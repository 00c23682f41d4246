"""The adapter contract's conformance suite, for the Kubernetes adapter."""

from __future__ import annotations

from evalmanifest.errors import UnsupportedEnforcementError
from evalmanifest.testing.conformance import AdapterConformance


class TestKubernetesConformance(AdapterConformance):
    adapter_name = "kubernetes"
    image = "busybox:1.36"

    def allowed_render_error(self, task, error: Exception) -> bool:
        # a manifest with no enforcement.method cannot be given a QoS class: documented refusal
        return task.method is None and isinstance(error, UnsupportedEnforcementError)
