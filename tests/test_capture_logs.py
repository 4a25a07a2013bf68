"""`capture()` records the OTel log records (Logs API events) of the block: each attached to the span it
names, with the spans' attribution rules (nested and concurrent captures isolated), the SDK's own
exporters beside it unaffected. Real `TracerProvider` / `LoggerProvider`s, real events."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import threading
import weakref
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider

from tracegrade import capture, grade, load_traces
from tracegrade.capture import _RECORDER
from tracegrade.evaluators import ArgumentCorrectness, MaxToolCalls, ToolCorrectness, TrajectoryMatch
from tracegrade.ingest import read_logs

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"
RUN = "openai--otel-genai--content-on--stream"  # the OpenAI client under openai-v2: calls only in events
SCOPE = "opentelemetry.instrumentation.openai_v2"
CHAT = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.system": "openai"}


@pytest.fixture
def providers() -> Iterator[tuple[TracerProvider, LoggerProvider]]:
    tp, lp = TracerProvider(), LoggerProvider(shutdown_on_exit=False)
    yield tp, lp
    lp.shutdown()
    tp.shutdown()


def _choice(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    """A `gen_ai.choice` event body as openai-v2 emits it for a tool-calling response."""
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    return {"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": [call]}}


def _replay(tp: TracerProvider, lp: LoggerProvider, *, choices_after_end: bool = False) -> None:
    """The corpus run (four chat requests of a hand-written loop) emitted again through the real SDK:
    each chat span, and the events openai-v2 recorded for it emitted inside it (or, for the
    `gen_ai.choice` events, after the span ended)."""
    records = read_logs(CORPUS / f"{RUN}.logs.json")
    for tree in load_traces(CORPUS / f"{RUN}.traces.json"):
        [chat] = list(tree)
        logger = lp.get_logger(chat.scope_name)
        mine = [r for r in records if r.span_id == chat.span_id]
        with tp.get_tracer(chat.scope_name).start_as_current_span(chat.name, attributes=dict(chat.attributes)) as span:
            for r in mine:
                if not (choices_after_end and r.event_name == "gen_ai.choice"):
                    logger.emit(event_name=r.event_name, body=r.body, attributes=dict(r.attributes))
        if choices_after_end:
            ctx = trace.set_span_in_context(span)
            for r in mine:
                if r.event_name == "gen_ai.choice":
                    logger.emit(event_name=r.event_name, body=r.body, attributes=dict(r.attributes), context=ctx)


EXPECTED: list[str] = ["get_weather", "get_order", "search_kb", "search_kb"]


def test_events_of_the_block_attach_to_their_spans_and_give_the_requested_calls(providers: Any) -> None:
    tp, lp = providers
    with capture(provider=tp, logger_provider=lp) as cap:
        _replay(tp, lp)
    assert len(cap.logs) == 27 and all(n.logs for n in cap.tree)
    first = ["gen_ai.system.message", "gen_ai.user.message", "gen_ai.choice"]
    assert [r.event_name for r in cap.tree.nodes[0].logs] == first
    calls = cap.trajectory.tool_calls
    assert [c.name for c in calls] == EXPECTED
    assert calls[0].args == {"city": "Paris"} and calls[0].executed is None  # requested, from the event
    results = grade(cap, [ToolCorrectness(expected_tools=EXPECTED),
                          TrajectoryMatch(expected_trajectory=[*EXPECTED]),
                          ArgumentCorrectness("get_order", {"order_id": 1234}),
                          MaxToolCalls(max_calls=4)])  # fmt: skip
    assert [r.outcome for r in results] == ["passed"] * 4, [r.reasoning for r in results]
    [wrong] = grade(cap, [ArgumentCorrectness("get_order", {"order_id": 99})])
    assert wrong.outcome == "failed"


def test_records_emitted_after_their_span_ended_are_attached_too(providers: Any) -> None:
    tp, lp = providers
    with capture(provider=tp, logger_provider=lp) as cap:
        _replay(tp, lp, choices_after_end=True)
    assert [c.name for c in cap.trajectory.tool_calls] == EXPECTED
    assert all(n.logs[-1].event_name == "gen_ai.choice" for n in cap.tree)


def test_records_naming_no_span_or_emitted_outside_the_block_are_not_kept(providers: Any) -> None:
    tp, lp = providers
    logger = lp.get_logger(SCOPE)
    with capture(provider=tp, logger_provider=lp) as cap:
        logger.emit(event_name="gen_ai.choice", body=_choice("a", {}, "c0"))  # no span current: no span context
        with tp.get_tracer(SCOPE).start_as_current_span("chat gpt-4o", attributes=CHAT) as span:
            pass
    logger.emit(event_name="gen_ai.choice", body=_choice("b", {}, "c1"), context=trace.set_span_in_context(span))
    with tp.get_tracer(SCOPE).start_as_current_span("chat gpt-4o", attributes=CHAT):  # outside every capture
        logger.emit(event_name="gen_ai.choice", body=_choice("c", {}, "c2"))
    assert cap.logs == [] and [n.logs for n in cap.tree] == [[]]
    assert cap.trajectory.tool_calls == []


def test_nested_captures_each_keep_their_records_and_the_outer_one_sees_the_inner(providers: Any) -> None:
    tp, lp = providers
    tracer, logger = tp.get_tracer(SCOPE), lp.get_logger(SCOPE)
    with capture(provider=tp, logger_provider=lp) as outer:
        with tracer.start_as_current_span("chat gpt-4o", attributes=CHAT):
            logger.emit(event_name="gen_ai.choice", body=_choice("first", {"n": 1}, "c1"))
        with (
            capture(provider=tp, logger_provider=lp) as inner,
            tracer.start_as_current_span("chat gpt-4o", attributes=CHAT),
        ):
            logger.emit(event_name="gen_ai.choice", body=_choice("second", {"n": 2}, "c2"))
    assert [c.name for c in inner.trajectory.tool_calls] == ["second"]
    assert [c.name for c in outer.trajectory.tool_calls] == ["first", "second"]
    assert inner.logs[0] is outer.logs[1]  # converted once, shared


def test_concurrent_captures_in_threads_are_isolated_whatever_context_a_record_is_emitted_in(providers: Any) -> None:
    tp, lp = providers
    tracer, logger = tp.get_tracer(SCOPE), lp.get_logger(SCOPE)
    n = 50
    spans: dict[str, Any] = {}
    ready, crossed = threading.Barrier(2), threading.Barrier(2)
    caps: dict[str, Any] = {}

    def worker(name: str, other: str) -> None:
        with capture(provider=tp, logger_provider=lp) as cap:
            caps[name] = cap
            with tracer.start_as_current_span("chat gpt-4o", attributes=CHAT) as span:
                spans[name] = span
                for i in range(n):
                    logger.emit(event_name="gen_ai.choice", body=_choice(f"{name}{i}", {"i": i}, f"{name}-{i}"))
                ready.wait()
                # a record naming the other thread's span, emitted here: it is the other capture's
                logger.emit(event_name="gen_ai.choice", body=_choice(f"{other}-cross", {}, f"{other}-x"),
                            context=trace.set_span_in_context(spans[other]))  # fmt: skip
                crossed.wait()

    threads = [threading.Thread(target=worker, args=pair) for pair in (("a", "b"), ("b", "a"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name in "ab":
        names = [c.name for c in caps[name].trajectory.tool_calls]
        assert names == [*(f"{name}{i}" for i in range(n)), f"{name}-cross"], names


def test_the_exporters_beside_the_capture_receive_the_records_unchanged(providers: Any) -> None:
    """An in-memory exporter registered before the recorder and one after it see the same records, and
    the OTLP/HTTP exporter's request decodes to the records the capture kept."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

    from tracegrade.ingest._logs import logs_from_protobuf_bytes

    bodies: list[bytes] = []

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    tp, lp = providers
    before, after = InMemoryLogRecordExporter(), InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    lp.add_log_record_processor(SimpleLogRecordProcessor(before))
    endpoint = f"http://127.0.0.1:{server.server_address[1]}/v1/logs"
    lp.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(endpoint=endpoint)))
    try:
        with capture(provider=tp, logger_provider=lp) as cap:  # the recorder joins after the first two
            lp.add_log_record_processor(SimpleLogRecordProcessor(after))
            body = _choice("refund", {"order_id": 7, "items": [1, 2]}, "call_1")
            with tp.get_tracer(SCOPE).start_as_current_span("chat gpt-4o", attributes=CHAT):
                lp.get_logger(SCOPE).emit(event_name="gen_ai.choice", body=body, attributes={"gen_ai.system": "openai"})
    finally:
        server.shutdown()
        server.server_close()
    for exporter in (before, after):
        [seen] = exporter.get_finished_logs()
        kept: Any = seen.log_record.body
        assert kept == body and dict(seen.log_record.attributes or {}) == {"gen_ai.system": "openai"}
        assert type(kept["message"]["tool_calls"]) is list  # the capture's copy did not touch it
    sent = [r for b in bodies for r in logs_from_protobuf_bytes(b)]
    assert sent == cap.logs
    assert cap.logs[0].body["message"]["tool_calls"][0]["function"]["name"] == "refund"


