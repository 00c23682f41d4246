"""A safe YAML-to-data builder driven by the C parser's event stream.

ruamel.yaml's safe loader spends most of its time in the Python constructor (node objects, resolver
calls). Manifests need only plain data, so we build dicts/lists straight from the events (the parse
itself runs in C via ``ruamel.yaml.clib``), resolving plain scalars with ruamel's own YAML 1.2
implicit-resolver regexes so results are identical to ``YAML(typ="safe")`` except that timestamps stay
strings. Safety rules are enforced here, each with the event's line and column:

* only the YAML core tags (``!!str``, ``!!int``, ``!!float``, ``!!bool``, ``!!null``, ``!!map``,
  ``!!seq``, ``!!timestamp``, ``!!merge``); anything else (``!!python/...``, ``!custom``) is refused;
* duplicate keys and complex (mapping/sequence) keys are refused;
* aliases share the anchored object (the caller bounds the expanded size); nesting depth is bounded.
"""

from __future__ import annotations

from typing import Any

CORE = "tag:yaml.org,2002:"
_ALLOWED_SCALAR_TAGS = {CORE + t for t in ("str", "int", "float", "bool", "null", "timestamp", "binary")}
_ALLOWED_COLLECTION_TAGS = {CORE + "map", CORE + "seq", CORE + "omap"}
MAX_DEPTH = 512


