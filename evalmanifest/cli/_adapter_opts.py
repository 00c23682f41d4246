"""Shared plumbing for commands that take ``--adapter``: each adapter contributes its own click options
(``Adapter.cli_options()``), and a given option is only accepted with the adapter that declares it."""

from __future__ import annotations

from typing import Any, Callable

import click

from evalmanifest.errors import AdapterError


def adapter_names() -> list[str]:
    from evalmanifest.adapters.registry import available  # noqa: PLC0415

    return list(available())


def _options_by_adapter() -> dict[str, list[click.Option]]:
    from evalmanifest.adapters.registry import adapter_class, available  # noqa: PLC0415

    out: dict[str, list[click.Option]] = {}
    for name in available():
        try:
            out[name] = list(adapter_class(name).cli_options())
        except AdapterError:
            out[name] = []
    return out


def with_adapter_options(cmd: click.Command) -> click.Command:
    """Append every adapter's options to ``cmd`` (once per option name)."""
    seen = {p.name for p in cmd.params}
    for opts in _options_by_adapter().values():
        for o in opts:
            if o.name not in seen:
                cmd.params.append(o)
                seen.add(o.name)
    return cmd


def split_adapter_options(adapter: str, params: dict[str, Any], own: set[str]) -> dict[str, Any]:
    """The adapter-specific options given on the command line (non-None), checked against ``adapter``."""
    by_adapter = _options_by_adapter()
    mine = {o.name for o in by_adapter.get(adapter, [])}
    extra = {k: v for k, v in params.items() if k not in own and v is not None}
    wrong = [k for k in extra if k not in mine]
    if wrong:
        flags = ", ".join("--" + k.replace("_", "-") for k in wrong)
        raise click.UsageError(f"{flags}: not an option of the {adapter} adapter")
    return extra


def adapter_choice() -> click.Choice:
    return click.Choice(adapter_names())


Decorator = Callable[[click.Command], click.Command]
