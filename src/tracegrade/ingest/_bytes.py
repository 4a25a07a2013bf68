"""One OTLP export request held in memory (an HTTP body) → `Span`s.

The receiver's entry point into the file readers' decoders: the same span decoding, the same
`TraceFormatError` (with no file; `location` is the protobuf field path or JSON path).
"""

from __future__ import annotations

from typing import Any

from ..spans import Span
from . import _otlp, _protobuf
from ._errors import DEFAULT_MAX_ATTRIBUTE_BYTES, Bad, TraceFormatError, type_name
from ._json import JSONError, loads

__all__ = ["parse_json", "spans_from_json_bytes", "spans_from_protobuf_bytes"]

_ORIGIN = "<request>"


def spans_from_protobuf_bytes(body: bytes, limit: int = DEFAULT_MAX_ATTRIBUTE_BYTES) -> list[Span]:
    """Decode one serialized `ExportTraceServiceRequest`; raises `TraceFormatError`."""
    from google.protobuf.message import DecodeError

    cls = _protobuf.message_class(_ORIGIN)
    try:
        msg = cls.FromString(body)
    except (DecodeError, RecursionError, ValueError) as e:
        raise TraceFormatError(f"not a valid ExportTraceServiceRequest protobuf message ({e})", _ORIGIN) from None
    try:
        return _protobuf.spans_from_message(msg, limit)
    except Bad as e:
        raise TraceFormatError(e.problem, _ORIGIN, None, e.location) from None
    except RecursionError:
        raise TraceFormatError("attribute value nested too deeply", _ORIGIN) from None


def parse_json(body: bytes) -> Any:
    """Parse a JSON body (orjson, see `_json`); raises `TraceFormatError` naming the problem's position."""
    try:
        return loads(body)
    except JSONError as e:
        where = f"column {e.colno}" if e.colno is not None else ""
        raise TraceFormatError(e.problem, _ORIGIN, e.lineno, where) from None


def spans_from_json_bytes(body: bytes, limit: int = DEFAULT_MAX_ATTRIBUTE_BYTES) -> list[Span]:
    """Decode one OTLP/JSON `ExportTraceServiceRequest` (camelCase or snake_case keys); raises
    `TraceFormatError` with the JSON path of the problem."""
    doc = parse_json(body)
    try:
        if type(doc) is not dict:
            raise Bad(f"expected a JSON object (an ExportTraceServiceRequest), got {type_name(doc)}")
        if "resourceSpans" in doc:
            return _otlp.spans_from_otlp(doc, limit)
        if "resource_spans" in doc:
            return _otlp.spans_from_otlp(_otlp.camelize(doc), limit)
        if doc:
            keys = ", ".join(repr(k) for k in list(doc)[:8])
            raise Bad(f"expected an ExportTraceServiceRequest with 'resourceSpans', got keys {keys}")
        return []
    except Bad as e:
        raise TraceFormatError(e.problem, _ORIGIN, None, e.location) from None
    except RecursionError:
        raise TraceFormatError("JSON nested too deeply", _ORIGIN) from None
