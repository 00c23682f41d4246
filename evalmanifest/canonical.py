"""Canonical JSON and the ``sha256:`` digest that identifies a manifest regardless of YAML formatting.

Canonical form: the model dumped in JSON mode (quantities normalised: ``2048Mi`` -> ``2Gi``,
``1000m`` -> ``1``), fields left at their default omitted, keys sorted, no insignificant whitespace,
UTF-8. Two manifests that mean the same thing have the same digest.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel


def canonical_obj(model: BaseModel) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_defaults=True)


def canonical_json(model: BaseModel | Any) -> str:
    obj = canonical_obj(model) if isinstance(model, BaseModel) else model
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest(model: BaseModel | Any) -> str:
    """``sha256:<hex>`` of the canonical JSON."""
    return "sha256:" + sha256_hex(canonical_json(model).encode("utf-8"))


def task_set_digest(task_ids: list[str]) -> str:
    """``sha256:`` over the sorted, newline-joined task ids (order and duplicates do not matter)."""
    return "sha256:" + sha256_hex("\n".join(sorted(set(task_ids))).encode("utf-8"))


def file_digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()
