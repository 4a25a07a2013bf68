"""The OpenInference dialect (`dialects/openinference.py`): arguments from `input.value` or `tool.parameters`
(never a JSON schema), redacted content not recorded, call ids and statuses, span kinds that are not steps."""

from __future__ import annotations

import json
from typing import Any

import pytest

from _dialect_spans import (
    Node,
    SpanSpec,
    calls,
    leaf,
    oi_tool,
    spans_of,
)
from tracegrade import NOT_RECORDED, grade
from tracegrade.dialects import extract
from tracegrade.evaluators import (
    ArgumentCorrectness,
    ToolCorrectness,
)

SCHEMA = json.dumps({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})


@pytest.mark.parametrize(
    ("attrs", "expected"),
    [
        ({"input.value": '{"q": "x"}', "tool.parameters": SCHEMA}, {"q": "x"}),  # openai-agents, smolagents
        ({"tool.parameters": SCHEMA}, NOT_RECORDED),  # the schema is not the arguments
        ({"tool.parameters": '{"q": "x"}'}, {"q": "x"}),  # pydantic-ai processor / google-adk: the arguments
        ({"tool.parameters": '{"type": "object"}'}, {"type": "object"}),  # no "properties": arguments
        ({"input.value": "__REDACTED__", "tool.parameters": SCHEMA}, NOT_RECORDED),
        ({"input.value": "__REDACTED__", "tool.parameters": '{"q": "x"}'}, {"q": "x"}),
        ({"input.value": "__REDACTED__", "tool.parameters": "__REDACTED__"}, NOT_RECORDED),
    ],
    ids=[
        "input",
        "schema",
        "params-args",
        "params-no-properties",
        "redacted",
        "redacted-params",
        "all-redacted",
    ],
)
def test_openinference_arguments_input_value_or_parameters_but_not_a_schema(
    attrs: dict[str, Any], expected: Any
) -> None:
    [call] = calls(spans_of(oi_tool("search", attrs)))
    assert call.args == expected


def test_openinference_redacted_content_is_not_recorded_for_argument_checks() -> None:
    hidden = {"input.value": "__REDACTED__", "output.value": "__REDACTED__", "tool.parameters": SCHEMA}
    agent_attrs = {"openinference.span.kind": "AGENT", "agent.name": "helper"}
    agent = Node(SpanSpec("helper", agent_attrs, status="ok"), [oi_tool("search", hidden)])
    tree = spans_of(agent)
    [call] = calls(tree)
    assert call.args is NOT_RECORDED and call.result is None and call.status == "ok"
    [result, names] = grade(tree, [ArgumentCorrectness("search", {"q": "x"}), ToolCorrectness(["search"])])
    assert result.outcome == "not_evaluated" and not result.passed
    assert "not recorded" in result.reasoning and "'helper'" in result.reasoning
    assert names.passed


def test_openinference_call_id_and_status() -> None:
    tree = spans_of(
        oi_tool("a", {"tool_call.id": "call_1", "tool.id": "other"}),
        oi_tool("b", {"tool.id": "adk-2"}),
        oi_tool("c", status="error"),
        oi_tool("d", status="unset"),
    )
    assert [(c.name, c.call_id, c.status) for c in calls(tree)] == [
        ("a", "call_1", "ok"),
        ("b", "adk-2", "ok"),
        ("c", None, "error"),
        ("d", None, "ok"),
    ]


def test_openinference_chain_and_other_kinds_are_not_steps() -> None:
    kind = "openinference.span.kind"
    steps = [
        leaf("retrieve", {kind: "RETRIEVER"}),
        leaf("embed", {kind: "EMBEDDING", "llm.model_name": "e"}),
        leaf("guard", {kind: "GUARDRAIL"}),
        leaf("FinalAnswerTool", {kind: "TOOL", "input.value": '{"answer": 1}'}),
    ]
    chain = {kind: "CHAIN", "llm.token_count.prompt": 5}  # LangChain chains aggregate their LLMs' usage
    tree = spans_of(Node(SpanSpec("Step 1", chain, status="ok"), steps))
    traj = extract(tree)
    assert traj.tool_names == ["FinalAnswerTool"]  # no tool.name: the span name
    assert traj.model_requests == [] and traj.agent_runs == []


@pytest.mark.parametrize(
    ("span_name", "attrs", "scope", "agent"),
    [
        ("support._execute_core", {"graph.node.id": "support"}, "openinference.instrumentation.crewai", "support"),
        ("support.on_messages_stream", {"graph.node.id": "support"}, "openinference.instrumentation.autogen_agentchat",
         "support"),
        ("support.run", {}, "openinference.instrumentation.smolagents", "support"),  # span named `{agent}.run`
        ("support.run", {}, "another.instrumentation", "support.run"),  # only smolagents' names mean that
        ("invoke_agent support", {"agent.name": "triage", "graph.node.id": "node-1"}, "test", "triage"),
    ],
    ids=["crewai", "autogen", "smolagents", "other-scope", "agent.name-first"],
)
def test_openinference_agent_runs_are_named_after_the_agent_not_the_method(
    span_name: str, attrs: dict[str, Any], scope: str, agent: str
) -> None:
    """CrewAI and AutoGen name an AGENT span after the method and record the agent in `graph.node.id`;
    smolagents names it `{agent}.run`. The calls inside are credited to the agent, so a check scoped to
    it finds them."""
    run = Node(SpanSpec(span_name, {"openinference.span.kind": "AGENT", **attrs}),
               [oi_tool("get_order", {"input.value": '{"order_id": 1234}'})])  # fmt: skip
    tree = spans_of(run, scope=scope)
    traj = extract(tree)
    assert [r.name for r in traj.agent_runs] == [agent]
    assert [c.agent for c in traj.tool_calls] == [agent]
    [scoped] = grade(tree, [ToolCorrectness(expected_tools=["get_order"], agent=agent)])
    assert scoped.outcome == "passed", scoped.reasoning
