"""`Span`: the one compact, immutable span record every reader produces.

SDK spans are not copied into it on the hot path (the tree reads `ReadableSpan`s directly);
ingest readers build `Span`s, and `Span.from_readable` converts when a record is needed (writing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["SPAN_KINDS", "LogRecord", "Span", "SpanEvent", "SpanKind", "SpanStatus", "status_of"]

SpanStatus = Literal["unset", "ok", "error"]
SpanKind = Literal["internal", "server", "client", "producer", "consumer"]
SPAN_KINDS: tuple[SpanKind, ...] = ("internal", "server", "client", "producer", "consumer")
"""Indexed like the SDK's `SpanKind` enum values (OTLP's are these plus one)."""

_STATUS_BY_CODE: dict[int, SpanStatus] = {0: "unset", 1: "ok", 2: "error"}


def status_of(code: int) -> SpanStatus:
    """Map an SDK `StatusCode` value (0 unset, 1 ok, 2 error) to a status name."""
    return _STATUS_BY_CODE.get(code, "unset")


@dataclass(frozen=True, slots=True)
class SpanEvent:
    name: str
    time_ns: int
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Span:
    """One finished (or, with `end_ns=None`, still open) span.

    Ids are ints (hex on the wire), times are nanoseconds since the epoch, attribute values are
    decoded (str, bool, int, float, tuples of those; nested values from OTLP kvlists as dicts).
    """

    trace_id: int
    span_id: int
    parent_id: int | None
    name: str
    start_ns: int
    end_ns: int | None
    attributes: Mapping[str, Any] = field(default_factory=dict)
    status: SpanStatus = "unset"
    status_message: str = ""
    kind: SpanKind = "internal"
    events: tuple[SpanEvent, ...] = ()
    resource: Mapping[str, Any] = field(default_factory=dict)
    scope_name: str = ""
    scope_version: str = ""
    scope_attributes: Mapping[str, Any] = field(default_factory=dict)
    """The instrumentation scope's attributes (OTLP `scope.attributes`)."""

    @property
    def duration_ns(self) -> int:
        return 0 if self.end_ns is None else self.end_ns - self.start_ns

    @classmethod
    def from_readable(cls, span: ReadableSpan) -> Span:
        """Convert an OpenTelemetry SDK span."""
        ctx = span.context
        if ctx is None or span.start_time is None:
            raise ValueError(f"span {span.name!r} has no context or start time")
        parent = span.parent
        scope = span.instrumentation_scope
        return cls(
            trace_id=ctx.trace_id,
            span_id=ctx.span_id,
            parent_id=parent.span_id if parent is not None else None,
            name=span.name,
            start_ns=span.start_time,
            end_ns=span.end_time,
            attributes=dict(span.attributes or {}),
            status=status_of(span.status.status_code.value),
            status_message=span.status.description or "",
            kind=SPAN_KINDS[span.kind.value],
            events=tuple(SpanEvent(e.name, e.timestamp or 0, dict(e.attributes or {})) for e in span.events),
            resource=dict(span.resource.attributes) if span.resource is not None else {},
            scope_name=scope.name if scope is not None else "",
            scope_version=(scope.version or "") if scope is not None else "",
            scope_attributes=dict(getattr(scope, "attributes", None) or {}),
        )


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One OTel log record (an event such as `gen_ai.choice`); `trace_id` / `span_id` are 0 when the
    record names no span. Attached to the span it names (`SpanNode.logs`)."""

    trace_id: int
    span_id: int
    time_ns: int
    event_name: str
    body: Any
    attributes: Mapping[str, Any] = field(default_factory=dict)
    severity_text: str = ""
    severity_number: int = 0
    resource: Mapping[str, Any] = field(default_factory=dict)
    scope_name: str = ""
