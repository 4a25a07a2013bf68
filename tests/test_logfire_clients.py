"""Logfire's LLM client instrumentations (`logfire.instrument_openai()` / `instrument_anthropic()`): the `logfire`
dialect, on the committed corpus runs (a hand-written tool loop, fixtures/frameworks/gen/clients_logfire.py) and
on spans of the same shape made with the OTel SDK."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from test_frameworks import trajectory, tree_of
from tracegrade import grade
from tracegrade.dialects import classify, extract
from tracegrade.evaluators import ArgumentCorrectness, MaxModelRequests
from tracegrade.trajectory import ModelRequest
from tracegrade.tree import SpanTree

CALLS = [
    ("get_weather", "call_w1", {"city": "Paris"}, "sunny, 21C"),
    ("get_order", "call_o1", {"order_id": 1234}, "order 1234: shipped"),
    ("search_kb", "call_s1", {"query": "refund policy"}, "Error: knowledge base unavailable"),
    ("search_kb", "call_s2", {"query": "refund policy"}, "Refunds take 5 days."),
]
STREAMED = [f"{client}--logfire--content-on--stream{v}" for client in ("openai", "anthropic") for v in ("", "--v1")] + [
    f"openai--logfire--content-on--stream--{v}" for v in ("responses", "responses-v1")
]
STREAM_LOG = "streaming response from {request_data[model]!r} took {duration:.2f}s"


def _calls(run: str) -> list[tuple[str, str | None, Any, Any]]:
    return [(c.name, c.call_id, c.args, c.result) for c in trajectory(run).all_calls]


@pytest.mark.parametrize("run", STREAMED)
def test_a_streamed_request_is_read_once_from_the_log_of_its_response(run: str) -> None:
    """The request span ends before the stream is read; Logfire logs the response beside it: that log is the
    request (with its usage), the request span no second request."""
    tree = tree_of(run)
    openings = [n for n in tree if n.attributes.get("logfire.span_type") == "span"]
    assert len(openings) == 4 and all(classify(n) is True for n in openings)  # no dialect reads a request there
    requests = trajectory(run).model_requests
    assert [r.span.attributes["logfire.msg_template"] for r in requests if r.span is not None] == [STREAM_LOG] * 4
    unstreamed = trajectory(run.replace("--stream", ""))
    assert [(r.input_tokens, r.output_tokens) for r in requests] == [
        (r.input_tokens, r.output_tokens) for r in unstreamed.model_requests
    ]  # the fake LLM's usage is the same streamed or not
    assert _outcomes(grade(trajectory(run), [MaxModelRequests(max_requests=4), MaxModelRequests(max_requests=3)])) == [
        "passed", "failed"
    ]  # fmt: skip


def _outcomes(results: list[Any]) -> list[str]:
    return [r.outcome for r in results]


@pytest.mark.parametrize("run", ["openai--logfire--content-on--v1", "anthropic--logfire--content-on--v1"])
def test_version_1_calls_come_from_response_data_and_results_from_request_data(run: str) -> None:
    """Chat Completions and Anthropic Messages in the legacy format: no GenAI messages, the calls in
    `response_data`, their results in the next request's `request_data`."""
    tree = tree_of(run)
    assert not any("gen_ai.output.messages" in n.attributes for n in tree)  # the legacy format only
    assert _calls(run) == CALLS
    assert {c.args_source for c in trajectory(run).all_calls} == {"messages"}


def test_version_1_responses_calls_are_the_trailing_assistant_events_of_each_response() -> None:
    """The Responses API in the legacy format: one `events` list per span, the input's items then the response's;
    each call is read once, from the response that made it, its result from a later request's tool event."""
    run = "openai--logfire--content-on--responses-v1"
    spans = sorted((n for n in tree_of(run) if "events" in n.attributes), key=lambda n: n.start_ns)
    assert not any("gen_ai.output.messages" in n.attributes for n in spans)
    in_events = [
        [e["tool_calls"][0]["id"] for e in json.loads(n.attributes["events"]) if "tool_calls" in e] for n in spans
    ]
    assert in_events[-1] == ["call_w1", "call_o1", "call_s1", "call_s2"]  # the whole history, repeated
    assert _calls(run) == CALLS
    traj = trajectory(run)
    requests = [r.span for r in traj.model_requests]
    assert [requests.index(c.span) for c in traj.all_calls] == [0, 0, 1, 2]


