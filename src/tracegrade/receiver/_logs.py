"""OTLP log records as the receiver decodes them (see `tracegrade.ingest._logs`)."""

from __future__ import annotations

from ..ingest._logs import LogRecord, ReceivedLog, logs_from_json_bytes, logs_from_protobuf_bytes

__all__ = ["LogRecord", "ReceivedLog", "logs_from_json_bytes", "logs_from_protobuf_bytes"]
