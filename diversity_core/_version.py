"""The package version, in one place below every module that records it (settings, reports)."""

__version__ = "0.1.0"
