"""The probe script against synthetic cgroup v1/v2 trees, and its parser."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from evalmanifest.capture import capture_local, parse_probe, probe_script, probe_summary

SHELLS = [s for s in ("sh", "dash", "bash", "busybox") if shutil.which(s)]


def _write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def _run(shell: str, cg: Path, proc: Path) -> dict[str, str]:
    argv = [shutil.which(shell), "sh", "-s"] if shell == "busybox" else [shutil.which(shell), "-s"]
    r = subprocess.run(
        argv,
        input=probe_script(),
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PROBE_CGROUP_ROOT": str(cg), "PROBE_PROC": str(proc), "SECRET_X": "hunter2"},
        timeout=30,
    )
    assert r.returncode == 0
    assert "hunter2" not in r.stdout
    return parse_probe(r.stdout)


@pytest.fixture
def v2_tree(tmp_path: Path) -> tuple[Path, Path]:
    cg, proc = tmp_path / "cg", tmp_path / "proc"
    _write(proc, "self/cgroup", "0::/kubepods.slice/pod1/cri-x.scope\n")
    _write(proc, "meminfo", "MemTotal:       8000000 kB\nMemAvailable:   7000000 kB\nSwapTotal: 0 kB\n")
    _write(proc, "cpuinfo", "processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: fpu hypervisor\n\nprocessor\t: 1\n")
    _write(proc, "vmstat", "nr_free_pages 1\noom_kill 7\n")
    _write(proc, "self/status", "Name:\tsh\nCpus_allowed_list:\t0-1\n")
    d = "kubepods.slice/pod1/cri-x.scope"
    _write(cg, "cgroup.controllers", "cpu memory pids\n")
    _write(cg, f"{d}/memory.max", "268435456\n")
    _write(cg, f"{d}/memory.low", "134217728\n")
    _write(cg, f"{d}/memory.high", "max\n")
    _write(cg, f"{d}/memory.swap.max", "0\n")
    _write(cg, f"{d}/memory.peak", "200000000\n")
    _write(cg, f"{d}/memory.events", "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n")
    _write(cg, f"{d}/cpu.max", "150000 100000\n")
    _write(cg, f"{d}/cpu.weight", "79\n")
    _write(cg, f"{d}/cpu.stat", "usage_usec 10\nnr_periods 5\nnr_throttled 3\nthrottled_usec 400\n")
    _write(cg, f"{d}/pids.max", "max\n")
    _write(cg, f"{d}/memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00\n")
    return cg, proc


@pytest.mark.parametrize("shell", SHELLS)
def test_probe_v2_synthetic(shell: str, v2_tree: tuple[Path, Path]) -> None:
    p = _run(shell, *v2_tree)
    assert p["cgroup.mode"] == "v2"
    assert p["cgroup.path"] == "/kubepods.slice/pod1/cri-x.scope"
    assert p["cg2.memory.max"] == "268435456"
    assert p["cg2.memory.high"] == "unlimited"
    assert p["cg2.pids.max"] == "unlimited"
    assert p["cg2.memory.events.oom_kill"] == "1"
    assert p["cg2.cpu.stat.nr_throttled"] == "3"
    assert p["cg2.memory.pressure.some"] == "avg10=0.00 avg60=0.00 avg300=0.00 total=0"
    assert p["eff.memory_limit_bytes"] == "268435456"
    assert p["eff.cpu_limit_millicores"] == "1500"
    assert p["eff.oom_kill_count"] == "1"
    assert p["vmstat.oom_kill"] == "7"
    assert p["cpu.cpuinfo_count"] == "2"
    assert p["cpu.model"] == "Test CPU"
    assert p["hint.cpu_hypervisor_flag"] == "1"
    assert p["mem.total_kb"] == "8000000"
    assert p["probe.end"] == "1"
    s = probe_summary(p)
    assert s["memory_floor_bytes"] == 134217728
    assert s["swap_limit_bytes"] == 0
    assert s["pids_limit"] == "unlimited"
    assert s["cpu_weight"] == 79
    assert s["memory_peak_bytes"] == 200000000


@pytest.mark.parametrize("shell", SHELLS)
def test_probe_v1_synthetic_hierarchical_limit(shell: str, tmp_path: Path) -> None:
    cg, proc = tmp_path / "cg", tmp_path / "proc"
    _write(proc, "self/cgroup", "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/docker/abc\n")
    _write(cg, "memory/memory.limit_in_bytes", "9223372036854771712\n")
    _write(cg, "memory/memory.soft_limit_in_bytes", "9223372036854771712\n")
    _write(cg, "memory/memory.max_usage_in_bytes", "5000\n")
    _write(cg, "memory/memory.failcnt", "257\n")
    _write(cg, "memory/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
    _write(cg, "memory/memory.stat", "cache 0\nhierarchical_memory_limit 67108864\n")
    _write(cg, "cpu,cpuacct/cpu.cfs_quota_us", "-1\n")
    _write(cg, "cpu,cpuacct/cpu.cfs_period_us", "100000\n")
    _write(cg, "cpu,cpuacct/cpu.shares", "2048\n")
    p = _run(shell, cg, proc)
    assert p["cgroup.mode"] == "v1"
    assert p["cg1.memory.limit_in_bytes"] == "unlimited"
    assert p["cg1.memory.stat.hierarchical_memory_limit"] == "67108864"
    assert p["eff.memory_limit_bytes"] == "67108864"  # the tighter hierarchical (pod-level) limit
    assert p["eff.cpu_limit_millicores"] == "unlimited"
    assert p["eff.oom_kill_count"] == "1"
    assert p["cg1.memory.failcnt"] == "257"
    assert probe_summary(p)["cpu_shares"] == 2048


def test_probe_without_cgroups_never_fails(tmp_path: Path) -> None:
    p = _run("sh", tmp_path / "nothing", tmp_path / "noproc")
    assert p["cgroup.mode"] == "none"
    assert "eff.memory_limit_bytes" not in p
    assert p["probe.end"] == "1"


def test_parse_splits_on_first_equals_and_filters() -> None:
    text = "\n".join(
        [
            "cg2.memory.pressure.some=avg10=1.00 total=3",
            "no equals sign here",
            "PATH=/usr/bin",  # not a probe key
            "evil.key=1",  # unknown prefix
            "host.name=box",
            "os.pretty_name=AWS_SECRET_ACCESS_KEY=abc",  # env assignment smuggled in a value
            "cpu.model=token xyz",  # credential-like
            "kernel.release=6.1=x",
        ]
    )
    p = parse_probe(text)
    assert p == {
        "cg2.memory.pressure.some": "avg10=1.00 total=3",
        "host.name": "box",
        "kernel.release": "6.1=x",
    }


def test_capture_local_has_host_facts_and_no_env_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALMANIFEST_TEST_SECRET", "s3cr3t-value")
    c = capture_local()
    assert c["host"]["kernel"]
    assert c["probe"]["probe.end"] == "1"
    assert "s3cr3t-value" not in repr(c)


@pytest.mark.parametrize(("allowed", "n"), [("0-1", "2"), ("0-3,6,8-9", "7"), ("5", "1")])
def test_probe_counts_allowed_cpus_without_nproc(tmp_path: Path, allowed: str, n: str) -> None:
    proc = tmp_path / "proc"
    _write(proc, "self/status", f"Name:\tsh\nCpus_allowed_list:\t{allowed}\n")
    _write(proc, "self/limits", "Limit  Soft Limit  Hard Limit  Units\nMax processes  4096  4096  processes\nMax open files  1024  4096  files\n")
    p = _run("sh", tmp_path / "cg", proc)
    assert p["cpu.nproc"] == n
    assert p["proc.self_cpus_allowed"] == allowed
    assert p["ulimit.nofile"] == "1024"
    assert p["ulimit.nproc"] == "4096"
