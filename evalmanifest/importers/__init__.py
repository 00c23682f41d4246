"""Importers: turn other harnesses' task configs and results into evalmanifest documents."""
