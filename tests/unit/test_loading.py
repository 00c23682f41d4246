"""Hostile and malformed input: located errors, no traceback, bounded time and memory."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

from evalmanifest.errors import ManifestSyntaxError
from evalmanifest.loading import load_document, loads


def _err(text, file="x.yaml"):
    with pytest.raises(ManifestSyntaxError) as ei:
        loads(text, file=file)
    return ei.value.issue


def test_alias_bomb_fails_fast_in_bounded_memory():
    bomb = "a: &a [" + ",".join(['"lol"'] * 9) + "]\n"
    prev = "a"
    for name in "bcdefghijklm":
        bomb += f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]\n"
        prev = name
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    issue = _err(bomb.encode())
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert issue.code == "alias_bomb"
    assert issue.line == 2 and issue.col is not None
    assert after - before < 200_000  # KiB: no expansion happened


def test_recursive_alias():
    issue = _err(b"a: &a [*a]\n")
    assert issue.code in ("alias_bomb", "syntax")


def test_python_tags_rejected():
    issue = _err(b"x: !!python/object/apply:os.system ['echo pwned']\n")
    assert issue.code == "tag" and issue.line == 1 and issue.col == 4
    issue = _err(b"x: !custom 3\n")
    assert issue.code == "tag"


def test_duplicate_keys_yaml_and_json():
    issue = _err(b"a: 1\nb: 2\na: 3\n")
    assert issue.code == "duplicate_key" and issue.line == 3
    issue = _err(b'{"a": 1,\n "a": 2}', file="x.json")
    assert issue.code == "duplicate_key" and issue.line == 2


def test_binary_and_bad_utf8():
    issue = _err(b"apiVersion: x\n\x00\x01\x02")
    assert issue.code == "binary" and issue.line == 2
    issue = _err(b"a: \xff\xfe\n")
    assert issue.code == "binary" and issue.line == 1


def test_large_file_refused_before_parsing(tmp_path):
    p = tmp_path / "huge.yaml"
    with open(p, "wb") as fh:
        line = b"- id: task-000000000\n"
        fh.write(b"tasks:\n")
        fh.write(line * (50 * 1024 * 1024 // len(line)))
    with pytest.raises(ManifestSyntaxError) as ei:
        load_document(p)
    assert ei.value.issue.code == "too_large"
    assert str(p) in ei.value.diagnostics()


def test_syntax_error_located():
    issue = _err(b"a: [1, 2\nb: 3\n")
    assert issue.line is not None and issue.col is not None


def test_timestamps_stay_strings():
    d = loads(b"start: 2025-06-01T00:00:00Z\nday: 2025-06-01\n").data
    assert d == {"start": "2025-06-01T00:00:00Z", "day": "2025-06-01"}


def test_non_string_keys_forced_to_str():
    assert loads(b"1: a\n2.5: b\n").data == {"1": "a", "2.5": "b"}


def test_multi_document_refused():
    assert _err(b"a: 1\n---\nb: 2\n").code == "multi_document"


def test_empty():
    assert _err(b"   \n").code == "empty"


def test_missing_file_no_traceback(tmp_path):
    r = subprocess.run([sys.executable, "-m", "evalmanifest", "validate", str(tmp_path / "nope.yaml")],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr and "no such file" in r.stderr


@pytest.mark.parametrize("payload", [
    b"\x89PNG\r\n\x1a\n\x00\x00", b"{{{{{{{{{{{{", b"[" * 5000, b"a: b: c: d", b"- - - -\n  x", b"'unterminated",
])
def test_hostile_inputs_give_located_errors_via_cli(tmp_path, payload):
    p = tmp_path / "bad.yaml"
    p.write_bytes(payload)
    r = subprocess.run([sys.executable, "-m", "evalmanifest", "validate", str(p)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    assert f"{p}:" in r.stderr


def test_fast_builder_matches_ruamel_safe_loader():
    """The event-driven builder gives exactly what YAML(typ="safe") gives (timestamps aside)."""
    from ruamel.yaml import YAML

    text = (
        "a: 1_000\nb: 0x1F\nc: 0o17\nd: 017\ne: 1.5e3\nf: .inf\nh: 1e3\ni: +12\nj: '12'\nk: !!str 12\n"
        "l: !!int '7'\nm: ~\nn: yes\np: 1:30\nq: 0b101\nr: .5\ns: |\n  block\nt: >-\n  folded\n"
        "u: [1, 'x', {v: null}]\nw: &anchor {x: 1}\ny: *anchor\nz: {<<: *anchor, q: 2}\nempty:\n"
    )
    assert loads(text.encode()).data == YAML(typ="safe").load(text)


def test_merge_key_and_override():
    d = loads(b"base: &b {cpu: 1, memory: 2Gi}\ntask: {<<: *b, memory: 4Gi}\n").data
    assert d["task"] == {"cpu": 1, "memory": "4Gi"}


def test_complex_keys_and_undefined_alias_rejected():
    assert _err(b"? [a, b]\n: 1\n").code == "syntax"
    assert _err(b"a: *nope\n").line == 1


def test_deep_nesting_bounded():
    issue = _err(("a: " + "[" * 2000 + "]" * 2000 + "\n").encode())
    assert issue.code == "too_deep"


def test_aliased_subtrees_are_unshared_copies():
    d = loads(b"a: &x {cpu: 1}\nb: *x\n").data
    assert d["a"] == d["b"] and d["a"] is not d["b"]
