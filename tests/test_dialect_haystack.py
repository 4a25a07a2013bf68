"""The Haystack dialect (`dialects/haystack.py`): Haystack's own tracing of an Agent (committed corpus runs made
with `opentelemetry-haystack`'s OpenTelemetryTracer), its tool spans with `haystack.tool.error` on a failed
invocation, its model spans whose only data is the recorded chat generator output, and content tracing off
read as not recorded, naming HAYSTACK_CONTENT_TRACING_ENABLED."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracegrade import grade
from tracegrade.dialects import extract, haystack
from tracegrade.evaluators import ArgumentCorrectness, MaxModelRequests, ToolCorrectness
from tracegrade.ingest import read_spans
from tracegrade.trajectory import NOT_RECORDED
from tracegrade.tree import SpanTree

FRAMEWORKS = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"
RUN = "haystack--native--content-{}"
CALLS = [
    ("get_weather", {"city": "Paris"}, "call_w1"),
    ("get_order", {"order_id": 1234}, "call_o1"),
    ("search_kb", {"query": "refund policy"}, "call_s1"),
    ("search_kb", {"query": "refund policy"}, "call_s2"),
]
ERROR = (
    "Failed to invoke Tool `search_kb` with parameters {'query': 'refund policy'}. Error: knowledge base unavailable"
)


def _tree(run: str) -> SpanTree:
    return SpanTree.from_spans(read_spans(FRAMEWORKS / f"{run}.traces.json"))


@pytest.mark.parametrize("setting", ["on", "on--stream"])
def test_tool_spans_give_names_arguments_results_and_the_flagged_failure(setting: str) -> None:
    """The tool spans record no call id: each takes the id of the call its model span's replies requested."""
    traj = extract(_tree(RUN.format(setting)))
    got = traj.calls(include_failed=True)
    assert [(c.name, c.args, c.call_id) for c in got] == CALLS
    assert {(c.dialect, c.args_source, c.executed) for c in got} == {("haystack", "span", True)}
    assert [c.status for c in got] == ["ok", "ok", "error", "ok"]  # haystack.tool.error; the span status is unset
    assert got[2].error == ERROR
    assert [c.result for c in got] == ["sunny, 21C", "order 1234: shipped", None, "Refunds take 5 days."]
    assert [(r.name, r.dialect) for r in traj.agent_runs] == [(None, "haystack")]  # a Haystack Agent has no name
    tokens = [(49, 57), (152, 31), (235, 31), (295, 17)]
    if setting.endswith("stream"):  # the generator does not ask for usage when streaming: `"usage": null`
        tokens = [(None, None)] * 4
    assert [(r.model, r.input_tokens, r.output_tokens) for r in traj.model_requests] == [("gpt-4o", *t) for t in tokens]


@pytest.mark.parametrize("setting", ["off", "off--stream"])
def test_content_off_keeps_names_failure_and_requests_and_says_how_to_record_arguments(setting: str) -> None:
    traj = extract(_tree(RUN.format(setting)))
    got = traj.calls(include_failed=True)
    assert [c.call_id for c in got] == [None] * 4
    assert [(c.name, c.args, c.status) for c in got] == [
        ("get_weather", NOT_RECORDED, "ok"), ("get_order", NOT_RECORDED, "ok"),
        ("search_kb", NOT_RECORDED, "error"), ("search_kb", NOT_RECORDED, "ok"),
    ]  # fmt: skip
    assert [(r.model, r.input_tokens) for r in traj.model_requests] == [(None, None)] * 4
    tools, args, budget = grade(traj, [ToolCorrectness(expected_tools=["get_weather", "get_order", "search_kb"]),
                                       ArgumentCorrectness("get_weather", {"city": "Paris"}),
                                       MaxModelRequests(max_requests=4)])  # fmt: skip
    assert (tools.outcome, args.outcome, budget.outcome) == ("passed", "not_evaluated", "passed")
    assert "HAYSTACK_CONTENT_TRACING_ENABLED=true" in args.reasoning


def test_spans_of_any_tracer_name_are_read_by_their_names() -> None:
    """Haystack's span names decide, not the scope the user's tracer was given; a tool span that names no
    tool is no call, and a span named otherwise with Haystack's attributes is not Haystack's."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("my-app")
    with tracer.start_as_current_span("haystack.agent.run"), tracer.start_as_current_span("haystack.agent.step"):
        with tracer.start_as_current_span("haystack.agent.step.llm") as llm:
            llm.set_attribute(
                "haystack.agent.step.llm.output",
                '{"replies": [{"meta": {"model": "m", "usage": '
                '{"prompt_tokens": 3, "completion_tokens": 2}}}, {"meta": {"usage": {"prompt_tokens": 1}}}]}',
            )
        with tracer.start_as_current_span("haystack.agent.step.tool") as tool:
            tool.set_attribute("haystack.tool.name", "lookup")
            tool.set_attribute("haystack.tool.error", True)
            tool.set_attribute("haystack.agent.step.tool.output", "not json")
        with tracer.start_as_current_span("haystack.agent.step.tool"):
            pass
        with tracer.start_as_current_span("haystack.component.run") as other:
            other.set_attribute("haystack.tool.name", "elsewhere")
    traj = extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))
    got = traj.calls(include_failed=True)
    assert [(c.name, c.status, c.error, c.args) for c in got] == [("lookup", "error", "not json", NOT_RECORDED)]
    assert [(r.model, r.input_tokens, r.output_tokens) for r in traj.model_requests] == [("m", 4, 2)]
    assert len(traj.agent_runs) == 1


def test_requested_calls_are_read_from_the_recorded_replies() -> None:
    requests = [n for n in _tree(RUN.format("on")) if n.name == haystack.LLM]
    requested = [[(r.name, r.arguments, r.call_id) for r in haystack.requested_calls(n.attributes)] for n in requests]
    assert requested == [CALLS[:2], CALLS[2:3], CALLS[3:], []]
    assert all(haystack.tool_results(n.attributes) == {} for n in requests)
