"""Helpers for driving ``KubernetesRunner`` against :class:`cluster_sim.ClusterSim` (imported by tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalmanifest.models.manifest import EvalManifest

NS = "evals"
#: the first pod of t-flaky is evicted (infra error, retried), t-slow hits its deadline, the rest succeed
PLAN = {"t-ok": ["succeeded"], "t-flaky": ["evicted", "succeeded"], "t-slow": ["deadline"]}


def manifest(attempts: int = 2, internet: str = "denied", retries: int = 2) -> EvalManifest:
    return EvalManifest.model_validate({
        "apiVersion": "evalmanifest.dev/v1alpha1",
        "kind": "EvalManifest",
        "metadata": {"name": "replayed-run"},
        "benchmark": {"name": "replay", "version": "1"},
        "subject": {"model": {"id": "none"}},
        "tasks": [{"id": t, "image": "busybox:1.36", "command": ["sh", "-c", "echo hi"]} for t in PLAN],
        "resources": {"defaults": {"cpu": {"floor": "500m", "ceiling": "1"}, "memory": {"floor": "64Mi", "ceiling": "128Mi"}}},
        "enforcement": {"method": "banded", "mechanism": "k8s.requests_limits"},
        "timeouts": {"defaults": {"total_sec": 600}},
        "trials": {"attempts": attempts, "infra_error_policy": {"retries": retries, "then": "failure"}},
        "network": {"internet": internet},
    })


def run(sim: Any, out: Path, m: EvalManifest | None = None, resume: bool = False, **kw: Any):
    from evalmanifest.adapters.kubernetes import KubernetesAdapter

    opts: dict[str, Any] = {"api": sim.api_client(), "watch_timeout": 1, "heartbeat_sec": 0.05,
                            "install_signal_handlers": False, "concurrency": 2}
    opts.update(kw)
    return KubernetesAdapter(namespace=NS).run(m or manifest(), out, resume=resume, **opts)


def replayed_run_dir(out: Path) -> Path:
    """A finished run directory made by the runner's own loop against the simulator."""
    from cluster_sim import ClusterSim

    with ClusterSim({k: list(v) for k, v in PLAN.items()}, namespace=NS) as sim:
        res = run(sim, out)
    assert res.status == "complete", res
    return out
