"""Writing spans (and their log records) as spec OTLP/JSON: hex ids, int64 as decimal strings, int
enums, camelCase keys, AnyValue encoding, spans grouped by resource and scope. `read_spans` and
`read_logs` read it back exactly."""

from __future__ import annotations

import base64
import gzip
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..spans import SPAN_KINDS, LogRecord, Span
from ..tree import SpanTree

if TYPE_CHECKING:
    from ..capture import Capture

__all__ = ["SpanSource", "dump_otlp_json", "dump_otlp_logs_json", "logs_path_for", "write_otlp_json"]

SpanSource = Iterable[Any]
"""`Span`s, SDK `ReadableSpan`s (mixed is fine), a `SpanTree` or a `tracegrade.capture.Capture`."""

_KIND_CODES = {kind: i + 1 for i, kind in enumerate(SPAN_KINDS)}
_STATUS_CODES = {"unset": 0, "ok": 1, "error": 2}
_INT64 = range(-(1 << 63), 1 << 63)


def _spans(source: SpanSource | SpanTree | Capture) -> Iterator[Span]:
    from ..capture import Capture

    if isinstance(source, Capture):
        source = source.spans
    if isinstance(source, SpanTree):
        yield from (node.span for node in source)
        return
    item: Any
    for item in source:
        yield item if isinstance(item, Span) else Span.from_readable(item)


