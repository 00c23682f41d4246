"""Classify a Kubernetes pod's terminal (or stuck) state into the trial outcome taxonomy.

Pure functions over plain API dicts (``kubectl get -o json`` shape, camelCase keys): the pod, optionally
the events for the pod and for its node, the node object, and the parsed in-container probe output.
Implements the decision table of reference/enforcement.md section 1.7 in its priority order:

====================  ==========================================================  ======================
category              decisive signals                                            outcome / infra_cause
====================  ==========================================================  ======================
unschedulable         Pending + PodScheduled=False/Unschedulable, FailedScheduling  infra / unschedulable
admission_rejected    reason OutOf*/UnexpectedAdmissionError, "Pod was rejected"   infra / admission_rejected
preempted             DisruptionTarget/PreemptionByScheduler, event Preempted      infra / preempted
evicted               reason Evicted or DisruptionTarget/TerminationByKubelet      infra / evicted
evicted_own_storage   ...with "exceeded its local ephemeral storage limit"         task failure
node_lost             DisruptionTarget DeletionByTaintManager/DeletionByPodGC      infra / killed_other
never_started         DeadlineExceeded before the container ever started           infra / sandbox_failed
deadline_exceeded     pod or Job DeadlineExceeded                                  timeout
oom_killed_system     OOMKilled + node SystemOOM / MemoryPressure near finishedAt  infra / oom_system
oom_killed_at_ceiling OOMKilled (any exit code, 0 included) or probe oom_kill > 0  infra / oom_at_ceiling
killed_sigkill_other  exit 137 / SIGKILL, reason not OOMKilled                     infra / killed_other
start_failed          waiting ErrImagePull/ImagePullBackOff/CreateContainer*...    infra / sandbox_failed
completed / error     exit 0 / any other exit                                      success / failure
====================  ==========================================================  ======================

Exit code 137 alone never means OOM and ``OOMKilled`` does not require 137 (a killed child with
``singleProcessOOMKill`` or a shell that propagates another status gives e.g. exit 1).

Whether an OOM at the ceiling counts against the model is the manifest's policy
(``trials.oom_at_ceiling_counts_as``): :func:`apply_oom_policy` applies it and records that it did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

#: terminal pod phases
TERMINAL_PHASES = ("Succeeded", "Failed")
ADMISSION_REASONS = ("OutOfcpu", "OutOfmemory", "OutOfpods", "UnexpectedAdmissionError", "OutOfephemeral-storage")
EPHEMERAL_OWN_LIMIT_MARKERS = (
    "exceeded its local ephemeral storage limit",
    "ephemeral local storage usage exceeds the total limit of containers",
    "exceeds the total limit of containers",
    "usage of emptydir volume",
)
#: how close a node SystemOOM event / MemoryPressure transition must be to the container's finishedAt
SYSTEM_OOM_WINDOW = timedelta(seconds=120)
SIGKILL_EXIT = 137
#: container waiting reasons that mean the sandbox could not be started (no task code ran): an image that
#: cannot be pulled, or a container the runtime cannot create. Infra errors, never a task timeout.
NEVER_STARTS = ("InvalidImageName", "ErrImageNeverPull")
"""waiting reasons the kubelet never recovers from: terminal at once"""
START_FAILURES = ("ErrImagePull", "ImagePullBackOff", "CreateContainerConfigError", "CreateContainerError",
                  "RunContainerError") + NEVER_STARTS


@dataclass(frozen=True)
class Classification:
    """What happened to one pod, with the evidence that decided it."""

    category: str
    outcome: str | None
    """``success``/``failure``/``timeout``/``infra_error``; None while the pod is still running."""
    infra_cause: str | None
    terminal: bool
    exit_code: int | None = None
    container: str | None = None
    reason: str | None = None
    finished_at: str | None = None
    started_at: str | None = None
    evidence: tuple[str, ...] = field(default_factory=tuple)

    @property
    def is_infra(self) -> bool:
        return self.outcome == "infra_error"

    def to_dict(self) -> dict[str, Any]:
        return {
            "category": self.category,
            "outcome": self.outcome,
            "infra_cause": self.infra_cause,
            "terminal": self.terminal,
            "exit_code": self.exit_code,
            "container": self.container,
            "reason": self.reason,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "evidence": list(self.evidence),
        }


# -- small readers -------------------------------------------------------------------------------------


def _status(pod: dict[str, Any]) -> dict[str, Any]:
    return pod.get("status") or {}


def _conditions(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return list(_status(pod).get("conditions") or [])


def condition(pod: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for c in _conditions(pod):
        if c.get("type") == ctype:
            return c
    return None


def _is_true(c: dict[str, Any] | None) -> bool:
    return bool(c) and str(c.get("status")) == "True"  # type: ignore[union-attr]


def parse_time(value: Any) -> datetime | None:
    """RFC 3339 timestamp → aware datetime; None for missing or unparsable values (templated fixtures)."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def _event_time(ev: dict[str, Any]) -> datetime | None:
    for key in ("lastTimestamp", "eventTime", "firstTimestamp"):
        t = parse_time(ev.get(key))
        if t is not None:
            return t
    series = ev.get("series") or {}
    t = parse_time(series.get("lastObservedTime"))
    if t is not None:
        return t
    return parse_time((ev.get("metadata") or {}).get("creationTimestamp"))


