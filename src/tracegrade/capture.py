"""Record the spans and log records of a block of code: `_SpanRecorder` (a `SpanProcessor`),
`_LogRecorder` (a `LogRecordProcessor`) and `capture()`.

Attribution happens once, at `on_start`: a span belongs to the innermost capture active in the
context it started in, or else to the capture that owns its parent span (so spans started in
threads with an explicit parent context are kept). Enclosing captures see their inner captures'
spans too; a capture closed (even from another thread or task) receives nothing more. Spans
started outside every capture are never retained. Storage happens at `on_end`:
the `ReadableSpan` the SDK hands to processors is kept, never copied; its bounded containers are
swapped for what they hold (see `_slim`), so each kept span costs the cyclic GC two objects, not a
dozen.

Log records (OTel Logs API events such as `gen_ai.choice`) are attributed by the span they name:
a record belongs to the innermost open capture that recorded that span (still open or ended) and
to the open captures enclosing it, whatever context it is emitted in. A record naming no span, or
a span no open capture recorded, is not retained. Records are converted to `spans.LogRecord` when
emitted (the SDK's record is mutable and shared with the other processors; it is only read).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import weakref
from collections.abc import Mapping, Sequence
from contextvars import ContextVar, Token
from functools import cached_property
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.attributes import BoundedAttributes as _BoundedAttributes
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.util import BoundedList as _BoundedList

from .spans import LogRecord
from .tree import SpanNode, SpanTree

if TYPE_CHECKING:
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs import LogRecordProcessor as _LogRecordProcessor
    from opentelemetry.sdk.trace import Span as SDKSpan

    from .spans import Span
    from .trajectory import Trajectory
else:
    _LogRecordProcessor = object  # the SDK's logs module is imported only once a capture opens

__all__ = [
    "Capture", "RemoteSource", "_LogRecorder", "_SpanRecorder", "active_capture", "capture", "ensure_log_recorder",
    "ensure_recorder",
]  # fmt: skip

_log = logging.getLogger("tracegrade")


def active_capture() -> Capture | None:
    """The innermost open capture of the current context (None outside every capture block)."""
    cap = _ACTIVE.get()
    while cap is not None and cap.closed:
        cap = cap.parent
    return cap


class RemoteSource(Protocol):
    """What `capture(receiver=...)` needs of a receiver (`tracegrade.receiver.OTLPReceiver`)."""

    def subscribe(self, trace_id: int, root_span_id: int | None = None) -> Any: ...
_ACTIVE: ContextVar[Capture | None] = ContextVar("tracegrade_capture", default=None)


class Capture:
    """The spans recorded inside one `capture()` block; complete once the block exits."""

    def __init__(self, parent: Capture | None = None, messages: Sequence[Any] | None = None) -> None:
        self.parent = parent
        self.depth: int = 0 if parent is None else parent.depth + 1
        self._spans: list[ReadableSpan] = []
        self._ids: set[int] = set()  # span ids of _spans[:_indexed], built only when searched
        self._indexed = 0
        self._index_lock = threading.Lock()
        self._open: dict[int, SDKSpan] = {}
        self._open_twins: dict[int, list[SDKSpan]] = {}  # open spans whose id an open span already has
        self._logs: list[LogRecord] = []
        self._log_notes: list[str] = []  # what the SDK's log record limits cut from recorded records
        self.open_spans: list[ReadableSpan] = []
        """Spans that started inside the block but had not ended when it exited."""
        self.closed = False
        self.messages: list[Any] = list(messages or [])
        """Model messages of the run (e.g. `result.all_messages()`), used to recover arguments."""
        self.remote_spans: list[Span] = []
        """Spans of this capture's trace that other processes sent to its receiver (`capture(receiver=rx)`)."""
        self.remote_logs: list[LogRecord] = []
        """Log records of this capture's trace that reached its receiver (attached to their spans in `tree`)."""
        self.remote_incomplete: list[str] = []
        """What the receiver was still missing when the capture stopped waiting for it."""
        self.propagated = False
        """`trace_headers()` was called inside the block: another process is expected to send spans."""

    @property
    def spans(self) -> list[ReadableSpan]:
        """Finished SDK spans recorded in this capture, in the order they ended."""
        return self._spans

    @property
    def logs(self) -> list[LogRecord]:
        """Log records emitted in this process that name a span of this capture, in the order they
        were emitted (attached to their spans in `tree`)."""
        return self._logs

    @cached_property
    def tree(self) -> SpanTree:
        """The recorded spans as a tree, with the log records that name them attached (`SpanNode.logs`),
        and what a receiver added (`capture(receiver=...)`): other processes' spans of this trace and
        the log records they sent."""
        if self.remote_spans or self.remote_logs:
            tree = SpanTree.from_spans(self.remote_spans, readable=self._spans)
        else:
            tree = SpanTree.from_readable_spans(self._spans)
        if self._logs or self.remote_logs:
            tree.attach_logs(_merged_logs(self._logs, self.remote_logs))
        return tree

    @cached_property
    def trajectory(self) -> Trajectory:
        from .dialects import extract

        traj = extract(self.tree, messages=self.messages, value_limit=_value_length_limit)
        traj.incomplete.extend(f"span {s.name!r} was still open when the capture closed" for s in self.open_spans)
        traj.incomplete.extend(self.remote_incomplete)
        traj.incomplete.extend(self._log_notes)
        traj.incomplete.extend(
            f"span {name!r} lost {n} attribute(s) to the SDK's span limits (raise OTEL_ATTRIBUTE_COUNT_LIMIT)"
            for name, n, _ in self.dropped
            if n
        )
        return traj

    @property
    def dropped(self) -> list[tuple[str, int, int]]:
        """`(span name, dropped attributes, dropped events)` for spans the SDK's span limits truncated."""
        return [
            (s.name, s.dropped_attributes, s.dropped_events)
            for s in self._spans
            if s.dropped_attributes or s.dropped_events
        ]

    def add_messages(self, messages: Sequence[Any]) -> None:
        """Attach a run's messages (`result.all_messages()`) to fill arguments missing from spans."""
        self.messages.extend(messages)
        self.__dict__.pop("trajectory", None)

    def _finish(self) -> None:
        self.closed = True
        self.open_spans = [*self._open.values(), *(s for twins in self._open_twins.values() for s in twins)]
        self._open.clear()
        self._open_twins.clear()
        self.__dict__.pop("tree", None)
        self.__dict__.pop("trajectory", None)

    def duplicate_span_ids(self) -> list[tuple[int, int]]:
        """`(trace id, span id)` pairs that more than one recorded span carries (a faulty IdGenerator)."""
        seen: set[tuple[int, int]] = set()
        dups: dict[tuple[int, int], None] = {}
        for span in (*self._spans, *self.open_spans):
            ctx = span.context
            key = (ctx.trace_id, ctx.span_id) if ctx is not None else (0, 0)
            if key in seen:
                dups[key] = None
            seen.add(key)
        return list(dups)

    def _ended_ids(self) -> set[int]:
        """The ids of the spans recorded so far (indexed incrementally, on demand; thread-safe)."""
        if self._indexed < len(self._spans):
            with self._index_lock:  # one indexer at a time: `_indexed` only ever counts indexed spans
                end = len(self._spans)
                self._ids.update(_span_id(s) for s in self._spans[self._indexed : end])
                self._indexed = end
        return self._ids

    def __repr__(self) -> str:
        logs = f" logs={len(self._logs)}" if self._logs else ""
        return f"<Capture spans={len(self._spans)}{logs} closed={self.closed}>"


