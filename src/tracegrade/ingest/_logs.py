"""OTLP log records (`ExportLogsServiceRequest`, protobuf or JSON) → `LogRecord`s, from a request
body (the receiver) or a file (`read_logs`, `load_traces` among trace files).

Only what grading needs to attach a record to its span and read it: ids, time, event name,
severity, body and attributes. Attribute and body values use the span decoders.
"""

from __future__ import annotations

import os
from typing import Any

from ..spans import LogRecord
from ._bytes import parse_json
from ._errors import DEFAULT_MAX_ATTRIBUTE_BYTES, DEFAULT_MAX_INFLATED_BYTES, Bad, TraceFormatError, type_name
from ._otlp import any_value, attributes, camelize, parse_id, parse_time
from ._protobuf import _any as _pb_any
from ._protobuf import _attrs as _pb_attrs

__all__ = ["LogRecord", "ReceivedLog", "is_logs_file", "logs_from_json_bytes", "logs_from_protobuf_bytes", "read_logs"]

_ORIGIN = "<request>"


ReceivedLog = LogRecord
"""The name the receiver first gave `LogRecord`."""


def _pb_id(raw: bytes, width: int, where: str) -> int:
    if raw and len(raw) != width:
        raise Bad(f"expected a {width}-byte id, got {len(raw)} bytes", where)
    return int.from_bytes(raw, "big")