def _events_with(events: list[dict[str, Any]] | None, reason: str) -> list[dict[str, Any]]:
    return [e for e in (events or []) if e.get("reason") == reason]


def pick_container_status(pod: dict[str, Any], container: str | None = None) -> dict[str, Any] | None:
    """Status of the named container (default: the first regular container)."""
    statuses = list(_status(pod).get("containerStatuses") or [])
    if not statuses:
        return None
    if container is not None:
        for cs in statuses:
            if cs.get("name") == container:
                return cs
    return statuses[0]


def _terminated(cs: dict[str, Any] | None) -> tuple[dict[str, Any] | None, bool]:
    """(terminated state, is_current). Falls back to lastState when the container restarted."""
    if not cs:
        return None, False
    term = (cs.get("state") or {}).get("terminated")
    if term:
        return term, True
    last = (cs.get("lastState") or {}).get("terminated")
    if last:
        return last, False
    return None, False


def _waiting_reason(cs: dict[str, Any] | None) -> str | None:
    return ((cs or {}).get("state") or {}).get("waiting", {}).get("reason") if cs else None


def _ever_started(cs: dict[str, Any] | None) -> bool:
    """Did the container ever run (a start time in its running or terminated state, current or last)?"""
    if not cs:
        return False
    for part in ("state", "lastState"):
        st = cs.get(part) or {}
        for k in ("running", "terminated"):
            if (st.get(k) or {}).get("startedAt"):
                return True
    return False


def _oom_near(
    finished: datetime | None,
    node_events: list[dict[str, Any]] | None,
    node: dict[str, Any] | None,
) -> list[str]:
    """Evidence of a node-level (kernel) OOM or memory pressure around the container's death."""
    found: list[str] = []
    for ev in _events_with(node_events, "SystemOOM"):
        t = _event_time(ev)
        if finished is None or t is None or abs(t - finished) <= SYSTEM_OOM_WINDOW:
            found.append(f"node event SystemOOM at {ev.get('lastTimestamp') or ev.get('eventTime')}: {ev.get('message', '')}".strip())
    for ev in _events_with(node_events, "EvictionThresholdMet") + _events_with(node_events, "NodeHasInsufficientMemory"):
        t = _event_time(ev)
        if finished is not None and t is not None and abs(t - finished) <= SYSTEM_OOM_WINDOW:
            found.append(f"node event {ev.get('reason')} near finishedAt: {ev.get('message', '')}".strip())
    if node:
        for c in (node.get("status") or {}).get("conditions") or []:
            if c.get("type") != "MemoryPressure":
                continue
            t = parse_time(c.get("lastTransitionTime"))
            if str(c.get("status")) == "True":
                found.append("node condition MemoryPressure=True")
            elif finished is not None and t is not None and abs(t - finished) <= SYSTEM_OOM_WINDOW:
                found.append(f"node condition MemoryPressure changed at {c.get('lastTransitionTime')} (near finishedAt)")
    return found


def _probe_oom_kills(probe: dict[str, str] | None) -> int | None:
    if not probe:
        return None
    for key in ("eff.oom_kill_count", "cg2.memory.events.oom_kill", "cg1.memory.oom_control.oom_kill"):
        if key in probe:
            try:
                return int(str(probe[key]).strip())
            except ValueError:
                continue
    return None


# -- the decision table --------------------------------------------------------------------------------


