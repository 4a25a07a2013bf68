"""Telemetry from other processes: an OTLP/HTTP receiver, distributed capture and online grading.

`OTLPReceiver` receives OTLP/HTTP (traces and logs; protobuf or JSON; gzip or deflate), assembles traces and
answers with OTLP's status codes (back-pressure as 429/503 + Retry-After). `trace_headers()` gives
the W3C trace-context headers of the current span, for clients that are not auto-instrumented.
`tracegrade serve` (`_cli`) grades traces as they arrive. Needs the `receiver` extra (aiohttp).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._server import OTLPReceiver
    from ._service import ServiceProcess
    from ._store import AssembledTrace, Limits, ReceiverStats, RemoteLink, RemoteSpans

# Lazy: `tracegrade` builds its CLI parser by importing `receiver._cli`, which must not load the server.
_LAZY = {
    "OTLPReceiver": "._server",
    "ServiceProcess": "._service",
    **dict.fromkeys(["AssembledTrace", "Limits", "ReceiverStats", "RemoteLink", "RemoteSpans"], "._store"),
}

__all__ = [
    "AssembledTrace",
    "Limits",
    "OTLPReceiver",
    "ReceiverStats",
    "RemoteLink",
    "RemoteSpans",
    "ServiceProcess",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY, __all__)
