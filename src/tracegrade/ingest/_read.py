"""Format sniffing and reading one trace file as a stream of batches (one export request each).

Sniffing is by content: gzip magic → decompress and sniff again; first non-blank byte `{`/`[` →
JSON (a first line that is a whole JSON value → JSON lines, read line by line; otherwise one
document); other binary → OTLP protobuf. Inside JSON, the keys tell OTLP (`resourceSpans`,
Tempo's `batches`, `trace`/`result` wrappers) from Jaeger (`data[].spans`).

Only regular files are read (a device or a pipe could be endless). A gzip-compressed file may
inflate to at most `max_inflated_bytes`: past it reading stops with an error, so a small file that
inflates to gigabytes costs neither the memory nor the time.
"""

from __future__ import annotations

import gzip
import io
import itertools
import os
import stat
import warnings
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any, Literal

from .._gc import paused_gc
from ..spans import LogRecord, Span
from . import _jaeger, _json, _otlp, _protobuf
from ._errors import DEFAULT_MAX_INFLATED_BYTES, Bad, TraceFormatError, type_name

__all__ = ["Batch", "LogsMode", "Origin", "TraceFileWarning", "is_trace_request", "json_values", "other_signal", "read_batches"]

_GZIP = b"\x1f\x8b"
_ZSTD = b"\x28\xb5\x2f\xfd"
_BOM = b"\xef\xbb\xbf"
_CHUNK = 1 << 20
_SKIP_WARNINGS = 20
_NOT_TRACES = {
    "resourceMetrics": "OTLP metrics",
    "resource_metrics": "OTLP metrics",
    "resourceLogs": "OTLP logs",
    "resource_logs": "OTLP logs",
    "resourceProfiles": "OTLP profiles",
    "resource_profiles": "OTLP profiles",
}


class TraceFileWarning(UserWarning):
    """Something in a trace file was skipped (e.g. a metrics line in a JSON lines file)."""


class _NotTraces(Exception):
    """A valid OTLP document of another signal (metrics, logs)."""


LogsMode = Literal["warn", "read", "skip"]
"""What the trace reader does with the logs requests of a JSON lines file or protobuf stream: skip them
with a `TraceFileWarning` (`warn`), decode their records into `Batch.records` (`read`), or skip them
and the other signals' requests quietly (`skip`: the file is read as a logs file too, which reports them)."""
_LOGS = "OTLP logs"


def is_trace_request(doc: Any) -> bool:
    """Whether a parsed JSON request is one the trace reader reads as traces (OTLP, Tempo, Jaeger)."""
    if type(doc) is not dict:
        return False
    if "resourceSpans" in doc or "resource_spans" in doc or "batches" in doc:
        return True
    if any(type(inner := doc.get(w)) is dict and ("resourceSpans" in inner or "resource_spans" in inner)
           for w in ("trace", "result")):  # fmt: skip
        return True
    return _jaeger.is_jaeger(doc)


def other_signal(doc: Any) -> str | None:
    """The OTLP signal of a parsed JSON request that is neither traces nor logs (`OTLP metrics`), or None."""
    if type(doc) is dict:
        for key, what in _NOT_TRACES.items():
            if what != _LOGS and key in doc:
                return what
    return None


@dataclass(slots=True, eq=False)
class Origin:
    """Where one export request (a JSON line, a whole document or a protobuf message) was read.

    The parsed request itself is not kept (freeing it early keeps memory and GC work down); an
    error that names a span's JSON path reads the request again with `reload`.
    """

    path: str
    line: int | None
    """1-based line of a JSON lines file; None for a document or a protobuf message."""
    label: str
    """Where the request is when `line` does not say it: `message 2` of a protobuf stream, or ``."""
    reload: Callable[[], Iterator[str]]
    """The JSON path of each span of the request, in order, from the file read again."""

    def locate(self, index: int) -> str:
        """The location of the request's `index`-th span (`label: json.path`)."""
        try:
            path = next(itertools.islice(self.reload(), index, None), "")
        except Exception:  # the file changed since: the line or label has to do
            path = ""
        return f"{self.label}: {path}" if self.label and path else path or self.label

    def where(self, index: int) -> str:
        """`file:line: json.path` of the request's `index`-th span, for messages."""
        text = self.path if self.line is None else f"{self.path}:{self.line}"
        loc = self.locate(index)
        return f"{text}: {loc}" if loc else text

    def error(self, problem: str, index: int) -> TraceFormatError:
        return TraceFormatError(problem, self.path, self.line, self.locate(index))


