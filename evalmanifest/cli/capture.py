"""``evalmanifest capture [--format json|text] [--adapter docker|kubernetes]``"""

from __future__ import annotations

import json
from typing import Any

import click

from evalmanifest.cli import handle_errors


@click.command()
@click.option("--format", "fmt", type=click.Choice(["json", "text"]), default="text", show_default=True)
@click.option("--adapter", "-a", default=None,
              help="Also capture the runtime's facts (docker: engine version, cgroup driver, runtimes...).")
@handle_errors
def capture(fmt: str, adapter: str | None) -> None:
    """Print this machine's (or this container's) environment as the in-container probe sees it:
    cgroup v1/v2 limits, OOM counters, CPUs and memory visible, kernel. Never environment-variable values."""
    from evalmanifest.capture import capture_local  # noqa: PLC0415

    out: dict[str, Any] = capture_local()
    if adapter:
        from evalmanifest.adapters.registry import get_adapter  # noqa: PLC0415

        out["runtime"] = {"adapter": adapter, **get_adapter(adapter).capture()}
    if fmt == "json":
        click.echo(json.dumps(out, indent=2, sort_keys=True))
        return
    for k, v in out["host"].items():
        click.echo(f"host.{k}={'' if v is None else v}")
    for k, v in out.get("runtime", {}).items():
        if not isinstance(v, (dict, list)):
            click.echo(f"runtime.{k}={'' if v is None else v}")
    for k, v in out["probe"].items():
        click.echo(f"{k}={v}")
