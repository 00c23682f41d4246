"""Environment: what was captured about the machine or cluster a run used."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from evalmanifest.models._base import API_VERSION, Model
from evalmanifest.models.trial import ResourceObservation


class HostFacts(Model):
    hostname: str | None = None
    kernel: str | None = None
    os: str | None = None
    arch: str | None = None
    cpu_model: str | None = None
    cpus: int | None = None
    memory_bytes: int | None = None
    container_runtime: str | None = None
    runtime_version: str | None = None
    runtimes: list[str] = Field(default_factory=list)
    cgroup_version: Literal["v1", "v2", "hybrid", "none"] | None = None
    cgroup_driver: str | None = None
    gpu: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)


class NodeFacts(Model):
    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    capacity: dict[str, str] = Field(default_factory=dict)
    allocatable: dict[str, str] = Field(default_factory=dict)
    node_info: dict[str, str] = Field(default_factory=dict)
    provider_id: str | None = None


class TrialObservation(Model):
    task_id: str
    attempt: int
    try_index: int = 0
    node: str | None = None
    resources: dict[str, ResourceObservation] = Field(default_factory=dict)
    peak_memory_bytes: int | None = None
    oom_kill_count: int | None = None
    qos_class: str | None = None
    probe: dict[str, str] = Field(default_factory=dict)
    """Parsed probe output (key=value) read inside the container."""


class Environment(Model):
    api_version: Literal["evalmanifest.dev/v1alpha1"] = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["Environment"] = "Environment"
    adapter: str | None = None
    captured_at: str | None = None
    host: HostFacts = Field(default_factory=HostFacts)
    cluster: dict[str, Any] = Field(default_factory=dict)
    """Kubernetes server version, namespace, LimitRanges seen, ..."""
    nodes: list[NodeFacts] = Field(default_factory=list)
    trials: list[TrialObservation] = Field(default_factory=list)
