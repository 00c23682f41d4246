"""evalmanifest: a reproducibility manifest and reporting standard for agentic coding evals."""

__version__ = "0.1.0"

from evalmanifest.errors import EvalManifestError  # noqa: E402

__all__ = ["EvalManifestError", "__version__"]
