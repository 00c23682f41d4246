"""Regenerate the top-level ``reports/`` folder (rendered example reports) and the bundled example runs.

One entry point, used by developers (``evalmanifest dev regen-reports``) and by the drift test.
"""

from __future__ import annotations

from pathlib import Path

from evalmanifest.reports.render import render

README = """# reports/ — GENERATED, do not edit

Rendered example reports of `evalmanifest compare` and `evalmanifest diff` on the example runs bundled in
the package (`evalmanifest/examples/runs/`, built from the real Terminal-Bench 1 leaderboard results; see
`evalmanifest/examples/runs/NOTICE.md` for origin and licence).

Code lives in `evalmanifest/reports/`. Regenerate with:

    evalmanifest dev regen-reports

A test (`tests/reports/test_regen_drift.py`) regenerates into a temporary directory and fails on any
difference.
"""


def example_runs_dir() -> Path:
    from importlib import resources

    return Path(str(resources.files("evalmanifest").joinpath("examples", "runs")))


def regen_reports(out_dir: str | Path, *, shared_data: str | Path | None = None) -> list[Path]:
    """Write the example reports into ``out_dir``; with ``shared_data`` also rebuild the example runs."""
    from evalmanifest.reports.compare import compare_runs
    from evalmanifest.reports.diff import diff_sides
    from evalmanifest.reports.inputs import load_side
    from evalmanifest.reports.tb1_examples import DEMO_PAIR, build_all

    runs = example_runs_dir()
    if shared_data is not None:
        build_all(Path(shared_data), runs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    a, b = (runs / n for n in DEMO_PAIR)
    stem = "tb1-droid-opus-4-1-vs-gpt-5"
    written: list[Path] = []
    report = compare_runs(a, b)
    for fmt, ext in (("json", "json"), ("md", "md"), ("html", "html"), ("text", "txt")):
        p = out / f"{stem}.compare.{ext}"
        p.write_text(render("compare", report, fmt), encoding="utf-8")
        written.append(p)
    d = diff_sides(load_side(a, "a"), load_side(b, "b"))
    for fmt, ext in (("json", "json"), ("md", "md")):
        p = out / f"{stem}.diff.{ext}"
        p.write_text(render("diff", d, fmt), encoding="utf-8")
        written.append(p)
    (out / "README.md").write_text(README, encoding="utf-8")
    written.append(out / "README.md")
    return written
