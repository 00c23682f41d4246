"""Wrong inputs to ``evalmanifest run`` fail upfront with a clear message (no engine call needed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "spec" / "examples" / "valid" / "docker-smoke-banded.yaml"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evalmanifest", *args], capture_output=True, text=True)


def test_resume_into_a_directory_that_holds_no_run_is_refused(tmp_path):
    # it used to start a fresh run among the user's files (only the non-resume path checked emptiness)
    d = tmp_path / "not-a-run"
    d.mkdir()
    (d / "notes.txt").write_text("mine")
    r = _run("run", "--adapter", "docker", str(EXAMPLE), "--out", str(d), "--resume")
    assert r.returncode == 1, r.stderr
    assert "holds no run" in r.stderr and "notes.txt" in r.stderr
    assert "Traceback" not in r.stderr
    assert sorted(p.name for p in d.iterdir()) == ["notes.txt"]


def test_resume_accepts_what_a_run_that_crashed_before_run_json_leaves(tmp_path):
    from evalmanifest.cli.run import _check_resumable

    d = tmp_path / "half"
    d.mkdir()
    (d / "manifest.yaml").write_text("x")
    (d / ".run.json.tmp-123").write_text("x")
    _check_resumable(str(d))  # no error: only the run directory's own files
    _check_resumable(str(tmp_path / "absent"))


def test_concurrency_zero_is_a_usage_error():
    r = _run("run", "--adapter", "docker", str(EXAMPLE), "--out", "/nonexistent/x", "--concurrency", "0")
    assert r.returncode == 2 and "Traceback" not in r.stderr