@dataclass(slots=True)
class Batch:
    """The spans of one export request, and where it was read; or, for a logs request read from a
    trace file (`logs="read"`), its log records and no spans."""

    spans: list[Span]
    origin: Origin
    records: Sequence[LogRecord] = ()


def spans_from_document(doc: Any, limit: int) -> list[Span]:
    """Decode any supported JSON trace document; raises `Bad` (or `_NotTraces`)."""
    if type(doc) is dict:
        if "resourceSpans" in doc:
            return _otlp.spans_from_otlp(doc, limit)
        if "resource_spans" in doc:
            return _otlp.spans_from_otlp(_otlp.camelize(doc), limit)
        if "batches" in doc:  # Grafana Tempo /api/traces (v1)
            return _otlp.spans_from_otlp(doc, limit, "batches")
        for wrapper in ("trace", "result"):  # Tempo /api/v2/traces, Jaeger v2 /api/v3/traces
            inner = doc.get(wrapper)
            if type(inner) is dict and ("resourceSpans" in inner or "resource_spans" in inner):
                try:
                    return spans_from_document(inner, limit)
                except Bad as e:
                    raise e.at(wrapper) from None
        if _jaeger.is_jaeger(doc):
            return _jaeger.spans_from_jaeger(doc, limit)
        for key, what in _NOT_TRACES.items():
            if key in doc:
                raise _NotTraces(what)
        if not doc:
            return []
        keys = ", ".join(repr(k) for k in list(doc)[:8])
        raise Bad(
            f"not a trace document (top-level keys: {keys}); expected OTLP/JSON 'resourceSpans' "
            "or Jaeger 'data[].spans'"
        )
    if type(doc) is list and doc and all(type(s) is dict and "traceId" in s and "id" in s for s in doc[:3]):
        raise Bad("this looks like Zipkin v2 JSON, which is not supported; export OTLP/JSON or Jaeger JSON instead")
    raise Bad(f"expected a JSON object (an OTLP/JSON request or a Jaeger document), got {type_name(doc)}")


def document_span_paths(doc: Any) -> Iterator[str]:
    """The JSON path of each span of a valid document, in `spans_from_document` order."""
    if type(doc) is not dict:
        return
    if "resourceSpans" in doc:
        yield from _otlp.span_paths(doc)
    elif "resource_spans" in doc:
        yield from _otlp.span_paths(_otlp.camelize(doc))
    elif "batches" in doc:
        yield from _otlp.span_paths(doc, "batches")
    elif type(doc.get("trace")) is dict or type(doc.get("result")) is dict:
        wrapper = "trace" if type(doc.get("trace")) is dict else "result"
        yield from (f"{wrapper}.{p}" for p in document_span_paths(doc[wrapper]))
    else:
        yield from _jaeger.span_paths(doc)


class _Inflated(io.RawIOBase):
    """A gzip stream that stops with `TraceFormatError` once it has inflated more than `limit` bytes."""

    def __init__(self, path: str, limit: int) -> None:
        super().__init__()
        self._gz = gzip.GzipFile(path, "rb")
        self._path = path
        self._limit = limit
        self._total = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        room = self._limit - self._total
        if room <= 0:  # the limit is reached: an error only if there is more
            if self._gz.read(1):
                raise TraceFormatError(
                    f"gzip data inflates to more than {self._limit:,} bytes (the max_inflated_bytes limit); if the "
                    "file is trusted, pass a larger max_inflated_bytes to load_traces / iter_traces / read_spans",
                    self._path,
                )
            return 0
        with memoryview(buffer) as view:
            n = self._gz.readinto(view[:room])
        self._total += n
        return n

    def close(self) -> None:
        self._gz.close()
        super().close()


