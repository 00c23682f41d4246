"""Watch loop against recorded API responses replayed over HTTP to the official client."""

from __future__ import annotations

import copy

import pytest

from evalmanifest.adapters.kubernetes.classify import classify_pod
from evalmanifest.adapters.kubernetes.watch import PodWatcher
from evalmanifest.errors import BackendError

from k8s_helpers import FIXTURES, load_fixture
from replay import Replay, event, pod_list


def _wire(name: str) -> str:
    return (FIXTURES / "wire" / name).read_text().strip()


def _pending():
    return load_fixture("is-healthy/pod-pending.yaml")  # resourceVersion 155333


def _done():
    return load_fixture("datadog/short-lived-succeeded.json")  # resourceVersion 73777


def _collect(w: PodWatcher, until_terminal: str):
    seen = []

    def stop():
        return any(p["metadata"]["name"] == until_terminal and classify_pod(p).terminal for _, p in seen)

    for etype, pod in w.events(stop):
        seen.append((etype, pod))
    return seen


def test_in_band_410_relists_then_watches_from_the_new_resource_version():
    done = _done()
    script = {
        "list": [(200, [pod_list([_pending()], "155333")]), (200, [pod_list([], "73700")])],
        "watch": [
            (200, [_wire("watch-410-aiokubernetes.jsonl")]),  # recorded: too old resource version: 1 (8146471)
            (200, [event("ADDED", done)]),
        ],
    }
    with Replay(script) as r:
        w = PodWatcher(r.core(), "default", "app.kubernetes.io/managed-by=evalmanifest", sleep=lambda s: None)
        seen = _collect(w, "my-short-lived-pod")
    assert [t for t, _ in seen] == ["SYNC", "ADDED"]
    assert classify_pod(seen[-1][1]).outcome == "success"
    kinds = [("watch" if q["query"].get("watch") else "list", q["query"].get("resourceVersion")) for q in r.requests]
    assert kinds == [("list", None), ("watch", "155333"), ("list", None), ("watch", "73700")]
    assert all(q["query"]["labelSelector"] == "app.kubernetes.io/managed-by=evalmanifest" for q in r.requests)
    assert w.stats.expired == 1 and w.stats.lists == 2
    assert w.resource_version == "73777"  # advanced from the event object


def test_http_410_on_the_watch_request_relists():
    script = {
        "list": [(200, [pod_list([_pending()], "155333")]), (200, [pod_list([_done()], "73777")])],
        "watch": [(410, [_wire("list-410-ensemble.json")])],
    }
    with Replay(script) as r:
        w = PodWatcher(r.core(), "default", "x=y", sleep=lambda s: None)
        seen = _collect(w, "my-short-lived-pod")
    assert [t for t, _ in seen] == ["SYNC", "SYNC"]
    assert w.stats.expired == 1


def test_api_errors_reconnect_with_the_same_resource_version_and_back_off():
    sleeps = []
    status_500 = '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"etcdserver: request timed out","reason":"InternalError","code":500}'
    script = {
        "list": [(200, [pod_list([_pending()], "155333")])],
        "watch": [(500, [status_500]), (503, [status_500]), (200, [event("MODIFIED", _done())])],
    }
    with Replay(script) as r:
        w = PodWatcher(r.core(), "default", "x=y", sleep=sleeps.append)
        seen = _collect(w, "my-short-lived-pod")
    rvs = [q["query"].get("resourceVersion") for q in r.requests if q["query"].get("watch")]
    assert rvs == ["155333", "155333", "155333"]
    assert sleeps == [0.5, 1.0]
    assert seen[-1][0] == "MODIFIED"


def test_bookmarks_advance_the_resource_version_without_yielding():
    bookmark = '{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"160000","annotations":{"k8s.io/initial-events-end":"true"}}}}'
    done = copy.deepcopy(_done())
    script = {
        "list": [(200, [pod_list([], "155333")])],
        "watch": [(200, [bookmark]), (200, [event("ADDED", done)])],
    }
    with Replay(script) as r:
        w = PodWatcher(r.core(), "default", "x=y", sleep=lambda s: None)
        seen = _collect(w, "my-short-lived-pod")
    rvs = [q["query"].get("resourceVersion") for q in r.requests if q["query"].get("watch")]
    assert rvs == ["155333", "160000"]
    assert [t for t, _ in seen] == ["ADDED"]


def test_persistent_failure_gives_up_with_a_backend_error():
    status_403 = '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods is forbidden: User \\"system:serviceaccount:default:x\\" cannot watch resource \\"pods\\"","reason":"Forbidden","code":403}'
    script = {"list": [(403, [status_403])] * 3}
    with Replay(script) as r:
        w = PodWatcher(r.core(), "default", "x=y", sleep=lambda s: None, max_consecutive_errors=3)
        with pytest.raises(BackendError, match="403"):
            list(w.events())
