"""Executing a manifest on Docker: the trial lifecycle, the run loop, resume, signals and orphan GC.

One trial: create (never auto-remove) -> copy wrapper + probe into ``/.evalmanifest`` -> inspect the
HostConfig as admitted -> start -> wait with the task deadline (on expiry: ``docker stop`` = SIGTERM, grace,
SIGKILL) -> inspect ``State`` -> read probe output, exit code and reward file from the stopped container ->
remove. A trial interrupted by SIGINT/SIGTERM is not recorded (``--resume`` runs it again), and its
container is removed.
"""

from __future__ import annotations

import copy
import io
import json
import os
import secrets
import signal
import sys
import tarfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from evalmanifest.adapters import _identity
from evalmanifest.adapters.base import RunResult
from evalmanifest.adapters.docker import (
    HOSTCONFIG_FIELDS,
    L_DIGEST,
    L_MANAGED,
    L_RUN_ID,
    L_RUNNER_HOST,
    L_RUNNER_PID,
    L_RUNNER_START,
    L_TRY,
    STATE_FIELDS,
    Evidence,
    classify,
    container_name,
    observe,
    pick,
    split_log,
)
from evalmanifest.canonical import digest
from evalmanifest.capture import parse_probe, probe_summary
from evalmanifest.errors import AdapterError
from evalmanifest.models.manifest import EvalManifest
from evalmanifest.models.trial import TrialRecord

OUTCOMES = ("success", "failure", "timeout", "infra_error")
MAX_REWARD_BYTES = 1 << 20
LOG_TAIL_LINES = 600


def utcnow() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# --- runner identity (for orphan detection) -----------------------------------------------------------
def runner_identity() -> dict[str, str]:
    return {L_RUNNER_HOST: _identity.hostname(), L_RUNNER_PID: str(os.getpid()), L_RUNNER_START: _identity.start_token()}


def runner_alive(labels: dict[str, str]) -> bool | None:
    """True/False for a runner on this host; None when it ran elsewhere (cannot tell)."""
    return _identity.process_alive(labels.get(L_RUNNER_HOST), labels.get(L_RUNNER_PID), labels.get(L_RUNNER_START))


def gc_orphans(client, all_hosts: bool = False, run_id: str | None = None) -> list[str]:
    """Remove evalmanifest containers whose runner is gone. With ``all_hosts`` also those started from other
    machines (whose liveness cannot be checked). With ``run_id`` only that run's. Returns removed names."""
    filters = {"label": [f"{L_MANAGED}=1"] + ([f"{L_RUN_ID}={run_id}"] if run_id else [])}
    removed = []
    for c in client.api.containers(all=True, filters=filters):
        labels = c.get("Labels") or {}
        alive = runner_alive(labels)
        if alive is True or (alive is None and not all_hosts):
            continue
        try:
            client.api.remove_container(c["Id"], force=True, v=True)
            removed.append((c.get("Names") or [c["Id"][:12]])[0].lstrip("/"))
        except Exception:  # already gone (another gc, or a racing runner)
            pass
    return removed


# --- one trial ------------------------------------------------------------------------------------------
def _read_archive(api, cid: str, path: str, limit: int) -> dict[str, bytes]:
    """name -> bytes of the regular files under ``path`` of a (stopped) container; {} when absent."""
    import docker.errors  # noqa: PLC0415

    try:
        stream, _stat = api.get_archive(cid, path)
    except docker.errors.NotFound:
        return {}
    buf = bytearray()
    for chunk in stream:
        buf += chunk
        if len(buf) > limit + 64 * 1024:
            break
    out: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(bytes(buf)), mode="r:") as tar:
            for m in tar:
                if m.isfile() and m.size <= limit:
                    f = tar.extractfile(m)
                    if f is not None:
                        out[m.name.rsplit("/", 1)[-1]] = f.read()
    except tarfile.TarError:
        pass
    return out


