"""`trace_headers()`: the W3C headers that carry the current trace to another process."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ..capture import active_capture

__all__ = ["trace_headers"]

_W3C = CompositePropagator([TraceContextTextMapPropagator(), W3CBaggagePropagator()])


def trace_headers() -> dict[str, str]:
    """`traceparent` (and `tracestate` / `baggage` when set) of the current span: inside
    `capture(receiver=rx)` that is the capture's root span or a span under it, so a request sent with
    these headers is part of the capture's trace. Raises `RuntimeError` outside any recording span."""
    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        raise RuntimeError(
            "trace_headers(): no current span to propagate; call it inside `capture(receiver=rx)` (or a span)"
        )
    headers: dict[str, str] = {}
    _W3C.inject(headers)
    if (cap := active_capture()) is not None:
        cap.propagated = True  # the capture now waits for the other process's spans
    return headers
