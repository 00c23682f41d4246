"""Helpers: synthetic run directories for the reporter tests."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np

BASE_MANIFEST: dict[str, Any] = {
    "apiVersion": "evalmanifest.dev/v1alpha1",
    "kind": "EvalManifest",
    "metadata": {"name": "synthetic"},
    "benchmark": {"name": "synthetic-bench", "version": "1.0"},
    "subject": {"model": {"id": "vendor/model-x"}, "agent": {"name": "agent", "version": "1"}},
    "tasks": [],
    "resources": {"defaults": {"cpu": {"floor": "1", "ceiling": "1"}, "memory": {"floor": "2Gi", "ceiling": "2Gi"}}},
    "enforcement": {"method": "pinned", "mechanism": "docker.hostconfig"},
    "timeouts": {"defaults": {"agent_sec": 900, "verifier_sec": 300}},
    "trials": {"attempts": 5, "infra_error_policy": {"retries": 0, "then": "failure"}, "scorer": "exit-code"},
}


def manifest(n_tasks: int, **overrides: Any) -> dict[str, Any]:
    m = copy.deepcopy(BASE_MANIFEST)
    m["tasks"] = [{"id": f"task-{i:03d}"} for i in range(n_tasks)]
    for dotted, value in overrides.items():
        keys = dotted.split("__")
        cur = m
        for k in keys[:-1]:
            cur = cur.setdefault(k, {})
        if value is None and keys[-1] in cur:
            del cur[keys[-1]]
        else:
            cur[keys[-1]] = value
    return m


def write_run(
    root: Path,
    name: str,
    m: dict[str, Any],
    outcomes: np.ndarray,
    *,
    causes: dict[tuple[int, int], str] | None = None,
    hours: np.ndarray | None = None,
    observed: dict[tuple[int, int], dict[str, Any]] | None = None,
    task_ids: list[str] | None = None,
) -> Path:
    """outcomes: (n_tasks, k) array of 'S', 'F', 'T', 'I'."""
    from evalmanifest.models import TrialRecord

    d = root / name
    d.mkdir(parents=True)
    m = copy.deepcopy(m)
    m["metadata"]["name"] = name
    n, k = outcomes.shape
    ids = task_ids or [t["id"] for t in m["tasks"]][:n]
    (d / "manifest.yaml").write_text(json.dumps(m, indent=1), encoding="utf-8")
    names = {"S": "success", "F": "failure", "T": "timeout", "I": "infra_error"}
    lines = []
    for j in range(k):
        for i in range(n):
            o = names[outcomes[i, j]]
            h = 10 if hours is None else int(hours[i, j])
            rec = TrialRecord(
                task_id=ids[i],
                attempt=j,
                outcome=o,
                infra_cause=(causes or {}).get((i, j), "oom_at_ceiling") if o == "infra_error" else None,
                started_at=f"2025-01-0{1 + j % 9}T{h:02d}:00:00Z",
                finished_at=f"2025-01-0{1 + j % 9}T{h:02d}:10:00Z",
                observed=(observed or {}).get((i, j), {}),
            )
            lines.append(rec.model_dump_json() + "\n")
    (d / "trials.jsonl").write_text("".join(lines), encoding="utf-8")
    return d


def draw(rng: np.random.Generator, p: np.ndarray, k: int, infra: float = 0.0) -> np.ndarray:
    n = p.shape[0]
    u = rng.random((n, k))
    out = np.where(u < p[:, None], "S", "F").astype("<U1")
    out[rng.random((n, k)) < infra] = "I"
    return out


SHARED = (Path(__file__).resolve().parents[2] / ".." / "shared").resolve()