def parse_reward(data: bytes | None) -> float | None:
    if not data:
        return None
    text = data.decode("utf-8", "replace").strip()
    try:
        return float(text.split()[0])
    except (ValueError, IndexError):
        pass
    try:
        obj = json.loads(text)
        if isinstance(obj, dict) and isinstance(obj.get("reward"), (int, float)):
            return float(obj["reward"])
    except ValueError:
        pass
    return None


def _iso(ts: str | None) -> str | None:
    """Docker's nanosecond timestamps to microseconds; the zero time to None."""
    if not ts or ts.startswith("0001-"):
        return None
    base, _, frac = ts.rstrip("Z").partition(".")
    frac = (frac.split("+")[0] + "000000")[:6]
    return f"{base}.{frac}Z"


def _seconds_between(a: str | None, b: str | None) -> float | None:
    if not a or not b:
        return None
    fmt = "%Y-%m-%dT%H:%M:%S.%fZ"
    try:
        return max(0.0, (datetime.strptime(b, fmt) - datetime.strptime(a, fmt)).total_seconds())
    except ValueError:
        return None


@dataclass
class Job:
    task_id: str
    attempt: int
    start_try: int
    rendered: dict[str, Any]


class DockerRunner:
    def __init__(
        self,
        adapter,
        manifest: EvalManifest,
        out_dir: Path,
        concurrency: int | None = None,
        resume: bool = False,
        progress: bool | None = None,
        manifest_text: str | None = None,  # accepted for API symmetry; the run stores the canonical YAML
        install_signal_handlers: bool | None = None,
    ):
        self.adapter = adapter
        self.manifest = manifest
        self.out = Path(out_dir)
        self.concurrency = concurrency or manifest.concurrency.max_parallel_trials or 1
        if self.concurrency < 1:
            raise AdapterError("concurrency must be at least 1")
        self.resume = resume
        self.progress = sys.stderr.isatty() if progress is None else progress
        self.install_signal_handlers = (
            threading.current_thread() is threading.main_thread()
            if install_signal_handlers is None
            else install_signal_handlers
        )
        self.stop = threading.Event()
        self.inflight: dict[str, str] = {}  # container id -> name
        self.inflight_lock = threading.Lock()
        self.max_inflight = 0
        self.counts = {k: 0 for k in OUTCOMES}
        self.counts_lock = threading.Lock()
        self.identity = runner_identity()
        self.digest = digest(manifest)
        self._image_cmd: dict[str, list[str]] = {}

    # --- run directory -------------------------------------------------------------------------------
    def _environment(self, host: dict[str, Any]):
        from evalmanifest.models.environment import Environment  # noqa: PLC0415

        host = dict(host)
        trials = []
        for r in self.writer.records:
            probe = dict(r.details.get("probe") or {})
            if host.get("cpu_model") is None and probe.get("cpu.model"):
                host["cpu_model"] = probe["cpu.model"]  # docker info has no CPU model: first probe's view
            trials.append(
                {
                    "task_id": r.task_id,
                    "attempt": r.attempt,
                    "try_index": r.try_index,
                    "node": r.node,
                    "resources": {k: v.model_dump(mode="json") for k, v in r.observed.items()},
                    "peak_memory_bytes": r.peaks.get("memory_bytes"),
                    "oom_kill_count": r.peaks.get("oom_kill_count"),
                    "probe": probe,
                }
            )
        return Environment.model_validate(
            {
                "apiVersion": "evalmanifest.dev/v1alpha1",
                "kind": "Environment",
                "adapter": "docker",
                "captured_at": utcnow(),
                "host": host,
                "trials": trials,
            }
        )

    # --- the loop ------------------------------------------------------------------------------------
    def _plan(self, done: list[TrialRecord]) -> list[Job]:
        by_key: dict[tuple[str, int], list[TrialRecord]] = {}
        for r in done:
            by_key.setdefault((r.task_id, r.attempt), []).append(r)
        retries = self.manifest.trials.infra_error_policy.retries
        jobs = []
        rendered_cache: dict[str, dict] = {}
        for t in self.manifest.tasks:
            for a in range(self.manifest.trials.attempts):
                tries = by_key.get((t.id, a), [])
                if any(r.final for r in tries):
                    continue
                start = max((r.try_index for r in tries), default=-1) + 1
                if start > retries:  # crashed after the last try was written as non-final: should not happen
                    start = retries
                if t.id not in rendered_cache:
                    rendered_cache[t.id] = self.adapter.render(self.manifest, t.id, 0)
                r = copy.deepcopy(rendered_cache[t.id])
                r["attempt"] = a
                r["config"]["Labels"]["io.evalmanifest.attempt"] = str(a)
                jobs.append(Job(t.id, a, start, r))
        return jobs

    def run(self) -> RunResult:
        from evalmanifest.adapters.docker import host_facts  # noqa: PLC0415
        from evalmanifest.rundir import RunWriter  # noqa: PLC0415

        # Render everything first: an unsupported method fails before any container or file exists.
        for t in self.manifest.tasks:
            self.adapter.render(self.manifest, t.id, 0)
        client = self.adapter.client
        self.api = client.api
        self.writer = RunWriter(self.out, self.manifest, adapter="docker", resume=self.resume)
        lock = self._lock_dir()
        try:
            return self._run_locked(client, host_facts(client))
        finally:
            self.writer.close()
            os.close(lock)

    def _lock_dir(self) -> int:
        """flock on the run directory itself (no extra file): one writer per run directory."""
        from evalmanifest.rundir import lock_run_dir  # noqa: PLC0415

        return lock_run_dir(self.out)

    def _run_locked(self, client, host: dict[str, Any]) -> RunResult:
        w = self.writer
        self.run_id = w.run_id
        self.host = host
        gc_orphans(client)  # crashed runners' containers, this run's included
        for r in w.records:
            if r.final:
                self.counts[r.outcome] += 1
        w.write_environment(self._environment(host))
        jobs = self._plan(w.records)
        total = len(w.completed()) + len(jobs)
        old_handlers = self._install_handlers()
        prog = self._progress(total, len(w.completed()))
        try:
            with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="em-docker") as ex:
                try:
                    pending = set()
                    it = iter(jobs)
                    for job in it:
                        pending.add(ex.submit(self._job, job, prog))
                        if len(pending) >= self.concurrency:
                            break
                    while pending:
                        finished, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                        for fut in finished:
                            fut.result()  # re-raise worker bugs
                        if not self.stop.is_set():
                            for job in it:
                                pending.add(ex.submit(self._job, job, prog))
                                if len(pending) >= self.concurrency:
                                    break
                except BaseException:
                    # KeyboardInterrupt (no handler installed) or a worker bug: stop before the executor
                    # waits for its threads, or they would block until their containers finish
                    self.stop.set()
                    self._kill_inflight()
                    raise
        finally:
            if prog is not None:
                prog[0].stop()
            self._restore_handlers(old_handlers)
            status = "interrupted" if self.stop.is_set() else "complete"
            w.write_environment(self._environment(host))
            info = w.finish(status)
        return RunResult(
            self.out, self.run_id, info.status, info.counts.model_dump(), {"max_inflight": self.max_inflight}
        )

    # --- signals -------------------------------------------------------------------------------------
    def _install_handlers(self):
        if not self.install_signal_handlers:
            return None
        old = {}

        def handler(signum, frame):
            if not self.stop.is_set():
                self.stop.set()
                threading.Thread(target=self._kill_inflight, daemon=True).start()

        for s in (signal.SIGINT, signal.SIGTERM):
            old[s] = signal.signal(s, handler)
        return old

    def _restore_handlers(self, old) -> None:
        if old:
            for s, h in old.items():
                signal.signal(s, h)

    def _kill_inflight(self) -> None:
        with self.inflight_lock:
            ids = list(self.inflight)
        for cid in ids:
            try:
                self.api.kill(cid)
            except Exception:
                pass

    # --- progress ------------------------------------------------------------------------------------
    def _progress(self, total: int, completed: int):
        if not self.progress:
            return None
        from rich.console import Console  # noqa: PLC0415
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: PLC0415

        p = Progress(
            TextColumn("[bold]docker[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
        )
        tid = p.add_task(self._counts_text(), total=total, completed=completed)
        p.start()
        return (p, tid)

    def _counts_text(self) -> str:
        c = self.counts
        return (
            f"[green]success {c['success']}[/] [red]failure {c['failure']}[/] "
            f"[yellow]timeout {c['timeout']}[/] [magenta]infra {c['infra_error']}[/]"
        )

    # --- one job (all tries of one attempt) ----------------------------------------------------------
    def _job(self, job: Job, prog) -> None:
        retries = self.manifest.trials.infra_error_policy.retries
        for try_index in range(job.start_try, retries + 1):
            if self.stop.is_set():
                return
            rec = self._trial(job, try_index)
            if rec is None:  # interrupted: not recorded, resume runs it again
                return
            final = not (rec.outcome == "infra_error" and try_index < retries)
            rec.final = final
            if rec.outcome == "infra_error" and final:
                rec.details["infra_error_policy_then"] = self.manifest.trials.infra_error_policy.then
            with self.counts_lock:
                self.writer.append(rec)  # flush + fsync before the next try starts
                if final:
                    self.counts[rec.outcome] += 1
                if prog is not None and final:
                    prog[0].update(prog[1], advance=1, description=self._counts_text())
            if final:
                return

    def _image_default_cmd(self, image: str) -> list[str]:
        if image not in self._image_cmd:
            cfg = self.api.inspect_image(image).get("Config") or {}
            self._image_cmd[image] = list(cfg.get("Entrypoint") or []) + list(cfg.get("Cmd") or [])
        return self._image_cmd[image]

    def _trial(self, job: Job, try_index: int) -> TrialRecord | None:
        import docker.errors  # noqa: PLC0415
        import requests.exceptions  # noqa: PLC0415

        r = job.rendered
        config = copy.deepcopy(r["config"])
        config["Labels"].update(
            {L_RUN_ID: self.run_id, L_TRY: str(try_index), L_DIGEST: self.digest, **self.identity}
        )
        name = container_name(self.run_id, job.task_id, job.attempt, try_index) + "-" + secrets.token_hex(2)
        timeout = r["timeout_sec"]
        grace = r["kill_grace_sec"]
        details: dict[str, Any] = {"container_name": name, "method": r["method"], "timeout_sec": timeout}
        if r["notes"]:
            details["notes"] = list(r["notes"])
        api = self.api
        cid = None
        started_wall = utcnow()
        ev = Evidence(
            success_kind=r["success"]["kind"],
            threshold=r["success"].get("threshold", 1.0),
            oom_at_ceiling_counts_as=self.manifest.trials.oom_at_ceiling_counts_as,
        )
        hc: dict[str, Any] = {}
        probe: dict[str, str] = {}
        try:
            if config.get("Cmd") is None:
                config["Cmd"] = self._image_default_cmd(config["Image"])
            cid = api.create_container_from_config(config, name=name)["Id"]
            with self.inflight_lock:
                self.inflight[cid] = name
                self.max_inflight = max(self.max_inflight, len(self.inflight))
            details["container_id"] = cid[:12]
            if self.stop.is_set():
                return None
            api.start(cid)
            if self.stop.is_set():  # interrupted between create and start: _kill_inflight may have missed it
                api.kill(cid)
                return None
            t0 = time.monotonic()
            try:
                res = api.wait(cid, timeout=timeout)
                ev.exit_code = res.get("StatusCode")
            except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
                if self.stop.is_set():
                    return None
                if timeout is None or time.monotonic() - t0 < 0.98 * timeout:
                    raise  # the engine connection failed: not a deadline
                ev.timed_out = True
                try:
                    api.stop(cid, timeout=max(0, int(round(grace))))
                except Exception:
                    api.kill(cid)
                res = api.wait(cid, timeout=max(30.0, grace + 30))
                ev.exit_code = res.get("StatusCode")
            if self.stop.is_set():
                return None
            insp = api.inspect_container(cid)
            ev.state = pick(insp.get("State"), STATE_FIELDS)
            hc = pick(insp.get("HostConfig"), HOSTCONFIG_FIELDS)  # as admitted, read back from the engine
            ev.memory_limit = int(hc.get("Memory") or 0)
            tail = api.logs(cid, stdout=False, stderr=True, tail=LOG_TAIL_LINES).decode("utf-8", "replace")
            probe_text, reward_bytes = split_log(tail)
            if probe_text is not None:
                probe = parse_probe(probe_text)
            else:
                details["probe_missing"] = True
            if ev.success_kind == "reward_file" and r["success"].get("path"):
                if reward_bytes is None:  # wrapper killed before it could print it: read the file itself
                    got = _read_archive(api, cid, r["success"]["path"], MAX_REWARD_BYTES)
                    reward_bytes = next(iter(got.values()), None)
                ev.reward = parse_reward(reward_bytes)
        except (docker.errors.DockerException, requests.exceptions.RequestException) as e:
            if self.stop.is_set():
                return None
            ev.create_error = str(e)[:500]
            details["error"] = ev.create_error
        finally:
            if cid is not None:
                try:
                    api.remove_container(cid, force=True, v=True)
                except Exception as e:  # recorded; gc removes it later
                    details["remove_error"] = str(e)[:200]
                with self.inflight_lock:
                    self.inflight.pop(cid, None)
        ev.probe = probe
        outcome, cause, classification = classify(ev)
        if ev.success_kind == "exit_code" and outcome in ("success", "failure") and classification != "oom_at_ceiling":
            reward = 1.0 if outcome == "success" else 0.0
        else:
            reward = ev.reward
        summ = probe_summary(probe) if probe else {}
        peaks = {}
        for k_out, k_in in (("memory_bytes", "memory_peak_bytes"), ("oom_kill_count", "oom_kill_count")):
            if isinstance(summ.get(k_in), int):
                peaks[k_out] = summ[k_in]
        if probe.get("cg2.pids.peak", "").isdigit():
            peaks["pids"] = int(probe["cg2.pids.peak"])
        cpu_stat = {k.rsplit(".", 1)[1]: v for k, v in probe.items() if k.startswith(("cg1.cpu.stat.", "cg2.cpu.stat."))}
        details.update(
            {
                "classification": classification,
                "timed_out": ev.timed_out,
                "state": ev.state,
                "host_config": hc,
                "oom_killed": bool(ev.state.get("OOMKilled")),
                "cpu_stat": cpu_stat,
                "probe": probe,
            }
        )
        started = _iso(ev.state.get("StartedAt")) or started_wall
        finished = _iso(ev.state.get("FinishedAt")) or utcnow()
        rec = {
            "task_id": job.task_id,
            "attempt": job.attempt,
            "try_index": try_index,
            "outcome": outcome,
            "infra_cause": cause,
            "reward": reward,
            "exit_code": ev.exit_code if ev.exit_code is not None else ev.state.get("ExitCode"),
            "started_at": started,
            "finished_at": finished,
            "duration_sec": _seconds_between(started, finished),
            "node": self.host.get("hostname"),
            "observed": observe_for(self.adapter, self.manifest, job.task_id, r["method"], hc, probe),
            "peaks": peaks,
            "details": details,
        }
        return TrialRecord.model_validate(rec)


def observe_for(adapter, manifest, task_id: str, method: str, hc: dict, probe: dict) -> dict:
    if not hc:
        return {}
    rt = adapter.resolved_task(manifest, task_id)
    return observe(rt, method, hc, probe)


__all__ = ["DockerRunner", "gc_orphans", "runner_identity", "runner_alive"]
