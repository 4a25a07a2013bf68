"""Trace files: an OTLP/JSON reader (one request document, or collector JSON lines; gzip too) and
writer. Bad input raises `TraceFormatError` naming the file, line and JSON path.

Protobuf and Jaeger readers and streaming by trace are not here yet (see the issue tracker).
"""

from __future__ import annotations

import base64
import gzip
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..spans import SPAN_KINDS, Span, SpanEvent, SpanStatus
from ..tree import SpanTree

__all__ = ["TraceFormatError", "dump_otlp_json", "load_traces", "read_spans", "write_otlp_json"]


class TraceFormatError(ValueError):
    """A trace file that cannot be read; the message names the file, line and JSON path."""

    def __init__(self, path: str | os.PathLike[str], problem: str, line: int | None = None, location: str = ""):
        self.path, self.line, self.location = str(path), line, location
        where = f"{self.path}" + (f":{line}" if line is not None else "") + (f": {location}" if location else "")
        super().__init__(f"{where}: {problem}")


_STATUS: dict[Any, SpanStatus] = {0: "unset", 1: "ok", 2: "error", "STATUS_CODE_UNSET": "unset",
                                  "STATUS_CODE_OK": "ok", "STATUS_CODE_ERROR": "error"}  # fmt: skip
_OTLP_KINDS = {0: "internal", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
_KIND_NAMES = {f"SPAN_KIND_{k.upper()}": k for k in SPAN_KINDS} | {"SPAN_KIND_UNSPECIFIED": "internal"}


def _key(obj: Mapping[str, Any], camel: str, snake: str) -> Any:
    return obj.get(camel, obj.get(snake))


def _id(value: Any, size: int, where: str, fail: Any) -> int | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise fail(f"expected a hex id string, got {type(value).__name__}", where)
    text = value[2:] if value.startswith("0x") else value
    try:
        n = int(text, 16) if len(text) == size * 2 else int.from_bytes(base64.b64decode(text, validate=True), "big")
    except ValueError:
        raise fail(f"invalid id {value!r}", where) from None
    return n or None


def _int(value: Any, where: str, fail: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise fail(f"expected an integer (or a string of one), got {value!r}", where)
    try:
        return int(value)
    except ValueError:
        raise fail(f"expected an integer, got {value!r}", where) from None


def _value(v: Any, where: str, fail: Any) -> Any:
    if not isinstance(v, Mapping):
        raise fail(f"expected an AnyValue object, got {type(v).__name__}", where)
    if (s := _key(v, "stringValue", "string_value")) is not None:
        return s
    if (b := _key(v, "boolValue", "bool_value")) is not None:
        return bool(b)
    if (i := _key(v, "intValue", "int_value")) is not None:
        return _int(i, where, fail)
    if (d := _key(v, "doubleValue", "double_value")) is not None:
        return float(d)
    if (a := _key(v, "arrayValue", "array_value")) is not None:
        return tuple(_value(x, f"{where}.values[{k}]", fail) for k, x in enumerate(a.get("values", [])))
    if (kv := _key(v, "kvlistValue", "kvlist_value")) is not None:
        return _attributes(kv.get("values", []), f"{where}.values", fail)
    if (raw := _key(v, "bytesValue", "bytes_value")) is not None:
        return base64.b64decode(raw)
    return None


def _attributes(items: Any, where: str, fail: Any) -> dict[str, Any]:
    if not isinstance(items, list):
        raise fail(f"expected a list of attributes, got {type(items).__name__}", where)
    out: dict[str, Any] = {}
    for k, item in enumerate(items):
        if not isinstance(item, Mapping) or not isinstance(item.get("key"), str):
            raise fail("an attribute needs a string 'key'", f"{where}[{k}]")
        out[item["key"]] = _value(item.get("value", {}), f"{where}[{k}].value", fail)
    return out


def _spans_of_request(doc: Any, fail: Any) -> Iterator[Span]:
    if not isinstance(doc, Mapping):
        raise fail(f"expected an OTLP ExportTraceServiceRequest object, got {type(doc).__name__}", "")
    resource_spans = _key(doc, "resourceSpans", "resource_spans")
    if resource_spans is None:
        raise fail("not OTLP/JSON traces: no 'resourceSpans'", "")
    for r, rs in enumerate(resource_spans):
        rwhere = f"resourceSpans[{r}]"
        resource = _attributes((rs.get("resource") or {}).get("attributes", []), f"{rwhere}.resource.attributes", fail)
        scopes = _key(rs, "scopeSpans", "scope_spans") or rs.get("instrumentationLibrarySpans") or []
        for s, ss in enumerate(scopes):
            swhere = f"{rwhere}.scopeSpans[{s}]"
            scope = ss.get("scope") or ss.get("instrumentationLibrary") or {}
            spans = ss.get("spans", [])
            if not isinstance(spans, list):
                raise fail(f"expected a list, got {type(spans).__name__}", f"{swhere}.spans")
            for k, sp in enumerate(spans):
                yield _span(sp, f"{swhere}.spans[{k}]", resource, scope, fail)


def _span(sp: Any, where: str, resource: dict[str, Any], scope: Mapping[str, Any], fail: Any) -> Span:
    if not isinstance(sp, Mapping):
        raise fail(f"expected a span object, got {type(sp).__name__}", where)
    trace_id = _id(_key(sp, "traceId", "trace_id"), 16, f"{where}.traceId", fail)
    span_id = _id(_key(sp, "spanId", "span_id"), 8, f"{where}.spanId", fail)
    if trace_id is None or span_id is None:
        raise fail("missing trace or span id", where)
    start = _int(_key(sp, "startTimeUnixNano", "start_time_unix_nano") or 0, f"{where}.startTimeUnixNano", fail)
    end_raw = _key(sp, "endTimeUnixNano", "end_time_unix_nano")
    end = _int(end_raw, f"{where}.endTimeUnixNano", fail) if end_raw not in (None, 0, "0") else None
    status = sp.get("status") or {}
    kind = sp.get("kind", 1)
    events = tuple(
        SpanEvent(
            e.get("name", ""),
            _int(_key(e, "timeUnixNano", "time_unix_nano") or 0, f"{where}.events[{k}]", fail),
            _attributes(e.get("attributes", []), f"{where}.events[{k}].attributes", fail),
        )  # fmt: skip
        for k, e in enumerate(sp.get("events", []))
    )
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=_id(_key(sp, "parentSpanId", "parent_span_id"), 8, f"{where}.parentSpanId", fail),
        name=str(sp.get("name", "")),
        start_ns=start,
        end_ns=end,
        attributes=_attributes(sp.get("attributes", []), f"{where}.attributes", fail),
        status=_STATUS.get(status.get("code", 0), "unset"),
        status_message=str(status.get("message", "")),
        kind=_OTLP_KINDS.get(kind) or _KIND_NAMES.get(kind, "internal"),  # type: ignore[arg-type]
        events=events,
        resource=resource,
        scope_name=str(scope.get("name", "")),
        scope_version=str(scope.get("version", "")),
    )


def _files(path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[Path]:
    paths = [Path(path)] if isinstance(path, str | os.PathLike) else [Path(p) for p in path]
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.is_file() and f.suffix in (".json", ".jsonl", ".gz")))
        elif p.exists():
            out.append(p)
        else:
            raise TraceFormatError(p, "no such file or directory")
    return out