def _merged_logs(local: list[LogRecord], remote: list[LogRecord]) -> list[LogRecord]:
    """Local records, then the remote ones not recorded locally too (a process exporting its own
    logs to the capture's receiver sends the records the capture already holds)."""
    if not (local and remote):
        return local or remote
    seen = {(r.trace_id, r.span_id, r.time_ns, r.event_name) for r in local}
    return [*local, *(r for r in remote if (r.trace_id, r.span_id, r.time_ns, r.event_name) not in seen)]


def _span_id(span: ReadableSpan) -> int:
    """`span.context.span_id`, read from the SDK's fields (two property calls cost ~0.3 µs a span)."""
    try:
        return span._context[1]  # type: ignore[index,no-any-return]  # SpanContext is a tuple
    except (AttributeError, TypeError, IndexError):
        return span.context.span_id  # type: ignore[union-attr,no-any-return]


def _value_length_limit(node: SpanNode) -> int | None:
    """The value-length limit the SDK applied to a recorded span's attributes (None: no limit, or
    not an SDK span). Strings the SDK cut are exactly this long."""
    attrs = getattr(node.source, "_attributes", None)
    return attrs.max_value_len if type(attrs) is _BoundedAttributes else None


def _slim(span: ReadableSpan) -> None:
    """Replace an ended span's `BoundedAttributes` by its dict and its `BoundedList`s of events and
    links by tuples, when they dropped nothing: every public property (`attributes`, `events`,
    `links`, `dropped_*`) reads the same, other processors included, but the span no longer holds
    the containers' locks and deques. Kept spans are what makes recording cost more than not
    recording (GC scans and cache misses); this halves that cost.

    Only the processor-facing copy (`type(span) is ReadableSpan`, built by the SDK's `Span.end()`
    for processors) is touched, never a live span.
    """
    # attribute access, not span.__dict__: reading __dict__ would materialize a dict per span
    # (kept as the SDK made it when a value-length limit applies: `_value_length_limit` reads it there)
    if type(a := span._attributes) is _BoundedAttributes and not a.dropped and a.max_value_len is None:
        span._attributes = a._dict
    # `tuple()` of an empty deque allocates an iterator: ~0.3 µs a span inside the SDK's span path
    if type(ev := span._events) is _BoundedList and not ev.dropped:
        span._events = tuple(ev._dq) if ev._dq else ()  # type: ignore[attr-defined]
    if type(ln := span._links) is _BoundedList and not ln.dropped:
        span._links = tuple(ln._dq) if ln._dq else ()  # type: ignore[attr-defined]


