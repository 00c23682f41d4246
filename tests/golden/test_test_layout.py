"""Test files in different folders share one sys.path namespace (rootdir import mode): basenames must
be unique, or collection fails with "import file mismatch"."""

from collections import Counter

from spec_paths import REPO


def test_test_module_basenames_unique():
    names = Counter(p.name for p in (REPO / "tests").rglob("*.py") if p.name != "conftest.py")
    assert not [n for n, c in names.items() if c > 1]
