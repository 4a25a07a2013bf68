"""Received spans and log records assembled into traces, with the receiver's limits.

Thread-safe: the server's event loop adds, other threads (a capture settling, `serve` grading)
wait and take. A request is admitted or refused as a whole (refused = the client retries it, so
nothing is lost); spans beyond a trace's span limit are rejected one by one and reported.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..spans import Span
from ._logs import ReceivedLog

__all__ = ["Admission", "AssembledTrace", "Limits", "ReceiverStats", "RemoteLink", "RemoteSpans", "TraceStore"]

_SPAN_OVERHEAD = 600
"""Bytes per decoded span on top of its share of the request body (objects, dict slots)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What one receiver accepts; refusals are OTLP-conformant (413, 429/503 + Retry-After, partial success)."""

    max_body_bytes: int = 20 * 1024 * 1024
    """Largest request body, compressed or decompressed (413 beyond)."""
    max_spans_per_trace: int = 100_000
    """Spans kept per trace; more are rejected (partial success) and the trace is marked incomplete."""
    max_traces: int = 10_000
    """Traces held at once (awaiting a subscriber's settle, grading or expiry); 429 beyond."""
    max_memory_bytes: int = 512 * 1024 * 1024
    """Estimated memory of the held spans and records; 503 beyond."""
    retry_after: int = 1
    """Seconds a refused client is told to wait (Retry-After)."""
    retention: float = 300.0
    """Seconds a trace nobody subscribed to is kept after its last span arrived."""
    max_attribute_bytes: int = 10 * 1024 * 1024
    """Largest single attribute value (a larger one makes the request malformed: 400)."""


@dataclass(slots=True)
class ReceiverStats:
    """Counters since the receiver started (a snapshot when read from `OTLPReceiver.stats`)."""

    requests: int = 0
    spans_accepted: int = 0
    """Distinct spans kept: one received again is not counted again here."""
    spans_duplicate: int = 0
    """Spans received again (an exporter's retry): the held one is replaced, counted here only."""
    spans_rejected: int = 0
    """Spans over `max_spans_per_trace` (reported to the client as partial success)."""
    logs_accepted: int = 0
    logs_without_trace: int = 0
    """Log records naming no trace: accepted and counted, not kept (nothing to attach them to)."""
    refused_too_large: int = 0
    refused_malformed: int = 0
    refused_busy: int = 0
    """Requests answered 429/503 (the client retries them)."""
    traces_expired: int = 0
    spans_expired: int = 0
    forwarded: int = 0
    forward_failures: int = 0

    def copy(self) -> ReceiverStats:
        return dataclasses.replace(self)


@dataclass(slots=True, eq=False)
class _Trace:
    trace_id: int
    first: float
    last: float
    spans: dict[int, Span] = field(default_factory=dict)
    logs: list[ReceivedLog] = field(default_factory=list)
    size: int = 0
    rejected: int = 0
    subscribers: int = 0


@dataclass(frozen=True, slots=True)
class Admission:
    """The answer to one request: `status` 200 (with `rejected` items and `message` as partial
    success) or 429/503 (refused whole, retry after `Limits.retry_after`)."""

    status: int
    rejected: int = 0
    message: str = ""


@dataclass(frozen=True, slots=True)
class AssembledTrace:
    """One trace taken out of the receiver: its spans (in arrival order), log records and what is missing."""

    trace_id: int
    spans: list[Span]
    logs: list[ReceivedLog]
    incomplete: list[str]
    """Human-readable notes on what did not arrive or was rejected; empty when the trace looks whole."""

    @property
    def complete(self) -> bool:
        return not self.incomplete


RemoteSpans = AssembledTrace
"""What `RemoteLink.settle` returns: the remote part of a capture's trace."""


def _missing_parents(trace: _Trace | None, local: Iterable[int]) -> list[Span]:
    """Spans whose named parent is neither received nor local."""
    if trace is None:
        return []
    known = set(local)
    return [
        s for s in trace.spans.values() if s.parent_id and s.parent_id not in trace.spans and s.parent_id not in known
    ]


def _notes(trace: _Trace | None, local: Iterable[int], limits: Limits, waited: str) -> list[str]:
    notes: list[str] = []
    if trace is None:
        return notes
    orphans = _missing_parents(trace, local)
    if orphans:
        parents = sorted({s.parent_id for s in orphans if s.parent_id})
        shown = ", ".join(f"{p:016x}" for p in parents[:5]) + (" ..." if len(parents) > 5 else "")
        notes.append(
            f"trace {trace.trace_id:032x}: {len(parents)} parent span(s) named by received spans did not arrive"
            f" {waited} ({shown}); {len(orphans)} span(s) hang from them"
        )
    open_spans = [s for s in trace.spans.values() if s.end_ns is None]
    if open_spans:
        notes.append(
            f"trace {trace.trace_id:032x}: {len(open_spans)} span(s) had not ended ({open_spans[0].name!r} ...)"
        )
    if trace.rejected:
        notes.append(
            f"trace {trace.trace_id:032x}: {trace.rejected} span(s) rejected: the trace exceeds "
            f"max_spans_per_trace={limits.max_spans_per_trace}"
        )
    return notes


def _whole(trace: _Trace) -> bool:
    """A root span received, every parent a span names received, and no span still open."""
    spans = trace.spans.values()
    return (
        any(s.parent_id is None for s in spans)
        and not _missing_parents(trace, ())
        and all(s.end_ns is not None for s in spans)
    )


class TraceStore:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.stats = ReceiverStats()
        self._cond = threading.Condition()
        self._traces: dict[int, _Trace] = {}
        self._memory = 0

    @property
    def memory(self) -> int:
        return self._memory

    def __len__(self) -> int:
        return len(self._traces)

    def _refusal(self, new_traces: int, size: int) -> Admission | None:
        lim = self.limits
        if new_traces and len(self._traces) + new_traces > lim.max_traces:
            return Admission(429, message=f"{len(self._traces)} traces in flight (max_traces={lim.max_traces})")
        if size and self._memory + size > lim.max_memory_bytes:
            return Admission(
                503,
                message=f"receiver holds ~{self._memory:,} bytes of spans (max_memory_bytes={lim.max_memory_bytes:,})",
            )
        return None

    def add_spans(self, spans: Sequence[Span], body_size: int) -> Admission:
        """Admit one request's spans (all or none)."""
        if not spans:
            return Admission(200)
        per = body_size // len(spans) + _SPAN_OVERHEAD
        now = time.monotonic()
        with self._cond:
            by_trace: dict[int, list[Span]] = {}
            for s in spans:
                group = by_trace.get(s.trace_id)
                if group is None:
                    by_trace[s.trace_id] = group = []
                group.append(s)
            refusal = self._refusal(sum(t not in self._traces for t in by_trace), per * len(spans))
            if refusal is not None:
                self.stats.refused_busy += 1
                return refusal
            cap = self.limits.max_spans_per_trace
            rejected = added = 0
            for tid, group in by_trace.items():
                trace = self._traces.get(tid)
                if trace is None:
                    self._traces[tid] = trace = _Trace(tid, now, now)
                trace.last = now
                held = trace.spans
                for s in group:
                    if s.span_id in held:
                        self.stats.spans_duplicate += 1
                    elif len(held) >= cap:
                        trace.rejected += 1
                        rejected += 1
                        continue
                    else:
                        added += 1
                        trace.size += per
                        self._memory += per
                    held[s.span_id] = s
            self.stats.spans_accepted += added
            self.stats.spans_rejected += rejected
            self._cond.notify_all()
        if rejected:
            return Admission(200, rejected, f"{rejected} span(s) rejected: max_spans_per_trace={cap} reached")
        return Admission(200)

    def add_logs(self, logs: Sequence[ReceivedLog], body_size: int) -> Admission:
        """Admit one request's log records (all or none); records naming no trace are counted, not kept."""
        if not logs:
            return Admission(200)
        per = body_size // len(logs) + _SPAN_OVERHEAD
        now = time.monotonic()
        with self._cond:
            traced = [r for r in logs if r.trace_id]
            refusal = self._refusal(len({r.trace_id for r in traced} - self._traces.keys()), per * len(traced))
            if refusal is not None:
                self.stats.refused_busy += 1
                return refusal
            for r in traced:
                trace = self._traces.get(r.trace_id)
                if trace is None:
                    self._traces[r.trace_id] = trace = _Trace(r.trace_id, now, now)
                trace.last = now
                trace.logs.append(r)
                trace.size += per
                self._memory += per
            self.stats.logs_accepted += len(traced)
            self.stats.logs_without_trace += len(logs) - len(traced)
            self._cond.notify_all()
        return Admission(200)

    def _pop(self, tid: int) -> _Trace | None:
        trace = self._traces.pop(tid, None)
        if trace is not None:
            self._memory -= trace.size
        return trace

    def _release(self, tid: int) -> _Trace | None:
        """One subscriber leaves: the last one takes the trace; others get a copy of it so far."""
        trace = self._traces.get(tid)
        if trace is None:
            return None
        trace.subscribers -= 1
        if trace.subscribers <= 0:
            return self._pop(tid)
        return _Trace(tid, trace.first, trace.last, dict(trace.spans), list(trace.logs), 0, trace.rejected)

    def sweep(self, now: float | None = None) -> None:
        """Drop traces nobody subscribed to whose last span arrived more than `retention` seconds ago."""
        cutoff = (time.monotonic() if now is None else now) - self.limits.retention
        with self._cond:
            for tid in [t for t, tr in self._traces.items() if not tr.subscribers and tr.last < cutoff]:
                trace = self._pop(tid)
                if trace is not None:
                    self.stats.traces_expired += 1
                    self.stats.spans_expired += len(trace.spans)

    def take_settled(self, settle: float, give_up: float) -> list[AssembledTrace]:
        """Take the unsubscribed traces that are done: a root span (no parent) received, every named
        parent received and `settle` seconds without new data; or `give_up` seconds without new data
        (then with notes on what is missing)."""
        now = time.monotonic()
        out = []
        with self._cond:
            for trace in list(self._traces.values()):
                quiet = now - trace.last
                if trace.subscribers or quiet < settle:
                    continue
                if _whole(trace) or quiet >= give_up:
                    out.append(self._take(trace, f"within {give_up:g} s"))
        return out

    def take_all(self, waited: str) -> list[AssembledTrace]:
        """Take every unsubscribed trace, whole or not; what had not arrived is noted as not arrived
        `waited` (e.g. "before the receiver stopped")."""
        with self._cond:
            return [self._take(trace, waited) for trace in list(self._traces.values()) if not trace.subscribers]

    def _take(self, trace: _Trace, waited: str) -> AssembledTrace:
        self._pop(trace.trace_id)
        notes = _notes(trace, (), self.limits, waited)
        tid = trace.trace_id
        if not trace.spans:
            notes.append(f"trace {tid:032x}: only log records arrived, no spans")
        elif not any(s.parent_id is None for s in trace.spans.values()):
            notes.append(f"trace {tid:032x}: no root span (one without a parent) arrived {waited}")
        return AssembledTrace(tid, list(trace.spans.values()), trace.logs, notes)

    def subscribe(self, trace_id: int, root_span_id: int | None = None) -> RemoteLink:
        with self._cond:
            trace = self._traces.get(trace_id)
            if trace is None:
                now = time.monotonic()
                self._traces[trace_id] = trace = _Trace(trace_id, now, now)
            trace.subscribers += 1
        return RemoteLink(self, trace_id, root_span_id)


class RemoteLink:
    """A subscription to one trace id: the remote spans and log records of a capture's trace.

    Made by `OTLPReceiver.subscribe` when the capture's local root span starts; `settle` at exit.
    While subscribed, the trace is never expired or taken by anyone else.
    """

    def __init__(self, store: TraceStore, trace_id: int, root_span_id: int | None) -> None:
        self._store = store
        self.trace_id = trace_id
        self.root_span_id = root_span_id
        self._closed = False

    def settle(
        self,
        timeout: float = 10.0,
        quiet: float = 0.5,
        local_span_ids: Iterable[int] = (),
        expect_spans: bool = False,
    ) -> RemoteSpans:
        """Wait until the remote part of the trace has settled, then take it.

        Settled means: every parent a received span names has arrived (or is local: the root span or
        one of `local_span_ids`), no received span is still open, at least one span arrived if
        `expect_spans`, and nothing new arrived for `quiet` seconds (counted from the later of this
        call and the last arrival; it should exceed the exporter's batch delay). After `timeout`
        seconds it returns what it has, with notes naming what did not arrive.
        """
        if self._closed:
            raise RuntimeError(f"RemoteLink for trace {self.trace_id:032x} was already settled or closed")
        local = set(local_span_ids)
        if self.root_span_id:
            local.add(self.root_span_id)
        store = self._store
        start = time.monotonic()
        deadline = start + timeout
        with store._cond:
            while True:
                now = time.monotonic()
                trace = store._traces.get(self.trace_id)
                waiting: float | None = None
                if trace is None or not (trace.spans or not expect_spans):
                    pass  # nothing yet: wait for the deadline
                elif _missing_parents(trace, local) or any(s.end_ns is None for s in trace.spans.values()):
                    pass
                else:
                    waiting = max(trace.last, start) + quiet - now
                    if waiting <= 0:
                        break
                if now >= deadline:
                    break
                store._cond.wait(min(deadline - now, waiting if waiting is not None else deadline - now))
            self._closed = True
            trace = store._release(self.trace_id)
        waited = f"within {timeout:g} s"
        notes = _notes(trace, local, store.limits, waited)
        spans = list(trace.spans.values()) if trace is not None else []
        if expect_spans and not spans:
            notes.append(
                f"trace {self.trace_id:032x}: no remote span arrived {waited}; is the service exporting to this "
                "receiver (OTEL_EXPORTER_OTLP_ENDPOINT), and is its batch delay (OTEL_BSP_SCHEDULE_DELAY) shorter?"
            )
        return RemoteSpans(self.trace_id, spans, trace.logs if trace is not None else [], notes)

    def close(self) -> None:
        """Unsubscribe without settling; the trace's data is dropped."""
        if not self._closed:
            self._closed = True
            with self._store._cond:
                self._store._release(self.trace_id)