def classify_pod(
    pod: dict[str, Any],
    *,
    events: list[dict[str, Any]] | None = None,
    node_events: list[dict[str, Any]] | None = None,
    node: dict[str, Any] | None = None,
    job: dict[str, Any] | None = None,
    container: str | None = "agent",
    probe: dict[str, str] | None = None,
) -> Classification:
    """Apply the decision table to one pod (see the module docstring for the order)."""
    st = _status(pod)
    phase = st.get("phase")
    reason = st.get("reason")
    message = st.get("message") or ""
    terminal_phase = phase in TERMINAL_PHASES
    ev: list[str] = [f"phase={phase}"]
    if reason:
        ev.append(f"status.reason={reason}")
    if message:
        ev.append(f"status.message={message.strip()}")
    cs = pick_container_status(pod, container)
    cname = cs.get("name") if cs else None
    term, term_current = _terminated(cs)
    exit_code = term.get("exitCode") if term else None
    treason = term.get("reason") if term else None
    finished_s = term.get("finishedAt") if term else None
    started_s = term.get("startedAt") if term else None
    if term:
        which = "state" if term_current else "lastState"
        ev.append(f"container {cname} {which}.terminated reason={treason} exitCode={exit_code}")
        if cs and cs.get("restartCount"):
            ev.append(f"restartCount={cs.get('restartCount')}")

    def out(category: str, outcome: str | None, cause: str | None, terminal: bool, *more: str) -> Classification:
        return Classification(
            category=category,
            outcome=outcome,
            infra_cause=cause,
            terminal=terminal,
            exit_code=exit_code,
            container=cname,
            reason=reason or treason,
            started_at=started_s,
            finished_at=finished_s,
            evidence=tuple(ev) + tuple(more),
        )

    # 1. unschedulable (never terminal by itself: the caller decides how long to wait)
    sched = condition(pod, "PodScheduled")
    failed_sched = _events_with(events, "FailedScheduling")
    if phase == "Pending" and sched is not None and str(sched.get("status")) == "False" and sched.get("reason") == "Unschedulable":
        more = [f"PodScheduled=False reason=Unschedulable: {sched.get('message', '')}".strip()]
        more += [f"event FailedScheduling: {e.get('message', '')}" for e in failed_sched[-1:]]
        return out("unschedulable", "infra_error", "unschedulable", False, *more)

    # 2. admission rejected by the kubelet
    if reason in ADMISSION_REASONS or message.startswith("Pod was rejected") or (
        reason == "Evicted" and "Pod was rejected" in message
    ):
        return out("admission_rejected", "infra_error", "admission_rejected", terminal_phase or phase is None)

    # 3. disruption: preemption, eviction, node loss
    disruption = condition(pod, "DisruptionTarget")
    dreason = disruption.get("reason") if _is_true(disruption) else None
    if dreason:
        ev.append(f"DisruptionTarget=True reason={dreason}: {disruption.get('message', '')}".strip())  # type: ignore[union-attr]
    preempted_events = _events_with(events, "Preempted") + _events_with(events, "Preempting")
    if dreason == "PreemptionByScheduler" or _events_with(events, "Preempted"):
        more = [f"event {e.get('reason')}: {e.get('message', '')}" for e in preempted_events[-1:]]
        return out("preempted", "infra_error", "preempted", True, *more)
    if reason == "Evicted" or dreason in ("TerminationByKubelet", "EvictionByEvictionAPI"):
        text = " ".join([message, (disruption or {}).get("message", "") or ""]).lower()
        if any(m in text for m in EPHEMERAL_OWN_LIMIT_MARKERS):
            return out(
                "evicted_own_storage_limit",
                "failure",
                None,
                True,
                "eviction for exceeding the task's own ephemeral-storage ceiling: the task hit its declared limit",
            )
        return out("evicted", "infra_error", "evicted", True)
    if dreason in ("DeletionByTaintManager", "DeletionByPodGC"):
        return out("node_lost", "infra_error", "killed_other", True)

    # 4. deadline (pod activeDeadlineSeconds or the Job's)
    job_deadline = False
    if job:
        for c in ((job.get("status") or {}).get("conditions") or []):
            if c.get("type") == "Failed" and str(c.get("status")) == "True" and c.get("reason") == "DeadlineExceeded":
                job_deadline = True
                ev.append("job condition Failed reason=DeadlineExceeded")
    if reason == "DeadlineExceeded" or job_deadline:
        waiting = _waiting_reason(cs)
        if not _ever_started(cs):
            # activeDeadlineSeconds counts from the kubelet's acknowledgement, image pull included: a pod
            # whose container never ran (image not pullable, container not creatable) hit the deadline
            # without running any task code. That is the sandbox failing, not the task timing out.
            return out("never_started", "infra_error", "sandbox_failed", True,
                       f"deadline reached before the container started (waiting reason {waiting})")
        return out("deadline_exceeded", "timeout", None, True)

    # 5. OOM kills: system vs at the container ceiling
    probe_kills = _probe_oom_kills(probe)
    if probe_kills:
        ev.append(f"probe oom_kill={probe_kills}")
    if treason == "OOMKilled" or (term is not None and exit_code is not None and probe_kills):
        terminal = terminal_phase or term_current
        if treason == "OOMKilled" and exit_code not in (SIGKILL_EXIT, None):
            ev.append(
                f"OOMKilled with exitCode {exit_code}: PID 1 survived a kill of a child (or singleProcessOOMKill) and exited on its own; exit code alone would have hidden the OOM"
            )
        if exit_code == 0:
            # a child was OOM-killed and the shell still exited 0: an OOM at the ceiling all the same (the
            # Docker adapter's rule, reference/enforcement.md 0.4: OOMKilled occurs with exit 0)
            ev.append("OOM kill with exit 0: a child process was OOM-killed, PID 1 exited normally")
        system = _oom_near(parse_time(finished_s), node_events, node)
        if system:
            return out("oom_killed_system", "infra_error", "oom_system", terminal, *system)
        return out(
            "oom_killed_at_ceiling",
            "infra_error",
            "oom_at_ceiling",
            terminal,
            "no node SystemOOM or MemoryPressure near finishedAt: the container hit its own memory ceiling",
        )

    # 6. other terminations of the container
    if term is not None and term_current:
        signal = term.get("signal")
        if exit_code == SIGKILL_EXIT or signal == 9:
            extra = []
            if treason == "ContainerStatusUnknown":
                extra.append("ContainerStatusUnknown: the kubelet lost the container; 137 is synthesised")
            return out("killed_sigkill_other", "infra_error", "killed_other", True, *extra)
        if treason == "ContainerStatusUnknown":
            return out("killed_sigkill_other", "infra_error", "killed_other", True)
        if exit_code == 0:
            return out("completed", "success", None, True)
        if exit_code is not None:
            return out("error", "failure", None, True)

    if term is not None and not term_current:
        # restarted container (restartPolicy Always/OnFailure): the last death is evidence, the pod runs on
        if exit_code == SIGKILL_EXIT:
            return out("killed_sigkill_other", "infra_error", "killed_other", False)
        return out("error" if exit_code else "completed", None, None, False)

    # 7. the container cannot start (image pull, container creation): infra; terminal when it never recovers
    waiting = _waiting_reason(cs)
    if waiting in START_FAILURES and not (term is not None and term_current):
        wmsg = (((cs or {}).get("state") or {}).get("waiting") or {}).get("message") or ""
        return out("start_failed", "infra_error", "sandbox_failed", waiting in NEVER_STARTS,
                   f"container waiting: {waiting} {wmsg}".strip())

    # 8. pod-level terminal states without container evidence
    if phase == "Succeeded":
        return out("completed", "success", None, True)
    if phase == "Failed":
        return out("unknown", "infra_error", "unknown", True, "pod Failed without a terminated container state")
    if phase == "Pending":
        return out("pending", None, None, False)
    return out("running", None, None, False)


def apply_oom_policy(c: Classification, counts_as: str) -> tuple[str | None, str | None, dict[str, Any]]:
    """Outcome/infra_cause after the manifest's ``oom_at_ceiling_counts_as`` policy (recorded in details)."""
    if c.category == "oom_killed_at_ceiling" and counts_as == "failure":
        return "failure", "oom_at_ceiling", {"oom_at_ceiling_counts_as": "failure"}
    if c.category == "oom_killed_at_ceiling":
        return c.outcome, c.infra_cause, {"oom_at_ceiling_counts_as": "infra_error"}
    return c.outcome, c.infra_cause, {}


__all__ = ["Classification", "apply_oom_policy", "classify_pod", "condition", "parse_time", "pick_container_status"]
