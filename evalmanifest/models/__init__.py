"""Pydantic models: the source of truth for the published JSON Schemas in ``spec/``."""

from evalmanifest.models._base import API_VERSION, SCHEMA_VERSION, SPEC_VERSION, Model
from evalmanifest.models.environment import Environment, HostFacts, NodeFacts, TrialObservation
from evalmanifest.models.manifest import (
    Benchmark,
    ByteBound,
    Component,
    Concurrency,
    CountBound,
    CpuBound,
    Enforcement,
    EvalManifest,
    GpuBound,
    Hardware,
    InfraErrorPolicy,
    KillPolicy,
    Metadata,
    Method,
    ModelRef,
    Network,
    Resources,
    ResourceSet,
    Sampling,
    Schedule,
    Subject,
    Success,
    Task,
    Timeouts,
    TimeoutSet,
    Trials,
)
from evalmanifest.models.run import RunCounts, RunInfo, ToolInfo
from evalmanifest.models.trial import INFRA_CAUSES, OUTCOMES, ResourceObservation, TrialRecord

#: document kind -> model; one published schema file per entry.
DOCUMENTS = {
    "manifest": EvalManifest,
    "trial": TrialRecord,
    "environment": Environment,
    "run": RunInfo,
}

__all__ = [
    "API_VERSION", "SCHEMA_VERSION", "SPEC_VERSION", "DOCUMENTS", "INFRA_CAUSES", "OUTCOMES",
    "Benchmark", "ByteBound", "Component", "Concurrency", "CountBound", "CpuBound", "Enforcement",
    "Environment", "EvalManifest", "GpuBound", "Hardware", "HostFacts", "InfraErrorPolicy", "KillPolicy",
    "Metadata", "Method", "Model", "ModelRef", "Network", "NodeFacts", "ResourceObservation", "Resources",
    "ResourceSet", "RunCounts", "RunInfo", "Sampling", "Schedule", "Subject", "Success", "Task",
    "Timeouts", "TimeoutSet", "ToolInfo", "TrialObservation", "TrialRecord", "Trials",
]
