"""LlamaIndex's own OpenTelemetry integration (`llama-index-observability-otel`): model requests and the calls
they asked for read from the span events, failures of tool spans tied to a call only when unambiguous."""

from __future__ import annotations

import json
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode, set_span_in_context

from tracegrade import grade
from tracegrade.dialects import extract, llamaindex
from tracegrade.evaluators import ToolCorrectness
from tracegrade.ingest import read_spans
from tracegrade.trajectory import Trajectory
from tracegrade.tree import SpanTree

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"
TRUTH = [("get_weather", {"city": "Paris"}, "call_w1"), ("get_order", {"order_id": 1234}, "call_o1"),
         ("search_kb", {"query": "refund policy"}, "call_s1"), ("search_kb", {"query": "refund policy"}, "call_s2")]  # fmt: skip


def _corpus(run: str) -> Trajectory:
    return extract(SpanTree.from_spans(read_spans(CORPUS / f"{run}.traces.json")))


def test_requests_and_their_calls_come_from_the_chat_events() -> None:
    traj = _corpus("llamaindex--native--content-on")
    assert [(r.model, r.input_tokens, r.output_tokens) for r in traj.model_requests] == [
        ("gpt-4o", 49, 57), ("gpt-4o", 157, 31), ("gpt-4o", 222, 31), ("gpt-4o", 287, 17)]  # fmt: skip
    assert [(c.name, c.args, c.call_id) for c in traj.all_calls] == TRUTH
    assert all(c.args_source == "messages" and c.span is not None and c.span.name == "OpenAI.achat"
               for c in traj.all_calls)  # fmt: skip
    # the parallel pair was asked for by one response; the retry by its own
    assert len({id(c.span) for c in traj.all_calls[:2]}) == 1
    assert [c.result for c in traj.all_calls] == ["sunny, 21C", "order 1234: shipped", "knowledge base unavailable",
                                                  "Refunds take 5 days."]  # fmt: skip
    assert [r.span.name for r in traj.agent_runs if r.span is not None] == ["FunctionAgent.run"]


def test_streamed_requests_take_their_calls_from_the_next_requests_input() -> None:
    """The streamed span ends before the stream is read (its end event is dropped): no tokens, and each
    request's calls are the assistant message after its own input in the following request's input."""
    traj = _corpus("llamaindex--native--content-on--stream")
    assert [(r.input_tokens, r.output_tokens) for r in traj.model_requests] == [(None, None)] * 4
    assert [(c.name, c.args, c.call_id) for c in traj.all_calls] == TRUTH
    spans = [id(c.span) for c in traj.all_calls]
    assert spans[0] == spans[1] and len(set(spans)) == 3


def test_the_failed_tool_span_marks_the_one_call_its_request_asked_for() -> None:
    for run in ("llamaindex--native--content-on", "llamaindex--native--content-on--stream"):
        traj = _corpus(run)
        assert [(c.call_id, c.status, c.error) for c in traj.all_calls if c.status != "ok"] == [
            ("call_s1", "error", "knowledge base unavailable")], run  # fmt: skip
        assert traj.incomplete == [], run


def _chat(tracer, parent_ctx, messages, blocks=None):  # type: ignore[no-untyped-def]
    span = tracer.start_span("OpenAI.achat", context=parent_ctx)
    span.add_event("LLMChatStartEvent", {"messages": json.dumps(messages), "model_dict.model_name": "gpt-4o"})
    if blocks is not None:
        span.add_event("LLMChatEndEvent", {"response.message.blocks": json.dumps(blocks)})
    span.end()