def test_an_anthropic_call_s_arguments_are_the_model_s_input_not_logfire_s_wrapper() -> None:
    run = "anthropic--logfire--content-on--v1"
    first = next(n for n in tree_of(run) if "response_data" in n.attributes)
    [weather, _] = json.loads(first.attributes["response_data"])["message"]["tool_calls"]
    assert json.loads(weather["function"]["arguments"]) == {"input": {"city": "Paris"}}  # as Logfire records it
    got = grade(trajectory(run), [ArgumentCorrectness("get_weather", {"city": "Paris"}),
                                  ArgumentCorrectness("get_weather", {"input": {"city": "Paris"}})])  # fmt: skip
    assert _outcomes(got) == ["passed", "failed"]


def test_a_streamed_anthropic_version_1_response_s_calls_are_read_from_the_next_request() -> None:
    """Version 1 logs only a streamed Anthropic response's text: each call is read once, from the request that
    sent the model's tool_use blocks back (so on the log of the request after the one that made it)."""
    run = "anthropic--logfire--content-on--stream--v1"
    logs = [n for n in tree_of(run) if n.attributes.get("logfire.msg_template") == STREAM_LOG]
    assert {json.loads(n.attributes["response_data"])["chunk_count"] for n in logs[:3]} == {0}  # no call recorded
    assert _calls(run) == CALLS
    traj = trajectory(run)
    requests = [r.span for r in traj.model_requests]
    assert [requests.index(c.span) for c in traj.all_calls] == [1, 1, 2, 3]


# --- spans of the same shape, made with the OTel SDK ------------------------------------------------------------

_REQUEST = "Chat Completion with {request_data[model]!r}"


def _span(tracer: Any, template: str, attrs: dict[str, Any], *, error: bool = False) -> None:
    base = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.system": "openai",
            "request_data": json.dumps({"model": "gpt-4o"}), "logfire.msg_template": template,
            "logfire.span_type": "log" if template == STREAM_LOG else "span"}  # fmt: skip
    kind = SpanKind.INTERNAL if template == STREAM_LOG else SpanKind.CLIENT
    with tracer.start_as_current_span(template, kind=kind, attributes={**base, **attrs}) as span:
        if error:
            span.set_status(Status(StatusCode.ERROR, "Connection error."))


def _sdk_tree(build: Any) -> SpanTree:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    build(provider.get_tracer("logfire.openai"), provider.get_tracer("app"))
    provider.shutdown()
    return SpanTree.from_readable_spans(exporter.get_finished_spans())


def test_in_one_trace_a_streamed_request_and_its_log_are_one_request_and_a_failed_request_is_one() -> None:
    output = [{"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1", "name": "search",
                                               "arguments": {"q": "x"}}]}]  # fmt: skip
    usage = {"gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 3, "gen_ai.response.id": "chatcmpl-1"}

    def build(client: Any, app: Any) -> None:
        with app.start_as_current_span("support loop"):
            _span(client, _REQUEST, {})  # the stream is returned: no response yet
            _span(client, STREAM_LOG, {**usage, "gen_ai.output.messages": json.dumps(output)})
            _span(client, _REQUEST, {}, error=True)  # the next request raised before any response

    tree = _sdk_tree(build)
    traj = extract(tree)
    assert [(r.span.name if r.span else None, r.input_tokens, r.dialect) for r in traj.model_requests] == [
        (STREAM_LOG, 10, "logfire"), (_REQUEST, None, "logfire")
    ]  # fmt: skip
    assert [(c.name, c.call_id, c.args) for c in traj.all_calls] == [("search", "call_1", {"q": "x"})]
    [opening, _, failed] = next(iter(tree.roots)).children
    assert classify(opening) is True and isinstance(classify(failed), ModelRequest)


def test_a_span_outside_logfire_s_client_scopes_is_not_read_as_a_stream_opening() -> None:
    """The same attributes under another scope (an app's own span): the GenAI dialect reads the request."""

    def build(client: Any, app: Any) -> None:
        _span(app, _REQUEST, {})

    [node] = list(_sdk_tree(build))
    step = classify(node)
    assert isinstance(step, ModelRequest) and step.dialect == "genai"
