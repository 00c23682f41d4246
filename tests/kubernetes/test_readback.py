"""Read-back diff on recorded admissions (kubernetes.io LimitRange task: what was sent, what came back)."""

from __future__ import annotations

import copy

from evalmanifest.adapters.kubernetes.readback import diff_resources, observe
from evalmanifest.resolve import ResolvedResource

from k8s_helpers import load_fixture

MI = 2**20


def _case(i):
    data = load_fixture("k8s-website/limitrange-memory-defaults.json")["cases"][i]
    sent = data["sent"]
    admitted = copy.deepcopy(sent)
    admitted["spec"]["containers"] = [dict(sent["spec"]["containers"][0], **data["admitted_container"])]
    return sent, admitted, sent["spec"]["containers"][0]["name"]


def test_soft_request_only_comes_back_with_a_limitrange_limit():
    sent, admitted, name = _case(2)
    assert diff_resources(sent, admitted, name) == [{"field": "resources.limits.memory", "sent": None, "admitted": 512 * MI}]
    obs, details = observe({"memory": ResolvedResource(128 * MI, 256 * MI)}, "soft", sent, admitted, name)
    m = obs["memory"]
    assert m.honoured is False and m.observed_ceiling == 512 * MI and m.observed_floor == 128 * MI
    assert "runs banded" in m.note
    assert details["qos_sent"] == "Burstable"


def test_uncapped_pod_gets_requests_and_limits_injected():
    sent, admitted, name = _case(0)
    assert {d["field"] for d in diff_resources(sent, admitted, name)} == {"resources.requests.memory", "resources.limits.memory"}
    obs, details = observe({}, "uncapped", sent, admitted, name)
    assert obs["memory"].honoured is False and "uncapped pod now has" in obs["memory"].note
    assert (details["qos_sent"], details["qos_admitted"]) == ("BestEffort", "Burstable")


def test_limit_without_request_is_defaulted_to_request_equals_limit():
    sent, admitted, name = _case(1)
    assert diff_resources(sent, admitted, name) == [{"field": "resources.requests.memory", "sent": None, "admitted": 1024 * MI}]
    # declared banded with only a ceiling: it runs with floor == ceiling (pinned), not honoured
    obs, _ = observe({"memory": ResolvedResource(None, 1024 * MI)}, "banded", sent, admitted, name)
    assert obs["memory"].honoured is False and obs["memory"].observed_floor == 1024 * MI


def test_unchanged_admission_is_honoured():
    sent, _, name = _case(2)
    obs, details = observe({"memory": ResolvedResource(128 * MI, None)}, "soft", sent, copy.deepcopy(sent), name)
    assert obs["memory"].honoured is True and obs["memory"].note is None
    assert details["admission_diff"] == []