class _SpanRecorder(SpanProcessor):
    """Keeps the spans that belong to an open capture; ignores all others. Never raises.

    No per-span table: a span's capture is found from the context (`_ACTIVE`) it starts and
    usually ends in; the open captures are searched only for a span started outside every
    capture's context under a recorded parent, or ending in another context.
    """

    def __init__(self) -> None:
        self._captures: dict[Capture, None] = {}
        """The open captures, in the order they opened."""

    def on_start(self, span: SDKSpan, parent_context: Context | None = None) -> None:
        try:
            cap = _ACTIVE.get()
            if cap is None:
                parent = span.parent
                if parent is None or (cap := self._owner_of(parent.span_id)) is None:
                    return
            while cap.closed:  # a task that outlived its capture block: fall back to an open enclosing one
                if (cap := cap.parent) is None:
                    return
            try:  # _span_id(span), inlined on the hot path
                sid = span._context[1]  # type: ignore[index]
            except (AttributeError, TypeError):
                sid = span.get_span_context().span_id
            if cap._open.setdefault(sid, span) is not span:  # an open span has this id (a faulty IdGenerator)
                cap._open_twins.setdefault(sid, []).append(span)
        except Exception:  # a recorder bug must never reach the instrumented application
            _log.debug("tracegrade: _SpanRecorder.on_start failed", exc_info=True)

    def on_end(self, span: ReadableSpan) -> None:
        try:
            try:  # _span_id(span), inlined on the hot path
                sid = span._context[1]  # type: ignore[index]
            except (AttributeError, TypeError):
                sid = _span_id(span)
            cap = _ACTIVE.get()  # where it ends is nearly always where (or under where) it started
            while cap is not None and cap._open.pop(sid, None) is None:
                cap = cap.parent
            if cap is None and (cap := self._claim(sid)) is None:
                return  # not ours, or the capture closed while it was open (reported there as open)
            if type(span) is ReadableSpan:
                _slim(span)
            cap._spans.append(span)
            c = cap.parent
            while c is not None:
                if not c.closed:
                    c._spans.append(span)
                c = c.parent
        except Exception:
            _log.debug("tracegrade: _SpanRecorder.on_end failed", exc_info=True)

    def _claim(self, sid: int) -> Capture | None:
        """The open capture a span ending in a foreign context was open in (removing it there)."""
        captures = tuple(self._captures)
        for cap in captures:
            if cap._open.pop(sid, None) is not None:
                return cap
        for cap in captures:  # a span sharing its id with another open span (a faulty IdGenerator)
            if twins := cap._open_twins.get(sid):
                twins.pop()
                if not twins:
                    cap._open_twins.pop(sid, None)
                return cap
        return None

    def _owner_of(self, sid: int) -> Capture | None:
        """The innermost open capture that recorded span `sid` (open or ended)."""
        best: Capture | None = None
        for cap in tuple(self._captures):
            if (sid in cap._open or sid in cap._ended_ids()) and (best is None or cap.depth > best.depth):
                best = cap
        return best

    def _register(self, cap: Capture) -> None:
        self._captures[cap] = None

    def _release(self, cap: Capture) -> None:
        self._captures.pop(cap, None)
        heir = cap.parent  # spans still open pass to the nearest open enclosing capture
        while heir is not None and heir.closed:
            heir = heir.parent
        if heir is not None:
            for open_span in cap.open_spans:
                sid = _span_id(open_span)
                if sid in heir._open:
                    heir._open_twins.setdefault(sid, []).append(open_span)  # type: ignore[arg-type]
                else:
                    heir._open[sid] = open_span  # type: ignore[assignment]

    def shutdown(self) -> None:
        pass  # one recorder serves every provider it is attached to: one provider's shutdown ends nothing

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


