"""Record the spans of a block of code: `_SpanRecorder` (a `SpanProcessor`) and `capture()`.

Attribution happens once, at `on_start`: a span belongs to the innermost capture active in the
context it started in, or else to the capture that owns its parent span (so spans started in
threads with an explicit parent context are kept). Enclosing captures see their inner captures'
spans too; a capture closed (even from another thread or task) receives nothing more. Spans
started outside every capture are never retained. Storage happens at `on_end`:
the `ReadableSpan` the SDK hands to processors is kept, never copied; its bounded containers are
swapped for what they hold (see `_slim`), so each kept span costs the cyclic GC two objects, not a
dozen.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import weakref
from collections.abc import Sequence
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

from .tree import SpanNode, SpanTree

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import Span as SDKSpan

    from .spans import LogRecord, Span
    from .trajectory import Trajectory

__all__ = ["Capture", "RemoteSource", "_SpanRecorder", "active_capture", "capture", "ensure_recorder"]

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

    @cached_property
    def tree(self) -> SpanTree:
        """The recorded spans as a tree, with what a receiver added (`capture(receiver=...)`): other
        processes' spans of this trace, and the log records they sent attached to the spans they name."""
        if not (self.remote_spans or self.remote_logs):
            return SpanTree.from_readable_spans(self._spans)
        tree = SpanTree.from_spans(self.remote_spans, readable=self._spans)
        tree.attach_logs(self.remote_logs)
        return tree

    @cached_property
    def trajectory(self) -> Trajectory:
        from .trajectory import Trajectory

        traj = Trajectory.from_tree(self.tree, messages=self.messages, value_limit=_value_length_limit)
        traj.incomplete.extend(f"span {s.name!r} was still open when the capture closed" for s in self.open_spans)
        traj.incomplete.extend(self.remote_incomplete)
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
        return f"<Capture spans={len(self._spans)} closed={self.closed}>"


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


class capture:
    """Record the spans of the enclosed block: `with capture() as cap:` or `async with capture() as cap:`.

    `provider` attaches to a specific SDK `TracerProvider` instead of the global one (for agents
    instrumented with `InstrumentationSettings(tracer_provider=...)`). `messages` seeds
    `Capture.messages` (see `Capture.add_messages`).

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
        messages: Sequence[Any] | None = None,
        receiver: RemoteSource | None = None,
        remote_timeout: float = 10.0,
        remote_quiet: float = 0.5,
    ) -> None:
        if remote_timeout <= 0 or remote_quiet < 0:
            raise ValueError(f"capture(): remote_timeout must be > 0 and remote_quiet >= 0, got {remote_timeout!r}, {remote_quiet!r}")
        self._provider = provider
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
