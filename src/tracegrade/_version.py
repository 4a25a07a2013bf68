"""The package version, importable from any layer without importing the `tracegrade` facade."""

__version__ = "0.1.0"