def _any(value: Any, key: str) -> dict[str, Any]:
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        if value not in _INT64:
            raise ValueError(f"attribute {key!r}: {value} does not fit OTLP's int64")
        return {"intValue": str(value)}
    if isinstance(value, float):
        if math.isfinite(value):
            return {"doubleValue": value}
        return {"doubleValue": "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"}
    if isinstance(value, bytes | bytearray | memoryview):
        return {"bytesValue": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": _attrs(value)}}
    if isinstance(value, tuple | list):
        return {"arrayValue": {"values": [_any(v, key) for v in value]}}
    if value is None:
        return {}
    raise ValueError(f"attribute {key!r}: cannot encode a {type(value).__name__} as an OTLP AnyValue")


def _attrs(attrs: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for k, v in attrs.items():
        if not isinstance(k, str):
            raise ValueError(f"attribute key {k!r} is not a string")
        out.append({"key": k, "value": {"stringValue": v} if type(v) is str else _any(v, k)})
    return out


def _span(s: Span) -> dict[str, Any]:
    if not (0 < s.trace_id < 1 << 128 and 0 < s.span_id < 1 << 64):
        raise ValueError(f"span {s.name!r}: trace id {s.trace_id} / span id {s.span_id} out of range")
    out: dict[str, Any] = {"traceId": f"{s.trace_id:032x}", "spanId": f"{s.span_id:016x}"}
    if s.parent_id:
        out["parentSpanId"] = f"{s.parent_id:016x}"
    out["name"] = s.name
    out["kind"] = _KIND_CODES[s.kind]
    out["startTimeUnixNano"] = str(s.start_ns)
    if s.end_ns is not None:
        out["endTimeUnixNano"] = str(s.end_ns)
    out["attributes"] = _attrs(s.attributes)
    if s.events:
        out["events"] = [
            {"timeUnixNano": str(e.time_ns), "name": e.name, "attributes": _attrs(e.attributes)} for e in s.events
        ]
    status: dict[str, Any] = {}
    if s.status != "unset":
        status["code"] = _STATUS_CODES[s.status]
    if s.status_message:
        status["message"] = s.status_message
    out["status"] = status
    return out


def dump_otlp_json(
    source: SpanSource | SpanTree | Capture, *, resource_attributes: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """One `ExportTraceServiceRequest` as a JSON-ready dict: spans grouped by resource, then scope,
    in first-appearance order (span order kept within a group). `resource_attributes` are added to
    every resource (they win over a resource's own value of the same key); the spans are unchanged."""
    extra = dict(resource_attributes or {})
    # id(resource) → (resource, its encoding): spans usually share resource dicts; holding the
    # resource keeps its id from being reused by another one
    encoded: dict[int, tuple[Mapping[str, Any], list[dict[str, Any]], str]] = {}
    blocks: dict[str, tuple[dict[str, Any], dict[tuple[str, str, str], list[dict[str, Any]]]]] = {}
    for s in _spans(source):
        hit = encoded.get(id(s.resource))
        if hit is None:
            attrs = _attrs({**s.resource, **extra} if extra else s.resource)
            hit = encoded[id(s.resource)] = (s.resource, attrs, json.dumps(attrs))
        key = hit[2]
        block = blocks.get(key)
        if block is None:
            block = blocks[key] = ({"attributes": hit[1]}, {})
        scope_key = (
            s.scope_name,
            s.scope_version,
            json.dumps(_attrs(s.scope_attributes)) if s.scope_attributes else "",
        )
        block[1].setdefault(scope_key, []).append(_span(s))
    return {
        "resourceSpans": [
            {
                "resource": resource,
                "scopeSpans": [
                    {"scope": _scope(name, version, attrs), "spans": spans}
                    for (name, version, attrs), spans in scopes.items()
                ],
            }
            for resource, scopes in blocks.values()
        ]
    }


def _logs(source: SpanSource | SpanTree | Capture) -> list[LogRecord]:
    """The log records a source holds: a capture's (`Capture.logs`), or those attached to a tree's spans."""
    from ..capture import Capture

    if isinstance(source, Capture):
        return list(source.logs)
    if isinstance(source, SpanTree):
        return sorted((r for node in source for r in node.logs), key=lambda r: r.time_ns)
    return []


def _log(r: LogRecord) -> dict[str, Any]:
    if not (0 <= r.trace_id < 1 << 128 and 0 <= r.span_id < 1 << 64):
        raise ValueError(f"log record {r.event_name!r}: trace id {r.trace_id} / span id {r.span_id} out of range")
    out: dict[str, Any] = {"timeUnixNano": str(r.time_ns)}
    if r.severity_number:
        out["severityNumber"] = r.severity_number
    if r.severity_text:
        out["severityText"] = r.severity_text
    if r.body is not None:
        out["body"] = _any(r.body, "body")
    out["attributes"] = _attrs(r.attributes)
    if r.trace_id:
        out["traceId"] = f"{r.trace_id:032x}"
    if r.span_id:
        out["spanId"] = f"{r.span_id:016x}"
    if r.event_name:
        out["eventName"] = r.event_name
    return out


def dump_otlp_logs_json(
    records: Iterable[LogRecord], *, resource_attributes: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """One `ExportLogsServiceRequest` as a JSON-ready dict: records grouped by resource, then scope
    name, in first-appearance order (record order kept within a group); `resource_attributes` as in
    `dump_otlp_json`."""
    extra = dict(resource_attributes or {})
    blocks: dict[str, tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]] = {}
    for r in records:
        attrs = _attrs({**r.resource, **extra} if extra else r.resource)
        block = blocks.setdefault(json.dumps(attrs), (attrs, {}))
        block[1].setdefault(r.scope_name, []).append(_log(r))
    return {
        "resourceLogs": [
            {
                "resource": {"attributes": attrs},
                "scopeLogs": [{"scope": {"name": name}, "logRecords": logs} for name, logs in scopes.items()],
            }
            for attrs, scopes in blocks.values()
        ]
    }


_JSON_SUFFIXES = (".json.gz", ".jsonl.gz", ".ndjson.gz", ".json", ".jsonl", ".ndjson")


def logs_path_for(path: str | os.PathLike[str]) -> Path:
    """Where `write_otlp_json` puts the log records of a traces file by default (and `recorded_trace`
    reads them): `run.json` → `run.logs.json`, `run.traces.json` → `run.logs.json` (the suffix,
    `.gz` included, is kept)."""
    p = Path(path)
    name = p.name
    suffix = next((x for x in _JSON_SUFFIXES if name.lower().endswith(x)), "")
    stem = name[: len(name) - len(suffix)] if suffix else name
    stem = stem.removesuffix(".traces")
    return p.with_name(f"{stem}.logs{suffix or '.json'}")


def _scope(name: str, version: str, attrs: str) -> dict[str, Any]:
    scope: dict[str, Any] = {"name": name, "version": version} if version else {"name": name}
    if attrs:
        scope["attributes"] = json.loads(attrs)
    return scope


def write_otlp_json(
    source: SpanSource | SpanTree | Capture,
    path: str | os.PathLike[str],
    *,
    lines: bool = False,
    batch_size: int = 512,
    indent: int | None = None,
    logs_path: str | os.PathLike[str] | Literal[False] | None = None,
    resource_attributes: Mapping[str, Any] | None = None,
) -> Path:
    """Write spans as an OTLP/JSON file: one request (`lines=False`), or collector-style JSON lines
    with one request of up to `batch_size` spans per line (`lines=True`). A path ending in `.gz` is
    gzip-compressed (reproducibly: no timestamp in the header). Returns the path written.

    Log records the source holds (a `Capture`'s `logs`, or the records attached to a `SpanTree`'s
    spans) go to an OTLP/JSON logs file (`ExportLogsServiceRequest`, in the same layout) at
    `logs_path`, by default `logs_path_for(path)` beside the traces (`run.json` → `run.logs.json`;
    `load_traces` attaches them when given both files or their directory); no file when there are
    none, or with `logs_path=False`.
    `resource_attributes` are added to the resource of every span and record (see `dump_otlp_json`).
    """
    if batch_size < 1:
        raise ValueError("batch_size must be positive")
    if lines:
        spans = list(_spans(source))
        chunks = (spans[i : i + batch_size] for i in range(0, len(spans), batch_size))
        text = "".join(
            _dumps(dump_otlp_json(c, resource_attributes=resource_attributes), None) for c in chunks
        )  # fmt: skip
    else:
        text = _dumps(dump_otlp_json(source, resource_attributes=resource_attributes), indent)
    records = _logs(source) if logs_path is not False else []
    target = logs_path_for(path) if logs_path is None or logs_path is False else Path(logs_path)
    if records and target.resolve() == Path(path).resolve():
        raise ValueError(f"logs_path {os.fspath(target)!r} is the traces file itself")
    out = _write(text, path)
    if records:
        if lines:
            parts = (records[i : i + batch_size] for i in range(0, len(records), batch_size))
            text = "".join(_dumps(dump_otlp_logs_json(p, resource_attributes=resource_attributes), None) for p in parts)
        else:
            text = _dumps(dump_otlp_logs_json(records, resource_attributes=resource_attributes), indent)
        _write(text, target)
    return out


def _dumps(doc: dict[str, Any], indent: int | None) -> str:
    separators = (",", ":") if indent is None else None
    return json.dumps(doc, ensure_ascii=False, indent=indent, separators=separators) + "\n"


def _write(text: str, path: str | os.PathLike[str]) -> Path:
    data = text.encode("utf-8")
    if os.fspath(path).endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    return out
