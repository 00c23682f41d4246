"""Who is running a run: host, pid and the process start (boot id + start time in clock ticks), so a
reused pid is never mistaken for the runner. Adapters stamp this on what they create and use
:func:`process_alive` to tell orphans of crashed runners from live runs."""

from __future__ import annotations

import os
import socket
from pathlib import Path


def proc_start(pid: int) -> str | None:
    """The process start time in clock ticks since boot (field 22 of /proc/PID/stat); None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
    except OSError:
        return "noboot"


def hostname() -> str:
    return socket.gethostname()


def start_token(pid: int | None = None) -> str:
    """``<boot>:<start ticks>`` of ``pid`` (default: this process)."""
    pid = os.getpid() if pid is None else pid
    return f"{boot_id()}:{proc_start(pid) or '0'}"


def process_alive(host: str | None, pid: str | int | None, token: str | None) -> bool | None:
    """True/False for a runner on this host; None when it ran elsewhere (its liveness cannot be told)."""
    if host != hostname():
        return None
    try:
        pid_i = int(pid)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    boot, _, start = (token or ":").partition(":")
    if boot != boot_id():
        return False
    return proc_start(pid_i) == start