_RECORDER = _SpanRecorder()
_attached: weakref.WeakSet[TracerProvider] = weakref.WeakSet()
_attach_lock = threading.Lock()


def _sdk_provider(provider: object) -> TracerProvider | None:
    if isinstance(provider, TracerProvider):
        return provider
    inner = getattr(provider, "provider", None)  # logfire's ProxyTracerProvider wraps an SDK provider
    return inner if isinstance(inner, TracerProvider) else None


def ensure_recorder(provider: object | None = None) -> TracerProvider:
    """Attach the recorder to `provider` (default: the global one) once; return the SDK provider.

    With no SDK provider configured globally, an SDK `TracerProvider` is installed as the global
    provider so that instrumented code produces real spans.
    """
    with _attach_lock:
        target = trace.get_tracer_provider() if provider is None else provider
        sdk = _sdk_provider(target)
        if sdk is None:
            if provider is not None:
                raise TypeError(f"capture(provider=...) needs an OpenTelemetry SDK TracerProvider, got {target!r}")
            sdk = TracerProvider()
            trace.set_tracer_provider(sdk)
            sdk = _sdk_provider(trace.get_tracer_provider())
            if sdk is None:  # someone else's non-SDK provider won the race; nothing to attach to
                raise RuntimeError("the global tracer provider is not an OpenTelemetry SDK TracerProvider")
            _log.info("tracegrade: no tracer provider was configured; installed an SDK TracerProvider")
        if sdk not in _attached:
            sdk.add_span_processor(_RECORDER)
            _attached.add(sdk)
        return sdk


_SCALARS = frozenset({str, int, float, bool, bytes, type(None)})


def _value(value: Any) -> Any:
    """A log record's body or attribute value as the file readers decode it (mappings → dicts,
    sequences → tuples), copied: the SDK's record stays as the other processors see it."""
    kind = type(value)
    if kind in _SCALARS:  # exact types first: ABC checks cost more than the copy
        return value
    if kind is dict or (kind not in (list, tuple) and isinstance(value, Mapping)):
        return {k if type(k) is str else str(k): _value(v) for k, v in value.items()}
    if kind is list or kind is tuple or (isinstance(value, Sequence) and not isinstance(value, str | bytes)):
        return tuple([_value(v) for v in value])
    return value


