"""What diff and compare read: a manifest file or a run directory (manifest + environment + trials + run)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from evalmanifest.errors import ReportError, RunDirectoryError

MANIFEST_NAMES = ("manifest.yaml", "manifest.yml", "manifest.json")


@dataclass
class Side:
    label: str
    path: Path
    manifest: Any  # EvalManifest
    is_run: bool
    environment: Any | None = None  # Environment
    info: Any | None = None  # RunInfo
    _trials: Any | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return str(self.manifest.metadata.name)

    def trials(self) -> Any:
        """TrialColumns of the run (run directories only)."""
        if not self.is_run:
            raise ReportError(f"{self.path}: a manifest has no trials; compare needs run directories")
        if self._trials is None:
            from evalmanifest.reports.trials_table import read_trials

            p = self.path / "trials.jsonl"
            if not p.is_file():
                raise RunDirectoryError(f"{self.path}: run directory has no trials.jsonl")
            self._trials = read_trials(p)
        return self._trials


#: Trial files at least this large are read in parallel (one process per run) when cores allow.
PARALLEL_MIN_BYTES = 64 * 1024 * 1024


def _read(path: str) -> Any:
    from evalmanifest.reports.trials_table import read_trials

    return read_trials(path)


class TrialPrefetch:
    """Start reading the trials of large runs in worker processes (fork, Linux) while the caller does
    other work (loading manifests); :meth:`fill` hands the columns to the sides. Results are identical
    to reading sequentially; worker errors are re-raised unchanged."""

    def __init__(self, paths: list[str | Path]) -> None:
        import multiprocessing as mp
        import os

        self.files = [Path(p) / "trials.jsonl" for p in paths]
        self.pool: Any = None
        self.async_result: Any = None
        big = all(f.is_file() and f.stat().st_size >= PARALLEL_MIN_BYTES for f in self.files)
        if len(self.files) >= 2 and big and (os.cpu_count() or 1) >= 2 and "fork" in mp.get_all_start_methods():
            self.pool = mp.get_context("fork").Pool(processes=min(len(self.files), os.cpu_count() or 1))
            self.async_result = self.pool.map_async(_read, [str(f) for f in self.files])

    def fill(self, sides: list[Side]) -> None:
        if self.async_result is not None:
            for side, cols in zip(sides, self.async_result.get()):
                side._trials = cols
        self.close()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
            self.pool = None

    def __enter__(self) -> TrialPrefetch:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def preload_trials(*sides: Side) -> None:
    """Read the trials of several runs (in parallel processes when the files are large)."""
    todo = [s for s in sides if s.is_run and s._trials is None and (s.path / "trials.jsonl").is_file()]
    with TrialPrefetch([s.path for s in todo]) as pf:
        pf.fill(todo)
    for s in todo:
        s.trials()


def check_run_consistency(side: Side) -> None:
    """``run.json`` is not itself digested: its manifest digest and outcome counts must agree with the
    files it describes, or the run was edited after it finished."""
    info = side.info
    if not side.is_run or info is None:
        return
    from evalmanifest.canonical import digest

    got = digest(side.manifest)
    if info.manifest_digest != got:
        raise RunDirectoryError(f"{side.path / 'run.json'}: manifest_digest {info.manifest_digest} does not match "
                                f"manifest.yaml ({got}); the run cannot be trusted")
    if info.status == "running":
        return  # counts are written when the run finishes
    from evalmanifest.reports.trials_table import KIND_NAMES

    kinds = np.bincount(side.trials().kind.astype(np.int64), minlength=4)
    have = {KIND_NAMES[i]: int(kinds[i]) for i in range(4)}
    want = info.counts.model_dump()
    if {k: want.get(k, 0) for k in have} != have:
        raise RunDirectoryError(f"{side.path / 'run.json'}: counts {want} do not match trials.jsonl ({have}); "
                                "the run cannot be trusted")


def load_side(path: str | Path, label: str) -> Side:
    from evalmanifest.loading import load_manifest
    from evalmanifest.rundir import load_json_document, verify_files

    p = Path(path)
    if p.is_dir():
        mp = next((p / n for n in MANIFEST_NAMES if (p / n).is_file()), None)
        if mp is None:
            raise RunDirectoryError(f"{p}: not a run directory (no manifest.yaml)")
        manifest = load_manifest(mp, lint=False)
        env = load_json_document(p / "environment.json", "environment") if (p / "environment.json").is_file() else None
        info = load_json_document(p / "run.json", "run") if (p / "run.json").is_file() else None
        if info is not None:
            verify_files(p, info)
        return Side(label=label, path=p, manifest=manifest, is_run=True, environment=env, info=info)
    if p.is_file():
        return Side(label=label, path=p, manifest=load_manifest(p), is_run=False)
    raise ReportError(f"{p}: no such manifest file or run directory")


def not_honoured(side: Side, limit: int = 20) -> dict[str, Any]:
    """Declared-vs-observed: trials whose captured limits did not honour the manifest.

    Reads the ``observed`` maps of trials.jsonl (only the lines that contain ``"honoured": false`` are
    decoded) and the per-trial observations of environment.json.
    """
    out: dict[str, Any] = {"checked": False, "n_trials_not_honoured": 0, "by_resource": {}, "examples": []}
    if not side.is_run:
        return out
    by_res: dict[str, int] = {}
    examples: list[dict[str, Any]] = []
    seen: set[tuple[str, int, int]] = set()

    def add(task: str, attempt: int, try_index: int, res: str, obs: dict[str, Any], where: str) -> None:
        by_res[res] = by_res.get(res, 0) + 1
        seen.add((task, attempt, try_index))
        if len(examples) < limit:
            examples.append(
                {
                    "task_id": task,
                    "attempt": attempt,
                    "resource": res,
                    "declared_floor": obs.get("declared_floor"),
                    "declared_ceiling": obs.get("declared_ceiling"),
                    "observed_floor": obs.get("observed_floor"),
                    "observed_ceiling": obs.get("observed_ceiling"),
                    "note": obs.get("note"),
                    "source": where,
                }
            )

    tc = side.trials()
    any_observed = tc.any_observed
    for line in tc.unhonoured_lines:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        key = (rec.get("task_id"), rec.get("attempt"), rec.get("try_index", 0))
        if key in seen:
            continue
        for res, obs in sorted((rec.get("observed") or {}).items()):
            if isinstance(obs, dict) and obs.get("honoured") is False:
                add(str(key[0]), int(key[1]), int(key[2] or 0), res, obs, "trials.jsonl")
    if side.environment is not None:
        for t in side.environment.trials:
            if t.resources:
                any_observed = True
            for res, obs in sorted(t.resources.items()):
                if obs.honoured is False and (t.task_id, t.attempt, t.try_index) not in seen:
                    add(t.task_id, t.attempt, t.try_index, res, obs.model_dump(), "environment.json")
    out.update(
        checked=any_observed,
        n_trials_not_honoured=len(seen),
        by_resource=dict(sorted(by_res.items())),
        examples=examples,
    )
    return out


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_window(side: Side) -> dict[str, Any]:
    """When the run actually ran (UTC), and what its manifest's schedule declared."""
    sched = side.manifest.schedule
    declared = [{"start": w.start, "end": w.end} for w in sched.windows]
    out: dict[str, Any] = {"declared": declared, "timezone": sched.timezone, "observed": None}
    if not side.is_run:
        return out
    tc = side.trials()
    st = tc.started[np.isfinite(tc.started)]
    fi = tc.finished[np.isfinite(tc.finished)]
    if st.size == 0:
        return out
    hours = ((st // 3600) % 24).astype(np.int64)
    days = np.unique((st // 86400).astype(np.int64))
    end = float(fi.max()) if fi.size else float(st.max())
    out["observed"] = {
        "start": iso(float(st.min())),
        "end": iso(end),
        "span_hours": round((end - float(st.min())) / 3600.0, 3),
        "dates": [iso(float(d) * 86400)[:10] for d in days[:50]],
        "n_dates": int(days.size),
        "trials_by_hour_utc": [int(x) for x in np.bincount(hours, minlength=24)],
        "n_trials_with_time": int(st.size),
    }
    return out
