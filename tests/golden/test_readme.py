"""The README's commands are the ones CI runs."""

from spec_paths import REPO


def _commands(text):
    return [ln.strip() for ln in text.splitlines() if ln.strip().startswith("python3 -m venv")]


def test_ci_runs_the_readme_test_command():
    readme = _commands((REPO / "README.md").read_text("utf-8"))
    ci = _commands((REPO / ".ci" / "run").read_text("utf-8"))
    assert len(readme) == 2, "README must show exactly an install+main-job and an install+tests command"
    assert readme[1] in ci, "the last command in .ci/run must be the README's test command"
    assert readme[0].endswith("evalmanifest demo")
