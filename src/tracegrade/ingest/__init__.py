"""Trace file readers and the OTLP/JSON writer (in progress)."""
