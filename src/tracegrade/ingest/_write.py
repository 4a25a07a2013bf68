"""Writing spans as spec OTLP/JSON: hex ids, int64 as decimal strings, int enums, camelCase keys,
AnyValue encoding, spans grouped by resource and scope. `read_spans` reads it back exactly."""

from __future__ import annotations

import base64
import gzip
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..spans import SPAN_KINDS, Span
from ..tree import SpanTree

if TYPE_CHECKING:
    from ..capture import Capture

__all__ = ["SpanSource", "dump_otlp_json", "write_otlp_json"]

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


def dump_otlp_json(source: SpanSource | SpanTree | Capture) -> dict[str, Any]:
    """One `ExportTraceServiceRequest` as a JSON-ready dict: spans grouped by resource, then scope,
    in first-appearance order (span order kept within a group)."""
    # id(resource) → (resource, its encoding): spans usually share resource dicts; holding the
    # resource keeps its id from being reused by another one
    encoded: dict[int, tuple[Mapping[str, Any], str]] = {}
    blocks: dict[str, tuple[dict[str, Any], dict[tuple[str, str, str], list[dict[str, Any]]]]] = {}
    for s in _spans(source):
        hit = encoded.get(id(s.resource))
        if hit is None:
            hit = encoded[id(s.resource)] = (s.resource, json.dumps(_attrs(s.resource)))
        key = hit[1]
        block = blocks.get(key)
        if block is None:
            block = blocks[key] = ({"attributes": _attrs(s.resource)}, {})
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
) -> Path:
    """Write spans as an OTLP/JSON file: one request (`lines=False`), or collector-style JSON lines
    with one request of up to `batch_size` spans per line (`lines=True`). A path ending in `.gz` is
    gzip-compressed (reproducibly: no timestamp in the header). Returns the path written."""
    if batch_size < 1:
        raise ValueError("batch_size must be positive")
    if lines:
        spans = list(_spans(source))
        chunks = (spans[i : i + batch_size] for i in range(0, len(spans), batch_size))
        text = "".join(json.dumps(dump_otlp_json(c), ensure_ascii=False, separators=(",", ":")) + "\n" for c in chunks)
    else:
        separators = (",", ":") if indent is None else None
        text = json.dumps(dump_otlp_json(source), ensure_ascii=False, indent=indent, separators=separators) + "\n"
    data = text.encode("utf-8")
    if os.fspath(path).endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    return out
