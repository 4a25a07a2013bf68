"""OpenInference transfers and costs, on spans made by the real OTel SDK in the shapes the OpenInference
instrumentations write: the OpenAI Agents SDK's `handoff to {agent}` TOOL span (and a TOOL span carrying the
GenAI transfer attributes) is a handoff, never a tool call, and the model's requested `transfer_to_*` call it
carried out is that handoff; `llm.cost.*` is the request's cost in USD."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from tracegrade import grade
from tracegrade.dialects import extract
from tracegrade.dialects._merge import default_transfer_tool
from tracegrade.evaluators import MaxToolCalls, ToolCorrectness, TrajectoryMatch
from tracegrade.trajectory import Cost, Handoff, Trajectory
from tracegrade.tree import SpanTree

SCOPE = "openinference.instrumentation.openai_agents"
KIND = "openinference.span.kind"


@pytest.fixture
def tracer() -> Iterator[tuple[Any, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer(SCOPE), exporter
    provider.shutdown()


def _trajectory(exporter: InMemorySpanExporter) -> Trajectory:
    return extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))


def _generation(tracer: Any, *calls: tuple[str, str, dict[str, Any]], **attrs: Any) -> None:
    """An LLM span as OpenInference's OpenAI Agents processor writes it, requesting `calls` (name, id, args)."""
    attributes: dict[str, Any] = {KIND: "LLM", "llm.system": "openai", "llm.model_name": "gpt-4o",
                                  "llm.output_messages.0.message.role": "assistant", **attrs}  # fmt: skip
    for i, (name, call_id, args) in enumerate(calls):
        prefix = f"llm.output_messages.0.message.tool_calls.{i}.tool_call."
        attributes[prefix + "id"] = call_id
        attributes[prefix + "function.name"] = name
        attributes[prefix + "function.arguments"] = json.dumps(args)
    if not calls:
        attributes["llm.output_messages.0.message.content"] = "Order 1234 has shipped."
    with tracer.start_as_current_span("generation", attributes=attributes):
        pass


def _tool(tracer: Any, name: str, args: dict[str, Any]) -> None:
    attributes = {KIND: "TOOL", "llm.system": "openai", "tool.name": name, "input.value": json.dumps(args)}
    with tracer.start_as_current_span(name, attributes=attributes):
        pass


def _handoff_run(tracer: Any, *, target: str | None = "Billing Agent", failed: bool = False) -> None:
    """Triage hands off to the billing agent, which looks the order up and answers (the OpenAI Agents SDK's
    span layout: workflow > agent > turn > generation / tool / handoff spans)."""
    with tracer.start_as_current_span("Agent workflow", attributes={KIND: "AGENT"}):
        with (
            tracer.start_as_current_span("Triage", attributes={KIND: "AGENT"}),
            tracer.start_as_current_span("turn", attributes={KIND: "CHAIN"}),
        ):
            _generation(tracer, ("transfer_to_billing_agent", "call_h1", {}))
            name = f"handoff to {target}" if target else "handoff"
            with tracer.start_as_current_span(name, attributes={KIND: "TOOL", "llm.system": "openai"}) as span:
                span.set_status(
                    Status(StatusCode.ERROR, "Multiple handoffs detected") if failed else Status(StatusCode.OK)
                )
        with tracer.start_as_current_span("Billing Agent", attributes={KIND: "AGENT"}):
            with tracer.start_as_current_span("turn", attributes={KIND: "CHAIN"}):
                _generation(tracer, ("get_order", "call_o1", {"order_id": 1234}))
                _tool(tracer, "get_order", {"order_id": 1234})
            with tracer.start_as_current_span("turn", attributes={KIND: "CHAIN"}):
                _generation(tracer)


