"""TrialRecord: one line of ``trials.jsonl`` per attempt (and per infra retry of an attempt)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from evalmanifest.models._base import Model

Outcome = Literal["success", "failure", "timeout", "infra_error"]
InfraCause = Literal[
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
]
OUTCOMES: tuple[str, ...] = ("success", "failure", "timeout", "infra_error")
INFRA_CAUSES: tuple[str, ...] = InfraCause.__args__  # type: ignore[attr-defined]
Honoured = Literal[True, False, "unknown"]


class ResourceObservation(Model):
    """Declared vs observed for one resource of one trial (units: millicores, bytes, counts)."""

    declared_floor: int | None = None
    declared_ceiling: int | None = None
    observed_floor: int | None = None
    observed_ceiling: int | None = None
    honoured: Honoured = "unknown"
    note: str | None = None


class TrialRecord(Model):
    task_id: str = Field(min_length=1)
    attempt: int = Field(ge=0)
    """0-based attempt index (independent samples of the task)."""
    try_index: int = Field(default=0, ge=0)
    """0 for the first try of an attempt; n for its n-th infra-error retry."""
    final: bool = True
    """False for a try superseded by a retry; scores use only final tries."""
    outcome: Outcome
    infra_cause: InfraCause | None = None
    reward: float | None = None
    exit_code: int | None = None
    started_at: str | None = None
    """ISO 8601 UTC."""
    finished_at: str | None = None
    duration_sec: float | None = Field(default=None, ge=0)
    node: str | None = None
    observed: dict[str, ResourceObservation] = Field(default_factory=dict)
    """Per resource (`cpu`, `memory`, `pids`, ...): declared vs observed limits."""
    peaks: dict[str, int] = Field(default_factory=dict)
    """Peaks observed, e.g. `memory_bytes`, `pids`; `oom_kill_count`."""
    details: dict[str, Any] = Field(default_factory=dict)
    """Adapter evidence: container id, reasons, signals, probe excerpt (never env values or secrets)."""

    def key(self) -> tuple[str, int]:
        return (self.task_id, self.attempt)
