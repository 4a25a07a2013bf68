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


# StrandsAgentsToOpenInferenceProcessor (openinference-instrumentation-strands-agents 0.1.12) as recorded in
# fixtures/frameworks/strands--openinference--*: Strands' own spans (scope strands.telemetry.tracer) keep their
# gen_ai.* attributes and gain OpenInference ones; content off = the processor's TraceConfig hiding inputs and
# outputs (input.value / output.value become __REDACTED__, tool.parameters and the messages are dropped).
_STRANDS = {"gen_ai.system": "strands-agents"}
_HIDDEN = {"input.value": "__REDACTED__", "output.value": "__REDACTED__"}


def _strands_converted(content: bool) -> Node:
    agent = _STRANDS | {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support",
                        "gen_ai.request.model": "gpt-4o", "openinference.span.kind": "AGENT",
                        "graph.node.id": "strands_agent", "llm.model_name": "gpt-4o"}  # fmt: skip
    cycle = _STRANDS | {"gen_ai.operation.name": "execute_event_loop_cycle", "event_loop.cycle_id": "c1",
                        "openinference.span.kind": "CHAIN"}  # fmt: skip
    chat = _STRANDS | {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                       "gen_ai.usage.input_tokens": 56, "gen_ai.usage.output_tokens": 57,
                       "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o",
                       "llm.token_count.prompt": 56, "llm.token_count.completion": 57}  # fmt: skip
    tool = _STRANDS | {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_order",
                       "gen_ai.tool.call.id": "call_o1", "gen_ai.tool.status": "success",
                       "openinference.span.kind": "TOOL", "tool.name": "get_order", "tool.call_id": "call_o1"}  # fmt: skip
    if content:
        out = "llm.output_messages.0.message"
        chat |= {f"{out}.role": "assistant", f"{out}.finish_reason": "tool_use",
                 f"{out}.tool_calls.0.tool_call.id": "call_o1",
                 f"{out}.tool_calls.0.tool_call.function.name": "get_order",
                 f"{out}.tool_calls.0.tool_call.function.arguments": '{"order_id": 1234}'}  # fmt: skip
        tool |= {"tool.parameters": '{"order_id": 1234}', "input.value": '{"order_id": 1234}',
                 "input.mime_type": "application/json", "output.value": "order 1234: shipped"}  # fmt: skip
    else:
        agent, cycle, chat, tool = (attrs | _HIDDEN for attrs in (agent, cycle, chat, tool))
    return Node(SpanSpec("invoke_agent support", agent, status="ok"), [
        Node(SpanSpec("execute_event_loop_cycle", cycle, status="ok"), [
            Node(SpanSpec("chat", chat, status="ok")),
            Node(SpanSpec("execute_tool get_order", tool, status="ok")),
        ]),
    ])  # fmt: skip


def test_a_strands_span_converted_by_openinference_is_one_step() -> None:
    """Each span carries both Strands' GenAI attributes and OpenInference's: one call (the model's requested
    call merged into it by id), one model request, one agent run."""
    traj = extract(spans_of(_strands_converted(content=True), scope="strands.telemetry.tracer"))
    assert [(c.name, c.call_id, c.args, c.result, c.agent) for c in traj.all_calls] == [
        ("get_order", "call_o1", {"order_id": 1234}, "order 1234: shipped", "support")
    ]
    assert [(r.model, r.input_tokens) for r in traj.model_requests] == [("gpt-4o", 56)]
    assert [r.name for r in traj.agent_runs] == ["support"]


def test_strands_content_hidden_by_the_openinference_processor_names_both_switches() -> None:
    """The content of a converted Strands span is hidden by the processor's TraceConfig or by Strands' own
    redaction: the reason names both, not a setting Strands does not read."""
    tree = spans_of(_strands_converted(content=False), scope="strands.telemetry.tracer")
    [call] = calls(tree)
    assert call.args is NOT_RECORDED
    [result] = grade(tree, [ArgumentCorrectness("get_order", {"order_id": 1234})])
    assert result.outcome == "not_evaluated", result.reasoning
    for setting in ("OPENINFERENCE_HIDE_INPUTS=false", "StrandsAgentsToOpenInferenceProcessor",
                    "gen_ai_unredacted_attributes"):  # fmt: skip
        assert setting in result.reasoning, result.reasoning
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" not in result.reasoning