def test_the_openai_agents_handoff_span_is_a_handoff_not_a_tool_call(tracer: Any) -> None:
    t, exporter = tracer
    _handoff_run(t)
    traj = _trajectory(exporter)
    assert [c.name for c in traj.all_calls] == ["get_order"]
    assert [(h.source, h.target, h.agent, h.status, h.dialect) for h in traj.handoffs] == [
        (None, "Billing Agent", "Triage", "ok", "openinference")
    ]
    assert traj.handoffs[0].span is not None and traj.handoffs[0].span.name == "handoff to Billing Agent"
    got = grade(traj, [ToolCorrectness(expected_tools=["get_order"]), MaxToolCalls(max_calls=1),
                       TrajectoryMatch(expected_trajectory=["get_order"], order="exact")])  # fmt: skip
    assert [r.outcome for r in got] == ["passed"] * 3, [r.reasoning for r in got]


def test_the_requested_transfer_call_is_the_handoff_not_a_call_that_never_ran(tracer: Any) -> None:
    t, exporter = tracer
    _handoff_run(t)
    traj = _trajectory(exporter)
    assert not [c for c in traj.all_calls if c.name.startswith("transfer_to_")]
    assert default_transfer_tool("Billing Agent") == "transfer_to_billing_agent"


def test_a_failed_handoff_and_one_without_a_target_are_still_handoffs(tracer: Any) -> None:
    t, exporter = tracer
    _handoff_run(t, failed=True)
    _handoff_run(t, target=None)
    traj = _trajectory(exporter)
    assert [(h.target, h.status) for h in traj.handoffs] == [("Billing Agent", "error"), (None, "ok")]
    assert [c.name for c in traj.all_calls if c.executed is not False] == ["get_order", "get_order"]


def test_a_tool_named_handoff_something_with_a_tool_name_stays_a_tool_call(tracer: Any) -> None:
    t, exporter = tracer
    with t.start_as_current_span("Agent workflow", attributes={KIND: "AGENT"}):
        _tool(t, "handoff", {"ticket": 7})  # a user's own tool called `handoff`: it records tool.name
        _tool(t, "handoff to queue", {"ticket": 8})
    traj = _trajectory(exporter)
    assert [c.name for c in traj.all_calls] == ["handoff", "handoff to queue"]
    assert traj.handoffs == []


def test_an_openinference_tool_span_with_genai_transfer_attributes_is_a_handoff(tracer: Any) -> None:
    t, exporter = tracer
    with t.start_as_current_span("supervisor", attributes={KIND: "AGENT"}):
        attrs = {KIND: "TOOL", "tool.name": "transfer_to_math", "tool_call.id": "call_t1",
                 "gen_ai.transfer.target.name": "math", "gen_ai.transfer.mode": "return"}  # fmt: skip
        with t.start_as_current_span("transfer_to_math", attributes=attrs):
            pass
        _generation(t, ("transfer_to_math", "call_t1", {}))
    traj = _trajectory(exporter)
    assert traj.all_calls == []
    assert traj.handoffs == [
        Handoff(
            source=None,
            target="math",
            tool="transfer_to_math",
            call_id="call_t1",
            mode="return",
            agent="supervisor",
            dialect="openinference",
        )
    ]


@pytest.mark.parametrize(
    ("attrs", "expected"),
    [
        ({"llm.cost.total": 0.0066, "llm.cost.prompt": 0.0021, "llm.cost.completion": 0.0045}, Cost(0.0066, "USD")),
        ({"llm.cost.prompt": 0.0021, "llm.cost.completion": 0.0045}, Cost(0.0066, "USD")),
        ({"llm.cost.total": "0.5"}, Cost(0.5, "USD")),
        ({"gen_ai.usage.cost.amount": 0.2, "gen_ai.usage.cost.currency": "EUR"}, Cost(0.2, "EUR")),
        ({"llm.cost.total": "n/a"}, None),
        ({}, None),
    ],
)
def test_openinference_cost_is_read_in_usd(tracer: Any, attrs: dict[str, Any], expected: Cost | None) -> None:
    t, exporter = tracer
    _generation(t, **attrs)
    (request,) = _trajectory(exporter).model_requests
    if expected is None or request.cost is None:
        assert request.cost is expected
    else:
        assert request.cost.amount == pytest.approx(expected.amount)
        assert request.cost.currency == expected.currency
