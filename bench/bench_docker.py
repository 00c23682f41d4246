"""Docker adapter benchmarks on a real engine (run by hand: ``python bench/bench_docker.py``).

1. Per-trial overhead: ``evalmanifest``'s full trial (create, copy wrapper+probe, start, wait, inspect,
   probe, read results, remove, durable record) against bare SDK ``create/start/wait/remove`` of the same
   command on the same image with the same limits, in alternating rounds so host drift hits both equally.
   Target: ratio <= 1.2.
2. Throughput: sleep-bound trials at concurrency 4 against sequential. Target: ratio >= 3.

Prints ratios (and the absolute times they come from); record the ratios in bench/README.md.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from evalmanifest.adapters.docker import DockerAdapter, docker_client
from evalmanifest.models.manifest import EvalManifest
from evalmanifest.testing.images import ensure_test_image


def manifest(image: str, n: int, command: str, concurrency: int = 1) -> EvalManifest:
    return EvalManifest.model_validate(
        {
            "apiVersion": "evalmanifest.dev/v1alpha1",
            "kind": "EvalManifest",
            "metadata": {"name": "bench"},
            "benchmark": {"name": "bench", "version": "1"},
            "subject": {"model": {"id": "none"}},
            "tasks": [{"id": f"t{i}", "image": image, "command": command} for i in range(n)],
            "resources": {"defaults": {"memory": {"floor": "32Mi", "ceiling": "64Mi"}, "cpu": {"floor": "250m", "ceiling": "1"}}},
            "enforcement": {"method": "banded", "mechanism": "docker.hostconfig"},
            "timeouts": {"defaults": {"total_sec": 120}},
            "network": {"internet": "denied"},
            "concurrency": {"max_parallel_trials": concurrency},
        }
    )


def bare(client, image: str, n: int, command: str) -> float:
    """n x (create, start, wait, remove) with the same limits, no wrapper, no probe, no records."""
    hc = client.api.create_host_config(
        mem_limit=64 * 2**20, mem_reservation=32 * 2**20, memswap_limit=64 * 2**20, nano_cpus=10**9,
        cpu_shares=256, network_mode="none", security_opt=["no-new-privileges"],
    )
    t = time.perf_counter()
    for _ in range(n):
        cid = client.api.create_container(image, ["/bin/sh", "-c", command], host_config=hc, network_disabled=True)["Id"]
        client.api.start(cid)
        client.api.wait(cid)
        client.api.remove_container(cid, force=True)
    return time.perf_counter() - t


def ours(adapter: DockerAdapter, image: str, n: int, command: str, concurrency: int = 1) -> float:
    out = Path(tempfile.mkdtemp(prefix="em-bench-"))
    try:
        t = time.perf_counter()
        res = adapter.run(manifest(image, n, command, concurrency), out / "run", concurrency=concurrency, progress=False)
        dt = time.perf_counter() - t
        assert res.status == "complete" and res.counts["success"] == n, res
        return dt
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=20, help="trials per round (overhead)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sleep", type=float, default=2.0)
    ap.add_argument("--sleep-trials", type=int, default=8)
    args = ap.parse_args()

    client = docker_client()
    image = ensure_test_image(client)
    adapter = DockerAdapter(client=client, progress=False)
    ours(adapter, image, 2, "true")  # warm-up
    bare(client, image, 2, "true")

    print(f"1. per-trial overhead, command `true`, {args.rounds} alternating rounds x {args.trials} trials")
    b_times, o_times = [], []
    for r in range(args.rounds):
        pair = [("bare", lambda: bare(client, image, args.trials, "true")),
                ("ours", lambda: ours(adapter, image, args.trials, "true"))]
        if r % 2:
            pair.reverse()
        for name, fn in pair:
            (b_times if name == "bare" else o_times).append(fn() / args.trials)
    b, o = statistics.median(b_times), statistics.median(o_times)
    print(f"   bare SDK create/start/wait/rm : {b * 1000:7.1f} ms/trial (median of rounds)")
    print(f"   evalmanifest trial            : {o * 1000:7.1f} ms/trial")
    print(f"   ratio                         : {o / b:.2f}x   (target <= 1.2x)")

    n, s = args.sleep_trials, args.sleep
    print(f"2. throughput, {n} trials of `sleep {s:g}`")
    seq = ours(adapter, image, n, f"sleep {s:g}", 1)
    par = ours(adapter, image, n, f"sleep {s:g}", 4)
    print(f"   sequential      : {seq:6.2f} s ({n / seq:.2f} trials/s)")
    print(f"   concurrency 4   : {par:6.2f} s ({n / par:.2f} trials/s)")
    print(f"   speed-up        : {seq / par:.2f}x   (target >= 3x; ideal 4x)")


if __name__ == "__main__":
    main()
