"""`OTLPReceiver`: real HTTP on 127.0.0.1, the real OTel SDK exporter, OTLP-conformant answers."""

from __future__ import annotations

import gzip
import json
import threading
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.rpc.status_pb2 import Status
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status as OTelStatus
from opentelemetry.trace import StatusCode

from tracegrade.receiver import OTLPReceiver
from tracegrade.spans import Span


def _post(
    url: str, body: bytes, ctype: str = "application/x-protobuf", **headers: str
) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, data=body, headers={"Content-Type": ctype, **headers}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def _record(provider: TracerProvider, n_children: int = 3) -> None:
    tracer = provider.get_tracer("test-scope", "1.2")
    with tracer.start_as_current_span("agent run", attributes={"gen_ai.agent.name": "a", "n": 7}) as root:
        root.add_event("started", {"k": "v"})
        for i in range(n_children):
            with tracer.start_as_current_span(f"tool {i}", attributes={"gen_ai.tool.name": f"t{i}", "x": (1, 2)}) as s:
                if i == 1:
                    s.set_status(OTelStatus(StatusCode.ERROR, "boom"))


def _exported(rx: OTLPReceiver, compression: Compression = Compression.NoCompression) -> list[ReadableSpan]:
    """Record a small trace with a provider exporting to `rx` (and to memory); return the SDK spans."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "svc"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    exporter = OTLPSpanExporter(endpoint=rx.endpoint + "/v1/traces", compression=compression)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    _record(provider)
    provider.shutdown()
    return list(memory.get_finished_spans())


@pytest.fixture
def rx() -> Iterator[OTLPReceiver]:
    with OTLPReceiver(port=0) as receiver:
        yield receiver


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip, Compression.Deflate])
def test_spans_from_the_sdk_exporter_arrive_equal_to_the_sdk_spans(rx: OTLPReceiver, compression: Compression) -> None:
    sdk_spans = _exported(rx, compression)
    traces = rx.take_settled(settle=0)
    assert len(traces) == 1 and traces[0].complete
    got = {s.span_id: s for s in traces[0].spans}
    expected = {s.span_id: s for s in map(Span.from_readable, sdk_spans)}
    assert got == expected
    assert got[next(iter(got))].resource["service.name"] == "svc"
    assert rx.stats.spans_accepted == 4 and rx.pending_traces == 0


def test_json_request_is_decoded_and_answered_in_json(rx: OTLPReceiver) -> None:
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": "root",
        "startTimeUnixNano": "1", "endTimeUnixNano": "2", "attributes": [{"key": "a", "value": {"intValue": "3"}}],
    }]}]}]}  # fmt: skip
    status, headers, body = _post(rx.endpoint + "/v1/traces", json.dumps(doc).encode(), "application/json")
    assert (status, headers["Content-Type"], json.loads(body)) == (200, "application/json", {})
    [trace] = rx.take_settled(settle=0)
    assert [(s.name, dict(s.attributes), s.trace_id) for s in trace.spans] == [
        ("root", {"a": 3}, 0x5B8EFFF798038103D269B633813FC60C)
    ]


def test_malformed_protobuf_is_answered_400_with_a_status_naming_the_problem(rx: OTLPReceiver) -> None:
    status, headers, body = _post(rx.endpoint + "/v1/traces", b"\xff\xff\xff garbage")
    assert status == 400 and headers["Content-Type"] == "application/x-protobuf"
    message = Status.FromString(body).message
    assert "malformed ExportTraceServiceRequest" in message and "protobuf" in message
    assert rx.stats.refused_malformed == 1


def test_malformed_json_span_is_answered_400_naming_its_json_path(rx: OTLPReceiver) -> None:
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz", "spanId": "eee19b7ec3c1b174"}]}]}]}
    status, _headers, body = _post(rx.endpoint + "/v1/traces", json.dumps(doc).encode(), "application/json")
    answer = json.loads(body)
    assert status == 400 and answer["code"] == 3
    assert "resourceSpans[0].scopeSpans[0].spans[0].traceId" in answer["message"]
    status, _headers, body = _post(rx.endpoint + "/v1/traces", b'{"resourceSpans": [', "application/json")
    assert status == 400 and "truncated JSON" in json.loads(body)["message"]


def test_bodies_over_the_limit_are_answered_413_compressed_or_not() -> None:
    with OTLPReceiver(port=0, max_body_bytes=1000) as rx:
        status, _h, body = _post(rx.endpoint + "/v1/traces", b"\x0a" * 2000)
        assert status == 413 and "max_body_bytes" in Status.FromString(body).message
        bomb = gzip.compress(b"\x00" * 100_000)  # small on the wire, 100 kB inflated
        assert len(bomb) < 1000
        status, _h, body = _post(rx.endpoint + "/v1/traces", bomb, **{"Content-Encoding": "gzip"})
        assert status == 413 and "decompressed" in Status.FromString(body).message
        assert rx.stats.refused_too_large == 2


def test_unsupported_content_type_and_encoding_are_answered_415(rx: OTLPReceiver) -> None:
    assert _post(rx.endpoint + "/v1/traces", b"x", "text/plain")[0] == 415
    assert _post(rx.endpoint + "/v1/traces", b"x", **{"Content-Encoding": "br"})[0] == 415


def test_spans_over_the_per_trace_limit_are_rejected_as_partial_success() -> None:
    with OTLPReceiver(port=0, max_spans_per_trace=2) as rx:
        _exported(rx)  # 4 spans in one trace
        traces = rx.take_settled(settle=0, give_up=0)
        assert rx.stats.spans_rejected == 2 and len(traces[0].spans) == 2
        assert any("2 span(s) rejected" in n and "max_spans_per_trace=2" in n for n in traces[0].incomplete)


def test_partial_success_is_in_the_response_body() -> None:
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add()
    for i in range(1, 4):
        s = spans.spans.add(trace_id=b"\x01" * 16, span_id=i.to_bytes(8, "big"), name=f"s{i}")
        s.start_time_unix_nano, s.end_time_unix_nano = 1, 2
    with OTLPReceiver(port=0, max_spans_per_trace=1) as rx:
        status, _h, body = _post(rx.endpoint + "/v1/traces", request.SerializeToString())
    response = ExportTraceServiceResponse.FromString(body)
    assert status == 200 and response.partial_success.rejected_spans == 2
    assert "max_spans_per_trace=1" in response.partial_success.error_message


def test_a_full_receiver_answers_429_with_retry_after_and_the_exporter_retries_until_accepted() -> None:
    with OTLPReceiver(port=0, max_traces=1, retry_after=1) as rx:
        _exported(rx)  # trace A fills the receiver
        memory = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(memory))
        _record(provider, 1)  # trace B
        exporter = OTLPSpanExporter(endpoint=rx.endpoint + "/v1/traces")
        result: list[SpanExportResult] = []
        sender = threading.Thread(target=lambda: result.append(exporter.export(memory.get_finished_spans())))
        sender.start()
        deadline = time.monotonic() + 5
        while rx.stats.refused_busy == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert rx.stats.refused_busy >= 1  # B was refused while A was held
        [a] = rx.take_settled(settle=0)  # A is taken: room for B
        sender.join(10)
        assert result == [SpanExportResult.SUCCESS]
        [b] = rx.take_settled(settle=0)
        assert len(a.spans) == 4 and len(b.spans) == 2 and rx.stats.spans_accepted == 6


def test_a_request_over_the_memory_limit_is_answered_503_with_retry_after() -> None:
    request = ExportTraceServiceRequest()
    s = request.resource_spans.add().scope_spans.add().spans.add(trace_id=b"\x01" * 16, span_id=b"\x02" * 8)
    s.start_time_unix_nano, s.end_time_unix_nano = 1, 2
    with OTLPReceiver(port=0, max_memory_bytes=100, retry_after=3) as rx:
        status, headers, body = _post(rx.endpoint + "/v1/traces", request.SerializeToString())
        assert (status, headers["Retry-After"]) == (503, "3")
        assert "max_memory_bytes=100" in Status.FromString(body).message
        assert rx.pending_traces == 0


def test_a_retried_request_is_counted_once(rx: OTLPReceiver) -> None:
    request = ExportTraceServiceRequest()
    s = request.resource_spans.add().scope_spans.add().spans.add(trace_id=b"\x01" * 16, span_id=b"\x02" * 8)
    s.start_time_unix_nano, s.end_time_unix_nano = 1, 2
    for _ in range(2):
        assert _post(rx.endpoint + "/v1/traces", request.SerializeToString())[0] == 200
    [trace] = rx.take_settled(settle=0)
    assert len(trace.spans) == 1 and rx.stats.spans_duplicate == 1


def test_log_records_are_kept_with_their_trace_in_protobuf_and_json(rx: OTLPReceiver) -> None:
    request = ExportLogsServiceRequest()
    records = request.resource_logs.add().scope_logs.add()
    r = records.log_records.add(trace_id=b"\x07" * 16, span_id=b"\x08" * 8, event_name="gen_ai.user.message")
    r.time_unix_nano = 5
    r.body.string_value = "hello"
    r.attributes.add(key="gen_ai.system", value={"string_value": "openai"})
    records.log_records.add(event_name="no trace")  # kept nowhere: counted
    status, _h, body = _post(rx.endpoint + "/v1/logs", request.SerializeToString())
    assert status == 200 and body == b""  # an empty ExportLogsServiceResponse
    doc = {"resourceLogs": [{"scopeLogs": [{"logRecords": [{
        "traceId": "07" * 16, "spanId": "09" * 8, "eventName": "e2", "body": {"kvlistValue": {"values": [
            {"key": "role", "value": {"stringValue": "user"}}]}}, "timeUnixNano": "6"}]}]}]}  # fmt: skip
    assert _post(rx.endpoint + "/v1/logs", json.dumps(doc).encode(), "application/json")[0] == 200
    [trace] = rx.take_settled(settle=0, give_up=0)
    assert [(x.event_name, x.body, x.span_id, x.time_ns) for x in trace.logs] == [
        ("gen_ai.user.message", "hello", 0x0808080808080808, 5),
        ("e2", {"role": "user"}, 0x0909090909090909, 6),
    ]
    assert dict(trace.logs[0].attributes) == {"gen_ai.system": "openai"}
    assert rx.stats.logs_accepted == 2 and rx.stats.logs_without_trace == 1
    assert any("only log records" in n for n in trace.incomplete)


def test_malformed_log_json_names_the_record(rx: OTLPReceiver) -> None:
    doc = {"resourceLogs": [{"scopeLogs": [{"logRecords": [{}, {"traceId": "xyz"}]}]}]}
    status, _h, body = _post(rx.endpoint + "/v1/logs", json.dumps(doc).encode(), "application/json")
    assert status == 400
    assert "resourceLogs[0].scopeLogs[0].logRecords[1].traceId" in json.loads(body)["message"]


def test_non_loopback_hosts_need_an_explicit_option() -> None:
    with pytest.raises(ValueError, match="allow_remote=True"):
        OTLPReceiver(host="0.0.0.0")


def test_endpoint_before_start_says_how_to_start() -> None:
    with pytest.raises(RuntimeError, match="not running"):
        _ = OTLPReceiver().endpoint


def test_unsubscribed_traces_expire_after_the_retention_period(rx: OTLPReceiver) -> None:
    _exported(rx)
    rx._store.sweep(time.monotonic() + rx.limits.retention + 1)
    assert rx.pending_traces == 0 and rx.stats.traces_expired == 1 and rx.stats.spans_expired == 4


@pytest.fixture(scope="module")
def shared_rx() -> Iterator[OTLPReceiver]:
    with OTLPReceiver(port=0, max_body_bytes=4096) as receiver:
        yield receiver


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.binary(max_size=300) | st.text(max_size=200).map(str.encode),
    path=st.sampled_from(["/v1/traces", "/v1/logs"]),
    ctype=st.sampled_from(["application/x-protobuf", "application/json"]),
    gz=st.booleans(),
)
def test_no_input_crashes_the_receiver(shared_rx: OTLPReceiver, body: bytes, path: str, ctype: str, gz: bool) -> None:
    headers = {"Content-Encoding": "gzip"} if gz else {}
    status, _h, _body = _post(shared_rx.endpoint + path, body, ctype, **headers)
    assert status in (200, 400, 413)
    shared_rx.take_settled(settle=0, give_up=0)  # random valid protobuf can hold spans: don't fill up


def test_a_misspelt_limit_names_the_known_ones() -> None:
    with pytest.raises(TypeError, match="unknown limit.*max_bodybytes.*limits are: max_body_bytes"):
        OTLPReceiver(max_bodybytes=10)


def test_a_port_in_use_fails_start_in_the_callers_thread(rx: OTLPReceiver) -> None:
    with pytest.raises(OSError, match="in use"):
        OTLPReceiver(port=rx.port).start()


# --- bug: serve graded the spans of a trace without its log records ---------------------------


def test_a_log_record_arriving_after_the_spans_restarts_the_settle_window(rx: OTLPReceiver) -> None:
    spans = ExportTraceServiceRequest()
    s = spans.resource_spans.add().scope_spans.add().spans.add(trace_id=b"\x03" * 16, span_id=b"\x04" * 8)
    s.start_time_unix_nano, s.end_time_unix_nano = 1, 2
    assert _post(rx.endpoint + "/v1/traces", spans.SerializeToString())[0] == 200
    time.sleep(1.0)
    logs = ExportLogsServiceRequest()
    logs.resource_logs.add().scope_logs.add().log_records.add(trace_id=b"\x03" * 16, span_id=b"\x04" * 8)
    assert _post(rx.endpoint + "/v1/logs", logs.SerializeToString())[0] == 200
    assert rx.take_settled(settle=0.9) == []  # the spans are 1 s old, the record is not
    [trace] = rx.take_settled(settle=0)
    assert trace.complete and len(trace.spans) == 1 and [r.span_id for r in trace.logs] == [0x0404040404040404]


# --- bug: the 400 for malformed multi-line JSON left out the line ------------------------------

FIXTURES = Path(__file__).parent.parent / "fixtures"


@pytest.mark.parametrize(
    ("path", "file"),
    [("/v1/traces", "otlp/agent_run.json"), ("/v1/logs", "frameworks/openai--otel-genai--content-on.logs.json")],
)
def test_the_400_for_malformed_json_names_its_line_and_column(rx: OTLPReceiver, path: str, file: str) -> None:
    lines = (FIXTURES / file).read_text().splitlines()
    lines[40] = lines[40].replace(":", " ", 1)  # line 41 loses its key's colon
    status, _h, body = _post(rx.endpoint + path, "\n".join(lines).encode(), "application/json")
    assert status == 400
    message = json.loads(body)["message"]
    assert ": line 41, column " in message and "invalid JSON" in message


# --- bug: a gzip body's members after the first were dropped, trailing bytes ignored ------------


def _halves() -> tuple[bytes, bytes, int]:
    """agent_run.pb as two valid requests (its first 4 spans, the rest), and its span count."""
    whole = ExportTraceServiceRequest.FromString((FIXTURES / "otlp" / "agent_run.pb").read_bytes())
    first, second = ExportTraceServiceRequest(), ExportTraceServiceRequest()
    first.CopyFrom(whole)
    second.CopyFrom(whole)
    del first.resource_spans[0].scope_spans[0].spans[4:]
    del second.resource_spans[0].scope_spans[0].spans[:4]
    n = len(whole.resource_spans[0].scope_spans[0].spans)
    return first.SerializeToString(), second.SerializeToString(), n


def test_every_member_of_a_gzip_body_is_read(rx: OTLPReceiver) -> None:
    first, second, n = _halves()
    body = gzip.compress(first) + b"\0" * 8 + gzip.compress(second)  # zero padding between members is allowed
    assert n == 8 and len(ExportTraceServiceRequest.FromString(gzip.decompress(body)).resource_spans) == 2
    assert _post(rx.endpoint + "/v1/traces", body, **{"Content-Encoding": "gzip"})[0] == 200
    [trace] = rx.take_settled(settle=0)
    assert len(trace.spans) == n == rx.stats.spans_accepted


def test_bytes_after_the_compressed_data_are_a_400(rx: OTLPReceiver) -> None:
    first, second, _n = _halves()
    for encoding, body in [
        ("gzip", gzip.compress(first) + b"garbage"),
        ("gzip", gzip.compress(first) + gzip.compress(second) + b"\0\0x"),
        ("deflate", zlib.compress(first) + zlib.compress(second)),
    ]:
        status, _h, answer = _post(rx.endpoint + "/v1/traces", body, **{"Content-Encoding": encoding})
        assert status == 400
        assert f"after the end of the {encoding} data" in Status.FromString(answer).message
    truncated = gzip.compress(first) + gzip.compress(second)[:-4]
    status, _h, answer = _post(rx.endpoint + "/v1/traces", truncated, **{"Content-Encoding": "gzip"})
    assert status == 400 and "gzip member 2 ends early" in Status.FromString(answer).message
    assert rx.pending_traces == 0 and rx.stats.spans_accepted == 0


def test_the_inflated_size_limit_counts_every_gzip_member() -> None:
    first, second, _n = _halves()
    body = gzip.compress(first) + gzip.compress(second)
    with OTLPReceiver(port=0, max_body_bytes=len(first) + len(second) - 1) as small:
        assert _post(small.endpoint + "/v1/traces", body, **{"Content-Encoding": "gzip"})[0] == 413
    with OTLPReceiver(port=0, max_body_bytes=len(first) + len(second)) as exact:
        assert _post(exact.endpoint + "/v1/traces", body, **{"Content-Encoding": "gzip"})[0] == 200


# --- bug: a span received again was counted as accepted again -----------------------------------


def test_a_span_received_again_counts_once_as_accepted_and_once_as_duplicate(rx: OTLPReceiver) -> None:
    body = (FIXTURES / "otlp" / "agent_run.json").read_bytes()
    for _ in range(3):  # the first delivery and two retries of it
        assert _post(rx.endpoint + "/v1/traces", body, "application/json")[0] == 200
    [trace] = rx.take_settled(settle=0)
    assert len(trace.spans) == 8
    assert (rx.stats.spans_accepted, rx.stats.spans_duplicate) == (8, 16)