def test_a_closed_capture_is_released_and_costs_nothing_after(providers: Any) -> None:
    tp, lp = providers
    from tracegrade.capture import _LOG_RECORDER

    with capture(provider=tp, logger_provider=lp) as cap:
        assert _LOG_RECORDER.enabled()
        with tp.get_tracer(SCOPE).start_as_current_span("chat gpt-4o", attributes=CHAT):
            lp.get_logger(SCOPE).emit(event_name="gen_ai.choice", body=_choice("x", {}, "c"))
    assert not _RECORDER._captures and not _LOG_RECORDER.enabled()  # instrumentations that ask may skip events
    ref = weakref.ref(cap)
    del cap
    gc.collect()
    assert ref() is None


def test_many_threads_emitting_into_one_capture_lose_nothing(providers: Any) -> None:
    tp, lp = providers
    tracer, logger = tp.get_tracer(SCOPE), lp.get_logger(SCOPE)
    with (
        capture(provider=tp, logger_provider=lp) as cap,
        tracer.start_as_current_span("chat gpt-4o", attributes=CHAT) as span,
    ):
        ctx = trace.set_span_in_context(span)

        def emit(k: int) -> None:
            for i in range(200):
                logger.emit(event_name="gen_ai.tool.message", body={"id": f"{k}-{i}", "content": "ok"}, context=ctx)

        threads = [threading.Thread(target=emit, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(cap.logs) == 800 and len({r.body["id"] for r in cap.tree.nodes[0].logs}) == 800


def test_logger_provider_must_be_an_sdk_provider() -> None:
    from opentelemetry._logs import NoOpLoggerProvider

    with pytest.raises(TypeError, match="SDK LoggerProvider"), capture(logger_provider=NoOpLoggerProvider()):
        pass


GLOBAL = """
import json
from opentelemetry import _logs, trace
from tracegrade import capture

logger = _logs.get_logger("opentelemetry.instrumentation.openai_v2")  # taken at instrumentation time, before any provider
with capture() as cap:
    tracer = trace.get_tracer("opentelemetry.instrumentation.openai_v2")
    with tracer.start_as_current_span("chat gpt-4o", attributes={"gen_ai.operation.name": "chat", "gen_ai.system": "openai"}):
        logger.emit(event_name="gen_ai.choice", body={"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "lookup", "arguments": "{\\"q\\": 1}"}}]}})
print(json.dumps([type(_logs.get_logger_provider()).__name__, [(c.name, c.args) for c in cap.trajectory.tool_calls]]))
"""


def test_with_no_providers_configured_capture_installs_sdk_ones_and_records_events() -> None:
    """A process that configured neither tracing nor logs: the instrumentation's logger, taken from the
    API's placeholder before the capture, emits into the capture."""
    out = subprocess.run([sys.executable, "-c", GLOBAL], capture_output=True, text=True, timeout=60, check=True)
    provider, calls = json.loads(out.stdout.strip().splitlines()[-1])
    assert provider == "LoggerProvider" and calls == [["lookup", {"q": 1}]]


def test_records_a_receiver_also_got_from_this_process_are_attached_once(providers: Any) -> None:
    """This process exports its logs to the capture's receiver too: the tree holds each record once."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

    from tracegrade.receiver import OTLPReceiver

    tp, lp = providers
    with OTLPReceiver(port=0) as rx:
        lp.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(endpoint=rx.endpoint + "/v1/logs")))
        with (
            capture(provider=tp, logger_provider=lp, receiver=rx, remote_quiet=0.1) as cap,
            tp.get_tracer(SCOPE).start_as_current_span("chat gpt-4o", attributes=CHAT),
        ):
            lp.get_logger(SCOPE).emit(event_name="gen_ai.choice", body=_choice("refund", {"order_id": 7}, "c1"))
    assert len(cap.logs) == 1 and len(cap.remote_logs) == 1
    [chat] = [n for n in cap.tree if n.name == "chat gpt-4o"]
    assert [r.event_name for r in chat.logs] == ["gen_ai.choice"]
    assert [c.name for c in cap.trajectory.tool_calls] == ["refund"]


def test_what_the_sdks_log_record_limits_cut_is_reported_as_incomplete() -> None:
    from opentelemetry.sdk._logs import LogRecordLimits

    tp = TracerProvider()
    lp = LoggerProvider(
        shutdown_on_exit=False, log_record_limits=LogRecordLimits(max_attributes=1, max_attribute_length=40)
    )
    output = json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "lookup",
                                                          "arguments": {"q": "a long query " * 5}}]}])  # fmt: skip
    with (
        pytest.warns(UserWarning, match="dropped"),
        capture(provider=tp, logger_provider=lp) as cap,
        tp.get_tracer(SCOPE).start_as_current_span("chat gpt-4o", attributes=CHAT),
    ):
        lp.get_logger(SCOPE).emit(event_name="gen_ai.client.inference.operation.details",
                                  attributes={"gen_ai.system": "openai", "gen_ai.output.messages": output})  # fmt: skip
    [record] = cap.logs
    assert len(record.attributes["gen_ai.output.messages"]) == 40
    notes = cap.trajectory.incomplete
    assert any("lost 1 attribute(s)" in n and "OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT" in n for n in notes), notes
    assert any("'gen_ai.output.messages' may be cut at 40" in n for n in notes), notes
    [result] = grade(cap, [ToolCorrectness(expected_tools=["lookup"])])  # the cut JSON holds no readable call
    assert result.outcome == "not_evaluated" and "OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT" in result.reasoning
