"""OTLP log records (`ExportLogsServiceRequest`, protobuf or JSON), decoded minimally.

Only what grading needs to attach a record to its trace and read it: ids, time, event name,
severity, body and attributes. Attribute and body values use the span decoders of `ingest`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..ingest._bytes import parse_json
from ..ingest._errors import DEFAULT_MAX_ATTRIBUTE_BYTES, Bad, TraceFormatError, type_name
from ..ingest._otlp import any_value, attributes, camelize, parse_id, parse_time
from ..ingest._protobuf import _any as _pb_any
from ..ingest._protobuf import _attrs as _pb_attrs

__all__ = ["ReceivedLog", "logs_from_json_bytes", "logs_from_protobuf_bytes"]

_ORIGIN = "<request>"


@dataclass(frozen=True, slots=True)
class ReceivedLog:
    """One log record as received; `trace_id` / `span_id` are 0 when the record names none."""

    trace_id: int
    span_id: int
    time_ns: int
    event_name: str
    body: Any
    attributes: Mapping[str, Any] = field(default_factory=dict)
    severity_text: str = ""
    severity_number: int = 0
    resource: Mapping[str, Any] = field(default_factory=dict)
    scope_name: str = ""


def _pb_id(raw: bytes, width: int, where: str) -> int:
    if raw and len(raw) != width:
        raise Bad(f"expected a {width}-byte id, got {len(raw)} bytes", where)
    return int.from_bytes(raw, "big")


def logs_from_protobuf_bytes(body: bytes, limit: int = DEFAULT_MAX_ATTRIBUTE_BYTES) -> list[ReceivedLog]:
    """Decode one serialized `ExportLogsServiceRequest`; raises `TraceFormatError`."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    try:
        msg = ExportLogsServiceRequest.FromString(body)
    except (DecodeError, RecursionError, ValueError) as e:
        raise TraceFormatError(f"not a valid ExportLogsServiceRequest protobuf message ({e})", _ORIGIN) from None
    out: list[ReceivedLog] = []
    try:
        for i, rl in enumerate(msg.resource_logs):
            try:
                resource = _pb_attrs(rl.resource.attributes, limit)
                for j, sl in enumerate(rl.scope_logs):
                    for k, r in enumerate(sl.log_records):
                        try:
                            out.append(ReceivedLog(
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


def _json_record(r: Any, resource: dict[str, Any], scope: str, limit: int) -> ReceivedLog:
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
    return ReceivedLog(
        parse_id(r.get("traceId"), 32, "traceId"), parse_id(r.get("spanId"), 16, "spanId"), time or 0, name, body,
        attrs, severity, number, resource, scope,
    )  # fmt: skip


def logs_from_json_bytes(body: bytes, limit: int = DEFAULT_MAX_ATTRIBUTE_BYTES) -> list[ReceivedLog]:
    """Decode one OTLP/JSON `ExportLogsServiceRequest`; raises `TraceFormatError` with the JSON path."""
    doc = parse_json(body)
    out: list[ReceivedLog] = []
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