@contextmanager
def _opened(path: str, compressed: bool, max_inflated: int) -> Iterator[IO[bytes]]:
    """The file's (decompressed) bytes; decompression errors become `TraceFormatError`."""
    f: IO[bytes] = io.BufferedReader(_Inflated(path, max_inflated), 1 << 16) if compressed else open(path, "rb")  # noqa: SIM115
    try:
        with f:
            yield f
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise TraceFormatError(f"corrupt or truncated gzip data ({e})", path) from None


def _read_all(f: IO[bytes], buf: bytearray, size: int | None = None) -> bytearray:
    """`buf` extended with the rest of `f` (or up to `size` bytes in all), read in chunks: no
    buffer is allocated for a length the data does not have."""
    while size is None or len(buf) < size:
        chunk = f.read(_CHUNK if size is None else min(_CHUNK, size - len(buf)))
        if not chunk:
            break
        buf += chunk
    return buf


def _without_bom(data: bytes | bytearray) -> bytes | bytearray | memoryview:
    return memoryview(data)[len(_BOM) :] if data[: len(_BOM)] == _BOM else data


_NOT_REGULAR = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))  # fmt: skip


def _check_regular(path: str) -> None:
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        what = next((name for test, name in _NOT_REGULAR if test(mode)), "not a regular file")
        raise TraceFormatError(f"not a regular file ({what}); expected a trace file or a directory of them", path)


def _sniff(path: str, max_inflated: int) -> tuple[str, bool]:
    """(`"json"` | `"protobuf"`, gzip-compressed?)."""
    with open(path, "rb") as f:
        magic = f.read(4)
    compressed = magic[:2] == _GZIP
    if magic == _ZSTD:
        raise TraceFormatError("zstd-compressed file: decompress it first (zstd -d FILE)", path)
    with _opened(path, compressed, max_inflated) as f:
        head = f.read(4096)
    text = head.removeprefix(_BOM).lstrip(b" \t\r\n")
    if not text or text[:1] in b"{[":
        return "json", compressed
    try:
        decoded = head.decode("utf-8")
    except UnicodeDecodeError:
        return "protobuf", compressed
    if all(c.isprintable() or c in "\t\r\n" for c in decoded[:200]):
        raise TraceFormatError(
            f"unknown trace format (starts with {decoded[:40]!r}); expected OTLP/JSON, OTLP JSON lines, "
            "OTLP protobuf or Jaeger JSON, optionally gzip-compressed",
            path,
        )
    return "protobuf", compressed


def read_batches(
    path: str | os.PathLike[str], limit: int, max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES,
    logs: LogsMode = "warn",
) -> Iterator[Batch]:  # fmt: skip
    """The export requests of one file, in file order (JSON lines and protobuf streams are streamed).
    The logs requests among them (one collector file exporter in both pipelines) as `logs` says; a
    file that is one logs request (a document, a single message) is an error."""
    path = os.fspath(path)
    _check_regular(path)
    fmt, compressed = _sniff(path, max_inflated_bytes)
    if fmt == "protobuf":
        yield from _protobuf_batches(path, compressed, limit, max_inflated_bytes, logs)
    else:
        yield from _json_batches(path, compressed, limit, max_inflated_bytes, logs)


def _decode(raw: bytes | bytearray | memoryview, path: str, line: int | None, offset: int = 0) -> Any:
    try:
        return _json.loads(raw)
    except _json.JSONError as e:
        where = line if line is not None else None if e.lineno is None else e.lineno + offset
        raise TraceFormatError(e.problem, path, where, "" if e.colno is None else f"column {e.colno}") from None


