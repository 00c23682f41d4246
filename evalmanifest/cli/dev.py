"""``evalmanifest dev ...``: maintainer commands."""

from __future__ import annotations

import sys

import click


@click.group()
def dev() -> None:
    """Maintainer commands (regenerate committed artifacts)."""


@dev.command("regen")
@click.option("--check", is_flag=True, help="Do not write; exit 1 if anything committed is out of date.")
@click.option("--only", multiple=True, help="Only these generators (schemas, tb2-example, docker-golden, "
              "kubernetes-golden, reports).")
def regen_cmd(check: bool, only: tuple[str, ...]) -> None:
    """Regenerate spec/ schemas, the TB2 example, adapters/ goldens and reports/ examples."""
    from evalmanifest import regen

    if check:
        diffs = regen.check(only=list(only) or None)
        if diffs:
            click.echo("out of date (run `evalmanifest dev regen`):", err=True)
            for d in diffs:
                click.echo(f"  {d}", err=True)
            sys.exit(1)
        click.echo("all generated artifacts are up to date")
        return
    for name in regen.regen(only=list(only) or None):
        click.echo(f"regenerated {name}")
