"""``gc`` deletes only runs that are not live (their runner's Lease is missing or expired), through the
real client against cluster_sim; ``--all`` deletes everything; the CLI reaches it through a kubeconfig."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest

from evalmanifest.adapters.kubernetes import KubernetesAdapter
from evalmanifest.adapters.kubernetes.runner import A_RUNNER, _micro_time, lease_name, run_liveness, runner_annotation

from cluster_sim import CREATED_AT, ClusterSim
from runner_replay import NS

NOW = datetime(2024, 11, 20, 12, 0, tzinfo=timezone.utc)  # CREATED_AT is 2.5 h earlier


def _labels(rid: str) -> dict[str, str]:
    return {"evalmanifest.dev/run-id": rid, "app.kubernetes.io/managed-by": "evalmanifest"}


def _dead_pid_annotation() -> str:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    host, pid, start = runner_annotation().split("/")
    return f"{host}/{p.pid}/{start.split(':')[0]}:1"  # a pid that has exited (and a start that cannot match)


def _add_run(sim: ClusterSim, rid: str, *, by_runner: bool = True, lease_age: float | None = None,
             holder: str = "other-host/1/x:1", created: str = CREATED_AT) -> None:
    ann = {"evalmanifest.dev/task-id": "t"}
    if by_runner:
        ann[A_RUNNER] = holder
    for i in range(2):
        name = f"em-{rid}-{i}"
        sim.pods[name] = {"apiVersion": "v1", "kind": "Pod",
                          "metadata": {"name": name, "namespace": NS, "labels": _labels(rid), "annotations": dict(ann),
                                       "creationTimestamp": created, "resourceVersion": "1"},
                          "spec": {"containers": [{"name": "agent", "image": "busybox"}]}, "status": {"phase": "Running"}}
    if lease_age is not None:
        renew = _micro_time(NOW - timedelta(seconds=lease_age))
        sim.leases[lease_name(rid)] = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                       "metadata": {"name": lease_name(rid), "namespace": NS, "labels": _labels(rid),
                                                    "annotations": {A_RUNNER: holder}, "resourceVersion": "1"},
                                       "spec": {"holderIdentity": holder, "leaseDurationSeconds": 120,
                                                "acquireTime": renew, "renewTime": renew}}


@pytest.fixture
def sim():
    with ClusterSim({}, namespace=NS) as s:
        _add_run(s, "live", lease_age=10)                                   # renewed 10 s ago
        _add_run(s, "expired", lease_age=3600)                              # runner stopped an hour ago
        _add_run(s, "nolease")                                              # runner gone, lease deleted
        _add_run(s, "young", created=_micro_time(NOW - timedelta(seconds=20)))  # lease-less but just created
        _add_run(s, "applied", by_runner=False)                             # kubectl apply of render output
        _add_run(s, "localdead", lease_age=5, holder=_dead_pid_annotation())  # fresh lease, runner pid gone
        yield s


def _runs_left(sim: ClusterSim) -> set[str]:
    return {p["metadata"]["labels"]["evalmanifest.dev/run-id"] for p in sim.pods.values()}


def _gc(sim: ClusterSim, **kw):
    from evalmanifest.adapters.kubernetes.runner import gc_runs

    return gc_runs(NS, api=sim.api_client(), now=NOW, **kw)


def test_gc_keeps_live_runs_and_objects_not_made_by_a_runner(sim):
    out = _gc(sim)
    assert _runs_left(sim) == {"live", "young", "applied"}
    assert set(sim.leases) == {lease_name("live")}
    assert out["runs"] == 3 and out["pods"] == 6 and out["leases"] == 2
    assert out["skipped_live"] == 1 and out["skipped_not_runner"] == 1 and out["skipped_young"] == 1
    assert out["decisions"]["localdead"].startswith("deleted (runner process on this host has exited")
    # deletes are by label, one deletecollection per resource and run
    assert ("pods", "evalmanifest.dev/run-id=expired,app.kubernetes.io/managed-by=evalmanifest") in sim.deleted_by_label


def test_gc_run_id_deletes_a_stopped_run_but_never_a_live_one(sim):
    _gc(sim, run_id="applied")
    assert "applied" not in _runs_left(sim)
    out = _gc(sim, run_id="live")
    assert "live" in _runs_left(sim) and out["skipped_live"] == 1


def test_gc_all_deletes_everything_managed(sim):
    out = _gc(sim, all_runs=True)
    assert sim.pods == {} and sim.leases == {}
    assert out["runs"] == 6


def test_liveness_rules():
    fresh = {"spec": {"renewTime": _micro_time(NOW - timedelta(seconds=100)), "leaseDurationSeconds": 120}}
    assert run_liveness(fresh, NOW)[0] is True
    stale = {"spec": {"renewTime": _micro_time(NOW - timedelta(seconds=181)), "leaseDurationSeconds": 120}}
    assert run_liveness(stale, NOW) == (False, "lease expired (renewed 181 s ago)")
    assert run_liveness(None, NOW) == (False, "no lease")
    mine = {"metadata": {"annotations": {A_RUNNER: runner_annotation()}},
            "spec": {"renewTime": _micro_time(NOW - timedelta(days=1)), "leaseDurationSeconds": 120}}
    assert run_liveness(mine, NOW)[0] is False  # this process is alive, but the lease is what counts remotely
    mine["spec"]["renewTime"] = _micro_time(NOW)
    assert run_liveness(mine, NOW)[0] is True


def test_a_running_run_is_not_collected_by_a_concurrent_gc(tmp_path, monkeypatch):
    """gc during a run (the runner's Lease is fresh) leaves its pods alone."""
    from evalmanifest.rundir import RunWriter

    from runner_replay import manifest, run

    seen = {}
    real_append = RunWriter.append

    def append_and_gc(self, rec):
        real_append(self, rec)
        if "gc" not in seen:
            seen["before"] = set(s.pods)
            seen["gc"] = KubernetesAdapter(namespace=NS).gc(api=s.api_client())
            seen["after"] = set(s.pods)

    with ClusterSim({"t-ok": ["succeeded"], "t-flaky": ["pending"], "t-slow": ["pending"]}, namespace=NS) as s:
        monkeypatch.setattr(RunWriter, "append", append_and_gc)
        res = run(s, tmp_path / "run", m=manifest(attempts=1, internet="allowed", retries=0), concurrency=3, schedule_timeout=2.0,
                  recheck_sec=0.2)
    assert seen["gc"]["skipped_live"] == 1 and seen["gc"]["runs"] == 0
    assert seen["before"] and seen["after"] == seen["before"]
    assert res.status == "complete"


def test_cli_gc_uses_the_kubeconfig_and_prints_decisions(sim, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from evalmanifest.cli import cli as main

    kc = tmp_path / "kubeconfig"
    kc.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: sim, cluster: {{server: "{sim.server.url}"}}}}]
users: [{{name: u, user: {{token: x}}}}]
contexts: [{{name: sim, context: {{cluster: sim, user: u, namespace: {NS}}}}}]
current-context: sim
""")
    monkeypatch.setenv("KUBECONFIG", str(kc))
    import kubernetes.config.kube_config as kcfg  # reads $KUBECONFIG at import time

    monkeypatch.setattr(kcfg, "KUBE_CONFIG_DEFAULT_LOCATION", str(kc))
    sim.leases[lease_name("live")]["spec"]["renewTime"] = _micro_time()  # the CLI uses the real clock
    res = CliRunner().invoke(main, ["gc", "--adapter", "kubernetes", "--namespace", NS])
    assert res.exit_code == 0, res.output
    assert "run live: kept: live" in res.output and "run applied: kept: not created by a runner" in res.output
    assert "live" in _runs_left(sim) and "applied" in _runs_left(sim)
    res = CliRunner().invoke(main, ["gc", "--adapter", "kubernetes", "--namespace", NS, "--all"])
    assert res.exit_code == 0, res.output
    assert sim.pods == {}
    res = CliRunner().invoke(main, ["gc", "--adapter", "docker", "--all"])
    assert res.exit_code == 2 and "--all" in res.output
