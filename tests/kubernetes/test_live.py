"""Live end-to-end on a real cluster: a spiky memory workload is OOM-killed under `pinned` and survives
under `banded` 3x. Runs whenever a kubeconfig reaches a cluster (docs/kubernetes.md); skips otherwise."""

from __future__ import annotations

import os

import pytest

from evalmanifest.models.manifest import EvalManifest

pytestmark = pytest.mark.cluster

SPIKE = "head -c 100000000 /dev/zero | tail -c 100000000 > /dev/null && echo survived"


def _api():
    try:
        from kubernetes import client, config

        config.load_kube_config(context=os.environ.get("EVALMANIFEST_KUBE_CONTEXT"))
        api = client.ApiClient()
        client.VersionApi(api).get_code(_request_timeout=5)
        return api
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"no reachable Kubernetes cluster via kubeconfig ({type(e).__name__}: {str(e)[:120]}); see docs/kubernetes.md")


def _manifest(method: str) -> EvalManifest:
    mem = {"floor": "64Mi"} if method == "banded" else {"floor": "64Mi", "ceiling": "64Mi"}
    return EvalManifest.model_validate({
        "apiVersion": "evalmanifest.dev/v1alpha1",
        "kind": "EvalManifest",
        "metadata": {"name": f"live-{method}"},
        "benchmark": {"name": "live-oom", "version": "1"},
        "subject": {"model": {"id": "none"}},
        "tasks": [{"id": "spike", "image": os.environ.get("EVALMANIFEST_LIVE_IMAGE", "busybox:1.36"), "command": ["sh", "-c", SPIKE]}],
        "resources": {"defaults": {"cpu": {"floor": "100m", "ceiling": "100m"} if method == "pinned" else {"floor": "100m"}, "memory": mem},
                      **({"ceiling_multiplier": 3} if method == "banded" else {})},
        "enforcement": {"method": method, "mechanism": "k8s.requests_limits"},
        "timeouts": {"defaults": {"agent_sec": 240}},
        "trials": {"attempts": 1},
    })


@pytest.mark.parametrize("method,expect", [("pinned", "oom_at_ceiling"), ("banded", None)])
def test_pinned_oom_killed_banded_3x_survives(tmp_path, method, expect):
    from evalmanifest.adapters.kubernetes import KubernetesAdapter
    from evalmanifest.rundir import load_run

    api = _api()
    ns = os.environ.get("EVALMANIFEST_LIVE_NAMESPACE", "default")
    res = KubernetesAdapter(namespace=ns).run(_manifest(method), tmp_path / "run", api=api, schedule_timeout=300)
    recs = load_run(tmp_path / "run").trials
    assert res.status == "complete" and len(recs) == 1
    r = recs[0]
    if expect:
        assert (r.outcome, r.infra_cause) == ("infra_error", "oom_at_ceiling"), r.details
        assert r.details["qos_class"] == "Guaranteed"
    else:
        assert r.outcome == "success", r.details
        assert r.details["qos_class"] == "Burstable"
        assert r.observed["memory"].observed_ceiling == 3 * 64 * 2**20
    from kubernetes import client

    left = client.CoreV1Api(api).list_namespaced_pod(ns, label_selector=f"evalmanifest.dev/run-id={res.run_id}").items
    assert left == []
