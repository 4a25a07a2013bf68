"""`capture(receiver=rx)`: the spans another process records for the capture's trace are part of it.

The other process is a second OTel SDK `TracerProvider` exporting with the real `BatchSpanProcessor`
and OTLP/HTTP exporter to a real `OTLPReceiver`; its agent is a real Pydantic AI agent
(FunctionModel) whose spans are parented through the W3C headers of `trace_headers()`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
from opentelemetry import context, trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from _agents import scripted_agent
from tracegrade import capture, grade, trace_headers
from tracegrade.evaluators import ArgumentCorrectness, ToolCorrectness
from tracegrade.receiver import OTLPReceiver


@pytest.fixture
def rx() -> Iterator[OTLPReceiver]:
    with OTLPReceiver(port=0) as receiver:
        yield receiver


@pytest.fixture
def service(rx: OTLPReceiver) -> Iterator[TracerProvider]:
    provider = TracerProvider()
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=rx.endpoint + "/v1/traces"), schedule_delay_millis=200)
    )
    yield provider
    provider.shutdown()


def _serve(service: TracerProvider, headers: dict[str, str], order: int, end: bool = True) -> None:
    """What a service does with a request carrying `headers`: a SERVER span around its agent's run."""
    tracer = service.get_tracer("service")
    server = tracer.start_span("POST /chat", context=TraceContextTextMapPropagator().extract(headers),
                               kind=trace.SpanKind.SERVER)  # fmt: skip
    token = context.attach(trace.set_span_in_context(server))
    try:
        agent = scripted_agent([("lookup_order", {"order_id": order})], tracer_provider=service, name="support")
        agent.run_sync("where is my order?")
    finally:
        context.detach(token)
        if end:
            server.end()


def test_the_remote_agent_s_spans_are_graded_with_the_capture(rx: OTLPReceiver, service: TracerProvider) -> None:
    with capture(receiver=rx) as cap:
        thread = threading.Thread(target=_serve, args=(service, trace_headers(), 7))
        thread.start()
        thread.join()
    names = {s.name for s in cap.remote_spans}
    assert {"POST /chat", "invoke_agent support", "execute_tool lookup_order"} <= names
    assert cap.remote_incomplete == []
    root = cap.tree.roots
    assert [r.name for r in root] == ["tracegrade capture"]  # one tree: the service's spans hang under it
    ok, args = grade(cap, [ToolCorrectness(expected_tools=["lookup_order"]), ArgumentCorrectness("lookup_order", {"order_id": 7})])
    assert ok.passed and args.passed, (ok.reasoning, args.reasoning)


def test_concurrent_captures_each_get_only_their_own_remote_spans(rx: OTLPReceiver, service: TracerProvider) -> None:
    async def one(order: int) -> tuple[int, list[int]]:
        async with capture(receiver=rx) as cap:
            headers = trace_headers()
            await asyncio.to_thread(_serve, service, headers, order)
        return order, [c.args["order_id"] for c in cap.trajectory.tool_calls]

    async def main() -> list[tuple[int, list[int]]]:
        return await asyncio.gather(*(one(i) for i in range(6)))

    assert [(order, calls) for order, calls in asyncio.run(main())] == [(i, [i]) for i in range(6)]


def test_a_remote_span_that_never_ends_is_reported_not_graded_silently(rx: OTLPReceiver, service: TracerProvider) -> None:
    with capture(receiver=rx, remote_timeout=2.0) as cap:
        _serve(service, trace_headers(), 1, end=False)  # the server span never ends: its children name it
    assert cap.remote_incomplete and any("POST /chat" in n or "parent" in n for n in cap.remote_incomplete)
    [result] = grade(cap, [ToolCorrectness(expected_tools=["lookup_order"])])
    assert result.outcome == "not_evaluated" and "incomplete" in result.reasoning


def test_headers_given_out_but_nothing_sent_back_is_incomplete(rx: OTLPReceiver) -> None:
    with capture(receiver=rx, remote_timeout=1.0, remote_quiet=0.1) as cap:
        trace_headers()  # a request was made with them, but the service exported nothing
    assert cap.remote_incomplete, "the capture must say the service's spans did not arrive"


