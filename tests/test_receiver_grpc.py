"""`OTLPReceiver(grpc_port=0)`: OTLP/gRPC beside OTLP/HTTP, with the real OTel SDK gRPC exporter."""

from __future__ import annotations

import time
from collections.abc import Iterator

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracegrade.receiver import OTLPReceiver
from tracegrade.spans import Span


@pytest.fixture
def rx() -> Iterator[OTLPReceiver]:
    with OTLPReceiver(port=0, grpc_port=0) as receiver:
        yield receiver


def _send_spans(rx: OTLPReceiver, n: int = 3) -> list[Span]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=rx.grpc_endpoint, insecure=True)))
    tracer = provider.get_tracer("svc")
    with tracer.start_as_current_span("agent run"):
        for i in range(n):
            with tracer.start_as_current_span(f"execute_tool t{i}", attributes={"gen_ai.tool.name": f"t{i}"}):
                pass
    provider.shutdown()
    return [Span.from_readable(s) for s in memory.get_finished_spans()]


def _received(rx: OTLPReceiver) -> list[Span]:
    [trace] = rx.take_settled(settle=0.0, give_up=5.0) or [None]
    assert trace is not None
    return list(trace.spans)


def test_spans_exported_over_grpc_arrive_as_recorded(rx: OTLPReceiver) -> None:
    sent = _send_spans(rx)
    deadline = time.monotonic() + 5
    while rx.pending_traces == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    got = _received(rx)
    key = lambda s: s.span_id  # noqa: E731
    assert sorted(got, key=key) == sorted(sent, key=key)
    assert rx.stats.requests == len(sent)  # SimpleSpanProcessor: one export per span


def test_a_malformed_grpc_request_is_invalid_argument_naming_the_problem(rx: OTLPReceiver) -> None:
    with grpc.insecure_channel(rx.grpc_endpoint.removeprefix("http://")) as channel:
        export = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
        with pytest.raises(grpc.RpcError) as raised:
            export(b"\xff\xff\xff garbage", timeout=5)
        assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "protobuf" in (raised.value.details() or "")
        empty = ExportTraceServiceResponse.FromString(export(b"", timeout=5))  # an empty request is valid
        assert not empty.HasField("partial_success")
    assert rx.stats.refused_malformed == 1


def test_a_busy_receiver_is_retried_by_the_grpc_exporter_and_nothing_is_lost(rx: OTLPReceiver) -> None:
    rx.refuse_next(1, 503)  # UNAVAILABLE: the SDK's gRPC exporter backs off and sends again
    sent = _send_spans(rx, n=0)
    deadline = time.monotonic() + 10
    while rx.pending_traces == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [s.span_id for s in _received(rx)] == [s.span_id for s in sent]
    assert rx.stats.refused_busy == 1


def test_log_records_arrive_over_grpc_with_their_trace(rx: OTLPReceiver) -> None:
    provider = TracerProvider()
    logs = LoggerProvider()
    logs.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(endpoint=rx.grpc_endpoint, insecure=True)))
    link = None
    with provider.get_tracer("svc").start_as_current_span("agent run") as span:
        ctx = span.get_span_context()
        link = rx.subscribe(ctx.trace_id)
        logs.get_logger("svc").emit(event_name="gen_ai.choice", body={"message": {"role": "assistant"}})
    logs.shutdown()
    remote = link.settle(timeout=5, quiet=0.2)
    assert [r.event_name for r in remote.logs] == ["gen_ai.choice"]
    assert remote.logs[0].span_id == ctx.span_id


def test_grpc_is_off_unless_asked() -> None:
    with OTLPReceiver(port=0) as receiver, pytest.raises(RuntimeError, match="grpc_port"):
        receiver.grpc_endpoint  # noqa: B018