_last_resource: tuple[Any, dict[str, Any]] = (None, {})
"""The last SDK `Resource` a record was converted with, and its attributes as a dict."""


def _resource_dict(resource: Any) -> dict[str, Any]:
    """A resource's attributes as a dict, one dict shared by the records of one `Resource` in a row
    (records are frozen; a provider's resource rarely changes)."""
    global _last_resource
    if resource is None:
        return {}
    last = _last_resource  # one read: another thread may replace it
    if last[0] is resource:
        return last[1]
    _last_resource = (resource, attrs := dict(resource.attributes))
    return attrs


def _log_record(item: Any) -> LogRecord | None:
    """A `LogRecord` from what the SDK hands `on_emit`: a `ReadWriteLogRecord` (SDK >= 1.35: the API
    record in `.log_record`, resource and scope beside it) or a `LogData` (older SDKs: the SDK record,
    with its resource, in `.log_record`). None when it names no span."""
    record = item.log_record
    span_id = record.span_id or 0
    if not span_id:
        return None
    resource = getattr(item, "resource", None) or getattr(record, "resource", None)
    scope = item.instrumentation_scope
    severity = record.severity_number
    attrs = record.attributes
    return LogRecord(
        trace_id=record.trace_id or 0,
        span_id=span_id,
        time_ns=record.timestamp or record.observed_timestamp or 0,
        event_name=getattr(record, "event_name", None) or "",
        body=_value(record.body),
        attributes={k: _value(v) for k, v in attrs.items()} if attrs else {},
        severity_text=record.severity_text or "",
        severity_number=int(severity.value) if severity is not None else 0,
        resource=_resource_dict(resource),
        scope_name=scope.name if scope is not None else "",
    )


def _limit_notes(item: Any, record: LogRecord) -> list[str]:
    """What the SDK's log record limits cut from a record: attributes dropped, string values cut
    to the value-length limit (a value exactly that long may have been longer)."""
    notes: list[str] = []
    name = record.event_name or "(unnamed)"
    if dropped := getattr(item, "dropped_attributes", 0):
        notes.append(f"log record {name!r} lost {dropped} attribute(s) to the SDK's log record limits "
                     "(raise OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT)")  # fmt: skip
    limits = getattr(item, "limits", None)
    cut = getattr(limits, "max_log_record_attribute_length", None)
    if cut is not None:
        for key, value in record.attributes.items():
            values = value if isinstance(value, tuple) else (value,)
            if any(isinstance(v, str) and len(v) == cut for v in values):
                notes.append(f"log record {name!r} attribute {key!r} may be cut at {cut} characters by the "
                             "SDK's log record limits (raise OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT)")  # fmt: skip
    return notes


class _LogRecorder(_LogRecordProcessor):
    """A `LogRecordProcessor` that gives each log record to the open capture that recorded the span
    it names (and the open captures enclosing it); ignores all others. Never raises.

    Written for the installed SDK's `on_emit(log_record: ReadWriteLogRecord)` (opentelemetry-sdk
    >= 1.35), and reads the `LogData` older SDKs pass the same way. The SDK's logs module is imported
    when the recorder is first attached, not with this module.
    """

    def on_emit(self, log_record: Any) -> None:
        try:
            if not _RECORDER._captures:  # no capture open: nothing to find (the common case)
                return
            sid = log_record.log_record.span_id
            if not sid or (cap := _RECORDER._owner_of(sid)) is None:
                return
            record = _log_record(log_record)
            if record is None:
                return
            notes = _limit_notes(log_record, record)
            c: Capture | None = cap
            while c is not None:
                if not c.closed:
                    c._logs.append(record)
                    c._log_notes.extend(notes)
                c = c.parent
        except Exception:  # a recorder bug must never reach the instrumented application
            _log.debug("tracegrade: _LogRecorder.on_emit failed", exc_info=True)

    def enabled(self, **_: Any) -> bool:
        """Only while a capture is open (instrumentations that ask may skip building events)."""
        return bool(_RECORDER._captures)

    def shutdown(self) -> None:
        pass  # one recorder serves every provider it is attached to

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


