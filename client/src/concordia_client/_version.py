"""The package's version (setuptools reads it from here; keep it a literal)."""

__version__ = "0.1.0"
