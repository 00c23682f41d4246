"""Columnar reader of ``trials.jsonl`` for the reporter (10^6 rows in about a second).

The reporter needs only the leading scalar fields of each trial record (task id, attempt, try index,
final flag, outcome, infra cause, start/finish time). Decoding a million JSON objects with ``json`` costs
~10-20 µs each; this reader instead matches each line against one anchored regular expression for the
field order the TrialRecord model serialises in (``TrialRecord.model_dump_json()`` and
``json.dumps(record.model_dump())``, compact or spaced). Because the pattern is anchored at the opening
``{`` and consumes consecutive top-level scalar members, a match can only read top-level fields.

Every line the pattern does not match (other key order, escapes in the task id, non-UTC offsets, ...)
is decoded with ``json`` and validated in full with :class:`~evalmanifest.models.TrialRecord`, so the
result never depends on which path a line took. The fast path checks the fields it reads (types, the
outcome and infra-cause vocabularies, ``infra_cause`` only on infra errors) and that the line is a
single ``{...}`` object; it does not re-validate nested observation objects, which the statistics do not
use (``evalmanifest validate``/``verify`` do).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from evalmanifest.errors import ReportError, RunDirectoryError
from evalmanifest.reports.stats import FAILURE, INFRA_ERROR, SUCCESS, TaskTable

OUTCOME_CODES = {b"success": SUCCESS, b"failure": FAILURE, b"timeout": FAILURE, b"infra_error": INFRA_ERROR}
#: per-row outcome kinds (finer than the codes): 0 success, 1 failure, 2 timeout, 3 infra_error
OUTCOME_KIND = {b"success": 0, b"failure": 1, b"timeout": 2, b"infra_error": 3}
KIND_NAMES = ("success", "failure", "timeout", "infra_error")
INFRA_CAUSES = (
    "oom_at_ceiling",
    "oom_system",
    "evicted",
    "preempted",
    "unschedulable",
    "admission_rejected",
    "killed_other",
    "sandbox_failed",
    "provider_error",
    "unknown",
)
_CAUSE_CODE = {c.encode(): i for i, c in enumerate(INFRA_CAUSES)}

_S = rb"[ \t]*"
_NUM = rb"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?"
_TS = rb'"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.\d{1,9})?(?:Z|\+00:00)"'
_LINE = re.compile(
    rb"^\{" + _S
    + rb'"task_id"' + _S + rb":" + _S + rb'"([A-Za-z0-9][A-Za-z0-9._/\-]*)"' + _S + rb"," + _S
    + rb'"attempt"' + _S + rb":" + _S + rb"(0|[1-9]\d*)" + _S
    + rb"(?:," + _S + rb'"try_index"' + _S + rb":" + _S + rb"(0|[1-9]\d*)" + _S + rb")?"
    + rb"(?:," + _S + rb'"final"' + _S + rb":" + _S + rb"(true|false)" + _S + rb")?"
    + rb"," + _S + rb'"outcome"' + _S + rb":" + _S + rb'"(success|failure|timeout|infra_error)"' + _S
    + rb"(?:," + _S + rb'"infra_cause"' + _S + rb":" + _S + rb'(?:null|"([a-z_]+)")' + _S + rb")?"
    + rb"(?:," + _S + rb'"reward"' + _S + rb":" + _S + rb"(?:null|" + _NUM + rb")" + _S + rb")?"
    + rb"(?:," + _S + rb'"exit_code"' + _S + rb":" + _S + rb"(?:null|-?\d+)" + _S + rb")?"
    + rb"(?:," + _S + rb'"started_at"' + _S + rb":" + _S + rb"(?:null|" + _TS + rb")" + _S + rb")?"
    + rb"(?:," + _S + rb'"finished_at"' + _S + rb":" + _S + rb"(?:null|" + _TS + rb")" + _S + rb")?"
    + rb"(?:,[^\n]*)?\}[ \t\r]*$",
    re.MULTILINE,
)


@dataclass(frozen=True)
class TrialColumns:
    """Final tries of one run as columns (row j = one attempt)."""

    task_names: tuple[str, ...]
    """Sorted unique task ids; ``task_index`` points into this."""
    task_index: np.ndarray
    attempt: np.ndarray
    kind: np.ndarray
    """0 success, 1 failure, 2 timeout, 3 infra_error."""
    cause: np.ndarray
    """Index into INFRA_CAUSES, -1 when not an infra error."""
    started: np.ndarray
    """Seconds since the epoch (float, NaN when unknown)."""
    finished: np.ndarray
    n_retried_tries: int
    """Superseded tries (``final: false``): infra errors that were retried."""
    n_lines: int
    n_fast: int
    """Lines read by the anchored fast path (the rest were fully validated with pydantic)."""

    @property
    def codes(self) -> np.ndarray:
        out = np.zeros(self.kind.shape, dtype=np.int8)
        out[self.kind == 0] = SUCCESS
        out[self.kind == 3] = INFRA_ERROR
        return out

    def task_table(self) -> TaskTable:
        return TaskTable.from_codes(self.task_index, self.task_names, self.codes)


def _epoch(ts: list[bytes | None]) -> np.ndarray:
    out = np.full(len(ts), np.nan)
    present = [i for i, t in enumerate(ts) if t]
    if present:
        arr = np.array([ts[i] for i in present], dtype="S19").astype("U19").astype("datetime64[s]")
        out[np.asarray(present, dtype=np.int64)] = arr.astype(np.int64).astype(float)
    return out


def _parse_ts_slow(v: str | None) -> float:
    if not v:
        return float("nan")
    try:
        dt = datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        return float("nan")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return float(int(dt.timestamp()))


def read_trials(path: str | Path) -> TrialColumns:
    """Read ``trials.jsonl``; raise :class:`RunDirectoryError` naming file and line on bad records."""
    from evalmanifest.models import TrialRecord  # local: keeps `stats` importable without pydantic models

    path = Path(path)
    try:
        buf = path.read_bytes()
    except OSError as exc:
        raise RunDirectoryError(f"{path}: cannot read trials: {exc.strerror or exc}") from None
    # line starts (for error locations and for telling matched from unmatched lines)
    nl = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8) == 10)
    starts = np.concatenate([[0], nl + 1])
    if starts[-1] >= len(buf):
        starts = starts[:-1]
    # drop blank lines
    n_lines = int(starts.size)

    rows = _LINE.findall(buf)
    fast_ok = len(rows) == n_lines
    task_b: list[bytes]
    if fast_ok:
        task_b = [r[0] for r in rows]
        attempt = np.array([r[1] for r in rows], dtype=np.int64) if rows else np.zeros(0, np.int64)
        try_b = [r[2] for r in rows]
        final = np.array([r[3] != b"false" for r in rows], dtype=bool)
        kind = np.array([OUTCOME_KIND[r[4]] for r in rows], dtype=np.int8)
        cause_b = [r[5] for r in rows]
        started = _epoch([r[6] for r in rows])
        finished = _epoch([r[7] for r in rows])
        n_fast = n_lines
        try_index = np.array([int(t) if t else 0 for t in try_b], dtype=np.int64) if any(try_b) else np.zeros(
            n_lines, np.int64
        )
        cause = np.full(n_lines, -1, dtype=np.int16)
        if any(cause_b):
            for i, c in enumerate(cause_b):
                if c:
                    if c not in _CAUSE_CODE:
                        raise RunDirectoryError(
                            f"{path}:{i + 1}: $.infra_cause: {c.decode()!r} is not one of {', '.join(INFRA_CAUSES)}"
                        )
                    cause[i] = _CAUSE_CODE[c]
    else:
        task_b, attempt_l, try_l, final_l, kind_l, cause_l, st_l, fi_l = [], [], [], [], [], [], [], []
        n_fast = 0
        lines = buf.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        for lineno, line in enumerate(lines, start=1):
            m = _LINE.fullmatch(line.rstrip(b"\r")) if line.strip() else None
            if m is not None:
                n_fast += 1
                g = m.groups()
                task_b.append(g[0])
                attempt_l.append(int(g[1]))
                try_l.append(int(g[2]) if g[2] else 0)
                final_l.append(g[3] != b"false")
                kind_l.append(OUTCOME_KIND[g[4]])
                if g[5] is not None and g[5] not in _CAUSE_CODE:
                    raise RunDirectoryError(
                        f"{path}:{lineno}: $.infra_cause: {g[5].decode()!r} is not one of {', '.join(INFRA_CAUSES)}"
                    )
                cause_l.append(_CAUSE_CODE[g[5]] if g[5] else -1)
                st_l.append(_parse_ts_slow(g[6].decode() + "Z") if g[6] else float("nan"))
                fi_l.append(_parse_ts_slow(g[7].decode() + "Z") if g[7] else float("nan"))
                continue
            if not line.strip():
                raise RunDirectoryError(f"{path}:{lineno}: blank line in trials.jsonl")
            try:
                rec = TrialRecord.model_validate_json(line)
            except Exception as exc:  # pydantic.ValidationError or JSON errors
                first = str(exc).splitlines()
                detail = "; ".join(s.strip() for s in first[1:3]) if len(first) > 1 else str(exc)
                raise RunDirectoryError(f"{path}:{lineno}: invalid trial record: {detail}") from None
            task_b.append(rec.task_id.encode())
            attempt_l.append(rec.attempt)
            try_l.append(rec.try_index)
            final_l.append(rec.final)
            kind_l.append(OUTCOME_KIND[rec.outcome.encode()])
            cause_l.append(INFRA_CAUSES.index(rec.infra_cause) if rec.infra_cause else -1)
            st_l.append(_parse_ts_slow(rec.started_at))
            fi_l.append(_parse_ts_slow(rec.finished_at))
        n_lines = len(lines)
        attempt = np.array(attempt_l, dtype=np.int64)
        try_index = np.array(try_l, dtype=np.int64)
        final = np.array(final_l, dtype=bool)
        kind = np.array(kind_l, dtype=np.int8)
        cause = np.array(cause_l, dtype=np.int16)
        started = np.array(st_l, dtype=float)
        finished = np.array(fi_l, dtype=float)

    if n_lines == 0:
        raise RunDirectoryError(f"{path}: no trial records")
    bad_cause = np.flatnonzero((cause >= 0) & (kind != 3))
    if bad_cause.size:
        raise RunDirectoryError(
            f"{path}:{int(bad_cause[0]) + 1}: $.infra_cause: set on a trial whose outcome is not infra_error"
        )
    tarr = np.array(task_b, dtype=object)
    names, tidx = np.unique(tarr, return_inverse=True)
    task_names = tuple(n.decode() for n in names)
    n_retried = int((~final).sum())
    keep = final
    tidx, attempt, kind, cause = tidx[keep], attempt[keep], kind[keep], cause[keep]
    started, finished = started[keep], finished[keep]
    # one final try per (task, attempt)
    key = tidx.astype(np.int64) * (int(attempt.max(initial=0)) + 1) + attempt
    uk, counts = np.unique(key, return_counts=True)
    if np.any(counts > 1):
        dup = uk[counts > 1][0]
        span = int(attempt.max(initial=0)) + 1
        raise RunDirectoryError(
            f"{path}: duplicate final trial for task {task_names[int(dup // span)]!r} attempt {int(dup % span)}"
        )
    # tasks whose every try was non-final cannot be scored
    present = np.bincount(tidx, minlength=len(task_names)) > 0
    if not present.all():
        missing = [t for t, p in zip(task_names, present) if not p]
        raise ReportError(f"{path}: task(s) with no final try: {', '.join(missing[:5])}")
    del try_index
    return TrialColumns(
        task_names=task_names,
        task_index=tidx.astype(np.int64),
        attempt=attempt,
        kind=kind,
        cause=cause,
        started=started,
        finished=finished,
        n_retried_tries=n_retried,
        n_lines=n_lines,
        n_fast=n_fast,
    )