_LOG_RECORDER = _LogRecorder()
_logs_attached: weakref.WeakSet[Any] = weakref.WeakSet()
_warned_logs: list[object] = []  # the non-SDK global logger provider already warned about


def _sdk_logger_provider(provider: object) -> LoggerProvider | None:
    from opentelemetry.sdk._logs import LoggerProvider

    if isinstance(provider, LoggerProvider):
        return provider
    inner = getattr(provider, "provider", None)  # logfire's ProxyLoggerProvider wraps an SDK provider
    return inner if isinstance(inner, LoggerProvider) else None


def ensure_log_recorder(logger_provider: object | None = None) -> LoggerProvider | None:
    """Attach the log recorder to `logger_provider` (default: the global one) once; return the SDK
    provider it is attached to.

    With no logger provider configured globally, an SDK `LoggerProvider` is installed as the global
    provider so that instrumented code's events (the OTel Logs API) become records. A global provider
    that is not an SDK one (set by someone else) cannot be recorded from: None, with a warning in
    the `tracegrade` log.
    """
    from opentelemetry import _logs
    from opentelemetry.sdk._logs import LoggerProvider

    target = _logs.get_logger_provider() if logger_provider is None else logger_provider
    if (sdk := _sdk_logger_provider(target)) is not None and sdk in _logs_attached:
        return sdk  # the common case, without the lock
    with _attach_lock:
        target = _logs.get_logger_provider() if logger_provider is None else logger_provider
        sdk = _sdk_logger_provider(target)
        if sdk is None:
            if logger_provider is not None:
                raise TypeError(
                    f"capture(logger_provider=...) needs an OpenTelemetry SDK LoggerProvider, got {target!r}"
                )
            from opentelemetry._logs._internal import ProxyLoggerProvider  # the API's placeholder (not exported)

            if type(target) is ProxyLoggerProvider:  # none was set
                _logs.set_logger_provider(LoggerProvider())
                sdk = _sdk_logger_provider(_logs.get_logger_provider())
                if sdk is not None:
                    _log.info("tracegrade: no logger provider was configured; installed an SDK LoggerProvider")
            if sdk is None:
                if not any(p is target for p in _warned_logs):
                    _warned_logs.append(target)
                    _log.warning(
                        "tracegrade: the global logger provider %r is not an OpenTelemetry SDK LoggerProvider; "
                        "capture() records no log records (pass capture(logger_provider=...))",
                        target,
                    )
                return None
        if sdk not in _logs_attached:
            sdk.add_log_record_processor(_LOG_RECORDER)
            _logs_attached.add(sdk)
        return sdk