def json_values(path: str, compressed: bool, max_inflated: int) -> Iterator[tuple[int | None, Any]]:
    """The JSON of a file: `(None, value)` for one document (pretty-printed, or on one line), or
    `(line, value)` for each non-blank line of a JSON lines file (a first line that is a whole JSON
    value, followed by more), parsed one at a time. Undecodable JSON raises `TraceFormatError` at its
    line (and column)."""
    with _opened(path, compressed, max_inflated) as f:
        n = 0
        for first in f:
            n += 1
            if not first.isspace():
                break
        else:
            return  # empty file: no values
        first = first.removeprefix(_BOM)
        try:
            doc = _json.loads(first)
        except _json.JSONError:  # not a one-line value: one (pretty-printed) document
            data: bytes | bytearray
            if f.seekable() and not compressed:
                f.seek(0)
                data, offset = f.read(), 0
            else:
                data, offset = _read_all(f, bytearray(first)), n - 1
            del first
            yield None, _decode(_without_bom(data), path, None, offset)
            return
        del first
        m, second = n, None
        for second in f:
            m += 1
            if not second.isspace():
                break
        else:  # a document on one line
            yield None, doc
            return
        yield n, doc
        del doc  # nothing holds a parsed line once the caller is done with it
        yield m, _decode(second, path, m)
        del second
        for raw in f:
            m += 1
            if not raw.isspace():
                yield m, _decode(raw, path, m)


def _json_batches(path: str, compressed: bool, limit: int, max_inflated: int, logs: LogsMode) -> Iterator[Batch]:
    skipped = 0
    for line, doc in json_values(path, compressed, max_inflated):
        if line is None:
            yield _document(doc, path, limit, max_inflated)
            return
        try:
            batch = _batch(doc, path, line, limit, max_inflated)
        except _NotTraces as e:
            if logs == "read" and str(e) == _LOGS:
                batch = Batch([], Origin(path, line, "", _no_paths), _json_logs(doc, path, line, limit))
            elif logs != "skip":
                skipped += 1
                if skipped <= _SKIP_WARNINGS:
                    warnings.warn(f"{path}:{line}: skipped a line of {e} (not traces)", TraceFileWarning, stacklevel=3)
                continue
            else:
                continue
        finally:
            del doc  # the parsed line is freed before the next is read
        yield batch
    if skipped > _SKIP_WARNINGS:
        warnings.warn(
            f"{path}: skipped {skipped - _SKIP_WARNINGS} more lines that are not traces",
            TraceFileWarning,
            stacklevel=2,
        )


def _no_paths() -> Iterator[str]:
    return iter(())


def _json_logs(doc: Any, path: str, line: int, limit: int) -> list[LogRecord]:
    from ._logs import logs_of_json

    try:
        return logs_of_json(doc, limit)
    except Bad as e:
        raise TraceFormatError(e.problem, path, line, e.location) from None
    except RecursionError:
        raise TraceFormatError("JSON nested too deeply", path, line) from None


def _document(doc: Any, path: str, limit: int, max_inflated: int) -> Batch:
    try:
        return _batch(doc, path, None, limit, max_inflated)
    except _NotTraces as e:
        raise TraceFormatError(f"this file holds {e}, not traces", path) from None


def _batch(doc: Any, path: str, line: int | None, limit: int, max_inflated: int) -> Batch:
    try:
        with paused_gc():
            spans = spans_from_document(doc, limit)
    except Bad as e:
        raise TraceFormatError(e.problem, path, line, e.location) from None
    return Batch(spans, Origin(path, line, "", lambda: document_span_paths(_reread_json(path, line, max_inflated))))


def _reread_json(path: str, line: int | None, max_inflated: int) -> Any:
    """The document (or JSON line) again, for an error message."""
    with _opened(path, _sniff(path, max_inflated)[1], max_inflated) as f:
        if line is None:
            return _json.loads(_without_bom(_read_all(f, bytearray())))
        for raw in itertools.islice(f, line - 1, line):
            return _json.loads(raw.removeprefix(_BOM))
    return None


