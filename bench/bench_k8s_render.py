"""Render 10k Kubernetes pods (Terminal-Bench 2.0, 89 tasks x 113 attempts, banded 3x), then validate
them strictly off the hot path. Usage: python bench/bench_k8s_render.py [--validate-versions 1.33]

Prints wall-clock seconds for: resolve+render (the hot path: what ``run`` and ``render`` do per pod),
strict schema validation of all pods for one version (off the hot path), and the same validation with
the uncached ``kubernetes_validate.validate`` on a 200-pod sample (the peer), as a ratio.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "kubernetes"))

from k8s_helpers import TB2, tb2_manifest_dict  # noqa: E402

from evalmanifest.adapters.kubernetes import KubernetesAdapter  # noqa: E402
from evalmanifest.adapters.kubernetes.render import render_objects  # noqa: E402
from evalmanifest.adapters.kubernetes.validate import validate_objects  # noqa: E402
from evalmanifest.models.manifest import EvalManifest  # noqa: E402
from evalmanifest.resolve import resolve  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=10_000)
    ap.add_argument("--version", default="1.33")
    args = ap.parse_args()
    if not (TB2 / "tasks.csv").exists():
        sys.exit("needs ../shared/data/terminal-bench-2")
    d = tb2_manifest_dict("banded")
    attempts = -(-args.pods // len(d["tasks"]))
    d["trials"]["attempts"] = attempts
    man = EvalManifest.model_validate(d)
    a = KubernetesAdapter(namespace="evals")

    t0 = time.perf_counter()
    opts = a.options_for(man, run_id="bench")
    tasks = resolve(man).tasks
    pods = []
    for attempt in range(attempts):
        for rt in tasks:
            pods.append(render_objects(rt, attempt, opts, man.hardware)[0])
            if len(pods) == args.pods:
                break
    t_render = time.perf_counter() - t0

    t1 = time.perf_counter()
    issues = validate_objects(pods, [args.version])
    t_validate = time.perf_counter() - t1
    assert not issues, issues[:3]

    import kubernetes_validate

    sample = pods[:200]
    t2 = time.perf_counter()
    for p in sample:
        kubernetes_validate.validate(p, args.version, strict=True)
    t_peer = (time.perf_counter() - t2) / len(sample) * len(pods)

    print(f"pods rendered: {len(pods)}")
    print(f"render (hot path): {t_render:.3f} s  ({t_render / len(pods) * 1e6:.0f} us/pod)")
    print(f"strict validation, cached validators, k8s {args.version}: {t_validate:.3f} s")
    print(f"kubernetes_validate.validate (uncached), extrapolated from 200: {t_peer:.1f} s")
    print(f"ratio uncached/cached validation: {t_peer / t_validate:.0f}x; render budget 2 s used: {t_render / 2:.0%}")


if __name__ == "__main__":
    main()
