"""``evalmanifest gc [--adapter docker] [--all-hosts] [--run-id ID]``"""

from __future__ import annotations

import inspect

import click

from evalmanifest.cli import handle_errors
from evalmanifest.cli._adapter_opts import adapter_choice


@click.command()
@click.option("--adapter", "-a", type=adapter_choice(), default="docker", show_default=True)
@click.option("--run-id", default=None, help="Only this run's leftovers.")
@click.option("--all-hosts", is_flag=True,
              help="docker: also remove containers started by runners on other machines (cannot check liveness).")
@click.option("--namespace", default=None, help="kubernetes: namespace to clean.")
@handle_errors
def gc(adapter: str, run_id: str | None, all_hosts: bool, namespace: str | None) -> None:
    """Remove containers/pods left behind by crashed runs (runner process gone). Running runs are untouched."""
    from evalmanifest.adapters.registry import get_adapter  # noqa: PLC0415

    a = get_adapter(adapter)
    params = inspect.signature(a.gc).parameters
    kw = {"run_id": run_id}
    if "all_hosts" in params:
        kw["all_hosts"] = all_hosts
    if "namespace" in params and namespace:
        kw["namespace"] = namespace
    removed = a.gc(**kw)
    if isinstance(removed, dict):
        click.echo(", ".join(f"{k}: {v}" for k, v in removed.items()) or "nothing to remove")
    else:
        for name in removed:
            click.echo(f"removed {name}")
        click.echo(f"{len(removed)} orphan(s) removed")
