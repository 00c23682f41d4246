"""Conformance suite every adapter reuses by subclassing.

    from evalmanifest.testing.conformance import AdapterConformance

    class TestDockerConformance(AdapterConformance):
        adapter_name = "docker"
        image = "busybox:latest"          # used for the minimal manifests

        @pytest.fixture(scope="class")
        def conformance_run_dir(self, ...):  # optional: a finished run directory to validate
            ...

Checks: the adapter is registered under its name; its capability table covers every method and resource;
every valid spec example renders (or raises ``UnsupportedEnforcementError`` exactly when the table says the
method is unsupported); supported methods render and unsupported ones raise on a minimal manifest; render
is deterministic; a run directory produced by the adapter validates against the document models and holds
each (task, attempt) exactly once as a final record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalmanifest.adapters.base import METHODS, RESOURCES, Adapter, Support
from evalmanifest.errors import EvalManifestError, UnsupportedEnforcementError

REPO = Path(__file__).resolve().parents[2]


def valid_examples(root: Path = REPO) -> list[Path]:
    d = root / "spec" / "examples" / "valid"
    return sorted(p for p in d.glob("*") if p.suffix in (".yaml", ".yml", ".json")) if d.is_dir() else []


def minimal_manifest(method: str, image: str = "busybox", command: Any = "true", **over: Any):
    """A small valid manifest using ``method`` with a memory floor < ceiling (pinned: equal)."""
    from evalmanifest.models.manifest import EvalManifest  # noqa: PLC0415

    mem = {"floor": "64Mi", "ceiling": "64Mi" if method == "pinned" else "128Mi"}
    cpu = {"floor": "500m", "ceiling": "500m" if method == "pinned" else "1"}
    doc: dict[str, Any] = {
        "apiVersion": "evalmanifest.dev/v1alpha1",
        "kind": "EvalManifest",
        "metadata": {"name": f"conformance-{method}"},
        "benchmark": {"name": "conformance", "version": "1"},
        "subject": {"model": {"id": "none"}},
        "tasks": [{"id": "t1", "image": image, "command": command}],
        "resources": {"defaults": {"memory": mem, "cpu": cpu}},
        "enforcement": {"method": method},
        "timeouts": {"defaults": {"total_sec": 60}},
    }
    doc.update(over)
    return EvalManifest.model_validate(doc)


class AdapterConformance:
    """Subclass in a test module and set ``adapter_name`` (and ``image`` for the minimal manifests)."""

    adapter_name: str = ""
    image: str = "busybox"

    def make_adapter(self) -> Adapter:
        from evalmanifest.adapters.registry import get_adapter  # noqa: PLC0415

        return get_adapter(self.adapter_name)

    # --- registry and capability table ---------------------------------------------------------------
    def test_registered_under_its_name(self) -> None:
        from evalmanifest.adapters.registry import available  # noqa: PLC0415

        assert self.adapter_name in available()
        a = self.make_adapter()
        assert isinstance(a, Adapter)
        assert a.name == self.adapter_name

    def test_capability_table_covers_every_method_and_resource(self) -> None:
        caps = self.make_adapter().capabilities()
        assert set(caps.methods) == set(METHODS)
        assert set(caps.resources) == set(RESOURCES)
        for c in [*caps.methods.values(), *caps.resources.values(), *caps.features.values()]:
            assert isinstance(c.support, Support)
        json.dumps(caps.to_dict())  # serialisable for the generated README

    # --- render --------------------------------------------------------------------------------------
    def test_supported_methods_render_and_unsupported_raise(self) -> None:
        a = self.make_adapter()
        caps = a.capabilities()
        for method in METHODS:
            m = minimal_manifest(method, self.image)
            if caps.methods[method].support is Support.unsupported:
                with pytest.raises(UnsupportedEnforcementError):
                    a.render(m, "t1", 0)
            else:
                out = a.render(m, "t1", 0)
                assert out, method
                json.dumps(out)

    def test_render_is_deterministic(self) -> None:
        a = self.make_adapter()
        m = minimal_manifest("banded", self.image)
        assert json.dumps(a.render(m, "t1", 0), sort_keys=True) == json.dumps(a.render(m, "t1", 0), sort_keys=True)

    def test_every_valid_spec_example_renders(self) -> None:
        from evalmanifest.loading import load_manifest  # noqa: PLC0415
        from evalmanifest.resolve import resolve  # noqa: PLC0415

        examples = valid_examples()
        if not examples:
            pytest.skip("no spec/examples/valid in this checkout")
        a = self.make_adapter()
        caps = a.capabilities()
        failures = []
        for path in examples:
            m = load_manifest(path)
            for rt in resolve(m).tasks:
                unsupported = rt.method is not None and caps.method(rt.method).support is Support.unsupported
                try:
                    out = a.render(m, rt.task_id, 0)
                    json.dumps(out)
                    if unsupported:
                        failures.append(f"{path.name}:{rt.task_id}: method {rt.method} rendered instead of raising")
                except UnsupportedEnforcementError as e:
                    if not unsupported and not self.allowed_render_error(rt, e):
                        failures.append(f"{path.name}:{rt.task_id}: {e}")
                except EvalManifestError as e:
                    if not self.allowed_render_error(rt, e):
                        failures.append(f"{path.name}:{rt.task_id}: {type(e).__name__}: {e.diagnostics()}")
        assert not failures, "\n".join(failures)

    def allowed_render_error(self, task, error: Exception) -> bool:
        """Override to accept documented render errors (e.g. a task without an image for Docker)."""
        return False

    # --- run directory -------------------------------------------------------------------------------
    @pytest.fixture
    def conformance_run_dir(self) -> Path | None:
        """Override with a fixture returning a finished run directory made by this adapter."""
        return None

    def test_run_directory_validates(self, conformance_run_dir: Path | None) -> None:
        if conformance_run_dir is None:
            pytest.skip("this adapter's conformance subclass provides no run directory")
        check_run_directory(conformance_run_dir, self.adapter_name)


def check_run_directory(run_dir: Path, adapter_name: str | None = None) -> list[Any]:
    """Validate every document of a run directory against the models; return the trial records."""
    from evalmanifest.models.environment import Environment  # noqa: PLC0415
    from evalmanifest.models.run import RunInfo  # noqa: PLC0415
    from evalmanifest.models.trial import TrialRecord  # noqa: PLC0415

    run_dir = Path(run_dir)
    for name in ("manifest.yaml", "run.json", "environment.json", "trials.jsonl"):
        assert (run_dir / name).is_file(), f"{name} missing from {run_dir}"
    info = RunInfo.model_validate_json((run_dir / "run.json").read_text())
    if adapter_name:
        assert info.adapter == adapter_name
    Environment.model_validate_json((run_dir / "environment.json").read_text())
    records = [TrialRecord.model_validate_json(line) for line in (run_dir / "trials.jsonl").read_text().splitlines() if line.strip()]
    finals: dict[tuple[str, int], int] = {}
    for r in records:
        if r.final:
            finals[r.key()] = finals.get(r.key(), 0) + 1
    assert all(n == 1 for n in finals.values()), f"duplicated final records: {finals}"
    if info.status == "complete":
        from evalmanifest.loading import load_manifest  # noqa: PLC0415

        m = load_manifest(run_dir / "manifest.yaml")
        want = {(t.id, a) for t in m.tasks for a in range(m.trials.attempts)}
        assert set(finals) == want, f"missing {sorted(want - set(finals))} extra {sorted(set(finals) - want)}"
        c = info.counts
        assert c.success + c.failure + c.timeout + c.infra_error == len(want)
    return records
