"""The OTel GenAI semantic-conventions dialect (`dialects/genai.py`): operation names and span-name formats,
structured arguments, agent names, failures as Strands and Google ADK record them, ADK's merged summary
span; Pydantic AI spans read as GenAI. The 2026 conventions are in `test_dialect_genai2026.py`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.trace import SpanKind

from _dialect_spans import (
    Node,
    SpanSpec,
    calls,
    genai_chat,
    genai_tool,
    leaf,
    scenario_tree,
    spans_of,
)
from tracegrade import grade
from tracegrade.dialects import extract
from tracegrade.evaluators import ArgumentCorrectness
from tracegrade.ingest import read_spans
from tracegrade.tree import SpanTree

FRAMEWORKS = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"


def test_pydantic_ai_spans_read_as_genai_keep_names_args_and_failures() -> None:
    traj = extract(scenario_tree("pydantic_ai"), dialect="genai")
    assert traj.tool_names == ["search", "search", "answer"]
    assert [c.status for c in traj.calls(include_failed=True)] == ["ok", "error", "ok", "ok"]
    assert [r.input_tokens for r in traj.model_requests] == [100, 200, 300]
    assert {c.dialect for c in traj.all_calls} == {"genai"}


def test_genai_structured_arguments_are_used_as_they_are() -> None:
    # `gen_ai.tool.call.arguments` is `any`: an object where the SDK supports structured attributes
    [call] = calls(spans_of(genai_tool("search", {"q": "x", "n": 2})))
    assert call.args == {"q": "x", "n": 2}
    assert json.loads(call.args_text) == {"q": "x", "n": 2}


def test_genai_agent_name_on_other_spans_does_not_make_an_agent_but_names_a_tools_agent() -> None:
    # 2026 conventions: `gen_ai.agent.name` on `execute_tool` says which agent made the call;
    # on a chat span it names no run and no agent of the request
    tree = spans_of(
        genai_chat(1, 1, attrs={"gen_ai.agent.name": "ghost"}),
        genai_tool("t", None, {"gen_ai.agent.name": "ghost"}),
    )
    traj = extract(tree)
    assert traj.agent_runs == []
    assert [c.agent for c in traj.all_calls] == ["ghost"] and [r.agent for r in traj.model_requests] == [None]


def test_genai_operation_name_wins_over_the_span_name() -> None:
    tree = spans_of(
        leaf(
            "embeddings text-embedding-3",
            {"gen_ai.operation.name": "embeddings", "gen_ai.usage.input_tokens": 9},
        ),
        leaf("create_agent helper", {"gen_ai.operation.name": "create_agent", "gen_ai.agent.name": "helper"}),
        leaf("retrieve docs", {"gen_ai.operation.name": "retrieval"}),
        leaf("custom name", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}),
        leaf("my_llm_step", {"gen_ai.operation.name": "text_completion", "gen_ai.request.model": "m"}),
    )
    traj = extract(tree)
    assert traj.tool_names == ["lookup"]
    assert [r.model for r in traj.model_requests] == ["m"]
    assert traj.agent_runs == []


def test_genai_span_name_formats_without_an_operation_name() -> None:
    tree = spans_of(
        Node(SpanSpec("invoke_agent bot", {}), [
            leaf("chat gpt-4o", {"gen_ai.system": "openai", "gen_ai.usage.prompt_tokens": 4}),
            leaf("execute_tool search", {"gen_ai.tool.name": "search"}),
            leaf("execute_tool unnamed"),  # no gen_ai.tool.name: not enough to be a tool span
            leaf("chat with a human"),  # no gen_ai attributes
            leaf("call_llm", {"gen_ai.system": "gcp.vertex.agent", "gen_ai.request.model": "gemini"}),
        ]),
    )  # fmt: skip
    traj = extract(tree)
    assert [(c.name, c.agent) for c in traj.all_calls] == [("search", "bot")]
    assert [(r.model, r.input_tokens) for r in traj.model_requests] == [("gpt-4o", 4), ("gemini", None)]
    assert [r.name for r in traj.agent_runs] == ["bot"]


def test_strands_tool_status_error_is_a_failure_without_error_status() -> None:
    [call] = calls(spans_of(genai_tool("search", '{"q": "x"}', {"gen_ai.tool.status": "error"})))
    assert call.failed and call.status == "error"


def test_strands_redacted_arguments_name_strands_own_redaction_switch() -> None:
    """Strands replaces content by `[REDACTED]` when OTEL_SEMCONV_STABILITY_OPT_IN holds a
    `gen_ai_unredacted_attributes=` token that does not list it (fixtures/frameworks/strands--native--content-off--*);
    it reads no capture-content variable, so the reason names that token."""
    redacted = [("gen_ai.tool.message", {"role": "tool", "content": "[REDACTED]", "id": "call_o1"}),
                ("gen_ai.choice", {"message": "[REDACTED]", "id": "call_o1"})]  # fmt: skip
    attrs = {"gen_ai.system": "strands-agents", "gen_ai.tool.call.id": "call_o1", "gen_ai.tool.status": "success"}
    tool = genai_tool("get_order", None, attrs)
    tree = spans_of(Node(SpanSpec(tool.spec.name, tool.spec.attributes, events=redacted)),
                    scope="strands.telemetry.tracer")  # fmt: skip
    [result] = grade(tree, [ArgumentCorrectness("get_order", {"order_id": 1234})])
    assert result.outcome == "not_evaluated", result.reasoning
    assert "gen_ai_unredacted_attributes" in result.reasoning, result.reasoning
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" not in result.reasoning


def test_error_type_alone_is_a_failure() -> None:
    # Google ADK: the tool returned an error dict (no exception, but ERROR and error.type)
    [call] = calls(spans_of(genai_tool("fetch", None, {"error.type": "MCP_TOOL_ERROR"})))
    assert call.failed and call.error == "MCP_TOOL_ERROR"


def test_google_adk_merged_summary_span_is_not_a_call() -> None:
    parallel = [genai_tool("a", '{"i": 1}'), genai_tool("b", '{"i": 2}')]
    merged = leaf(
        "execute_tool (merged)",
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "(merged tools)"},
    )
    traj = extract(spans_of(*parallel, merged))
    assert traj.tool_names == ["a", "b"]


# opentelemetry-instrumentation-openai-agents-v2 0.1.0 as recorded in fixtures/frameworks/openai-agents--otel-genai--*
# (server.* and the tool's content attributes left out): the SDK trace is a SERVER span named after the workflow
# with `invoke_agent` and no agent name; every span but the agent's carries the instrumentor's placeholder agent.
_OAA_SCOPE = "opentelemetry.instrumentation.openai_agents"
_OAA = {"gen_ai.provider.name": "openai", "gen_ai.system": "openai"}
_LABEL = {"gen_ai.agent.name": "OpenAI Agent", "gen_ai.agent.id": "agent",
          "gen_ai.agent.description": "OpenAI Agents instrumentation"}  # fmt: skip


def _openai_agents_v2_trace(scope: str) -> SpanTree:
    tool = {**_OAA, **_LABEL, "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.type": "function", "gen_ai.tool.call.arguments": '{"city": "Paris"}'}  # fmt: skip
    chat = {**_OAA, **_LABEL, "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}
    turn = Node(SpanSpec("unknown", {**_LABEL, "gen_ai.operation.name": "unknown"}), [
        Node(SpanSpec("chat gpt-4o", chat, SpanKind.CLIENT)), Node(SpanSpec("execute_tool get_weather", tool)),
    ])  # fmt: skip
    agent = {**_OAA, **_LABEL, "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support"}
    root = Node(SpanSpec("support workflow", {**_OAA, "gen_ai.operation.name": "invoke_agent"}, SpanKind.SERVER), [
        Node(SpanSpec("unknown", {**_LABEL, "gen_ai.operation.name": "unknown"}), [
            Node(SpanSpec("invoke_agent support", agent, SpanKind.CLIENT), [turn]),
        ]),
    ])  # fmt: skip
    return spans_of(root, scope=scope)


def test_contrib_openai_agents_placeholder_agent_name_does_not_name_the_calls_agent() -> None:
    traj = extract(_openai_agents_v2_trace(_OAA_SCOPE))
    # the workflow span is a run anchor, but "support workflow" is no `invoke_agent {name}`: it names no agent
    assert [(r.name, r.span.name if r.span else None) for r in traj.agent_runs] == [
        (None, "support workflow"), ("support", "invoke_agent support"),
    ]  # fmt: skip
    assert [(c.name, c.agent) for c in traj.all_calls] == [("get_weather", "support")]
    assert [r.agent for r in traj.model_requests] == ["support"]
    assert traj.scope(agent="support").tool_names == ["get_weather"]


def test_agent_name_on_a_tool_span_still_wins_over_ancestry_for_other_instrumentations() -> None:
    traj = extract(_openai_agents_v2_trace("some.other.instrumentation"))
    assert [(c.name, c.agent) for c in traj.all_calls] == [("get_weather", "OpenAI Agent")]


@pytest.mark.parametrize("variant", ["content-on", "content-off", "content-on--stream", "content-off--responses"])
def test_recorded_contrib_openai_agents_runs_attribute_every_call_to_the_agent_run(variant: str) -> None:
    path = FRAMEWORKS / f"openai-agents--otel-genai--{variant}.traces.json"
    traj = extract(SpanTree.from_spans(read_spans(path)))
    assert [(r.name, r.span.name if r.span else None) for r in traj.agent_runs] == [
        (None, "support workflow"), ("support", "invoke_agent support"),
    ]  # fmt: skip
    assert [(c.name, c.agent) for c in traj.all_calls] == [
        ("get_weather", "support"), ("get_order", "support"), ("search_kb", "support"), ("search_kb", "support"),
    ]  # fmt: skip
    assert {r.agent for r in traj.model_requests} == {"support"} and len(traj.model_requests) == 4
