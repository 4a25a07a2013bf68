"""OTLP protobuf (`ExportTraceServiceRequest`) → `Span`s, via the optional `opentelemetry-proto`.

Files hold one message (`.pb`, an HTTP body capture) or the collector file exporter's stream of
4-byte big-endian length-prefixed messages.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..spans import Span, SpanEvent, SpanKind, SpanStatus
from ._errors import Bad, TraceFormatError
from ._otlp import STATUSES, check_size

__all__ = ["message_class", "span_paths", "spans_from_message"]

_KINDS: dict[int, SpanKind] = {0: "internal", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


def message_class(path: str) -> Any:
    """`ExportTraceServiceRequest`, or a `TraceFormatError` saying how to install it."""
    try:
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