def _stream_prefixed(head: bytes | bytearray) -> bool:
    """The first bytes of a protobuf file are a length-prefixed stream's (see `_messages`)."""
    return not (len(head) < 5 or head[0] == 0x0A or head[4] != 0x0A)


def _messages(path: str, compressed: bool, max_inflated: int) -> Iterator[tuple[str, bytes | bytearray]]:
    """A single message, or the messages of a length-prefixed stream read one at a time (so a large
    stream is never in memory at once). A stream starts with a 4-byte length whose first byte is
    not 0x0a, then a message starting with 0x0a (field 1, `resource_spans`); one message starts
    with 0x0a itself."""
    with _opened(path, compressed, max_inflated) as f:
        head = f.read(5)
        if not _stream_prefixed(head):
            yield "", _read_all(f, bytearray(head))
            return
        index, buffered = 0, head  # bytes read ahead of the current position
        body: bytes | bytearray
        while True:
            if len(buffered) < 4:
                buffered += f.read(4 - len(buffered))
                if not buffered:
                    return
                if len(buffered) < 4:
                    raise TraceFormatError(f"truncated length prefix ({len(buffered)} of 4 bytes)", path, None,
                                           f"message {index}")  # fmt: skip
            length = int.from_bytes(buffered[:4], "big")
            body, buffered = buffered[4 : 4 + length], buffered[4 + length :]
            if len(body) < length:  # chunked: a length prefix may promise more than the file holds
                body = _read_all(f, bytearray(body), length)
            if len(body) < length:
                raise TraceFormatError(f"truncated message ({len(body)} of {length} bytes)", path, None,
                                       f"message {index}")  # fmt: skip
            yield f"message {index}", body
            index += 1


def _protobuf_batches(path: str, compressed: bool, limit: int, max_inflated: int, logs: LogsMode) -> Iterator[Batch]:
    request = _protobuf.message_class(path)
    from google.protobuf.message import DecodeError

    skipped = 0
    for i, (label, raw) in enumerate(_messages(path, compressed, max_inflated)):
        if _protobuf.signal_of(raw) == "logs":  # the same outer shape as traces: tell them apart
            if not label:
                raise TraceFormatError(
                    "this protobuf message holds OTLP logs, not traces: pass it to load_traces beside the traces "
                    "(or read it with read_logs)",
                    path, None, label,
                )  # fmt: skip
            if logs == "read":
                from ._logs import _decode_pb

                yield Batch([], Origin(path, None, label, _no_paths), _decode_pb(raw, limit, path, label, file=True))
            elif logs == "warn":
                skipped += 1
                if skipped <= _SKIP_WARNINGS:
                    warnings.warn(f"{path}: {label}: skipped a message of OTLP logs (not traces)", TraceFileWarning,
                                  stacklevel=3)  # fmt: skip
            continue
        try:
            msg = request.FromString(raw)
        except DecodeError as e:
            raise TraceFormatError(
                f"not a valid OTLP protobuf ExportTraceServiceRequest ({e})", path, None, label
            ) from None
        if raw and not msg.resource_spans:
            raise TraceFormatError(
                "binary data that is not an OTLP trace export (no resource_spans)", path, None, label
            )
        try:
            spans = _protobuf.spans_from_message(msg, limit)
        except Bad as e:
            raise TraceFormatError(e.problem, path, None, f"{label}: {e.location}" if label else e.location) from None
        del msg, raw
        yield Batch(spans, Origin(path, None, label, _protobuf_paths(request, path, compressed, i, max_inflated)))
    if skipped > _SKIP_WARNINGS:
        warnings.warn(f"{path}: skipped {skipped - _SKIP_WARNINGS} more messages that are not traces",
                      TraceFileWarning, stacklevel=2)  # fmt: skip


def _protobuf_paths(
    request: Any, path: str, compressed: bool, index: int, max_inflated: int
) -> Callable[[], Iterator[str]]:
    def paths() -> Iterator[str]:
        raw = next(itertools.islice(_messages(path, compressed, max_inflated), index, None))[1]
        return _protobuf.span_paths(request.FromString(raw))

    return paths
