"""Run metadata (``run.json``) of a run directory."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalmanifest.models._base import API_VERSION, Model


class ToolInfo(Model):
    name: str = "evalmanifest"
    """`evalmanifest`."""
    version: str
    """Library version that wrote the run."""


class RunCounts(Model):
    success: int = 0
    """Final attempts that succeeded."""
    failure: int = 0
    """Final attempts that failed."""
    timeout: int = 0
    """Final attempts that timed out."""
    infra_error: int = 0
    """Final attempts that ended in an infra error."""


class RunInfo(Model):
    api_version: Literal["evalmanifest.dev/v1alpha1"] = Field(default=API_VERSION, alias="apiVersion")
    """`evalmanifest.dev/v1alpha1`."""
    kind: Literal["Run"] = "Run"
    """`Run`."""
    run_id: str = Field(min_length=1)
    """Unique id of the run (also labels every container/pod it created)."""
    tool: ToolInfo
    """What wrote the run."""
    adapter: str | None = None
    """Adapter that executed it."""
    manifest_digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    """Canonical digest of `manifest.yaml`."""
    status: Literal["running", "complete", "interrupted", "imported"] = "running"
    """`running`, `complete`, `interrupted` (resumable) or `imported`."""
    started_at: str | None = None
    """ISO 8601 UTC."""
    finished_at: str | None = None
    """ISO 8601 UTC."""
    counts: RunCounts = Field(default_factory=RunCounts)
    """Final outcomes by kind."""
    files: dict[str, str] = Field(default_factory=dict)
    """`sha256:` digest of each other file in the run directory (written when the run completes)."""
    source: str | None = None
    """For imported runs: where the data came from (repository, commit, licence note)."""
