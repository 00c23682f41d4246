"""Benchmark: `evalmanifest validate` vs `check-jsonschema` on a generated 10k-task manifest.

Both validate the same file against the same published schema (check-jsonschema: schema layer only;
evalmanifest: schema + pydantic model + semantic lints + resolution of every task). Both run as fresh
processes, interleaved, several rounds; we report the median ratio (the machine is shared and noisy,
so absolute times are indicative only).

    python bench/bench_validate.py [--tasks 10000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "spec" / "v1alpha1" / "manifest.schema.json"


def generate(n: int, fmt: str = "yaml") -> str:
    lines = [
        "apiVersion: evalmanifest.dev/v1alpha1",
        "kind: EvalManifest",
        "metadata: {name: bench-10k}",
        "benchmark: {name: synthetic, version: '1'}",
        "subject: {model: {id: example/model}, agent: {name: a, version: '1'}}",
        "resources:",
        "  defaults: {cpu: {floor: '1'}, memory: {floor: 2Gi}, ephemeral_storage: {floor: 10Gi}}",
        "  ceiling_multiplier: 3",
        "enforcement: {method: banded, mechanism: k8s.requests_limits}",
        "timeouts: {defaults: {agent_sec: 900, verifier_sec: 900}}",
        "trials: {attempts: 5, infra_error_policy: {retries: 2, then: failure}}",
        "tasks:",
    ]
    for i in range(n):
        lines.append(f"  - id: task-{i:05d}")
        lines.append(f"    image: registry.example/tasks/task-{i:05d}:20251031")
        lines.append("    success: {kind: reward_file, path: /logs/verifier/reward.txt}")
        if i % 10 == 0:
            lines.append("    resources: {memory: {floor: 4Gi}, cpu: {floor: '2'}}")
        if i % 7 == 0:
            lines.append("    timeouts: {agent_sec: 1800}")
    return "\n".join(lines) + "\n"


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    peer = shutil.which("check-jsonschema")
    ours = shutil.which("evalmanifest")
    if not peer or not ours:
        raise SystemExit("needs `pip install -e '.[bench]'` (check-jsonschema) and evalmanifest on PATH")
    import json

    from ruamel.yaml import YAML

    with tempfile.TemporaryDirectory() as tmp:
        text = generate(args.tasks)
        fy = Path(tmp) / "bench-10k.yaml"
        fy.write_text(text)
        fj = Path(tmp) / "bench-10k.json"
        fj.write_text(json.dumps(YAML(typ="safe").load(text), indent=1))
        for f in (fy, fj):
            size = f.stat().st_size
            rows = []
            for _ in range(args.rounds):
                a = timed([ours, "validate", "-q", str(f)])
                b = timed([peer, "--schemafile", str(SCHEMA), str(f)])
                rows.append((a, b))
            ra = statistics.median(a for a, _ in rows)
            rb = statistics.median(b for _, b in rows)
            print(f"{f.suffix[1:].upper()} manifest: {args.tasks} tasks, {size / 1e6:.2f} MB; {args.rounds} rounds")
            print(f"  evalmanifest validate  median {ra:.2f} s")
            print(f"  check-jsonschema       median {rb:.2f} s")
            print(f"  ratio evalmanifest / check-jsonschema = {ra / rb:.2f}x  (per round: "
                  + ", ".join(f"{a / b:.2f}" for a, b in rows) + ")")


if __name__ == "__main__":
    sys.exit(main())
