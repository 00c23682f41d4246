"""Published JSON Schemas: generation from the pydantic models and loading of the packaged copies.

``generate(kind)`` is what ``evalmanifest dev regen`` writes to ``spec/<spec-version>/`` and to the
packaged copy under ``evalmanifest/schema/<spec-version>/``; drift tests keep them identical.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from pydantic.json_schema import GenerateJsonSchema

from evalmanifest.models import DOCUMENTS, SCHEMA_VERSION, SPEC_VERSION

SCHEMA_BASE = "https://evalmanifest.dev/schemas"
DRAFT = "https://json-schema.org/draft/2020-12/schema"
FILE_NAMES = {kind: f"{kind}.schema.json" for kind in DOCUMENTS}


def schema_id(kind: str) -> str:
    return f"{SCHEMA_BASE}/{SPEC_VERSION}/{SCHEMA_VERSION}/{FILE_NAMES[kind]}"


class _Generator(GenerateJsonSchema):
    def generate(self, schema: Any, mode: Any = "validation") -> Any:  # type: ignore[override]
        out = super().generate(schema, mode=mode)
        out["$schema"] = DRAFT
        return out


def _strip_titles(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip_titles(v) for k, v in obj.items() if k != "title" or not isinstance(v, str)}
    if isinstance(obj, list):
        return [_strip_titles(v) for v in obj]
    return obj


def generate(kind: str) -> dict[str, Any]:
    model = DOCUMENTS[kind]
    s = model.model_json_schema(by_alias=True, schema_generator=_Generator, mode="validation")
    s = _strip_titles(s)
    s["$id"] = schema_id(kind)
    s["title"] = model.__name__
    s["x-spec-version"] = SPEC_VERSION
    s["x-schema-version"] = SCHEMA_VERSION
    return s


def dumps(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@lru_cache(maxsize=None)
def load(kind: str) -> dict[str, Any]:
    """The packaged (published) schema for ``kind``."""
    ref = resources.files("evalmanifest.schema").joinpath(SPEC_VERSION, FILE_NAMES[kind])
    try:
        return json.loads(ref.read_text("utf-8"))  # type: ignore[no-any-return]
    except FileNotFoundError:  # pragma: no cover - only in a source tree before `dev regen`
        return generate(kind)


@lru_cache(maxsize=None)
def validator(kind: str) -> Any:
    from jsonschema import Draft202012Validator

    schema = load(kind)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@lru_cache(maxsize=None)
def fast_validator(kind: str) -> Any:
    """A compiled Draft 2020-12 validator (``jsonschema-rs``) used to accept valid documents quickly.

    Rejections are always re-checked by ``jsonschema`` (the reference implementation), which produces
    the located messages; so the two can only disagree on speed, never on the verdict shown.
    """
    try:
        import jsonschema_rs
    except ImportError:  # pragma: no cover - optional speed-up
        return None
    return jsonschema_rs.validator_for(load(kind))