def test_without_a_receiver_capture_opens_no_root_span() -> None:
    with capture() as cap:
        pass
    assert cap.spans == [] and cap.remote_spans == []


def test_remote_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="remote_timeout"):
        capture(remote_timeout=0)


def test_agent_eval_turns_are_graded_on_the_service_spans_sent_to_the_otlp_receiver(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_remote='''
        import asyncio
        import pytest
        from opentelemetry import context, trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
        from pydantic_ai import Agent, InstrumentationSettings
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import FunctionModel
        from tracegrade import Expect, Turn, trace_headers
        from tracegrade import ToolCallArgsConfig


        @pytest.fixture(scope="session")
        def service(otlp_receiver):
            provider = TracerProvider()
            exporter = OTLPSpanExporter(endpoint=otlp_receiver.endpoint + "/v1/traces")
            provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=100))
            yield provider
            provider.shutdown()


        def handle(service, headers, order):
            """The service: a SERVER span around an instrumented agent that looks the order up."""
            def script(messages, info):
                if len(messages) == 1:
                    return ModelResponse(parts=[ToolCallPart("lookup_order", {"order_id": order})])
                return ModelResponse(parts=[TextPart("shipped")])

            agent = Agent(FunctionModel(script), name="shop")
            agent.instrument = InstrumentationSettings(tracer_provider=service)
            agent.tool_plain(lambda order_id: "shipped", name="lookup_order")
            ctx = TraceContextTextMapPropagator().extract(headers)
            server = service.get_tracer("svc").start_span("POST /chat", context=ctx, kind=trace.SpanKind.SERVER)
            token = context.attach(trace.set_span_in_context(server))
            try:
                return agent.run_sync("where is it?").output
            finally:
                context.detach(token)
                server.end()


        @pytest.mark.agent_eval(threshold=1.0)
        async def test_order(agent_eval, service):
            async def agent(history):  # calls the service the way an HTTP client would, with the turn's headers
                return await asyncio.to_thread(handle, service, trace_headers(), 42)

            expect = Expect(tool_calls_include=["lookup_order"],
                            tool_calls_args=[ToolCallArgsConfig("lookup_order", {"order_id": 42})])
            result = await agent_eval.run(agent=agent, turns=[Turn("where is order 42?", expect=expect)])
            result.assert_threshold()
        '''
    )
    result = pytester.runpytest_subprocess("--agent-eval-live", "-p", "no:asyncio", "-p", "no:anyio", "-q")
    result.assert_outcomes(passed=1)


def test_log_records_the_service_sends_are_attached_to_its_spans(rx: OTLPReceiver) -> None:
    """An OpenAI-client-style service: its chat span carries no content, its events carry the calls."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

    spans = TracerProvider()
    spans.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=rx.endpoint + "/v1/traces"),
                                                schedule_delay_millis=100))  # fmt: skip
    logs = LoggerProvider()
    logs.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(endpoint=rx.endpoint + "/v1/logs")))
    choice = {"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "refund", "arguments": '{"order_id": 7}'}}]}}  # fmt: skip
    with capture(receiver=rx) as cap:
        parent = TraceContextTextMapPropagator().extract(trace_headers())
        attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.system": "openai",
                 "gen_ai.response.finish_reasons": ("tool_calls",)}  # fmt: skip
        with spans.get_tracer("opentelemetry.instrumentation.openai_v2").start_as_current_span(
            "chat gpt-4o", context=parent, attributes=attrs
        ):
            logs.get_logger("opentelemetry.instrumentation.openai_v2").emit(event_name="gen_ai.choice", body=choice)
        spans.force_flush()
    logs.shutdown()
    spans.shutdown()
    [chat] = [n for n in cap.tree if n.name == "chat gpt-4o"]
    assert [r.event_name for r in chat.logs] == ["gen_ai.choice"]
    [call] = cap.trajectory.tool_calls
    assert (call.name, call.args, call.executed) == ("refund", {"order_id": 7}, None)
