"""``run`` for Kubernetes: submit pods with the manifest's concurrency, watch, classify, capture, clean up.

One Pod per try (the runner retries infra errors itself, per ``trials.infra_error_policy``, so every try
gets its own trial record). Per finished pod it records: the classification (decision table), the
admitted spec diffed against the sent one (``observed`` with ``honoured``), ``qosClass``, the node's
``nodeInfo``/capacity/allocatable/labels, the pod's events, and the probe blocks printed by the command
wrapper. Everything the run created carries ``evalmanifest.dev/run-id`` and is deleted by label on
completion, on interruption, or by ``evalmanifest gc``.

Run directory: ``manifest.yaml``, ``trials.jsonl`` (one fsync'ed line per try), ``environment.json``,
``run.json``; ``resume=True`` skips every (task, attempt) whose final try is already recorded.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from evalmanifest.adapters.base import RunResult
from evalmanifest.adapters.kubernetes.classify import apply_oom_policy, classify_pod
from evalmanifest.adapters.kubernetes.readback import observe
from evalmanifest.adapters.kubernetes.render import (
    CONTAINER,
    PROBE_BEGIN,
    PROBE_END,
    REWARD_MARK,
    network_policy,
    render_objects,
    run_selector,
)
from evalmanifest.errors import AdapterError, BackendError, MissingOptionalDependencyError
from evalmanifest.models.trial import TrialRecord

NODE_KEYS = (
    "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "kubernetes.io/arch",
    "kubernetes.io/os",
    "nvidia.com/gpu.product",
    "nvidia.com/gpu.memory",
    "karpenter.sh/capacity-type",
    "cloud.google.com/gke-spot",
)


def _client():
    try:
        from kubernetes import client, config  # noqa: PLC0415
    except ImportError as e:  # pragma: no cover
        raise MissingOptionalDependencyError("kubernetes", "kubernetes", "running on Kubernetes") from e
    return client, config


def load_api(context: str | None = None) -> Any:
    """An ApiClient from the kubeconfig (or the in-cluster service account)."""
    client, config = _client()
    try:
        config.load_kube_config(context=context)
    except Exception:  # noqa: BLE001
        try:
            config.load_incluster_config()
        except Exception as e:  # noqa: BLE001
            raise BackendError(f"no usable kubeconfig or in-cluster configuration: {e}") from e
    return client.ApiClient()


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def node_facts(node: dict[str, Any]) -> dict[str, Any]:
    """What the capture records about a node (reference/enforcement.md 1.7 "Node")."""
    meta = node.get("metadata") or {}
    st = node.get("status") or {}
    labels = meta.get("labels") or {}
    return {
        "name": meta.get("name"),
        "labels": {k: v for k, v in labels.items() if k in NODE_KEYS or k.startswith("nvidia.com/")},
        "capacity": dict(st.get("capacity") or {}),
        "allocatable": dict(st.get("allocatable") or {}),
        "node_info": {k: str(v) for k, v in (st.get("nodeInfo") or {}).items()},
        "provider_id": (node.get("spec") or {}).get("providerID"),
    }


def probe_blocks(log: str) -> dict[str, dict[str, str]]:
    """The probe blocks (``start``/``end``) the command wrapper printed, parsed."""
    from evalmanifest.capture import parse_probe  # noqa: PLC0415

    out: dict[str, dict[str, str]] = {}
    lines = log.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith(PROBE_BEGIN):
            phase = lines[i].split("phase=", 1)[-1].strip() or "start"
            j = i + 1
            while j < len(lines) and not lines[j].startswith(PROBE_END):
                j += 1
            out[phase] = parse_probe("\n".join(lines[i + 1 : j]))
            i = j
        i += 1
    return out


def reward_from_log(log: str) -> float | None:
    for line in reversed(log.splitlines()):
        if line.startswith(REWARD_MARK):
            try:
                return float(line[len(REWARD_MARK) :].strip())
            except ValueError:
                return None
    return None


class RunFiles:
    """Durable run directory writer: fsync'ed JSONL appends, atomic JSON files."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.trials = root / "trials.jsonl"

    def write_json(self, name: str, obj: Any) -> None:
        tmp = self.root / f".{name}.tmp"
        with tmp.open("w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.root / name)

    def write_text(self, name: str, text: str) -> None:
        tmp = self.root / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, self.root / name)

    def append(self, rec: TrialRecord) -> None:
        line = json.dumps(rec.model_dump(mode="json", exclude_none=True), sort_keys=True) + "\n"
        with self.trials.open("a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def records(self) -> list[TrialRecord]:
        if not self.trials.exists():
            return []
        out = []
        for line in self.trials.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                out.append(TrialRecord.model_validate_json(line))
            except Exception:  # noqa: BLE001 - a torn last line from a crash is dropped, then rewritten
                continue
        return out

    def completed(self) -> set[tuple[str, int]]:
        return {r.key() for r in self.records() if r.final}


@dataclass
class InFlight:
    task_id: str
    attempt: int
    try_index: int
    name: str
    sent: dict[str, Any]
    submitted: float
    started_at: str


class KubernetesRunner:
    def __init__(
        self,
        adapter: Any,
        manifest: Any,
        out_dir: Path,
        concurrency: int | None = None,
        resume: bool = False,
        api: Any = None,
        namespace: str | None = None,
        kind: str | None = None,
        schedule_timeout: float = 900.0,
        run_id: str | None = None,
        keep: bool = False,
        watch_timeout: int = 30,
        **_: Any,
    ):
        self.adapter = adapter
        self.manifest = manifest
        self.files = RunFiles(Path(out_dir))
        self.resume = resume
        self.api = api
        self.namespace = namespace or adapter.namespace
        if (kind or adapter.kind) != "pod":
            raise AdapterError("run executes one Pod per try (the runner retries infra errors itself); use --kind pod")
        self.concurrency = concurrency or manifest.concurrency.max_parallel_trials or 4
        self.schedule_timeout = schedule_timeout
        self.keep = keep
        self.watch_timeout = watch_timeout
        self.run_id = run_id or self._existing_run_id() or f"em-{datetime.now(timezone.utc):%Y%m%d%H%M%S}-{secrets.token_hex(3)}"
        self.nodes: dict[str, dict[str, Any]] = {}
        self.trial_obs: list[dict[str, Any]] = []

    def _existing_run_id(self) -> str | None:
        if not self.resume:
            return None
        p = self.files.root / "run.json"
        if p.exists():
            try:
                return json.loads(p.read_text()).get("run_id")
            except ValueError:
                return None
        return None

    # -- plan ---------------------------------------------------------------------------------------
    def todo(self) -> list[tuple[str, int]]:
        done = self.files.completed() if self.resume else set()
        if not self.resume and self.files.trials.exists() and self.files.trials.stat().st_size:
            raise AdapterError(f"{self.files.root} already holds trials; pass resume=True (--resume) to continue it")
        return [
            (t.id, a)
            for t in self.manifest.tasks
            for a in range(self.manifest.trials.attempts)
            if (t.id, a) not in done
        ]

    # -- main loop ----------------------------------------------------------------------------------
    def run(self) -> RunResult:
        client, _ = _client()
        api = self.api or load_api()
        core = client.CoreV1Api(api)
        todo = self.todo()
        opts = self.adapter.options_for(self.manifest, run_id=self.run_id, namespace=self.namespace, kind="pod", probe=True)
        self._write_header(core)
        queue = [(t, a, 0) for t, a in todo]
        inflight: dict[str, InFlight] = {}
        counts: dict[str, int] = {}
        status = "complete"
        created_policy = False
        try:
            if self.manifest.network.internet == "denied" and queue:
                self._create(api, network_policy(opts))
                created_policy = True
            from evalmanifest.adapters.kubernetes.watch import PodWatcher  # noqa: PLC0415

            watcher = PodWatcher(core, self.namespace, run_selector(self.run_id), timeout_seconds=self.watch_timeout)

            def fill() -> None:
                while queue and len(inflight) < self.concurrency:
                    task_id, attempt, try_index = queue.pop(0)
                    self._submit(core, opts, task_id, attempt, try_index, inflight)

            fill()

            def stop() -> bool:
                # periodic checks: unschedulable pods that waited too long
                now = time.monotonic()
                for name, f in list(inflight.items()):
                    if now - f.submitted > self.schedule_timeout:
                        try:
                            pod = core.read_namespaced_pod(name, self.namespace, _preload_content=False)
                            podd = json.loads(pod.data)
                        except Exception:  # noqa: BLE001
                            continue
                        c = classify_pod(podd, container=CONTAINER)
                        if c.category in ("unschedulable", "pending"):
                            self._finish(core, f, podd, inflight, queue, counts, force_unschedulable=True)
                fill()
                return not inflight and not queue

            for _etype, pod in watcher.events(stop):
                name = (pod.get("metadata") or {}).get("name")
                f = inflight.get(name)
                if f is None:
                    continue
                c = classify_pod(pod, container=CONTAINER)
                if c.terminal:
                    self._finish(core, f, pod, inflight, queue, counts)
                    fill()
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        finally:
            if not self.keep:
                delete_by_label(self.namespace, run_selector(self.run_id), api=api, include_policies=created_policy)
            self._write_footer(status, counts)
        return RunResult(run_dir=self.files.root, run_id=self.run_id, status=status, counts=counts)

    def _create(self, api: Any, obj: dict[str, Any]) -> None:
        from kubernetes import utils  # noqa: PLC0415

        try:
            utils.create_from_dict(api, obj, namespace=self.namespace)
        except Exception as e:  # noqa: BLE001
            if "AlreadyExists" in str(e) or "409" in str(e):
                return
            raise BackendError(f"could not create {obj['kind']}/{obj['metadata']['name']}: {e}") from e

    def _submit(self, core: Any, opts: Any, task_id: str, attempt: int, try_index: int, inflight: dict[str, InFlight]) -> None:
        from kubernetes.client.exceptions import ApiException  # noqa: PLC0415

        rt = self.adapter.resolved_task(self.manifest, task_id)
        self.adapter.check_supported(rt)
        o = opts
        if rt.success.kind == "reward_file" and rt.success.path:
            from dataclasses import replace  # noqa: PLC0415

            o = replace(opts, reward_path=rt.success.path)
        pod = render_objects(rt, attempt * 100 + try_index, o, self.manifest.hardware)[0]
        pod["metadata"]["labels"]["evalmanifest.dev/attempt"] = str(attempt)
        pod["metadata"]["annotations"]["evalmanifest.dev/attempt"] = str(attempt)
        pod["metadata"]["annotations"]["evalmanifest.dev/try"] = str(try_index)
        name = pod["metadata"]["name"]
        try:
            core.create_namespaced_pod(self.namespace, pod)
        except ApiException as e:
            if e.status == 409:  # resumed run: the pod already exists (it will be watched)
                pass
            elif e.status in (400, 403, 422):
                # admission refused the pod (quota, policy, webhook): an infra error of this try
                self._record_rejected(task_id, attempt, try_index, e)
                return
            else:
                raise BackendError(f"could not create pod {name}: {e.status} {e.reason}") from e
        inflight[name] = InFlight(task_id, attempt, try_index, name, pod, time.monotonic(), _now())

    def _record_rejected(self, task_id: str, attempt: int, try_index: int, e: Any) -> None:
        rec = TrialRecord(
            task_id=task_id,
            attempt=attempt,
            try_index=try_index,
            outcome="infra_error",
            infra_cause="admission_rejected",
            started_at=_now(),
            finished_at=_now(),
            details={"category": "admission_rejected", "api_status": e.status, "api_reason": str(e.reason), "api_body": str(e.body)[:2000]},
        )
        self.files.append(rec)

    def _node(self, core: Any, name: str | None) -> dict[str, Any] | None:
        if not name:
            return None
        if name not in self.nodes:
            try:
                resp = core.read_node(name, _preload_content=False)
                self.nodes[name] = json.loads(resp.data)
            except Exception:  # noqa: BLE001 - RBAC may forbid node reads; the record says so
                self.nodes[name] = {}
        return self.nodes[name] or None

    def _events(self, core: Any, kind: str, name: str, namespace: str | None) -> list[dict[str, Any]]:
        try:
            sel = f"involvedObject.name={name},involvedObject.kind={kind}"
            if namespace:
                resp = core.list_namespaced_event(namespace, field_selector=sel, _preload_content=False)
            else:
                resp = core.list_event_for_all_namespaces(field_selector=sel, _preload_content=False)
            return list(json.loads(resp.data).get("items") or [])
        except Exception:  # noqa: BLE001
            return []

    def _finish(self, core: Any, f: InFlight, pod: dict[str, Any], inflight: dict[str, InFlight], queue: list, counts: dict[str, int], force_unschedulable: bool = False) -> None:
        inflight.pop(f.name, None)
        try:
            admitted = json.loads(core.read_namespaced_pod(f.name, self.namespace, _preload_content=False).data)
        except Exception:  # noqa: BLE001
            admitted = pod
        node_name = (admitted.get("spec") or {}).get("nodeName")
        node = self._node(core, node_name)
        events = self._events(core, "Pod", f.name, self.namespace)
        node_events = self._events(core, "Node", node_name, None) if node_name else []
        try:
            log = core.read_namespaced_pod_log(f.name, self.namespace, container=CONTAINER, limit_bytes=4 * 2**20)
        except Exception:  # noqa: BLE001
            log = ""
        blocks = probe_blocks(log or "")
        probe_end = blocks.get("end") or blocks.get("start") or {}
        c = classify_pod(admitted, events=events, node_events=node_events, node=node, container=CONTAINER, probe=probe_end)
        if force_unschedulable and not c.terminal:
            from dataclasses import replace  # noqa: PLC0415

            c = replace(c, terminal=True, outcome="infra_error", infra_cause="unschedulable", category="unschedulable")
        outcome, cause, pol = apply_oom_policy(c, self.manifest.trials.oom_at_ceiling_counts_as)
        rt = self.adapter.resolved_task(self.manifest, f.task_id)
        reward = None
        if outcome in ("success", "failure"):
            if rt.success.kind == "reward_file":
                reward = reward_from_log(log or "")
                if reward is not None:
                    outcome = "success" if reward >= rt.success.threshold else "failure"
            else:
                reward = 1.0 if outcome == "success" else 0.0
        obs, rb = observe(rt.resources, rt.method, f.sent, admitted, CONTAINER)
        retries = self.manifest.trials.infra_error_policy.retries
        final = not (outcome == "infra_error" and f.try_index < retries)
        peaks = {}
        from evalmanifest.capture import probe_summary  # noqa: PLC0415

        if probe_end:
            s = probe_summary(probe_end)
            if isinstance(s.get("memory_peak_bytes"), int):
                peaks["memory_bytes"] = s["memory_peak_bytes"]
            if isinstance(s.get("oom_kill_count"), int):
                peaks["oom_kill_count"] = s["oom_kill_count"]
        st = admitted.get("status") or {}
        rec = TrialRecord(
            task_id=f.task_id,
            attempt=f.attempt,
            try_index=f.try_index,
            final=final,
            outcome=outcome,  # type: ignore[arg-type]
            infra_cause=cause,  # type: ignore[arg-type]
            reward=reward,
            exit_code=c.exit_code,
            started_at=c.started_at or f.started_at,
            finished_at=c.finished_at or _now(),
            node=node_name,
            observed=obs,
            peaks=peaks,
            details={
                "pod": f.name,
                "category": c.category,
                "evidence": list(c.evidence),
                "qos_class": st.get("qosClass"),
                "events": [
                    {k: e.get(k) for k in ("type", "reason", "message", "lastTimestamp", "count")} for e in events[-20:]
                ],
                "node_events": [{k: e.get(k) for k in ("type", "reason", "message", "lastTimestamp")} for e in node_events[-20:]],
                "probe_keys": len(probe_end),
                **rb,
                **pol,
            },
        )
        self.files.append(rec)
        self.trial_obs.append(
            {
                "task_id": f.task_id,
                "attempt": f.attempt,
                "try_index": f.try_index,
                "node": node_name,
                "resources": {k: v.model_dump(mode="json") for k, v in obs.items()},
                "qos_class": st.get("qosClass"),
                "probe": probe_end,
                "oom_kill_count": peaks.get("oom_kill_count"),
                "peak_memory_bytes": peaks.get("memory_bytes"),
            }
        )
        counts[outcome] = counts.get(outcome, 0) + 1
        if not self.keep:
            try:
                core.delete_namespaced_pod(f.name, self.namespace, grace_period_seconds=0)
            except Exception:  # noqa: BLE001 - the label sweep at the end catches leftovers
                pass
        if not final:
            queue.insert(0, (f.task_id, f.attempt, f.try_index + 1))

    # -- run directory ------------------------------------------------------------------------------
    def _write_header(self, core: Any) -> None:
        from evalmanifest.canonical import canonical_obj, digest  # noqa: PLC0415

        if not (self.files.root / "manifest.yaml").exists():
            from evalmanifest.adapters.kubernetes import dump_yaml_documents  # noqa: PLC0415

            self.files.write_text("manifest.yaml", dump_yaml_documents([canonical_obj(self.manifest)]))
        self.files.write_json(
            "run.json",
            {
                "run_id": self.run_id,
                "adapter": "kubernetes",
                "namespace": self.namespace,
                "status": "running",
                "manifest_digest": digest(self.manifest),
                "started_at": _now(),
            },
        )

    def _write_footer(self, status: str, counts: dict[str, int]) -> None:
        from evalmanifest import __version__  # noqa: PLC0415
        from evalmanifest.canonical import digest, file_digest  # noqa: PLC0415

        env = {
            "apiVersion": "evalmanifest.dev/v1alpha1",
            "kind": "Environment",
            "adapter": "kubernetes",
            "captured_at": _now(),
            "cluster": {"namespace": self.namespace, "run_id": self.run_id},
            "nodes": [node_facts(n) for n in self.nodes.values() if n],
            "trials": self.trial_obs,
        }
        prev = self.files.root / "environment.json"
        if self.resume and prev.exists():
            try:
                old = json.loads(prev.read_text())
                env["trials"] = list(old.get("trials") or []) + env["trials"]
                names = {n["name"] for n in env["nodes"]}
                env["nodes"] += [n for n in old.get("nodes") or [] if n.get("name") not in names]
            except ValueError:
                pass
        self.files.write_json("environment.json", env)
        digests = {}
        for name in ("manifest.yaml", "environment.json", "trials.jsonl"):
            p = self.files.root / name
            if p.exists():
                digests[name] = file_digest(str(p))
        self.files.write_json(
            "run.json",
            {
                "run_id": self.run_id,
                "adapter": "kubernetes",
                "namespace": self.namespace,
                "status": status,
                "tool_version": __version__,
                "manifest_digest": digest(self.manifest),
                "finished_at": _now(),
                "counts": counts,
                "digests": digests,
            },
        )


def delete_by_label(namespace: str, selector: str, api: Any = None, include_policies: bool = True) -> dict[str, int]:
    """Delete pods, Jobs (with their pods) and NetworkPolicies matching ``selector`` in ``namespace``."""
    client, _ = _client()
    api = api or load_api()
    core = client.CoreV1Api(api)
    batch = client.BatchV1Api(api)
    net = client.NetworkingV1Api(api)
    out = {"pods": 0, "jobs": 0, "networkpolicies": 0}
    try:
        jobs = batch.list_namespaced_job(namespace, label_selector=selector).items
        for j in jobs:
            batch.delete_namespaced_job(j.metadata.name, namespace, propagation_policy="Background")
            out["jobs"] += 1
        pods = core.list_namespaced_pod(namespace, label_selector=selector).items
        for p in pods:
            core.delete_namespaced_pod(p.metadata.name, namespace, grace_period_seconds=0)
            out["pods"] += 1
        if include_policies:
            for np_ in net.list_namespaced_network_policy(namespace, label_selector=selector).items:
                net.delete_namespaced_network_policy(np_.metadata.name, namespace)
                out["networkpolicies"] += 1
    except Exception as e:  # noqa: BLE001
        raise BackendError(f"clean-up by label {selector!r} in {namespace!r} failed: {e}") from e
    return out


def capture_cluster(namespace: str = "default", api: Any = None) -> dict[str, Any]:
    """Cluster facts: server version, the namespace's LimitRanges (they mutate pods), node facts."""
    client, _ = _client()
    api = api or load_api()
    core = client.CoreV1Api(api)
    out: dict[str, Any] = {"namespace": namespace}
    try:
        v = client.VersionApi(api).get_code()
        out["server_version"] = v.git_version
    except Exception as e:  # noqa: BLE001
        raise BackendError(f"the Kubernetes API is not reachable: {e}") from e
    try:
        out["limit_ranges"] = [api.sanitize_for_serialization(lr) for lr in core.list_namespaced_limit_range(namespace).items]
    except Exception:  # noqa: BLE001
        out["limit_ranges"] = "not readable"
    try:
        nodes = json.loads(core.list_node(_preload_content=False).data).get("items") or []
        out["nodes"] = [node_facts(n) for n in nodes]
    except Exception:  # noqa: BLE001
        out["nodes"] = "not readable (needs the read-only ClusterRole for nodes)"
    return out


__all__ = ["KubernetesRunner", "RunFiles", "capture_cluster", "delete_by_label", "load_api", "node_facts", "probe_blocks"]