class capture:
    """Record the spans and log records of the enclosed block: `with capture() as cap:` or
    `async with capture() as cap:`.

    `provider` attaches to a specific SDK `TracerProvider` instead of the global one (for agents
    instrumented with `InstrumentationSettings(tracer_provider=...)`). Log records (OTel Logs API
    events, e.g. the GenAI instrumentations' `gen_ai.choice`) that name a recorded span are kept too
    (`Capture.logs`, attached to their spans in `tree`): `logger_provider` attaches to a specific SDK
    `LoggerProvider` instead of the global one. `messages` seeds `Capture.messages` (see
    `Capture.add_messages`).

    `receiver` (an `OTLPReceiver`) adds what other processes do in the block: a local root span is
    started and made current, so requests carry its trace context (`tracegrade.trace_headers()` gives
    the headers to clients that are not instrumented); spans and log records of that trace that reach
    the receiver belong to the capture. On exit it waits, at most `remote_timeout` seconds, until they
    have settled (every parent they name has arrived, none is still open, nothing new for
    `remote_quiet` seconds; at least one span when `trace_headers()` was called or a CLIENT span was
    recorded) and reports what did not arrive as incomplete, so the grade is never silently partial.
    `async with` waits in a worker thread.
    """

    def __init__(
        self,
        *,
        provider: object | None = None,
        logger_provider: object | None = None,
        messages: Sequence[Any] | None = None,
        receiver: RemoteSource | None = None,
        remote_timeout: float = 10.0,
        remote_quiet: float = 0.5,
    ) -> None:
        if remote_timeout <= 0 or remote_quiet < 0:
            raise ValueError(f"capture(): remote_timeout must be > 0 and remote_quiet >= 0, got {remote_timeout!r}, {remote_quiet!r}")
        self._provider = provider
        self._logger_provider = logger_provider
        self._messages = messages
        self._receiver = receiver
        self._remote_timeout, self._remote_quiet = remote_timeout, remote_quiet
        self._token: Token[Capture | None] | None = None
        self._capture: Capture | None = None
        self._root: SDKSpan | None = None
        self._root_token: object = None
        self._link: Any = None

    def __enter__(self) -> Capture:
        ensure_recorder(self._provider)
        if self._logger_provider is not None:
            ensure_log_recorder(self._logger_provider)
        else:
            try:
                ensure_log_recorder()
            except Exception:  # the global logs setup (e.g. a bad OTEL_PYTHON_LOGGER_PROVIDER) never fails a capture
                _log.warning("tracegrade: cannot record log records from the global logger provider", exc_info=True)
        parent = _ACTIVE.get()
        while parent is not None and parent.closed:  # a capture exited in another context
            parent = parent.parent
        cap = Capture(parent=parent, messages=self._messages)
        self._capture = cap
        _RECORDER._register(cap)
        self._token = _ACTIVE.set(cap)
        if self._receiver is not None:
            self._open_root(cap)
        return cap

    def _open_root(self, cap: Capture) -> None:
        """Start the block's local root span (made current, so requests carry its trace context) and
        subscribe the receiver to its trace."""
        provider = self._provider if self._provider is not None else trace.get_tracer_provider()
        tracer = provider.get_tracer("tracegrade")  # type: ignore[attr-defined]
        root = tracer.start_span("tracegrade capture", kind=trace.SpanKind.INTERNAL)
        self._root = root
        self._root_token = otel_context.attach(trace.set_span_in_context(root))
        ctx = root.get_span_context()
        assert self._receiver is not None
        self._link = self._receiver.subscribe(ctx.trace_id, ctx.span_id)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        cap = self._capture
        assert cap is not None and self._token is not None, "capture() exited without being entered"
        if self._root is not None:
            with contextlib.suppress(ValueError, RuntimeError):  # exited in another context: nothing to detach
                otel_context.detach(self._root_token)  # type: ignore[arg-type]
            self._root.end()
        # Only the context that entered is restored, and only if it still shows this capture (or captures
        # nested in it that are closed already). A context exiting a capture entered elsewhere (another
        # thread or task, a generator finalised elsewhere) is left as it is; the entering one keeps
        # pointing at the closed capture, which attribution skips.
        current = _ACTIVE.get()
        while current is not None and current is not cap and current.closed:
            current = current.parent
        if current is cap:
            with contextlib.suppress(ValueError):  # raised in a copy of the entering context (a task it started)
                _ACTIVE.reset(self._token)
        cap._finish()
        _RECORDER._release(cap)
        if self._link is not None and not self._remote_deferred:
            self._settle(cap)

    _remote_deferred = False

    def _settle(self, cap: Capture) -> None:
        """Wait (bounded) for the spans other processes send for this trace, and keep them."""
        link, self._link = self._link, None
        expect = cap.propagated or any(s.kind is trace.SpanKind.CLIENT for s in cap.spans)
        remote = link.settle(
            timeout=self._remote_timeout,
            quiet=self._remote_quiet,
            local_span_ids=[_span_id(s) for s in cap.spans],
            expect_spans=expect,
        )
        cap.remote_spans, cap.remote_logs, cap.remote_incomplete = list(remote.spans), list(remote.logs), list(remote.incomplete)
        cap.__dict__.pop("tree", None)
        cap.__dict__.pop("trajectory", None)

    async def __aenter__(self) -> Capture:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._remote_deferred = True  # settle in a worker thread: never block the event loop
        self.__exit__(exc_type, exc, tb)
        if self._link is not None and self._capture is not None:
            import asyncio

            await asyncio.to_thread(self._settle, self._capture)
