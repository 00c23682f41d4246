"""EvalManifest: the declared configuration of an eval run."""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import Field, field_validator

from evalmanifest.models._base import API_VERSION, Bytes, Count, Millicores, Model


class Method(str, Enum):
    """Enforcement contract (spec/README.md, "Enforcement vocabulary")."""

    pinned = "pinned"
    banded = "banded"
    throttled = "throttled"
    soft = "soft"
    uncapped = "uncapped"
    provider_managed = "provider_managed"


MECHANISMS = (
    "k8s.requests_limits",
    "k8s.pod_level_resources",
    "k8s.memory_qos",
    "docker.hostconfig",
    "cgroup2.direct",
    "cgroup1.direct",
    "vm.size",
)
MECHANISM_PATTERN = r"^(k8s\.requests_limits|k8s\.pod_level_resources|k8s\.memory_qos|docker\.hostconfig|cgroup2\.direct|cgroup1\.direct|vm\.size|provider\.api:[A-Za-z0-9_.-]+)$"


class Metadata(Model):
    name: str = Field(min_length=1, max_length=253)
    """Human name of this configuration (cosmetic: not score-affecting)."""
    description: str | None = None
    """Free text."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Cosmetic key/value labels."""
    annotations: dict[str, str] = Field(default_factory=dict)
    """Cosmetic key/value annotations (e.g. a leaderboard submission URL)."""


class Benchmark(Model):
    name: str = Field(min_length=1)
    """Benchmark name, e.g. `terminal-bench`."""
    version: str = Field(min_length=1)
    """Benchmark version, e.g. `2.0`."""
    repository: str | None = None
    """Source repository URL of the task set."""
    revision: str | None = None
    """Commit or tag of the task set."""
    task_set_digest: str | None = Field(default=None, pattern=r"^sha256:[0-9a-f]{64}$")
    """`sha256:` digest over the sorted task ids (see `evalmanifest.canonical.task_set_digest`)."""


