"""``evalmanifest schema [DOCUMENT]``"""

from __future__ import annotations

import click

from evalmanifest.models import DOCUMENTS


@click.command()
@click.argument("document", required=False, type=click.Choice(sorted(DOCUMENTS)), default="manifest")
def schema(document: str) -> None:
    """Print the published JSON Schema (Draft 2020-12) of a document: manifest, trial, environment, run."""
    from evalmanifest.schema import dumps, load

    click.echo(dumps(load(document)), nl=False)
