"""Helpers shared by the Docker tests (a uniquely named module: not ``conftest``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_trials(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (Path(run_dir) / "trials.jsonl").read_text().splitlines() if line.strip()]


def leftover_containers(client, **labels: str) -> list[str]:
    filters = {"label": ["io.evalmanifest.managed=1"] + [f"io.evalmanifest.{k.replace('_', '-')}={v}" for k, v in labels.items()]}
    return [c["Names"][0] for c in client.api.containers(all=True, filters=filters)]
