"""Run metadata (``run.json``) of a run directory."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalmanifest.models._base import API_VERSION, Model


class ToolInfo(Model):
    name: str = "evalmanifest"
    version: str


class RunCounts(Model):
    success: int = 0
    failure: int = 0
    timeout: int = 0
    infra_error: int = 0


class RunInfo(Model):
    api_version: Literal["evalmanifest.dev/v1alpha1"] = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["Run"] = "Run"
    run_id: str = Field(min_length=1)
    tool: ToolInfo
    adapter: str | None = None
    manifest_digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    status: Literal["running", "complete", "interrupted", "imported"] = "running"
    started_at: str | None = None
    finished_at: str | None = None
    counts: RunCounts = Field(default_factory=RunCounts)
    files: dict[str, str] = Field(default_factory=dict)
    """`sha256:` digest of each other file in the run directory (written when the run completes)."""
    source: str | None = None
    """For imported runs: where the data came from (repository, commit, licence note)."""
