"""OTLP/JSON (`ExportTraceServiceRequest` / `TracesData`) documents → `Span`s.

Spec JSON plus the variants real files contain: base64 or `0x`-prefixed ids, snake_case keys,
`instrumentationLibrarySpans`, enum names, int64 as numbers, `"NaN"` doubles. The span and
attribute loops are the hot path of `load_traces`: cheap type checks inline, and a slow, fully
checking twin (`_attrs_checked`) that runs only to explain a failure precisely.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from typing import Any

from ..spans import Span, SpanEvent, SpanKind, SpanStatus
from ._errors import Bad, type_name

__all__ = [
    "KINDS",
    "MAX_NS",
    "STATUSES",
    "attributes",
    "camelize",
    "check_size",
    "kind_of",
    "parse_id",
    "parse_time",
    "span_paths",
    "spans_from_otlp",
    "status_of",
]

KINDS: dict[Any, SpanKind] = {0: "internal", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
"""OTLP span kind (int or any spelling of its name) → `SpanKind`; OTLP 0 (unspecified) is internal."""
for _code, _kind in list(KINDS.items()):
    _name = "UNSPECIFIED" if _code == 0 else _kind.upper()
    KINDS.update({f"SPAN_KIND_{_name}": _kind, _name: _kind, _name.lower(): _kind, f"SpanKind.{_name}": _kind})

STATUSES: dict[Any, SpanStatus] = {0: "unset", 1: "ok", 2: "error"}
for _code, _status in list(STATUSES.items()):
    _name = _status.upper()
    STATUSES.update({f"STATUS_CODE_{_name}": _status, _name: _status, _status: _status, _status.title(): _status})

_HEX = re.compile(r"[0-9a-fA-F]+")
MAX_NS = (1 << 64) - 1
"""Times are unsigned 64-bit nanoseconds since the Unix epoch (OTLP `fixed64`)."""
_I64 = 1 << 63


def kind_of(value: Any, field: str = "kind") -> SpanKind:
    if value is None:
        return "internal"
    try:
        kind = KINDS.get(value)
    except TypeError:  # unhashable
        kind = None
    if kind is None and isinstance(value, str):
        kind = KINDS.get(value.strip().upper().removeprefix("SPANKIND.").removeprefix("SPAN_KIND_"))
    if kind is None or isinstance(value, bool | float):
        raise Bad(f"expected a span kind (0-5 or a name like SPAN_KIND_CLIENT), got {type_name(value)}", field)
    return kind


def status_of(value: Any, field: str = "code") -> SpanStatus:
    if value is None:
        return "unset"
    try:
        status = STATUSES.get(value)
    except TypeError:
        status = None
    if status is None and isinstance(value, str):
        status = STATUSES.get(value.strip().upper().removeprefix("STATUS_CODE_"))
    if status is None or isinstance(value, bool | float):
        raise Bad(f"expected a status code (0-2 or a name like STATUS_CODE_ERROR), got {type_name(value)}", field)
    return status


def parse_id(value: Any, width: int, field: str) -> int:
    """A `width`-hex-digit id as an int; 0 when absent (missing, empty or all zeros)."""
    if type(value) is str and len(value) == width:
        try:
            n = int(value, 16)
        except ValueError:
            pass
        else:
            if n > 0:
                return n
    return _parse_id_slow(value, width, field)


def _parse_id_slow(value: Any, width: int, field: str) -> int:
    if value is None or value == "":
        return 0
    if type(value) is int:
        n = value
    elif type(value) is str:
        text = value.strip()
        if text[:2] in ("0x", "0X"):
            text = text[2:]
        if len(text) <= width and _HEX.fullmatch(text):
            n = int(text, 16)
        else:
            raw = _b64(text)
            if raw is None or len(raw) != width // 2:
                raise Bad(f"expected a {width}-digit hex (or base64) id, got {type_name(value)}", field)
            n = int.from_bytes(raw, "big")
    else:
        raise Bad(f"expected a {width}-digit hex id string, got {type_name(value)}", field)
    if not 0 <= n < 1 << (width * 4):
        raise Bad(f"id out of range for a {width * 4}-bit id: {type_name(value)}", field)
    return n


def _b64(text: str) -> bytes | None:
    padded = text + "=" * (-len(text) % 4)
    for alt in (None, b"-_"):
        try:
            return base64.b64decode(padded, altchars=alt, validate=True)
        except (binascii.Error, ValueError):
            continue
    return None


def _is_decimal(text: str) -> bool:
    digits = text.strip().removeprefix("-").removeprefix("+")
    return digits.isascii() and digits.isdigit()


def parse_time(value: Any, field: str, unit: str = "nanoseconds", scale: int = 1) -> int | None:
    """Nanoseconds from a decimal string or a number of `unit`s (`scale` ns each; ints never go
    through float); None when absent. The result must fit an unsigned 64-bit integer."""
    if type(value) is str:
        try:
            n = int(value)
        except ValueError:
            if _is_decimal(value):  # longer than int() converts
                raise Bad(f"time out of range (a number of {len(value.strip()):,} digits)", field) from None
            raise Bad(f"expected an integer ({unit}), got {type_name(value)}", field) from None
    elif type(value) is int:
        n = value
    elif value is None:
        return None
    elif type(value) is float and value.is_integer():
        n = int(value)
    else:
        raise Bad(f"expected an integer ({unit}), got {type_name(value)}", field)
    if n < 0:
        raise Bad(f"expected a non-negative time, got {n}", field)
    n *= scale
    if n > MAX_NS:
        raise Bad(f"time out of range: {type_name(value)} {unit} is past the unsigned 64-bit nanosecond range", field)
    return n


# --- AnyValue ------------------------------------------------------------------------------------


def check_size(value: str | bytes, limit: int) -> None:
    size = len(value) if isinstance(value, bytes) or len(value) > limit else len(value.encode("utf-8", "replace"))
    if size > limit:
        raise Bad(f"value of {size:,} bytes exceeds the {limit:,}-byte limit (max_attribute_bytes)")


def _string(x: Any, limit: int) -> str:
    if type(x) is not str:
        raise Bad(f"expected a string, got {type_name(x)}")
    if len(x) > limit >> 2:
        check_size(x, limit)
    return x


def _bool(x: Any, limit: int) -> bool:
    if type(x) is not bool:
        raise Bad(f"expected true or false, got {type_name(x)}")
    return x


def int64(x: Any) -> int | None:
    """An int64 from an integer, an integral float or a decimal string; None if `x` is none of
    these; raises `Bad` if it is out of the int64 range."""
    n: int | None = None
    if type(x) is str:
        try:
            n = int(x)
        except ValueError:
            if _is_decimal(x):
                raise Bad(f"integer out of the int64 range (a number of {len(x.strip()):,} digits)") from None
    elif type(x) is int:
        n = x
    elif type(x) is float and x.is_integer():
        n = int(x)
    if n is not None and not -_I64 <= n < _I64:
        raise Bad(f"integer out of the int64 range: {type_name(x)}")
    return n


def _int(x: Any, limit: int) -> int:
    n = int64(x)
    if n is None:
        raise Bad(f"expected an integer (number or decimal string), got {type_name(x)}")
    return n


def _double(x: Any, limit: int) -> float:
    if type(x) is float:
        return x
    if type(x) is int:
        try:
            return float(x)
        except OverflowError:
            raise Bad(f"number out of the double range: {type_name(x)}") from None
    if type(x) is str:
        try:
            return float(x)  # also "NaN", "Infinity", "-Infinity"
        except ValueError:
            pass
    raise Bad(f"expected a number (or NaN/Infinity/-Infinity), got {type_name(x)}")


def _bytes(x: Any, limit: int) -> bytes:
    if type(x) is not str:
        raise Bad(f"expected a base64 string, got {type_name(x)}")
    if len(x) * 3 // 4 > limit:
        raise Bad(f"value of about {len(x) * 3 // 4:,} bytes exceeds the {limit:,}-byte limit (max_attribute_bytes)")
    raw = _b64(x)
    if raw is None:
        raise Bad(f"expected a base64 string, got {type_name(x)}")
    return raw


def _values(x: Any, field: str = "values") -> list[Any]:
    if type(x) is not dict:
        raise Bad(f"expected an object with a {field!r} list, got {type_name(x)}")
    values = x.get("values", [])
    if type(values) is not list:
        raise Bad(f"expected a list, got {type_name(values)}", field)
    return values


def _array(x: Any, limit: int) -> tuple[Any, ...]:
    out = []
    for i, item in enumerate(_values(x)):
        try:
            out.append(any_value(item, limit))
        except Bad as e:
            raise e.at(f"values[{i}]") from None
    value = tuple(out)
    if len(value) > 1:
        _check_total(value, limit)
    return value


def _kvlist(x: Any, limit: int) -> dict[str, Any]:
    try:
        value = _attrs_checked(_values(x), limit)
    except Bad as e:
        raise e.at("values") from None
    _check_total(value, limit)
    return value


def _check_total(value: Any, limit: int) -> None:
    size = _size(value)
    if size > limit:
        raise Bad(f"value of about {size:,} bytes exceeds the {limit:,}-byte limit (max_attribute_bytes)")


def _size(value: Any) -> int:
    if isinstance(value, str | bytes):
        return len(value)
    if isinstance(value, tuple):
        return sum(_size(v) for v in value)
    if isinstance(value, dict):
        return sum(len(k) + _size(v) for k, v in value.items())
    return 8


_DECODERS: dict[str, Any] = {
    "stringValue": _string,
    "boolValue": _bool,
    "intValue": _int,
    "doubleValue": _double,
    "arrayValue": _array,
    "kvlistValue": _kvlist,
    "bytesValue": _bytes,
}
_DECODERS.update({re.sub(r"([A-Z])", r"_\1", k).lower(): f for k, f in list(_DECODERS.items())})
_ANY_KINDS = "stringValue, boolValue, intValue, doubleValue, arrayValue, kvlistValue, bytesValue"


def any_value(v: Any, limit: int) -> Any:
    """Decode one AnyValue: array → tuple, kvlist → dict, bytes → bytes, empty → None."""
    if type(v) is not dict:
        if v is None:
            return None
        raise Bad(f"expected an AnyValue object ({{stringValue: ...}} etc.), got {type_name(v)}")
    for key, x in v.items():
        decode = _DECODERS.get(key)
        if decode is not None:
            try:
                return decode(x, limit)
            except Bad as e:
                raise e.at(key) from None
    if not v:
        return None
    raise Bad(f"unknown AnyValue field(s) {', '.join(map(repr, v))}; expected one of {_ANY_KINDS}")


def attributes(kvs: Any, limit: int) -> dict[str, Any]:
    """Decode a `[{key, value}]` list (last duplicate key wins)."""
    out: dict[str, Any] = {}
    short = limit >> 2  # a string of at most limit/4 characters is at most `limit` UTF-8 bytes
    try:
        for kv in kvs:
            v = kv["value"]
            x = v.get("stringValue")
            if type(x) is str and len(x) <= short:
                out[kv["key"]] = x
            elif type(y := v.get("intValue")) is str and len(y) < 19:  # < 10**18: within int64
                out[kv["key"]] = int(y)
            else:
                out[kv["key"]] = any_value(v, limit)
        "".join(out)  # raises TypeError unless every key is a string
        return out
    except (Bad, KeyError, TypeError, AttributeError, ValueError, OverflowError, RecursionError):
        return _attrs_checked(kvs, limit)  # explains the failure (or handles an unusual shape)


def _attrs_checked(kvs: Any, limit: int) -> dict[str, Any]:
    if type(kvs) is not list:
        raise Bad(f"expected a list of {{key, value}} objects, got {type_name(kvs)}")
    out: dict[str, Any] = {}
    for i, kv in enumerate(kvs):
        if type(kv) is not dict:
            raise Bad(f"expected a {{key, value}} object, got {type_name(kv)}", f"[{i}]")
        key = kv.get("key")
        if type(key) is not str:
            raise Bad(f"expected a string, got {type_name(key)}", f"[{i}]", "key")
        try:
            out[key] = any_value(kv.get("value"), limit)
        except Bad as e:
            raise e.prefixed(f"attribute {key!r}: ").at(f"[{i}]", "value") from None
        except RecursionError:
            raise Bad(f"attribute {key!r}: value nested too deeply", f"[{i}]", "value") from None
    return out


# --- spans -----------------------------------------------------------------------------------------

_SNAKE = re.compile(r"_([a-z])")


def _camel(key: Any) -> Any:
    return _SNAKE.sub(lambda m: m[1].upper(), key) if type(key) is str and "_" in key else key


def camelize(value: Any) -> Any:
    """A copy of a snake_case (`preserving_proto_field_name`) document with camelCase keys.

    Iterative: any depth of nesting the JSON decoder accepts is copied, not a `RecursionError`."""
    if type(value) is not dict and type(value) is not list:
        return value
    root: Any = {} if type(value) is dict else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        src, dst = stack.pop()
        items = src.items() if type(src) is dict else enumerate(src)
        for k, v in items:
            if type(v) is dict or type(v) is list:
                copy: Any = {} if type(v) is dict else []
                stack.append((v, copy))
                v = copy
            if type(dst) is dict:
                dst[_camel(k)] = v
            else:
                dst.append(v)
    return root


def _event(e: Any, limit: int) -> SpanEvent:
    if type(e) is not dict:
        raise Bad(f"expected an event object, got {type_name(e)}")
    name = e.get("name", "")
    if type(name) is not str:
        raise Bad(f"expected a string, got {type_name(name)}", "name")
    attrs = e.get("attributes")
    try:
        decoded = {} if attrs is None else attributes(attrs, limit)
    except Bad as err:
        raise err.at("attributes") from None
    return SpanEvent(name, parse_time(e.get("timeUnixNano"), "timeUnixNano") or 0, decoded)


def span(
    s: Any, resource: dict[str, Any], scope_name: str, scope_version: str, limit: int,
    scope_attributes: dict[str, Any] | None = None,
) -> Span:  # fmt: skip
    """Decode one OTLP/JSON span object."""
    if type(s) is not dict:
        raise Bad(f"expected a span object, got {type_name(s)}")
    if "spanId" not in s and "span_id" in s:
        s = camelize(s)
    get = s.get
    tid, sid, pid = get("traceId"), get("spanId"), get("parentSpanId")
    start, end = get("startTimeUnixNano"), get("endTimeUnixNano")
    try:  # the spec's shapes inline (hex ids, decimal-string times); anything else via the parse_* functions
        trace_id = int(tid, 16) if type(tid) is str and len(tid) == 32 else 0
        span_id = int(sid, 16) if type(sid) is str and len(sid) == 16 else 0
        parent_id = int(pid, 16) if type(pid) is str and len(pid) == 16 else 0
        start = int(start) if type(start) is str else start
        end = int(end) if type(end) is str else end
    except ValueError:
        trace_id = span_id = parent_id = 0
        start, end = get("startTimeUnixNano"), get("endTimeUnixNano")
    if trace_id <= 0 and not (trace_id := parse_id(tid, 32, "traceId")):
        raise Bad("missing trace id (absent, empty or all zeros)", "traceId")
    if span_id <= 0 and not (span_id := parse_id(sid, 16, "spanId")):
        raise Bad("missing span id (absent, empty or all zeros)", "spanId")
    if parent_id <= 0 and pid:
        parent_id = parse_id(pid, 16, "parentSpanId")
    if type(start) is not int or not 0 <= start <= MAX_NS:
        start = parse_time(start, "startTimeUnixNano") or 0
    if type(end) is not int or not 0 < end <= MAX_NS:
        end = parse_time(end, "endTimeUnixNano") or None
    if end is not None and end < start:
        raise Bad(f"the span ends before it starts ({end} < startTimeUnixNano {start})", "endTimeUnixNano")
    name = get("name", "")
    if type(name) is not str:
        raise Bad(f"expected a string, got {type_name(name)}", "name")
    k = get("kind")
    kind = KINDS.get(k) if type(k) is int else None
    if kind is None:
        kind = kind_of(k)
    status: SpanStatus = "unset"
    message = ""
    st = get("status")
    if st:
        if type(st) is not dict:
            raise Bad(f"expected a status object, got {type_name(st)}", "status")
        code = st.get("code")
        try:
            status = STATUSES[code] if type(code) is int and 0 <= code <= 2 else status_of(code)
        except Bad as e:
            raise e.at("status") from None
        message = st.get("message") or ""
        if type(message) is not str:
            raise Bad(f"expected a string, got {type_name(message)}", "status", "message")
    attrs = get("attributes")
    try:
        decoded = {} if attrs is None else attributes(attrs, limit)
    except Bad as e:
        raise e.at("attributes") from None
    events: tuple[SpanEvent, ...] = ()
    evs = get("events")
    if evs:
        if type(evs) is not list:
            raise Bad(f"expected a list of events, got {type_name(evs)}", "events")
        out = []
        for i, ev in enumerate(evs):
            try:
                out.append(_event(ev, limit))
            except Bad as err:
                raise err.at(f"events[{i}]") from None
        events = tuple(out)
    return Span(
        trace_id, span_id, parent_id or None, name, start, end, decoded, status, message, kind, events,
        resource, scope_name, scope_version, {} if scope_attributes is None else scope_attributes,
    )  # fmt: skip


_SCOPE_SPANS_KEYS = ("scopeSpans", "instrumentationLibrarySpans", "scope_spans", "instrumentation_library_spans")
_SCOPE_KEYS = ("scope", "instrumentationLibrary", "instrumentation_library")
_SPAN_ERRORS = (KeyError, TypeError, AttributeError, ValueError, OverflowError, RecursionError)


def _first_key(obj: dict[str, Any], keys: tuple[str, ...]) -> tuple[str, Any]:
    for key in keys:
        value = obj.get(key)
        if value is not None:
            return key, value
    return keys[0], None


def spans_from_otlp(doc: dict[str, Any], limit: int, key: str = "resourceSpans") -> list[Span]:
    """All spans of a request, in document order; resource dicts are shared per resource block."""
    rss = doc.get(key)
    if type(rss) is not list:
        raise Bad(f"expected a list of ResourceSpans, got {type_name(rss)}", key)
    out: list[Span] = []
    for i, rs in enumerate(rss):
        try:
            _resource_spans(rs, out, limit)
        except Bad as e:
            raise e.at(f"{key}[{i}]") from None
    return out


def _resource_spans(rs: Any, out: list[Span], limit: int) -> None:
    if type(rs) is not dict:
        raise Bad(f"expected a ResourceSpans object, got {type_name(rs)}")
    res = rs.get("resource")
    resource: dict[str, Any] = {}
    if res is not None:
        if type(res) is not dict:
            raise Bad(f"expected a resource object, got {type_name(res)}", "resource")
        attrs = res.get("attributes")
        if attrs is not None:
            try:
                resource = attributes(attrs, limit)
            except Bad as e:
                raise e.at("resource", "attributes") from None
    key, scope_spans = _first_key(rs, _SCOPE_SPANS_KEYS)
    if scope_spans is None:
        return
    if type(scope_spans) is not list:
        raise Bad(f"expected a list of ScopeSpans, got {type_name(scope_spans)}", key)
    for j, ss in enumerate(scope_spans):
        try:
            _scope_spans(ss, resource, out, limit)
        except Bad as e:
            raise e.at(f"{key}[{j}]") from None


def _scope_spans(ss: Any, resource: dict[str, Any], out: list[Span], limit: int) -> None:
    if type(ss) is not dict:
        raise Bad(f"expected a ScopeSpans object, got {type_name(ss)}")
    key, scope = _first_key(ss, _SCOPE_KEYS)
    name = version = ""
    scope_attrs: dict[str, Any] = {}
    if scope is not None:
        if type(scope) is not dict:
            raise Bad(f"expected a scope object, got {type_name(scope)}", key)
        name, version = scope.get("name") or "", scope.get("version") or ""
        if type(name) is not str or type(version) is not str:
            field = "name" if type(name) is not str else "version"
            raise Bad(f"expected a string, got {type_name(scope.get(field))}", key, field)
        if scope.get("attributes"):
            try:
                scope_attrs = attributes(scope["attributes"], limit)
            except Bad as e:
                raise e.at(key, "attributes") from None
    spans = ss.get("spans")
    if spans is None:
        return
    if type(spans) is not list:
        raise Bad(f"expected a list of spans, got {type_name(spans)}", "spans")
    append = out.append
    for k, s in enumerate(spans):
        try:
            append(span(s, resource, name, version, limit, scope_attrs))
        except Bad as e:
            raise e.at(f"spans[{k}]") from None
        except _SPAN_ERRORS as e:
            raise Bad(f"malformed span ({type(e).__name__}: {e})", f"spans[{k}]") from None


def span_paths(doc: dict[str, Any], key: str = "resourceSpans") -> Iterator[str]:
    """The JSON path of each span of a (valid) request, in `spans_from_otlp` order."""
    for i, rs in enumerate(doc.get(key) or ()):
        sk, scope_spans = _first_key(rs, _SCOPE_SPANS_KEYS)
        for j, ss in enumerate(scope_spans or ()):
            for k in range(len(ss.get("spans") or ())):
                yield f"{key}[{i}].{sk}[{j}].spans[{k}]"