def test_a_failure_among_parallel_calls_is_noted_not_guessed() -> None:
    """Real SDK spans in the integration's shape: two calls asked for at once, one tool span failed. The
    tool spans name no tool, so neither call is marked; the trajectory says which failure it could not tie."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer(llamaindex.SCOPE)
    root = tracer.start_span("FunctionAgent.run")
    ctx = set_span_in_context(root)
    asked = [{"block_type": "tool_call", "tool_call_id": "c1", "tool_name": "get_weather", "tool_kwargs": "{}"},
             {"block_type": "tool_call", "tool_call_id": "c2", "tool_name": "get_order", "tool_kwargs": "{}"}]  # fmt: skip
    _chat(tracer, ctx, [{"role": "user", "blocks": [{"block_type": "text", "text": "hi"}]}], asked)
    for failed in (False, True):
        tool = tracer.start_span("FunctionTool.acall", context=ctx)
        if failed:
            tool.set_status(Status(StatusCode.ERROR, "boom"))
        tool.end()
    _chat(tracer, ctx, [{"role": "user", "blocks": []}], [{"block_type": "text", "text": "done"}])
    root.end()
    traj = extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))
    assert [(c.name, c.status) for c in traj.all_calls] == [("get_weather", "ok"), ("get_order", "ok")]
    assert len(traj.incomplete) == 1
    assert "1 of 2 tool span(s) 'FunctionTool.acall' after model request 'OpenAI.achat'" in traj.incomplete[0]
    assert "'get_weather', 'get_order'" in traj.incomplete[0] and "which call failed is not recorded" in traj.incomplete[0]


def _user(text: str) -> dict[str, object]:
    return {"role": "user", "additional_kwargs": {}, "blocks": [{"block_type": "text", "text": text}]}


def _asking(call_id: str, tool: str) -> dict[str, object]:
    return {"role": "assistant", "additional_kwargs": {}, "blocks": [
        {"block_type": "tool_call", "tool_call_id": call_id, "tool_name": tool, "tool_kwargs": '{"q": 1}'}]}  # fmt: skip


def _answer(call_id: str, text: str) -> dict[str, object]:
    return {"role": "tool", "additional_kwargs": {"tool_call_id": call_id}, "blocks": [{"block_type": "text", "text": text}]}


def test_a_streamed_request_reads_its_calls_only_from_its_own_conversation() -> None:
    """Two conversations interleaved in one trace, every request streamed (no end events): request A's
    calls come from the later request whose input extends A's input, not from the next request in time."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer(llamaindex.SCOPE)
    root = tracer.start_span("AgentWorkflow.run")
    ctx = set_span_in_context(root)
    _chat(tracer, ctx, [_user("a")])  # A
    _chat(tracer, ctx, [_user("b"), _asking("x1", "wrong_tool"), _answer("x1", "no")])  # another conversation
    _chat(tracer, ctx, [_user("a"), _asking("y1", "search"), _answer("y1", "found")])  # A's continuation
    root.end()
    traj = extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))
    assert [(c.name, c.args, c.call_id, c.result) for c in traj.all_calls] == [("search", {"q": 1}, "y1", "found")]
    assert traj.all_calls[0].span is traj.model_requests[0].span


def test_an_end_event_without_blocks_gives_the_openai_tool_calls() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer(llamaindex.SCOPE)
    span = tracer.start_span("OpenAI.achat")
    span.add_event("LLMChatStartEvent", {"messages": json.dumps([_user("hi")])})
    calls = [{"id": "c9", "type": "function", "function": {"name": "get_order", "arguments": '{"order_id": 7}'}}]
    span.add_event("LLMChatEndEvent", {"response.message.additional_kwargs.tool_calls": json.dumps(calls),
                                       "response.raw.usage.prompt_tokens": 3})  # fmt: skip
    span.end()
    traj = extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))
    assert [(c.name, c.args, c.call_id) for c in traj.all_calls] == [("get_order", {"order_id": 7}, "c9")]
    assert [r.input_tokens for r in traj.model_requests] == [3]


def test_tool_spans_python_reprs_are_not_read() -> None:
    """A tool span whose tool appears only in the workflow's repr tag is no call; the tool checks say why."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer(llamaindex.SCOPE)
    root = tracer.start_span("FunctionAgent.run")
    tool = tracer.start_span("FunctionTool.acall", context=set_span_in_context(root))
    tool.set_attribute("llamaindex.step.input_summary", "ToolCall(tool_name='get_weather', tool_kwargs={'city': 'Paris'})")
    tool.end()
    root.end()
    traj = extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))
    assert traj.all_calls == [] and [r.span.name for r in traj.agent_runs if r.span is not None] == ["FunctionAgent.run"]
    (result,) = grade(traj, [ToolCorrectness(expected_tools=["get_weather"])])
    assert result.outcome == "not_evaluated"
    assert "no tool or model-request spans tell which tools were called" in result.reasoning
