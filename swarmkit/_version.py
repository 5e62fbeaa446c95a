"""The package version: one place, read by pyproject (setuptools dynamic) and at run time."""

__all__ = ["__version__"]

__version__ = "0.1.0"
