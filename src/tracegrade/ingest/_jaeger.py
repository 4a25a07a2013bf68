"""Jaeger JSON (UI "Download JSON", query API `/api/traces`) → `Span`s.

Mapping back to OTel (the collector's translator, conventions §7.5): parent = the `CHILD_OF`
reference in the same trace (or `parentSpanID`), µs → ns, `processes` → resource (one dict per
process), `logs` → events (name from the `event` field), and the tags the translator adds —
`span.kind`, `otel.status_code`, `otel.status_description`, `error`, `otel.scope.*` /
`otel.library.*` — turned back into kind, status and scope.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..spans import Span, SpanEvent, SpanKind, SpanStatus
from ._errors import Bad, type_name
from ._otlp import MAX_NS, _b64, check_size, int64, kind_of, parse_id, parse_time, status_of

__all__ = ["is_jaeger", "span_paths", "spans_from_jaeger"]

_SPAN_ERRORS = (KeyError, TypeError, AttributeError, ValueError, OverflowError, RecursionError)


def is_jaeger(doc: dict[str, Any]) -> bool:
    data = doc.get("data")
    return type(data) is list and all(type(t) is dict and "spans" in t for t in data)


def spans_from_jaeger(doc: dict[str, Any], limit: int) -> list[Span]:
    out: list[Span] = []
    for i, trace in enumerate(doc["data"]):
        try:
            _trace(trace, out, limit)
        except Bad as e:
            raise e.at(f"data[{i}]") from None
    return out


def span_paths(doc: dict[str, Any]) -> Iterator[str]:
    for i, trace in enumerate(doc.get("data") or ()):
        for j in range(len(trace.get("spans") or ())):
            yield f"data[{i}].spans[{j}]"


def _trace(trace: dict[str, Any], out: list[Span], limit: int) -> None:
    processes = trace.get("processes") or {}
    if type(processes) is not dict:
        raise Bad(f"expected an object of processes, got {type_name(processes)}", "processes")
    resources = {}
    for pid, process in processes.items():
        try:
            resources[pid] = _process(process, limit)
        except Bad as e:
            raise e.at("processes", pid) from None
    spans = trace.get("spans")
    if type(spans) is not list:
        raise Bad(f"expected a list of spans, got {type_name(spans)}", "spans")
    for j, s in enumerate(spans):
        try:
            out.append(_span(s, trace, resources, limit))
        except Bad as e:
            raise e.at(f"spans[{j}]") from None
        except _SPAN_ERRORS as e:
            raise Bad(f"malformed span ({type(e).__name__}: {e})", f"spans[{j}]") from None


def _process(process: Any, limit: int) -> dict[str, Any]:
    if type(process) is not dict:
        raise Bad(f"expected a process object, got {type_name(process)}")
    resource: dict[str, Any] = {}
    service = process.get("serviceName")
    if service is not None:
        if type(service) is not str:
            raise Bad(f"expected a string, got {type_name(service)}", "serviceName")
        resource["service.name"] = service
    try:
        resource.update(_tags(process.get("tags"), limit))
    except Bad as e:
        raise e.at("tags") from None
    return resource


def _tag_value(kind: Any, value: Any, limit: int) -> Any:
    if kind in ("string", "STRING") and type(value) is str:
        check_size(value, limit)
        return value
    if kind in ("bool", "BOOL"):
        if type(value) is bool:
            return value
        if value in ("true", "false"):
            return value == "true"
    elif kind in ("int64", "INT64"):
        if type(value) is int or type(value) is str:
            try:
                n = int64(value)
            except Bad as e:
                raise e.at("value") from None
            if n is not None:
                return n
    elif kind in ("float64", "FLOAT64"):
        if type(value) in (int, float, str):
            try:
                return float(value)
            except ValueError:  # not a number
                pass
            except OverflowError:  # an integer past the double range
                raise Bad(f"number out of the double range: {type_name(value)}", "value") from None
    elif kind in ("binary", "BINARY"):
        if type(value) is str and (raw := _b64(value)) is not None:
            check_size(raw, limit)
            return raw
    elif kind is None:  # untyped: take the JSON value as it is
        if isinstance(value, str):
            check_size(value, limit)
        elif type(value) is int:
            try:
                int64(value)
            except Bad as e:
                raise e.at("value") from None
        return tuple(value) if isinstance(value, list) else value
    else:
        raise Bad(f"unknown tag type {kind!r}; expected string, bool, int64, float64 or binary", "type")
    raise Bad(f"expected a {kind} value, got {type_name(value)}", "value")


def _tags(tags: Any, limit: int) -> dict[str, Any]:
    if tags is None:
        return {}
    if type(tags) is not list:
        raise Bad(f"expected a list of {{key, type, value}} objects, got {type_name(tags)}")
    out: dict[str, Any] = {}
    for i, tag in enumerate(tags):
        if type(tag) is not dict:
            raise Bad(f"expected a {{key, type, value}} object, got {type_name(tag)}", f"[{i}]")
        key = tag.get("key")
        if type(key) is not str:
            raise Bad(f"expected a string, got {type_name(key)}", f"[{i}]", "key")
        try:
            out[key] = _tag_value(tag.get("type"), tag.get("value"), limit)
        except Bad as e:
            raise e.prefixed(f"tag {key!r}: ").at(f"[{i}]") from None
    return out


def _micros(value: Any, field: str) -> int:
    t = parse_time(value, field, "microseconds", 1000)
    if t is None:
        raise Bad("missing time (microseconds)", field)
    return t


def _parent(s: dict[str, Any], trace_id: int) -> int | None:
    refs = s.get("references")
    if refs is None:
        return parse_id(s.get("parentSpanID"), 16, "parentSpanID") or None
    if type(refs) is not list:
        raise Bad(f"expected a list of references, got {type_name(refs)}", "references")
    for i, ref in enumerate(refs):
        if type(ref) is not dict:
            raise Bad(f"expected a reference object, got {type_name(ref)}", f"references[{i}]")
        if str(ref.get("refType", "")).upper() != "CHILD_OF":
            continue
        try:
            same_trace = parse_id(ref.get("traceID"), 32, "traceID") in (0, trace_id)
            if same_trace:
                return parse_id(ref.get("spanID"), 16, "spanID") or None
        except Bad as e:
            raise e.at(f"references[{i}]") from None
    return parse_id(s.get("parentSpanID"), 16, "parentSpanID") or None


def _span(s: Any, trace: dict[str, Any], resources: dict[str, dict[str, Any]], limit: int) -> Span:
    if type(s) is not dict:
        raise Bad(f"expected a span object, got {type_name(s)}")
    trace_id = parse_id(s.get("traceID", trace.get("traceID")), 32, "traceID")
    if not trace_id:
        raise Bad("missing trace id (absent, empty or all zeros)", "traceID")
    span_id = parse_id(s.get("spanID"), 16, "spanID")
    if not span_id:
        raise Bad("missing span id (absent, empty or all zeros)", "spanID")
    name = s.get("operationName", "")
    if type(name) is not str:
        raise Bad(f"expected a string, got {type_name(name)}", "operationName")
    start = _micros(s.get("startTime"), "startTime")
    end = start + (parse_time(s.get("duration"), "duration", "microseconds", 1000) or 0)
    if end > MAX_NS:
        raise Bad(f"the span ends past the unsigned 64-bit nanosecond range (start {start} ns)", "duration")
    try:
        attrs = _tags(s.get("tags"), limit)
    except Bad as e:
        raise e.at("tags") from None
    try:
        kind, status, message, scope_name, scope_version = _otel_tags(attrs)
    except Bad as e:
        raise e.at("tags") from None
    events = []
    logs = s.get("logs")
    if logs is None:
        logs = []
    elif type(logs) is not list:
        raise Bad(f"expected a list of logs, got {type_name(logs)}", "logs")
    for i, log in enumerate(logs):
        try:
            if type(log) is not dict:
                raise Bad(f"expected a log object, got {type_name(log)}")
            try:
                fields = _tags(log.get("fields"), limit)
            except Bad as e:
                raise e.at("fields") from None
            event = fields.pop("event", "")
            time = _micros(log.get("timestamp"), "timestamp")
            events.append(SpanEvent(event if type(event) is str else str(event), time, fields))
        except Bad as e:
            raise e.at(f"logs[{i}]") from None
    pid = s.get("processID")
    if pid is not None and type(pid) is not str:
        raise Bad(f"expected a string, got {type_name(pid)}", "processID")
    resource: dict[str, Any]
    if "process" in s and (pid is None or pid not in resources):
        try:
            resource = _process(s["process"], limit)
        except Bad as e:
            raise e.at("process") from None
        if pid is not None:
            resources[pid] = resource
    elif pid is None:
        resource = {}
    elif (found := resources.get(pid)) is not None:
        resource = found
    else:
        raise Bad(f"process {pid!r} is not in the trace's processes", "processID")
    return Span(
        trace_id, span_id, _parent(s, trace_id), name, start, end, attrs, status, message, kind, tuple(events),
        resource, scope_name, scope_version,
    )  # fmt: skip


def _otel_tags(attrs: dict[str, Any]) -> tuple[SpanKind, SpanStatus, str, str, str]:
    """Pop the tags the OTel → Jaeger translator adds and return what they encode."""
    kind: SpanKind = "internal"
    if isinstance(raw_kind := attrs.get("span.kind"), str):
        try:
            kind = kind_of(raw_kind, "span.kind")
        except Bad:
            pass  # not an OTel kind: keep it as an attribute
        else:
            del attrs["span.kind"]
    status: SpanStatus = "unset"
    code = attrs.pop("otel.status_code", None)
    if code is not None:
        status = status_of(code, "otel.status_code")
    message = attrs.pop("otel.status_description", "")
    error = attrs.get("error")
    if error is True or error == "true":
        if status == "unset":
            status = "error"
        if status == "error":
            del attrs["error"]
    scope_name = attrs.pop("otel.scope.name", None) or attrs.pop("otel.library.name", "")
    scope_version = attrs.pop("otel.scope.version", None) or attrs.pop("otel.library.version", "")
    attrs.pop("otel.library.name", None)
    attrs.pop("otel.library.version", None)
    return kind, status, str(message), str(scope_name), str(scope_version)