class YamlBuildError(Exception):
    def __init__(self, message: str, mark: Any, code: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.line = mark.line + 1 if mark is not None else 1
        self.col = mark.column + 1 if mark is not None else 1
        self.code = code
        self.hint = hint


_TABLE: Any = None
_CTOR: Any = None


def _resolver_table() -> Any:
    global _TABLE, _CTOR
    if _TABLE is None:
        from ruamel.yaml.constructor import SafeConstructor
        from ruamel.yaml.resolver import VersionedResolver

        _TABLE = VersionedResolver(version=(1, 2)).versioned_resolver
        _CTOR = SafeConstructor()
    return _TABLE


_SPECIAL = {
    "": None, "~": None, "null": None, "Null": None, "NULL": None,
    "true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False,
}


def _implicit_tag(value: str) -> str:
    table = _resolver_table()
    resolvers = table.get(value[0] if value else "", []) + table.get(None, [])
    for tag, regexp in resolvers:
        if regexp.match(value):
            return str(tag)
    return CORE + "str"


def _yaml12_int(value: str) -> int:
    """ruamel's YAML 1.2 int construction: underscores dropped, 0b/0o/0x prefixes, otherwise decimal."""
    v = value.replace("_", "")
    sign = 1
    if v[:1] in "+-":
        sign = -1 if v[0] == "-" else 1
        v = v[1:]
    if v.startswith("0b"):
        return sign * int(v[2:], 2)
    if v.startswith("0x"):
        return sign * int(v[2:], 16)
    if v.startswith("0o"):
        return sign * int(v[2:], 8)
    return sign * int(v)


def _yaml12_float(value: str) -> float:
    v = value.replace("_", "").lower()
    sign = 1.0
    if v[:1] in "+-":
        sign = -1.0 if v[0] == "-" else 1.0
        v = v[1:]
    if v == ".inf":
        return sign * float("inf")
    if v == ".nan":
        return float("nan")
    return sign * float(v)


def _construct(tag: str, value: str, mark: Any) -> Any:
    if tag == CORE + "str" or tag == CORE + "timestamp":
        return value
    if tag == CORE + "null":
        return None
    if tag == CORE + "bool":
        if value not in _SPECIAL or _SPECIAL[value] is None:
            raise YamlBuildError(f"{value!r} is not a boolean", mark, "syntax")
        return _SPECIAL[value]
    try:
        if tag == CORE + "int":
            return _yaml12_int(value)
        if tag == CORE + "float":
            return _yaml12_float(value)
    except ValueError:
        raise YamlBuildError(f"{value!r} is not a valid {tag.rsplit(':', 1)[-1]}", mark, "syntax") from None
    raise YamlBuildError(f"could not determine a constructor for the tag {tag!r}", mark, "tag",
                         "tags such as !!python/object are not allowed; write plain YAML values")


def _scalar(ev: Any) -> Any:
    tag = ev.tag
    if tag is not None and tag != "!":
        tag = str(tag)
        if tag not in _ALLOWED_SCALAR_TAGS:
            raise YamlBuildError(f"could not determine a constructor for the tag {tag!r}", ev.start_mark, "tag",
                                 "tags such as !!python/object are not allowed; write plain YAML values")
        if tag == CORE + "binary":
            raise YamlBuildError("binary scalars are not allowed", ev.start_mark, "tag")
        return _construct(tag, ev.value, ev.start_mark)
    if ev.style or (ev.implicit is not None and not ev.implicit[0]) or tag == "!":
        return ev.value  # quoted, block or explicitly non-specific: a string
    v = ev.value
    if v in _SPECIAL:
        return _SPECIAL[v]
    c = v[0]
    if c.isdigit() or c in "-+.":
        return _construct(_implicit_tag(v), v, ev.start_mark)
    if c == "<" and v == "<<":
        return _MERGE
    return v


class _Merge:
    pass


_MERGE = _Merge()


def build(events: Any) -> list[Any]:
    """Build the documents of an event stream. Raises :class:`YamlBuildError`."""
    from ruamel.yaml.events import (
        AliasEvent,
        DocumentEndEvent,
        DocumentStartEvent,
        MappingEndEvent,
        MappingStartEvent,
        ScalarEvent,
        SequenceEndEvent,
        SequenceStartEvent,
        StreamEndEvent,
        StreamStartEvent,
    )

    docs: list[Any] = []
    anchors: dict[str, Any] = {}
    # stack entries: [container, pending_key, key_mark, is_mapping]
    stack: list[list[Any]] = []
    root: list[Any] = []

    def check_tag(ev: Any) -> None:
        t = ev.tag
        if t is not None and t != "!" and str(t) not in _ALLOWED_COLLECTION_TAGS:
            raise YamlBuildError(f"could not determine a constructor for the tag {str(t)!r}", ev.start_mark, "tag",
                                 "tags such as !!python/object are not allowed; write plain YAML values")

    def add(value: Any, mark: Any, is_collection: bool) -> None:
        if not stack:
            root.append(value)
            return
        top = stack[-1]
        if top[3]:  # mapping
            if top[1] is _NOKEY:
                if is_collection:
                    raise YamlBuildError("a mapping key must be a scalar, not a mapping or sequence", mark,
                                         "syntax")
                top[1] = value
                top[2] = mark
                return
            key, kmark = top[1], top[2]
            top[1] = _NOKEY
            d = top[0]
            if key is _MERGE:
                sources = value if isinstance(value, list) else [value]
                for src in sources:
                    if not isinstance(src, dict):
                        raise YamlBuildError("`<<` merges only mappings", kmark, "syntax")
                    for k, v in src.items():
                        if k not in d:
                            d[k] = v
                top[4].update(src.keys())
                return
            k = key if isinstance(key, str) else str(key)
            if k in d and k not in top[4]:
                raise YamlBuildError(f'found duplicate key "{k}"', kmark, "duplicate_key",
                                     "each key may appear once in a mapping")
            top[4].discard(k)
            d[k] = value
        else:
            top[0].append(value)

    for ev in events:
        cls = type(ev)
        if cls is ScalarEvent:
            v = _scalar(ev)
            if ev.anchor:
                anchors[ev.anchor] = v
            add(v, ev.start_mark, False)
        elif cls is MappingStartEvent:
            check_tag(ev)
            if len(stack) >= MAX_DEPTH:
                raise YamlBuildError(f"the document is nested more than {MAX_DEPTH} levels deep", ev.start_mark,
                                     "too_deep")
            d: dict[str, Any] = {}
            if ev.anchor:
                anchors[ev.anchor] = d
            stack.append([d, _NOKEY, None, True, set(), ev.start_mark])
        elif cls is MappingEndEvent:
            d, _, _, _, _, mark = stack.pop()
            add(d, mark, True)
        elif cls is SequenceStartEvent:
            check_tag(ev)
            if len(stack) >= MAX_DEPTH:
                raise YamlBuildError(f"the document is nested more than {MAX_DEPTH} levels deep", ev.start_mark,
                                     "too_deep")
            lst: list[Any] = []
            if ev.anchor:
                anchors[ev.anchor] = lst
            stack.append([lst, None, None, False, None, ev.start_mark])
        elif cls is SequenceEndEvent:
            lst, _, _, _, _, mark = stack.pop()
            add(lst, mark, True)
        elif cls is AliasEvent:
            if ev.anchor not in anchors:
                raise YamlBuildError(f"found undefined alias {ev.anchor!r}", ev.start_mark, "syntax")
            target = anchors[ev.anchor]
            for entry in stack:
                if entry[0] is target:
                    raise YamlBuildError("recursive alias", ev.start_mark, "alias_bomb")
            add(target, ev.start_mark, isinstance(target, (dict, list)))
        elif cls is DocumentStartEvent:
            anchors = {}
            root = []
        elif cls is DocumentEndEvent:
            docs.append(root[0] if root else None)
        elif cls in (StreamStartEvent, StreamEndEvent):
            pass
    return docs


class _NoKey:
    pass


_NOKEY = _NoKey()
