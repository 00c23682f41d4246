import copy

import pytest
from pydantic import ValidationError

from evalmanifest.canonical import canonical_json, digest, task_set_digest
from evalmanifest.loading import loads
from evalmanifest.models import EvalManifest, TrialRecord
from evalmanifest.resolve import resolve

BASE = {
    "apiVersion": "evalmanifest.dev/v1alpha1",
    "kind": "EvalManifest",
    "metadata": {"name": "m"},
    "benchmark": {"name": "b", "version": "1"},
    "subject": {"model": {"id": "x"}},
    "tasks": [{"id": "a"}, {"id": "b", "resources": {"memory": {"floor": "4Gi"}}, "timeouts": {"agent_sec": 100}}],
    "resources": {"defaults": {"memory": {"floor": "2Gi"}, "cpu": {"floor": "1", "ceiling": "2"}},
                  "ceiling_multiplier": 3,
                  "overrides": {"a": {"memory": {"ceiling": "3Gi"}}}},
    "enforcement": {"method": "banded"},
    "timeouts": {"defaults": {"agent_sec": 900, "verifier_sec": 300}, "multiplier": 2},
}


def m(**patch):
    d = copy.deepcopy(BASE)
    d.update(patch)
    return EvalManifest.model_validate(d)


def test_quantities_are_exact_ints():
    man = m()
    assert man.resources.defaults.memory.floor == 2 * 2**30
    assert man.resources.defaults.cpu.ceiling == 2000


def test_resolution_defaults_overrides_multiplier():
    r = resolve(m())
    a, b = r.task("a"), r.task("b")
    # a: explicit override ceiling wins over the multiplier
    assert a.resources["memory"].floor == 2 * 2**30
    assert a.resources["memory"].ceiling == 3 * 2**30
    assert a.resources["memory"].ceiling_source == "explicit"
    # b: inline floor override, ceiling from the multiplier
    assert b.resources["memory"].floor == 4 * 2**30
    assert b.resources["memory"].ceiling == 12 * 2**30
    assert b.resources["memory"].ceiling_source == "multiplier"
    # cpu: explicit default ceiling, multiplier does not apply
    assert b.resources["cpu"].ceiling == 2000
    # timeouts: defaults x multiplier; per-task override
    assert a.timeouts.agent_sec == 1800 and a.timeouts.verifier_sec == 600
    assert a.timeouts.total_sec == 2400
    assert b.timeouts.agent_sec == 200


def test_pinned_ceiling_defaults_to_floor_and_uncapped_has_none():
    r = resolve(m(enforcement={"method": "pinned"}, resources={"defaults": {"memory": {"floor": "2Gi"}}}))
    assert r.task("a").resources["memory"].ceiling == 2 * 2**30
    r = resolve(m(enforcement={"method": "uncapped"}))
    assert r.task("b").resources["memory"].ceiling is None


def test_explicit_null_ceiling_means_none_even_with_multiplier():
    r = resolve(m(resources={"defaults": {"memory": {"floor": "2Gi", "ceiling": None}}, "ceiling_multiplier": 3}))
    assert r.task("a").resources["memory"].ceiling is None


def test_unknown_field_rejected_but_x_prefix_allowed():
    d = copy.deepcopy(BASE)
    d["x-team"] = "evals"
    d["metadata"]["x-ticket"] = "E-1"
    man = EvalManifest.model_validate(d)
    assert man.extensions() == {"x-team": "evals"}
    d["metadata"]["nam"] = "oops"
    with pytest.raises(ValidationError):
        EvalManifest.model_validate(d)


def test_digest_ignores_formatting_and_equivalent_quantities():
    y1 = """
apiVersion: evalmanifest.dev/v1alpha1
kind: EvalManifest
metadata: {name: m}
benchmark: {name: b, version: "1"}
subject: {model: {id: x}}
tasks: [{id: a}]
resources: {defaults: {memory: {floor: 2Gi}, cpu: {floor: 1000m}}}
"""
    y2 = """# comment
kind: EvalManifest
apiVersion: "evalmanifest.dev/v1alpha1"
tasks:
  - id: a
subject:
  model:
    id: x
benchmark: {version: '1', name: b}
metadata:
  name: m
resources:
  defaults:
    cpu: {floor: "1"}
    memory: {floor: 2147483648}
"""
    a = EvalManifest.model_validate(loads(y1).data)
    b = EvalManifest.model_validate(loads(y2).data)
    assert canonical_json(a) == canonical_json(b)
    assert digest(a) == digest(b)
    assert digest(a).startswith("sha256:") and len(digest(a)) == 71
    c = EvalManifest.model_validate(loads(y1.replace("2Gi", "3Gi")).data)
    assert digest(c) != digest(a)


def test_canonical_round_trip():
    man = m()
    again = EvalManifest.model_validate_json(canonical_json(man))
    assert digest(again) == digest(man)
    assert resolve(again).to_dict() == resolve(man).to_dict()


def test_task_set_digest_order_independent():
    assert task_set_digest(["b", "a"]) == task_set_digest(["a", "b", "a"])


def test_trial_record():
    t = TrialRecord(task_id="a", attempt=0, outcome="infra_error", infra_cause="oom_at_ceiling")
    assert TrialRecord.model_validate_json(t.model_dump_json()) == t
    with pytest.raises(ValidationError):
        TrialRecord(task_id="a", attempt=0, outcome="crashed")
