"""OTLP protobuf (`ExportTraceServiceRequest`) → `Span`s, via the optional `opentelemetry-proto`;
`signal_of` tells a traces message from a logs message (`ExportLogsServiceRequest`).

Files hold one message (`.pb`, an HTTP body capture) or the collector file exporter's stream of
4-byte big-endian length-prefixed messages.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from ..spans import Span, SpanEvent, SpanKind, SpanStatus
from ._errors import Bad, TraceFormatError
from ._otlp import STATUSES, check_size

__all__ = ["message_class", "signal_of", "span_paths", "spans_from_message"]

_KINDS: dict[int, SpanKind] = {0: "internal", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


# Traces and logs requests share their outer shape (field 1: resource_spans / resource_logs, then
# field 2: scope_spans / scope_logs, then field 2: spans / log_records); a record's own fields tell
# them apart: (field number, wire type) pairs that only a `Span` or only a `LogRecord` can have.
_SPAN_ONLY = frozenset({(1, 2), (2, 2), (4, 2), (6, 0), (7, 1), (8, 1), (10, 0), (11, 2), (12, 0), (13, 2),
                        (14, 0), (15, 2), (16, 5)})  # fmt: skip
_LOG_ONLY = frozenset({(1, 1), (2, 0), (6, 2), (7, 0), (8, 5), (10, 2), (11, 1), (12, 2)})
_FIXED = {1: 8, 5: 4}


def _varint(data: bytes | bytearray | memoryview, i: int, end: int) -> tuple[int, int]:
    """(value, next offset); offset `end + 1` when the data ends inside it."""
    value = shift = 0
    while i < end and shift < 64:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7
    return 0, end + 1


def _fields(data: bytes | bytearray | memoryview, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, value start, value end) of each field of the message in
    `data[start:end]`, up to the first one that is cut short or malformed (a length-delimited
    value's end is clipped to `end`, so a message's head can be walked)."""
    i = start
    while i < end:
        tag, i = _varint(data, i, end)
        if i > end:
            return
        field, wire = tag >> 3, tag & 7
        if wire == 0:
            _, j = _varint(data, i, end)
        elif wire == 2:
            length, i = _varint(data, i, end)
            j = i + length
        elif wire in _FIXED:
            j = i + _FIXED[wire]
        else:  # groups (never used by OTLP) or garbage
            return
        if i > end or (wire != 2 and j > end):
            return
        yield field, wire, i, min(j, end)
        i = j


def signal_of(data: bytes | bytearray | memoryview) -> Literal["traces", "logs"] | None:
    """Whether a serialized OTLP export request (or its head) holds traces or logs, by the fields of
    its first record; None when no record says (empty, or cut before the first record's fields)."""
    for field, wire, a, b in _fields(data, 0, len(data)):
        if (field, wire) != (1, 2):
            continue
        for field2, wire2, a2, b2 in _fields(data, a, b):  # ResourceSpans / ResourceLogs
            if (field2, wire2) != (2, 2):
                continue
            for field3, wire3, a3, b3 in _fields(data, a2, b2):  # ScopeSpans / ScopeLogs
                if (field3, wire3) != (2, 2):
                    continue
                for pair in ((f, w) for f, w, _, _ in _fields(data, a3, b3)):  # Span / LogRecord
                    if pair in _LOG_ONLY:
                        return "logs"
                    if pair in _SPAN_ONLY:
                        return "traces"
    return None


def message_class(path: str, signal: str = "traces") -> Any:
    """`ExportTraceServiceRequest` (`signal="traces"`) or `ExportLogsServiceRequest` (`"logs"`), or a
    `TraceFormatError` saying how to install them."""
    try:
        if signal == "logs":
            from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

            return ExportLogsServiceRequest
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError as e:
        raise TraceFormatError(
            f"this is an OTLP protobuf file; reading it needs opentelemetry-proto ({e}): pip install tracegrade[proto]",
            path,
        ) from e
    return ExportTraceServiceRequest