def read_spans(path: str | os.PathLike[str]) -> Iterator[Span]:
    """Every span in an OTLP/JSON file (a single request document, or one request per line)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise TraceFormatError(p, f"cannot read: {e.strerror}") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as e:
            raise TraceFormatError(p, f"corrupt gzip data: {e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise TraceFormatError(p, "not UTF-8 JSON (OTLP protobuf files are not supported yet)") from None
    seen: set[tuple[int, int]] = set()
    docs: list[tuple[int | None, Any]] = []
    try:
        docs = [(None, json.loads(text))]
    except json.JSONDecodeError as whole:
        lines = [(n, t) for n, t in enumerate(text.splitlines(), 1) if t.strip()]
        if len(lines) <= 1:
            raise TraceFormatError(p, f"invalid JSON: {whole.msg}", whole.lineno, f"column {whole.colno}") from None
        for n, text_line in lines:
            try:
                docs.append((n, json.loads(text_line)))
            except json.JSONDecodeError as e:
                raise TraceFormatError(p, f"invalid JSON: {e.msg}", n, f"column {e.colno}") from None
    for line, doc in docs:

        def fail(problem: str, location: str, line: int | None = line) -> TraceFormatError:
            return TraceFormatError(p, problem, line, location)

        try:
            for span in _spans_of_request(doc, fail):
                key = (span.trace_id, span.span_id)
                if key in seen:
                    raise fail(f"duplicate span id {span.span_id:016x} in trace {span.trace_id:032x}", "")
                seen.add(key)
                yield span
        except (AttributeError, TypeError, KeyError) as e:
            raise fail(f"unexpected structure: {e}", "") from None


def load_traces(path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[SpanTree]:
    """One `SpanTree` per trace id, from files and directories of OTLP/JSON traces."""
    by_trace: dict[int, list[Span]] = {}
    for f in _files(path):
        for span in read_spans(f):
            by_trace.setdefault(span.trace_id, []).append(span)
    return [SpanTree.from_spans(spans) for spans in by_trace.values()]


def _any_value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, bytes):
        return {"bytesValue": base64.b64encode(v).decode()}
    if isinstance(v, list | tuple):
        return {"arrayValue": {"values": [_any_value(x) for x in v]}}
    if isinstance(v, Mapping):
        return {"kvlistValue": {"values": [{"key": k, "value": _any_value(x)} for k, x in v.items()]}}
    return {"stringValue": str(v)}


def _as_spans(source: Any) -> list[Span]:
    from ..capture import Capture

    if isinstance(source, Capture):
        source = source.tree
    if isinstance(source, SpanTree):
        return [n.span for n in source]
    return [s if isinstance(s, Span) else Span.from_readable(s) for s in source]


def dump_otlp_json(spans: Any) -> dict[str, Any]:
    """Spans (`Span`s, SDK spans, a `SpanTree` or a `Capture`) as an OTLP/JSON request document."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    resources: dict[str, Mapping[str, Any]] = {}
    for s in _as_spans(spans):
        rkey = json.dumps(_any_value(dict(s.resource)), sort_keys=True)
        resources[rkey] = s.resource
        record: dict[str, Any] = {
            "traceId": f"{s.trace_id:032x}", "spanId": f"{s.span_id:016x}",
            "name": s.name, "kind": SPAN_KINDS.index(s.kind) + 1,
            "startTimeUnixNano": str(s.start_ns),
            "attributes": [{"key": k, "value": _any_value(v)} for k, v in s.attributes.items()],
            "events": [{"timeUnixNano": str(e.time_ns), "name": e.name,
                        "attributes": [{"key": k, "value": _any_value(v)} for k, v in e.attributes.items()]}
                       for e in s.events],
            "status": {"code": {"unset": 0, "ok": 1, "error": 2}[s.status], "message": s.status_message},
        }  # fmt: skip
        if s.parent_id is not None:
            record["parentSpanId"] = f"{s.parent_id:016x}"
        if s.end_ns is not None:
            record["endTimeUnixNano"] = str(s.end_ns)
        groups.setdefault((rkey, s.scope_name, s.scope_version), []).append(record)
    by_resource: dict[str, list[dict[str, Any]]] = {}
    for (rkey, name, version), records in groups.items():
        by_resource.setdefault(rkey, []).append({"scope": {"name": name, "version": version}, "spans": records})
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": k, "value": _any_value(v)} for k, v in resources[r].items()]},
                "scopeSpans": scope_spans,
            }
            for r, scope_spans in by_resource.items()
        ]  # fmt: skip
    }


def write_otlp_json(spans: Any, path: str | os.PathLike[str], *, lines: bool = False) -> Path:
    """Write spans as OTLP/JSON (`lines=True`: one request per trace per line, collector style)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    records = _as_spans(spans)
    if lines:
        by_trace: dict[int, list[Span]] = {}
        for s in records:
            by_trace.setdefault(s.trace_id, []).append(s)
        p.write_text("".join(json.dumps(dump_otlp_json(t)) + "\n" for t in by_trace.values()), encoding="utf-8")
    else:
        p.write_text(json.dumps(dump_otlp_json(records)), encoding="utf-8")
    return p
