"""Entry point of the ``reports`` generator for ``evalmanifest dev regen`` (see :mod:`evalmanifest.regen`)."""

from evalmanifest.reports.regen import regen_reports, write_reports

__all__ = ["regen_reports", "write_reports"]
