"""OTLP log records (`ExportLogsServiceRequest`, protobuf or JSON) → `LogRecord`s, from a request
body (the receiver) or a file (`read_logs`, `load_traces` among trace files): OTLP/JSON documents,
JSON lines, protobuf (one message, or the collector's length-prefixed stream), any of them gzipped.

Only what grading needs to attach a record to its span and read it: ids, time, event name,
severity, body and attributes. Attribute and body values use the span decoders.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from ..spans import LogRecord
from . import _json
from ._bytes import parse_json
from ._errors import DEFAULT_MAX_ATTRIBUTE_BYTES, DEFAULT_MAX_INFLATED_BYTES, Bad, TraceFormatError, type_name
from ._otlp import any_value, attributes, camelize, parse_id, parse_time
from ._protobuf import _any as _pb_any
from ._protobuf import _attrs as _pb_attrs
from ._protobuf import _id as _pb_id
from ._protobuf import message_class, signal_of

__all__ = [
    "LogRecord", "ReceivedLog", "holds_traces", "is_logs_file", "logs_from_json_bytes", "logs_from_message",
    "logs_from_protobuf_bytes", "logs_of_json", "read_logs",
]  # fmt: skip

_ORIGIN = "<request>"


ReceivedLog = LogRecord
"""The name the receiver first gave `LogRecord`."""


def _pb_record(r: Any, resource: dict[str, Any], scope: str, limit: int) -> LogRecord:
    try:
        body = _pb_any(r.body, limit)
    except Bad as e:
        raise e.at("body") from None
    try:
        attrs = _pb_attrs(r.attributes, limit)
    except Bad as e:
        raise e.at("attributes") from None
    return LogRecord(
        _pb_id(r.trace_id, 16, "trace_id"), _pb_id(r.span_id, 8, "span_id"),
        r.time_unix_nano or r.observed_time_unix_nano, r.event_name, body, attrs, r.severity_text,
        r.severity_number, resource, scope,
    )  # fmt: skip


def logs_from_message(msg: Any, limit: int) -> list[LogRecord]:
    """The records of one decoded `ExportLogsServiceRequest`; raises `Bad` with the field path."""
    out: list[LogRecord] = []
    for i, rl in enumerate(msg.resource_logs):
        try:
            try:
                resource = _pb_attrs(rl.resource.attributes, limit)
            except Bad as e:
                raise e.at("resource", "attributes") from None
            for j, sl in enumerate(rl.scope_logs):
                for k, r in enumerate(sl.log_records):
                    try:
                        out.append(_pb_record(r, resource, sl.scope.name, limit))
                    except Bad as e:
                        raise e.at(f"scope_logs[{j}]", f"log_records[{k}]") from None
        except Bad as e:
            raise e.at(f"resource_logs[{i}]") from None
    return out


def _decode_pb(body: bytes | bytearray, limit: int, path: str, label: str = "", file: bool = False) -> list[LogRecord]:
    """One serialized `ExportLogsServiceRequest` → records; `TraceFormatError` at `path` (`label`:
    which message of a stream). A file's message must be a logs export (a request body is taken as
    the endpoint says)."""
    from google.protobuf.message import DecodeError

    def where(location: str = "") -> str:
        return f"{label}: {location}" if label and location else label or location

    if file and signal_of(body) == "traces":
        raise TraceFormatError("this protobuf message holds OTLP traces, not logs", path, None, where())
    try:
        msg = message_class(path, "logs").FromString(body)
    except (DecodeError, RecursionError, ValueError) as e:
        raise TraceFormatError(f"not a valid ExportLogsServiceRequest protobuf message ({e})", path, None,
                               where()) from None  # fmt: skip
    if file and body and not msg.resource_logs:
        raise TraceFormatError("binary data that is not an OTLP logs export (no resource_logs)", path, None, where())
    try:
        return logs_from_message(msg, limit)
    except Bad as e:
        raise TraceFormatError(e.problem, path, None, where(e.location)) from None
    except RecursionError:
        raise TraceFormatError("value nested too deeply", path, None, where()) from None


def logs_from_protobuf_bytes(body: bytes, limit: int = DEFAULT_MAX_ATTRIBUTE_BYTES) -> list[LogRecord]:
    """Decode one serialized `ExportLogsServiceRequest`; raises `TraceFormatError`."""
    return _decode_pb(body, limit, _ORIGIN)


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
    try:
        return logs_of_json(doc, limit)
    except Bad as e:
        raise TraceFormatError(e.problem, _ORIGIN, None, e.location) from None
    except RecursionError:
        raise TraceFormatError("JSON nested too deeply", _ORIGIN) from None


def logs_of_json(doc: Any, limit: int) -> list[LogRecord]:
    """The records of one parsed OTLP/JSON logs request; raises `Bad` with the JSON path."""
    out: list[LogRecord] = []
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
    return out


_LOGS_KEYS = (b'"resourceLogs"', b'"resource_logs"')
_TRACES_KEYS = (b'"resourceSpans"', b'"resource_spans"', b'"data"', b'"batches"')
_HEAD = 1 << 16


def is_logs_file(path: str | os.PathLike[str], max_inflated: int = DEFAULT_MAX_INFLATED_BYTES) -> bool:
    """An OTLP logs file: JSON (a document or JSON lines) with `resourceLogs` before any trace key in
    its first 64 KiB, or protobuf whose first record is a log record (`signal_of`; read further than
    64 KiB only while no record has been reached, e.g. behind large resource attributes)."""
    from ._read import _opened, _sniff, _stream_prefixed

    name = os.fspath(path)
    if not os.path.isfile(name):  # a FIFO or device is refused by the trace reader, never opened here
        return False
    try:
        kind, compressed = _sniff(name, max_inflated)
        with _opened(name, compressed, max_inflated) as f:
            head = f.read(min(_HEAD, max_inflated))
            if kind == "protobuf":
                while True:
                    signal = signal_of(memoryview(head)[4:] if _stream_prefixed(head) else head)
                    if signal is not None or not (more := f.read(len(head))):
                        return signal == "logs"
                    head += more
    except (TraceFormatError, OSError):
        return False  # the trace reader reports what is wrong with it
    found = [head.find(k) for k in _LOGS_KEYS if k in head]
    traces = [head.find(k) for k in _TRACES_KEYS if k in head]
    return bool(found) and (not traces or min(found) < min(traces))


def holds_traces(path: str | os.PathLike[str], max_inflated: int = DEFAULT_MAX_INFLATED_BYTES) -> bool:
    """Whether a logs file (`is_logs_file`) holds trace requests too: a JSON lines file or protobuf
    stream one collector `file` exporter in both pipelines wrote. False for a file it cannot read
    (the logs reader reports what is wrong with it)."""
    from ._read import _BOM, _messages, _opened, _sniff, is_trace_request

    name = os.fspath(path)
    try:
        kind, compressed = _sniff(name, max_inflated)
        if kind == "protobuf":
            return any(label and signal_of(raw) == "traces" for label, raw in _messages(name, compressed, max_inflated))
        with _opened(name, compressed, max_inflated) as f:
            lines = (line for line in f if not line.isspace())
            first = next(lines, b"")
            try:
                _json.loads(first.removeprefix(_BOM))
            except _json.JSONError:
                return False  # one (pretty-printed) document: one signal
            for line in lines:  # only a line naming a trace key is parsed
                if any(key in line for key in _TRACE_LINE_KEYS):
                    try:
                        if is_trace_request(_json.loads(line)):
                            return True
                    except _json.JSONError:
                        continue
    except (TraceFormatError, OSError):
        pass
    return False


_TRACE_LINE_KEYS = (*_TRACES_KEYS, b'"trace"', b'"result"')


def read_logs(
    path: str | os.PathLike[str],
    *,
    max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
    max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES,
) -> list[LogRecord]:
    """Every log record of an OTLP logs file: an OTLP/JSON document (pretty-printed or not), JSON lines,
    or protobuf (one `ExportLogsServiceRequest`, or a length-prefixed stream of them), gzip too; told
    apart as trace files are. The trace requests of a JSON lines file or stream holding both signals
    (one collector `file` exporter in both pipelines: `load_traces` reads both) are skipped with a
    `TraceFileWarning`, as are metrics lines. `TraceFormatError` naming the file, the line (and
    column) of a JSON lines file, or the field path in the document or message, for bad input."""
    from ._read import TraceFileWarning

    records, traces = file_logs(path, max_attribute_bytes, max_inflated_bytes)
    if traces:
        warnings.warn(
            f"{os.fspath(path)}: skipped {traces} request(s) of OTLP traces (not logs); load_traces reads both",
            TraceFileWarning,
            stacklevel=2,
        )
    return records


def file_logs(path: str | os.PathLike[str], limit: int, max_inflated: int) -> tuple[list[LogRecord], int]:
    """`read_logs`: the records, and how many trace requests were skipped (not warned about: the trace
    reader reads them)."""
    from . import _read

    name = os.fspath(path)
    _read._check_regular(name)
    kind, compressed = _read._sniff(name, max_inflated)
    out: list[LogRecord] = []
    traces = skipped = 0
    if kind == "protobuf":
        for label, raw in _read._messages(name, compressed, max_inflated):
            if label and signal_of(raw) == "traces":
                traces += 1
            else:
                out.extend(_decode_pb(raw, limit, name, label, file=True))
        return out, traces
    for line, doc in _read.json_values(name, compressed, max_inflated):
        if line is not None:
            if _read.is_trace_request(doc):
                traces += 1
                continue
            if (signal := _read.other_signal(doc)) is not None:
                skipped += 1
                if skipped <= _read._SKIP_WARNINGS:
                    warnings.warn(f"{name}:{line}: skipped a line of {signal} (not logs)", _read.TraceFileWarning,
                                  stacklevel=3)  # fmt: skip
                continue
        try:
            out.extend(logs_of_json(doc, limit))
        except Bad as e:
            raise TraceFormatError(e.problem, name, line, e.location) from None
        except RecursionError:
            raise TraceFormatError("JSON nested too deeply", name, line) from None
    if skipped > _read._SKIP_WARNINGS:
        more = skipped - _read._SKIP_WARNINGS
        warnings.warn(f"{name}: skipped {more} more lines that are not logs", _read.TraceFileWarning, stacklevel=3)
    return out, traces
