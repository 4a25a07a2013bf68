"""Distributed capture machinery: `OTLPReceiver.subscribe` / `RemoteLink.settle` and `trace_headers()`.

The "service" is a second `TracerProvider` (or a subprocess) exporting with the real
`BatchSpanProcessor` + OTLP/HTTP exporter, its spans parented through `trace_headers()`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest
from opentelemetry import baggage, context, trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from tracegrade import trace_headers
from tracegrade.receiver import OTLPReceiver


@pytest.fixture
def rx() -> Iterator[OTLPReceiver]:
    with OTLPReceiver(port=0) as receiver:
        yield receiver


def _service(rx: OTLPReceiver, delay_ms: int = 50) -> TracerProvider:
    provider = TracerProvider()
    exporter = OTLPSpanExporter(endpoint=rx.endpoint + "/v1/traces")
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=delay_ms))
    return provider


def _handle_request(service: TracerProvider, headers: dict[str, str], tools: int = 2, end_root: bool = True) -> None:
    """What an instrumented server does with an incoming request carrying `headers`."""
    tracer = service.get_tracer("service")
    ctx = TraceContextTextMapPropagator().extract(headers)
    root = tracer.start_span("POST /chat", context=ctx, kind=trace.SpanKind.SERVER)
    with trace.use_span(root, end_on_exit=False):
        for i in range(tools):
            with tracer.start_as_current_span(f"running tool t{i}"):
                pass
    if end_root:
        root.end()


def _local_root(name: str = "capture") -> tuple[TracerProvider, trace.Span]:
    local = TracerProvider()
    return local, local.get_tracer("tracegrade").start_span(name)


def test_remote_spans_of_the_capture_trace_arrive_complete_under_the_local_root(rx: OTLPReceiver) -> None:
    service = _service(rx)
    _local, root = _local_root()
    ctx = root.get_span_context()
    link = rx.subscribe(ctx.trace_id, ctx.span_id)
    with trace.use_span(root, end_on_exit=True):
        _handle_request(service, trace_headers())
    remote = link.settle(timeout=5, quiet=0.3, expect_spans=True)
    service.shutdown()
    assert remote.complete, remote.incomplete
    assert sorted(s.name for s in remote.spans) == ["POST /chat", "running tool t0", "running tool t1"]
    assert {s.trace_id for s in remote.spans} == {ctx.trace_id}
    [server] = [s for s in remote.spans if s.name == "POST /chat"]
    assert server.parent_id == ctx.span_id and server.kind == "server"
    assert rx.pending_traces == 0


def test_settle_waits_for_spans_the_exporter_sends_after_it_started(rx: OTLPReceiver) -> None:
    service = _service(rx, delay_ms=400)  # the batch leaves ~0.4 s after the spans end
    _local, root = _local_root()
    ctx = root.get_span_context()
    link = rx.subscribe(ctx.trace_id, ctx.span_id)
    with trace.use_span(root, end_on_exit=True):
        _handle_request(service, trace_headers())
    started = time.monotonic()
    remote = link.settle(timeout=5, quiet=0.2, expect_spans=True)
    assert len(remote.spans) == 3 and remote.complete
    assert time.monotonic() - started >= 0.3
    service.shutdown()


def test_a_remote_parent_that_never_arrives_is_reported_incomplete(rx: OTLPReceiver) -> None:
    service = _service(rx)
    _local, root = _local_root()
    ctx = root.get_span_context()
    link = rx.subscribe(ctx.trace_id, ctx.span_id)
    with trace.use_span(root, end_on_exit=True):
        _handle_request(service, trace_headers(), end_root=False)  # the server span never ends
    service.force_flush()
    started = time.monotonic()
    remote = link.settle(timeout=1.0, quiet=0.1)
    assert 1.0 <= time.monotonic() - started < 3
    assert sorted(s.name for s in remote.spans) == ["running tool t0", "running tool t1"]
    [note] = remote.incomplete
    parent = remote.spans[0].parent_id
    assert parent is not None and f"{parent:016x}" in note and "did not arrive within 1 s" in note
    service.shutdown()


def test_spans_under_other_local_spans_are_complete_when_those_ids_are_given(rx: OTLPReceiver) -> None:
    service = _service(rx)
    local, root = _local_root()
    ctx = root.get_span_context()
    link = rx.subscribe(ctx.trace_id, ctx.span_id)
    client_tracer = local.get_tracer("client")
    with trace.use_span(root, end_on_exit=True), client_tracer.start_as_current_span("HTTP POST") as client:
        _handle_request(service, trace_headers())
    remote = link.settle(timeout=2, quiet=0.2, local_span_ids=[client.get_span_context().span_id])
    assert remote.complete and len(remote.spans) == 3
    service.shutdown()


def test_no_remote_spans_is_a_note_only_when_spans_were_expected(rx: OTLPReceiver) -> None:
    first, second = rx.subscribe(1), rx.subscribe(2)
    started = time.monotonic()
    assert first.settle(timeout=5, quiet=0.1).incomplete == []
    assert time.monotonic() - started < 1
    expected = second.settle(timeout=0.3, quiet=0.1, expect_spans=True)
    assert expected.spans == [] and "no remote span arrived within 0.3 s" in expected.incomplete[0]
    with pytest.raises(RuntimeError, match="already settled"):
        second.settle()


def test_concurrent_captures_each_get_only_their_own_spans(rx: OTLPReceiver) -> None:
    service = _service(rx)
    results: dict[int, tuple[int, set[int], list[str]]] = {}

    def one(i: int) -> None:
        _local, root = _local_root(f"capture {i}")
        ctx = root.get_span_context()
        link = rx.subscribe(ctx.trace_id, ctx.span_id)
        with trace.use_span(root, end_on_exit=True):
            _handle_request(service, trace_headers(), tools=i % 3 + 1)
        remote = link.settle(timeout=5, quiet=0.3, expect_spans=True)
        results[i] = (len(remote.spans), {s.trace_id for s in remote.spans} ^ {ctx.trace_id}, remote.incomplete)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    service.shutdown()
    assert {i: r for i, r in results.items()} == {i: (i % 3 + 2, set(), []) for i in range(8)}


def test_log_records_of_the_capture_trace_come_with_its_spans(rx: OTLPReceiver) -> None:
    _local, root = _local_root()
    ctx = root.get_span_context()
    link = rx.subscribe(ctx.trace_id, ctx.span_id)
    doc = {"resourceLogs": [{"scopeLogs": [{"logRecords": [{
        "traceId": f"{ctx.trace_id:032x}", "spanId": f"{ctx.span_id:016x}", "eventName": "gen_ai.choice",
        "body": {"stringValue": "hi"}}]}]}]}  # fmt: skip
    req = urllib.request.Request(
        rx.endpoint + "/v1/logs", json.dumps(doc).encode(), {"Content-Type": "application/json"}
    )  # fmt: skip
    assert urllib.request.urlopen(req, timeout=5).status == 200
    remote = link.settle(timeout=2, quiet=0.1)
    assert [(r.event_name, r.body, r.span_id) for r in remote.logs] == [("gen_ai.choice", "hi", ctx.span_id)]


def test_nested_subscribers_share_the_trace_until_the_last_one_settles(rx: OTLPReceiver) -> None:
    service = _service(rx)
    _local, root = _local_root()
    ctx = root.get_span_context()
    outer = rx.subscribe(ctx.trace_id, ctx.span_id)
    inner = rx.subscribe(ctx.trace_id, ctx.span_id)
    with trace.use_span(root, end_on_exit=True):
        _handle_request(service, trace_headers())
    assert len(inner.settle(timeout=3, quiet=0.2, expect_spans=True).spans) == 3
    assert len(outer.settle(timeout=3, quiet=0.1).spans) == 3
    assert rx.pending_traces == 0
    service.shutdown()


_SERVICE_SCRIPT = textwrap.dedent(
    """
    import sys
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # endpoint from the environment
    tracer = provider.get_tracer("service")
    ctx = TraceContextTextMapPropagator().extract({"traceparent": sys.argv[1]})
    with tracer.start_as_current_span("handle", context=ctx, kind=trace.SpanKind.SERVER):
        with tracer.start_as_current_span("db query"):
            pass
    provider.shutdown()
    """
)


def test_a_subprocess_exporting_to_the_endpoint_from_its_environment_joins_the_trace(rx: OTLPReceiver) -> None:
    _local, root = _local_root()
    ctx = root.get_span_context()
    link = rx.subscribe(ctx.trace_id, ctx.span_id)
    with trace.use_span(root, end_on_exit=True):
        headers = trace_headers()
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": rx.endpoint}
        subprocess.run([sys.executable, "-c", _SERVICE_SCRIPT, headers["traceparent"]], env=env, check=True, timeout=30)
    remote = link.settle(timeout=5, quiet=0.2, expect_spans=True)
    assert remote.complete and sorted(s.name for s in remote.spans) == ["db query", "handle"]


def test_trace_headers_carry_the_current_span_and_baggage() -> None:
    _local, root = _local_root()
    ctx = root.get_span_context()
    token = context.attach(baggage.set_baggage("user", "u1"))
    try:
        with trace.use_span(root, end_on_exit=True):
            headers = trace_headers()
    finally:
        context.detach(token)
    assert headers["traceparent"] == f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"
    assert headers["baggage"] == "user=u1"


def test_trace_headers_outside_any_span_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="no current span"):
        trace_headers()