def logs_from_protobuf_bytes(body: bytes, limit: int = DEFAULT_MAX_ATTRIBUTE_BYTES) -> list[LogRecord]:
    """Decode one serialized `ExportLogsServiceRequest`; raises `TraceFormatError`."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    try:
        msg = ExportLogsServiceRequest.FromString(body)
    except (DecodeError, RecursionError, ValueError) as e:
        raise TraceFormatError(f"not a valid ExportLogsServiceRequest protobuf message ({e})", _ORIGIN) from None
    out: list[LogRecord] = []
    try:
        for i, rl in enumerate(msg.resource_logs):
            try:
                resource = _pb_attrs(rl.resource.attributes, limit)
                for j, sl in enumerate(rl.scope_logs):
                    for k, r in enumerate(sl.log_records):
                        try:
                            out.append(LogRecord(
                                _pb_id(r.trace_id, 16, "trace_id"), _pb_id(r.span_id, 8, "span_id"),
                                r.time_unix_nano or r.observed_time_unix_nano, r.event_name,
                                _pb_any(r.body, limit), _pb_attrs(r.attributes, limit), r.severity_text,
                                r.severity_number, resource, sl.scope.name,
                            ))  # fmt: skip
                        except Bad as e:
                            raise e.at(f"scope_logs[{j}]", f"log_records[{k}]") from None
            except Bad as e:
                raise e.at(f"resource_logs[{i}]") from None
    except Bad as e:
        raise TraceFormatError(e.problem, _ORIGIN, None, e.location) from None
    except RecursionError:
        raise TraceFormatError("value nested too deeply", _ORIGIN) from None
    return out


def _list(parent: dict[str, Any], key: str) -> list[Any]:
    value = parent.get(key)
    if value is None:
        return []
    if type(value) is not list:
        raise Bad(f"expected a list, got {type_name(value)}", key)
    return value


def _obj(value: Any, what: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise Bad(f"expected {what} object, got {type_name(value)}")
    return value


def _json_record(r: Any, resource: dict[str, Any], scope: str, limit: int) -> LogRecord:
    r = _obj(r, "a log record")
    name = r.get("eventName") or ""
    if type(name) is not str:
        raise Bad(f"expected a string, got {type_name(name)}", "eventName")
    severity = r.get("severityText") or ""
    if type(severity) is not str:
        raise Bad(f"expected a string, got {type_name(severity)}", "severityText")
    number = r.get("severityNumber") or 0
    if type(number) is not int:  # the enum's name (SEVERITY_NUMBER_INFO) is legal JSON too; keep 0
        number = 0
    try:
        body = any_value(r.get("body"), limit)
    except Bad as e:
        raise e.at("body") from None
    try:
        attrs = attributes(r.get("attributes") or [], limit)
    except Bad as e:
        raise e.at("attributes") from None
    time = parse_time(r.get("timeUnixNano"), "timeUnixNano") or parse_time(
        r.get("observedTimeUnixNano"), "observedTimeUnixNano"
    )
    return LogRecord(
        parse_id(r.get("traceId"), 32, "traceId"), parse_id(r.get("spanId"), 16, "spanId"), time or 0, name, body,
        attrs, severity, number, resource, scope,
    )  # fmt: skip


def logs_from_json_bytes(body: bytes, limit: int = DEFAULT_MAX_ATTRIBUTE_BYTES) -> list[LogRecord]:
    """Decode one OTLP/JSON `ExportLogsServiceRequest`; raises `TraceFormatError` with the JSON path."""
    doc = parse_json(body)
    out: list[LogRecord] = []
    try:
        doc = _obj(doc, "an ExportLogsServiceRequest")
        if "resource_logs" in doc:
            doc = camelize(doc)
        if doc and "resourceLogs" not in doc:
            keys = ", ".join(repr(k) for k in list(doc)[:8])
            raise Bad(f"expected an ExportLogsServiceRequest with 'resourceLogs', got keys {keys}")
        for i, rl in enumerate(_list(doc, "resourceLogs")):
            try:
                rl = _obj(rl, "a ResourceLogs")
                res = _obj(rl.get("resource") or {}, "a resource")
                try:
                    resource = attributes(res.get("attributes") or [], limit)
                except Bad as e:
                    raise e.at("resource", "attributes") from None
                for j, sl in enumerate(_list(rl, "scopeLogs")):
                    try:
                        sl = _obj(sl, "a ScopeLogs")
                        scope = _obj(sl.get("scope") or {}, "a scope").get("name") or ""
                        for k, r in enumerate(_list(sl, "logRecords")):
                            try:
                                out.append(_json_record(r, resource, str(scope), limit))
                            except Bad as e:
                                raise e.at(f"logRecords[{k}]") from None
                    except Bad as e:
                        raise e.at(f"scopeLogs[{j}]") from None
            except Bad as e:
                raise e.at(f"resourceLogs[{i}]") from None
    except Bad as e:
        raise TraceFormatError(e.problem, _ORIGIN, None, e.location) from None
    except RecursionError:
        raise TraceFormatError("JSON nested too deeply", _ORIGIN) from None
    return out


_LOGS_KEYS = (b'"resourceLogs"', b'"resource_logs"')
_TRACES_KEYS = (b'"resourceSpans"', b'"resource_spans"', b'"data"', b'"batches"')


def is_logs_file(path: str | os.PathLike[str], max_inflated: int = DEFAULT_MAX_INFLATED_BYTES) -> bool:
    """An OTLP/JSON logs document or JSON lines file (by its first 64 KiB: `resourceLogs` before any
    trace key); protobuf logs files are not read."""
    from ._read import _opened, _sniff

    name = os.fspath(path)
    if not os.path.isfile(name):  # a FIFO or device is refused by the trace reader, never opened here
        return False
    try:
        kind, compressed = _sniff(name, max_inflated)
        if kind == "protobuf":
            return False
        with _opened(name, compressed, max_inflated) as f:
            head = f.read(min(1 << 16, max_inflated))
    except (TraceFormatError, OSError):
        return False  # the trace reader reports what is wrong with it
    found = [head.find(k) for k in _LOGS_KEYS if k in head]
    traces = [head.find(k) for k in _TRACES_KEYS if k in head]
    return bool(found) and (not traces or min(found) < min(traces))


def read_logs(
    path: str | os.PathLike[str],
    *,
    max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
    max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES,
) -> list[LogRecord]:
    """Every log record of an OTLP/JSON logs document or JSON lines file (gzip too); `TraceFormatError`
    naming the file and line for bad input."""
    from ._read import _opened, _sniff

    name = os.fspath(path)
    _kind, compressed = _sniff(name, max_inflated_bytes)
    with _opened(name, compressed, max_inflated_bytes) as f:
        data = f.read()
    try:
        return logs_from_json_bytes(data, max_attribute_bytes)
    except TraceFormatError as whole:
        lines = [line for line in data.splitlines() if line.strip()]
        if len(lines) < 2:
            raise TraceFormatError(whole.problem, name, whole.line, whole.location) from None
    out: list[LogRecord] = []
    for n, line in enumerate(data.splitlines(), 1):
        if line.strip():
            try:
                out.extend(logs_from_json_bytes(line, max_attribute_bytes))
            except TraceFormatError as e:
                raise TraceFormatError(e.problem, name, n, e.location) from None
    return out
