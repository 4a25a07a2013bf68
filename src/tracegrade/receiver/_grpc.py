"""OTLP/gRPC for `OTLPReceiver(grpc_port=...)`: `TraceService/Export` and `LogsService/Export`.

The optional `receiver-grpc` extra (grpcio). Requests are taken as raw bytes (no generated stubs)
and go through the same decoding and admission as OTLP/HTTP: a malformed request is answered
`INVALID_ARGUMENT` naming the problem, a full receiver `RESOURCE_EXHAUSTED` (over `max_traces` or
spans per trace) or `UNAVAILABLE` (memory), codes OTLP exporters retry; a message over
`max_body_bytes` is refused by gRPC itself (`RESOURCE_EXHAUSTED`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ..ingest._errors import TraceFormatError

if TYPE_CHECKING:
    from ._server import OTLPReceiver

__all__ = ["start_grpc"]

_SERVICES = {
    "traces": "opentelemetry.proto.collector.trace.v1.TraceService",
    "logs": "opentelemetry.proto.collector.logs.v1.LogsService",
}
_PATHS = {"traces": "/v1/traces", "logs": "/v1/logs"}


def start_grpc(rx: OTLPReceiver, host: str, port: int) -> tuple[Any, int]:
    """Start a gRPC server for `rx` on `host:port` (0: a free port); returns (server, bound port)."""
    try:
        import grpc
    except ImportError:
        raise ImportError('OTLP/gRPC needs grpcio: pip install "tracegrade[receiver-grpc]"') from None
    from ._server import _success, _where

    limit = rx.limits.max_body_bytes

    def handler(signal: str) -> Any:
        def export(raw: bytes, context: Any) -> bytes:
            rx._count_request()
            try:
                admission = rx._admit(signal, raw, True)
            except TraceFormatError as e:
                rx._count_refusal(400)
                context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT, f"malformed {signal} export request: {_where(e)}{e.problem}"
                )
            if admission.status != 200:
                code = grpc.StatusCode.RESOURCE_EXHAUSTED if admission.status == 429 else grpc.StatusCode.UNAVAILABLE
                context.abort(code, admission.message)
            rx._accepted(_PATHS[signal], raw, {"Content-Type": "application/x-protobuf"})
            return _success(signal, True, admission)

        return grpc.unary_unary_rpc_method_handler(export)  # no (de)serializers: raw bytes both ways

    server = grpc.server(
        ThreadPoolExecutor(max_workers=4, thread_name_prefix="tracegrade-otlp-grpc"),
        options=[("grpc.max_receive_message_length", limit), ("grpc.max_send_message_length", 1 << 20)],
    )
    server.add_generic_rpc_handlers(
        [grpc.method_handlers_generic_handler(service, {"Export": handler(signal)}) for signal, service in _SERVICES.items()]
    )
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    bound = server.add_insecure_port(address)
    if not bound:
        raise OSError(f"OTLPReceiver: cannot bind gRPC on {address}")
    server.start()
    return server, bound