# Two chat spans of Agent Framework as OpenInference's AgentFrameworkToOpenInferenceProcessor leaves them
# (corpus run agent-framework--openinference--content-on), without the execute_tool spans: both conventions on
# each span. The processor flattens the tool message of the parallel pair into one message under the last call id.
_CALLS = [{"type": "tool_call", "id": "call_w1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
          {"type": "tool_call", "id": "call_o1", "name": "get_order", "arguments": '{"order_id": 1234}'}]  # fmt: skip
_USER = {"role": "user", "parts": [{"type": "text", "content": "What is the status of order 1234?"}]}
_AF_CHAT = {"openinference.span.kind": "LLM", "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
            "llm.model_name": "gpt-4o"}  # fmt: skip
_AF_REQUEST = _AF_CHAT | {
    "gen_ai.input.messages": json.dumps([_USER]),
    "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": _CALLS, "finish_reason": "tool_call"}]),
    "llm.input_messages.0.message.role": "user",
    "llm.input_messages.0.message.content": "What is the status of order 1234?",
    "llm.output_messages.0.message.role": "assistant",
    **{f"llm.output_messages.0.message.tool_calls.{i}.tool_call.{key}": part[field]
       for i, part in enumerate(_CALLS)
       for key, field in (("id", "id"), ("function.name", "name"), ("function.arguments", "arguments"))},
}  # fmt: skip
_AF_ANSWER = _AF_CHAT | {
    "gen_ai.input.messages": json.dumps([_USER, {"role": "assistant", "parts": _CALLS}, {"role": "tool", "parts": [
        {"type": "tool_call_response", "id": "call_w1", "response": "sunny, 21C"},
        {"type": "tool_call_response", "id": "call_o1", "response": "order 1234: shipped"}]}]),
    "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Shipped."}]}]),
    "llm.input_messages.1.message.role": "tool",
    "llm.input_messages.1.message.tool_call_id": "call_o1",
    "llm.input_messages.1.message.content": "sunny, 21C order 1234: shipped",
}  # fmt: skip


def test_a_span_in_both_conventions_gives_each_requested_call_its_own_result() -> None:
    """The GenAI messages a converting processor keeps hold one result per call id; its flattened copy
    joins the parallel results under the last id. Each call is counted once, with its own result."""
    tree = spans_of(leaf("chat gpt-4o", _AF_REQUEST, "ok"), leaf("chat gpt-4o", _AF_ANSWER, "ok"),
                    scope="agent_framework")  # fmt: skip
    traj = extract(tree)
    assert [(c.name, c.call_id, c.args, c.result) for c in traj.all_calls] == [
        ("get_weather", "call_w1", {"city": "Paris"}, "sunny, 21C"),
        ("get_order", "call_o1", {"order_id": 1234}, "order 1234: shipped"),
    ]
    assert len(traj.model_requests) == 2


def _oi_request(name: str, history: dict[str, Any], call: tuple[str, str, str] | None) -> dict[str, Any]:
    """An LLM span's attributes as OpenInference's LiteLLM / OpenAI instrumentors record them (content on)."""
    attrs = {"openinference.span.kind": "LLM", "llm.model_name": name, **history}
    if call is None:
        return attrs | {"llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "ok"}
    call_id, tool, args = call
    prefix = "llm.output_messages.0.message.tool_calls.0.tool_call."
    return attrs | {"llm.finish_reason": "tool_calls", f"{prefix}id": call_id, f"{prefix}function.name": tool,
                    f"{prefix}function.arguments": args}  # fmt: skip


@pytest.mark.parametrize("nested", [True, False], ids=["provider-span-inside", "litellm-span-alone"])
def test_a_requested_calls_result_comes_from_the_provider_span_inside_the_request(nested: bool) -> None:
    """LiteLLM's OpenInference span records the next request's tool message without its `tool_call_id`
    (openinference-instrumentation-litellm 0.1.51); the OpenAI instrumentor's `ChatCompletion` span inside it,
    the same request, records the id: the call's result is read from there, and is not guessed without it."""
    tool_message = {"llm.input_messages.0.message.role": "tool", "llm.input_messages.0.message.content": "sunny, 21C"}
    with_id = tool_message | {"llm.input_messages.0.message.tool_call_id": "call_w1"}
    requested = ("call_w1", "get_weather", '{"city": "Paris"}')
    first = Node(SpanSpec("completion", _oi_request("openai/gpt-4o", {}, requested)))
    inner = SpanSpec("ChatCompletion", _oi_request("gpt-4o", with_id, None), scope="openinference.instrumentation.openai")
    second = Node(SpanSpec("completion", _oi_request("openai/gpt-4o", tool_message, None)), [Node(inner)] if nested else [])
    traj = extract(spans_of(first, second, scope="openinference.instrumentation.litellm"))
    assert len(traj.model_requests) == 2
    [call] = traj.all_calls
    assert (call.name, call.call_id, call.args, call.executed) == ("get_weather", "call_w1", {"city": "Paris"}, None)
    assert call.result == ("sunny, 21C" if nested else None)