def _any(v: Any, limit: int) -> Any:
    which = v.WhichOneof("value")
    if which == "string_value":
        s: str = v.string_value
        if len(s) > limit >> 2:
            check_size(s, limit)
        return s
    if which == "int_value":
        return v.int_value
    if which == "bool_value":
        return v.bool_value
    if which == "double_value":
        return v.double_value
    if which == "array_value":
        return tuple(_any(x, limit) for x in v.array_value.values)
    if which == "kvlist_value":
        return _attrs(v.kvlist_value.values, limit)
    if which == "bytes_value":
        b: bytes = v.bytes_value
        check_size(b, limit)
        return b
    return None


def _attrs(kvs: Any, limit: int) -> dict[str, Any]:
    out = {}
    for i, kv in enumerate(kvs):
        try:
            out[kv.key] = _any(kv.value, limit)
        except Bad as e:
            raise e.prefixed(f"attribute {kv.key!r}: ").at(f"[{i}]", "value") from None
    return out


def _id(raw: bytes, width: int, field: str) -> int:
    if len(raw) != width and raw:
        raise Bad(f"expected a {width}-byte id, got {len(raw)} bytes", field)
    return int.from_bytes(raw, "big")


def spans_from_message(msg: Any, limit: int) -> list[Span]:
    out: list[Span] = []
    for i, rs in enumerate(msg.resource_spans):
        try:
            try:
                resource = _attrs(rs.resource.attributes, limit)
            except Bad as e:
                raise e.at("resource", "attributes") from None
            for j, ss in enumerate(rs.scope_spans):
                scope_name, scope_version = ss.scope.name, ss.scope.version
                try:
                    scope_attrs = _attrs(ss.scope.attributes, limit)
                except Bad as e:
                    raise e.at(f"scope_spans[{j}]", "scope", "attributes") from None
                for k, s in enumerate(ss.spans):
                    try:
                        out.append(_span(s, resource, scope_name, scope_version, limit, scope_attrs))
                    except Bad as e:
                        raise e.at(f"scope_spans[{j}]", f"spans[{k}]") from None
        except Bad as e:
            raise e.at(f"resource_spans[{i}]") from None
    return out


def _span(
    s: Any, resource: dict[str, Any], scope_name: str, scope_version: str, limit: int, scope_attrs: dict[str, Any]
) -> Span:
    trace_id = _id(s.trace_id, 16, "trace_id")
    if not trace_id:
        raise Bad("missing trace id (empty or all zeros)", "trace_id")
    span_id = _id(s.span_id, 8, "span_id")
    if not span_id:
        raise Bad("missing span id (empty or all zeros)", "span_id")
    kind = _KINDS.get(s.kind)
    if kind is None:
        raise Bad(f"unknown span kind {s.kind}", "kind")
    status: SpanStatus | None = STATUSES.get(s.status.code)
    if status is None:
        raise Bad(f"unknown status code {s.status.code}", "status", "code")
    try:
        attrs = _attrs(s.attributes, limit)
    except Bad as e:
        raise e.at("attributes") from None
    if s.end_time_unix_nano and s.end_time_unix_nano < s.start_time_unix_nano:
        raise Bad(f"the span ends before it starts ({s.end_time_unix_nano} < start {s.start_time_unix_nano})",
                  "end_time_unix_nano")  # fmt: skip
    events = []
    for i, ev in enumerate(s.events):
        try:
            events.append(SpanEvent(ev.name, ev.time_unix_nano, _attrs(ev.attributes, limit)))
        except Bad as err:
            raise err.at(f"events[{i}]", "attributes") from None
    return Span(
        trace_id, span_id, _id(s.parent_span_id, 8, "parent_span_id") or None, s.name, s.start_time_unix_nano,
        s.end_time_unix_nano or None, attrs, status, s.status.message, kind, tuple(events), resource,
        scope_name, scope_version, scope_attrs,
    )  # fmt: skip


def span_paths(msg: Any) -> Iterator[str]:
    for i, rs in enumerate(msg.resource_spans):
        for j, ss in enumerate(rs.scope_spans):
            for k in range(len(ss.spans)):
                yield f"resource_spans[{i}].scope_spans[{j}].spans[{k}]"