class Sampling(Model):
    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = Field(default=None, ge=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    reasoning_effort: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    """Any other provider parameter, verbatim (never secrets)."""


class ModelRef(Model):
    id: str = Field(min_length=1)
    """Model identifier as sent to the provider, e.g. `anthropic/claude-sonnet-4-5`."""
    provider: str | None = None
    endpoint: str | None = None
    region: str | None = None
    api_version: str | None = None
    sampling: Sampling = Field(default_factory=Sampling)


class Component(Model):
    name: str = Field(min_length=1)
    version: str | None = None
    commit: str | None = None


class Subject(Model):
    model: ModelRef
    """The model under test and its inference stack."""
    agent: Component | None = None
    """Agent / scaffold, e.g. `terminus-2`."""
    harness: Component | None = None
    """The harness that runs trials, e.g. `harbor 0.25.0`."""


class Success(Model):
    kind: Literal["exit_code", "reward_file"] = "exit_code"
    """How success is read: the command's exit code (0 = success) or a reward file."""
    path: str | None = None
    """Reward file path inside the container (kind `reward_file`)."""
    threshold: float = 1.0
    """A reward at or above this counts as success."""


class CpuBound(Model):
    floor: Millicores | None = None
    """Guaranteed allocation (request / reservation)."""
    ceiling: Millicores | None = None
    """Hard limit (throttles for CPU); null = none."""
    ceiling_multiplier: float | None = Field(default=None, ge=1)
    """If set and `ceiling` is absent, ceiling = floor × multiplier."""


class ByteBound(Model):
    floor: Bytes | None = None
    """Guaranteed allocation (request / reservation), bytes."""
    ceiling: Bytes | None = None
    """Hard kill threshold in bytes; null = none."""
    ceiling_multiplier: float | None = Field(default=None, ge=1)
    """If set and `ceiling` is absent, ceiling = floor × multiplier."""


class CountBound(Model):
    floor: Count | None = None
    ceiling: Count | None = None


class GpuBound(Model):
    count: Count = 0
    """GPUs per trial (GPUs are not shareable: floor = ceiling = count)."""
    model: str | None = None
    """GPU model, e.g. `nvidia-h100-80gb`."""


class ResourceSet(Model):
    cpu: CpuBound | None = None
    memory: ByteBound | None = None
    ephemeral_storage: ByteBound | None = None
    gpu: GpuBound | None = None
    pids: CountBound | None = None


class Resources(Model):
    defaults: ResourceSet = Field(default_factory=ResourceSet)
    """Applied to every task unless overridden."""
    ceiling_multiplier: float | None = Field(default=None, ge=1)
    """Default multiplier for cpu/memory/ephemeral_storage ceilings not given explicitly."""
    overrides: dict[str, ResourceSet] = Field(default_factory=dict)
    """Per-task overrides keyed by task id (alternative to `tasks[].resources`)."""


class Enforcement(Model):
    method: Method | None = None
    """The enforcement contract. Missing = undocumented (comparisons assume the 3 pp band)."""
    mechanism: str | None = Field(default=None, pattern=MECHANISM_PATTERN)
    """How the runtime enforces it: `k8s.requests_limits`, `docker.hostconfig`, `cgroup2.direct`,
    `vm.size`, `provider.api:<name>`, ..."""
    swap: Literal["none", "allowed"] = "none"
    oom_group: Literal["container", "process"] | None = None
    """Whether an OOM kills the whole container (cgroup `memory.oom.group=1`) or one process."""
    disk_ceiling_enforcement: Literal["eviction", "quota", "none"] | None = None


class KillPolicy(Model):
    mechanism: Literal["harness_kill", "k8s.activeDeadlineSeconds", "docker.stop", "provider"] = "harness_kill"
    grace_sec: float = Field(default=10, ge=0)
    """Seconds between the polite stop (SIGTERM) and SIGKILL."""


class TimeoutSet(Model):
    agent_sec: float | None = Field(default=None, gt=0)
    verifier_sec: float | None = Field(default=None, gt=0)
    build_sec: float | None = Field(default=None, gt=0)
    total_sec: float | None = Field(default=None, gt=0)
    """Hard wall-clock bound of one trial (defaults to agent + verifier)."""


class Timeouts(Model):
    defaults: TimeoutSet = Field(default_factory=TimeoutSet)
    multiplier: float = Field(default=1.0, gt=0)
    """Applied to every resolved timeout (Harbor's `timeout_multiplier`)."""
    kill: KillPolicy = Field(default_factory=KillPolicy)
    """What kills at the deadline."""
    overrides: dict[str, TimeoutSet] = Field(default_factory=dict)
    """Per-task overrides keyed by task id (alternative to `tasks[].timeouts`)."""


class InfraErrorPolicy(Model):
    retries: int = Field(default=0, ge=0)
    """Retries of an attempt that ended in an infra error."""
    then: Literal["failure", "exclude"] = "failure"
    """What a still-failing attempt counts as: a model failure (headline) or excluded."""


class Trials(Model):
    attempts: int = Field(default=1, ge=1)
    """Independent attempts per task (≥ 5 recommended)."""
    infra_error_policy: InfraErrorPolicy = Field(default_factory=InfraErrorPolicy)
    outcome_policy_version: str = "1"
    """Version of the outcome policy table (spec/README.md) used to classify trials."""
    oom_at_ceiling_counts_as: Literal["infra_error", "failure"] = "infra_error"
    """The contested case: an OOM kill at the task's own ceiling."""
    scorer: str | None = None
    """Scorer identity, e.g. `terminal-bench/pytest-reward`."""


class Hardware(Model):
    instance_type: str | None = None
    cpu_model: str | None = None
    cores: int | None = Field(default=None, ge=1)
    memory: Bytes | None = None
    gpu: GpuBound | None = None
    arch: Literal["amd64", "arm64", "x86_64", "aarch64"] | None = None
    cloud: str | None = None
    region: str | None = None
    cluster: str | None = None
    kubernetes_version: str | None = None
    container_runtime: str | None = None
    sandbox_provider: str | None = None


class ApiRateLimits(Model):
    requests_per_minute: int | None = Field(default=None, ge=1)
    tokens_per_minute: int | None = Field(default=None, ge=1)


class Concurrency(Model):
    max_parallel_trials: int | None = Field(default=None, ge=1)
    per_node: int | None = Field(default=None, ge=1)
    api_rate_limits: ApiRateLimits | None = None


class Network(Model):
    internet: Literal["allowed", "denied"] = "allowed"
    allowed_hosts: list[str] = Field(default_factory=list)
    egress_bandwidth: str | None = None
    """e.g. `100Mbit`."""


class RunWindow(Model):
    start: str
    """ISO 8601 date-time."""
    end: str


class Schedule(Model):
    timezone: str | None = None
    windows: list[RunWindow] = Field(default_factory=list)


class Task(Model):
    id: str = Field(min_length=1, max_length=253, pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")
    image: str | None = None
    command: list[str] | str | None = None
    """Argument vector, or a string run with `/bin/sh -c`."""
    workdir: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    """Non-secret environment only. Secrets are injected by the harness, never written here."""
    success: Success = Field(default_factory=Success)
    resources: ResourceSet | None = None
    timeouts: TimeoutSet | None = None


class EvalManifest(Model):
    """The declared configuration of an eval run."""

    api_version: Literal["evalmanifest.dev/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["EvalManifest"]
    metadata: Metadata
    benchmark: Benchmark
    subject: Subject
    tasks: list[Task] = Field(min_length=1)
    resources: Resources = Field(default_factory=Resources)
    enforcement: Enforcement = Field(default_factory=Enforcement)
    timeouts: Timeouts = Field(default_factory=Timeouts)
    trials: Trials = Field(default_factory=Trials)
    hardware: Hardware = Field(default_factory=Hardware)
    concurrency: Concurrency = Field(default_factory=Concurrency)
    network: Network = Field(default_factory=Network)
    schedule: Schedule = Field(default_factory=Schedule)

    @field_validator("api_version")
    @classmethod
    def _v(cls, v: str) -> str:
        assert v == API_VERSION
        return v

    def task(self, task_id: str) -> Task:
        for t in self.tasks:
            if t.id == task_id:
                return t
        raise KeyError(task_id)
