"""The OpenLLMetry (Traceloop) dialect (`dialects/openllmetry.py`): arguments unwrapped from
`traceloop.entity.input` without guessing, workflow and task spans, agent spans and their output, other
instrumentations inside a Traceloop workflow, an explicit choice on a LangChain trace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

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
from tracegrade.dialects import extract, openllmetry
from tracegrade.evaluators import (
    ArgumentCorrectness,
    ToolCorrectness,
)
from tracegrade.ingest import read_spans
from tracegrade.spans import LogRecord
from tracegrade.trajectory import NOT_RECORDED
from tracegrade.tree import SpanTree

FRAMEWORKS = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"


def test_explicit_openllmetry_reads_a_langchain_trace() -> None:
    traj = extract(scenario_tree("openllmetry-langchain", nested=True), dialect="openllmetry")
    assert [(c.name, c.agent, c.args) for c in traj.tool_calls] == [
        ("search", "main", {"q": "x"}),
        ("search", "main", {"q": "y"}),
        ("answer", "writer", {"text": "final"}),
    ]


def ol_tool(tool: str, entity_input: Any = None, attrs: dict[str, Any] | None = None) -> Node:
    base: dict[str, Any] = {"traceloop.span.kind": "tool", "traceloop.entity.name": tool}
    if entity_input is not None:
        base["traceloop.entity.input"] = entity_input if isinstance(entity_input, str) else json.dumps(entity_input)
    return Node(SpanSpec(f"{tool}.tool", base | (attrs or {})))


@pytest.mark.parametrize(
    ("entity_input", "expected"),
    [
        ({"args": [], "kwargs": {"city": "Paris"}}, {"city": "Paris"}),
        ({"args": [], "kwargs": {}}, {}),
        ({"args": ["Paris"], "kwargs": {}}, NOT_RECORDED),  # names unknown: not guessed
        ({"args": ["<Planner>"], "kwargs": {"city": "Paris"}}, {"city": "Paris"}),
        ({"input_str": "{'city': 'Paris'}", "tags": [], "inputs": {"city": "Paris"}, "kwargs": {}},
         {"city": "Paris"}),
        ({"input_str": "Paris", "tags": [], "metadata": {}, "inputs": None, "kwargs": {}},
         {"input_str": "Paris", "tags": [], "metadata": {}, "inputs": None, "kwargs": {}}),
        ({"tool_name": "weather", "arguments": {"city": "Paris"}}, {"city": "Paris"}),  # the MCP client's tool span
        ({"city": "Paris"}, {"city": "Paris"}),  # not a wrapper
        ("not json", "not json"),
    ],
    ids=["kwargs", "no-args", "positional", "self-and-kwargs", "langchain", "langchain-str", "mcp", "plain", "text"],
)  # fmt: skip
def test_openllmetry_arguments_are_unwrapped_without_guessing(entity_input: Any, expected: Any) -> None:
    [call] = calls(spans_of(ol_tool("weather", entity_input)))
    assert call.args == expected


@pytest.mark.parametrize("failed", [False, True], ids=["ok", "failed"])
def test_the_mcp_client_tool_span_completes_the_framework_call_it_is_inside(failed: bool) -> None:
    """OpenLLMetry's MCP instrumentation (recorded in fixtures/frameworks/pydantic-ai--mcp-openllmetry--content-off--
    traceloop-default): `{tool}.tool` inside Pydantic AI's content-off tool span gives it the arguments and result."""
    text = "Error calling tool 'search_kb': knowledge base unavailable" if failed else "Refunds take 5 days."
    output = {"result": text, "is_error": True} if failed else {"result": text}
    mcp = ol_tool(
        "search_kb",
        {"tool_name": "search_kb", "arguments": {"query": "refund policy"}},
        {"traceloop.entity.output": json.dumps(output)} | ({"error.type": "tool_error"} if failed else {}),
    )
    framework = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_kb", "gen_ai.tool.call.id": "c1"}
    [call] = calls(spans_of(Node(SpanSpec("execute_tool search_kb", framework), [mcp])))
    assert (call.call_id, call.args, call.result, call.failed) == ("c1", {"query": "refund policy"}, text, failed)


def test_openllmetry_positional_arguments_are_not_evaluated_showing_what_was_recorded() -> None:
    tree = spans_of(ol_tool("weather", {"args": ["Paris"], "kwargs": {}}))
    [call] = calls(tree)
    assert (call.args, call.args_text) == (NOT_RECORDED, '{"args": ["Paris"], "kwargs": {}}')
    [result] = grade(tree, [ArgumentCorrectness("weather", {"city": "Paris"})])
    assert result.outcome == "not_evaluated"
    assert "recorded by test without their names" in result.reasoning, result.reasoning
    assert '\'{"args": ["Paris"], "kwargs": {}}\'' in result.reasoning and "pass them by keyword" in result.reasoning


def test_openllmetry_positional_arguments_take_the_models_requested_ones_by_call_id() -> None:
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
            "gen_ai.completion.0.tool_calls.0.id": "call_1", "gen_ai.completion.0.tool_calls.0.name": "weather",
            "gen_ai.completion.0.tool_calls.0.arguments": '{"city": "Paris"}'}  # fmt: skip
    tool = ol_tool("weather", {"args": ["Paris"], "kwargs": {}}, {"gen_ai.tool.call.id": "call_1"})
    [call] = extract(spans_of(Node(SpanSpec("agent", {}), [leaf("openai.chat", chat), tool]))).all_calls
    assert (call.args, call.args_source, call.executed) == ({"city": "Paris"}, "messages", True)


def test_openllmetry_workflow_task_and_propagated_agent_name_are_not_steps() -> None:
    prop = {"traceloop.workflow.name": "trip", "gen_ai.agent.name": "planner"}
    chat = {"llm.request.type": "chat", "gen_ai.request.model": "gpt-4o", **prop}
    usage = {"llm.usage.prompt_tokens": 3, "llm.usage.completion_tokens": 1}  # the oldest releases
    task = {"traceloop.span.kind": "task", "traceloop.entity.name": "plan", **prop}
    steps = [
        ol_tool("weather", {"args": [], "kwargs": {"city": "Paris"}}, prop),
        leaf("openai.chat", chat | usage),
        leaf("openai.embeddings", {"llm.request.type": "embedding", **prop}),
    ]
    workflow = {"traceloop.span.kind": "workflow", "traceloop.entity.name": "trip"}
    tree = spans_of(Node(SpanSpec("trip.workflow", workflow), [Node(SpanSpec("plan.task", task), steps)]))
    traj = extract(tree)
    assert traj.agent_runs == []
    assert [(c.name, c.agent) for c in traj.all_calls] == [("weather", None)]
    assert [(r.model, r.input_tokens, r.output_tokens, r.agent) for r in traj.model_requests] == [
        ("gpt-4o", 3, 1, None)
    ]


# The CrewAI instrumentor's spans as recorded in fixtures/frameworks/crewai--openllmetry--content-on (ids and
# the crew/agent/task detail attributes left out): kickoff, task and agent all say `invoke_agent`.
_CREW = {"gen_ai.provider.name": "crewai", "gen_ai.operation.name": "invoke_agent"}
_TASK = "What is the status of order 1234, the weather in Paris, and the refund policy?"


def test_a_traceloop_task_or_workflow_span_with_an_agent_operation_is_no_agent_run() -> None:
    chat = leaf("openai.chat", {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                                "gen_ai.request.model": "gpt-4o"})  # fmt: skip
    agent = {"traceloop.span.kind": "agent", "gen_ai.agent.name": "support", "crewai.agent.role": "support", **_CREW}
    task = {"traceloop.span.kind": "task", "crewai.task.description": _TASK,
            "traceloop.entity.output": "Order 1234 has shipped.", **_CREW}  # fmt: skip
    crew = Node(SpanSpec("crewai.workflow", _CREW),
                [Node(SpanSpec(f"{_TASK}.task", task), [Node(SpanSpec("support.agent", agent), [chat])])])  # fmt: skip
    traj = extract(spans_of(crew))
    # the kickoff span has no traceloop.span.kind: its own `invoke_agent` makes it a (nameless) GenAI run
    assert [(r.name, r.dialect, r.span.name if r.span else None) for r in traj.agent_runs] == [
        (None, "genai", "crewai.workflow"),
        ("support", "openllmetry", "support.agent"),
    ]
    assert [(r.agent, r.model) for r in traj.model_requests] == [("support", "gpt-4o")]


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        ("crewai--openllmetry--content-on", [(None, "crewai.workflow"), ("support", "support.agent")]),
        ("langgraph--openllmetry--content-on", [("support", "invoke_agent support")]),  # not also support.workflow
    ],
)
def test_recorded_openllmetry_workflow_and_task_spans_are_no_agent_runs(run: str, expected: list[Any]) -> None:
    traj = extract(SpanTree.from_spans(read_spans(FRAMEWORKS / f"{run}.traces.json")))
    assert [(r.name, r.span.name if r.span else None) for r in traj.agent_runs] == expected
    assert {c.agent for c in traj.all_calls} == {"support"} and len(traj.all_calls) == 4
    assert {r.agent for r in traj.model_requests} == {"support"}


def test_openllmetry_agent_span_name_and_final_output() -> None:
    attrs = {
        "traceloop.span.kind": "agent",
        "traceloop.entity.name": "planner",
        "traceloop.entity.output": json.dumps({"plan": "go"}),
    }
    agent = Node(SpanSpec("planner.agent", attrs), [ol_tool("weather", {"args": [], "kwargs": {"city": "Paris"}})])
    traj = extract(spans_of(agent))
    assert [(r.name, r.final_output) for r in traj.agent_runs] == [("planner", {"plan": "go"})]
    assert traj.final_output == {"plan": "go"} and traj.tool_calls[0].agent == "planner"


def test_other_instrumentations_inside_a_traceloop_workflow_are_read_as_genai() -> None:
    prop = {"traceloop.workflow.name": "trip"}  # Traceloop's processor adds this to every span in the workflow
    agent_attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "strands", **prop}
    steps = [
        genai_chat(4, 1, attrs=prop),
        genai_tool("search", '{"q": "x"}', prop | {"gen_ai.tool.call.id": "<not specified>"}),
    ]
    agent = Node(SpanSpec("invoke_agent strands", agent_attrs | {"gen_ai.usage.input_tokens": 99}), steps)
    traj = extract(spans_of(agent))
    assert [(c.name, c.args, c.agent, c.call_id, c.dialect) for c in traj.all_calls] == [
        ("search", {"q": "x"}, "strands", None, "genai"),
    ]
    assert [(r.name, r.dialect) for r in traj.agent_runs] == [("strands", "genai")]
    assert [r.input_tokens for r in traj.model_requests] == [4]


def _llamaindex_step(tool: str, args: str, output: dict[str, Any] | None) -> Node:
    """A FunctionAgent `call_tool` step as OpenLLMetry's LlamaIndex instrumentation records it (attributes
    copied from fixtures/frameworks/llamaindex--openllmetry--content-on), with the tool's own
    `FunctionTool.task` span beneath it when the tool returned (the span of a tool that raised is never ended)."""
    attrs = {"traceloop.span.kind": "task", "traceloop.entity.name": "BaseWorkflowAgent.task",
             "tool.name": tool, "tool.arguments": args}  # fmt: skip
    children = []
    if output is not None:
        attrs["traceloop.entity.output"] = json.dumps(output)
        tool_output = output["tool_output"]
        if not tool_output["is_error"]:
            inner = {"traceloop.span.kind": "task", "traceloop.entity.name": "FunctionTool.task",
                     "traceloop.entity.input": json.dumps({"kwargs": json.loads(args)}),
                     "traceloop.entity.output": json.dumps(tool_output)}  # fmt: skip
            children.append(Node(SpanSpec("FunctionTool.task", inner)))
    return Node(SpanSpec("BaseWorkflowAgent.task", attrs), children)


def _step_output(tool: str, kwargs: dict[str, Any], call_id: str, text: str, is_error: bool) -> dict[str, Any]:
    raw_input = kwargs if is_error else {"args": [], "kwargs": kwargs}
    return {"tool_name": tool, "tool_kwargs": kwargs, "tool_id": call_id,
            "tool_output": {"blocks": [{"block_type": "text", "text": text}], "tool_name": tool,
                            "raw_input": raw_input, "raw_output": text, "is_error": is_error},
            "return_direct": False}  # fmt: skip


@pytest.mark.parametrize("content", [True, False], ids=["content-on", "content-off"])
def test_openllmetry_llamaindex_tool_steps_are_the_tool_calls(content: bool) -> None:
    steps = [
        ("get_order", {"order_id": 1234}, "call_o1", "order 1234: shipped", False),
        ("search_kb", {"query": "refund policy"}, "call_s1", "knowledge base unavailable", True),
        ("search_kb", {"query": "refund policy"}, "call_s2", "Refunds take 5 days.", False),
    ]
    nodes = [
        _llamaindex_step(tool, json.dumps(kwargs), _step_output(tool, kwargs, call_id, text, err) if content else None)
        for tool, kwargs, call_id, text, err in steps
    ]
    workflow = {"traceloop.span.kind": "workflow", "traceloop.entity.name": "FunctionAgent.workflow"}
    root = Node(SpanSpec("FunctionAgent.workflow", workflow), nodes)
    tree = spans_of(root, scope="opentelemetry.instrumentation.llamaindex")
    got = [(c.name, c.args, c.call_id, c.status, c.error, c.result) for c in calls(tree)]
    if content:  # the step's output holds the call id, the result and whether the tool raised
        assert got == [
            ("get_order", {"order_id": 1234}, "call_o1", "ok", None, "order 1234: shipped"),
            ("search_kb", {"query": "refund policy"}, "call_s1", "error", "knowledge base unavailable",
             "knowledge base unavailable"),
            ("search_kb", {"query": "refund policy"}, "call_s2", "ok", None, "Refunds take 5 days."),
        ]  # fmt: skip
        assert [c.call_id for c in extract(tree).tool_calls] == ["call_o1", "call_s2"]
    else:  # names and arguments only: the failure is not recorded, so it is not invented
        assert got == [(tool, kwargs, None, "ok", None, None) for tool, kwargs, *_ in steps]
    [right, wrong] = grade(tree, [ArgumentCorrectness("get_order", {"order_id": 1234}),
                                  ArgumentCorrectness("get_order", {"order_id": 9999})])  # fmt: skip
    assert (right.outcome, wrong.outcome) == ("passed", "failed")


# A triage agent handing off to a billing agent under OpenLLMetry's OpenAI Agents instrumentation (0.62.4, with
# -openai; openai-agents 0.24, TRACELOOP_TRACE_CONTENT=false), attributes as recorded: the handoff span starts
# before the SDK knows its target, so it is named `triage → unknown.handoff` and holds no
# `gen_ai.handoff.to_agent`; the target is recorded only when the instrumentation gets it at the start.
_OA = {"gen_ai.provider.name": "openai"}


def _oa_agent(name: str, *children: Node) -> Node:
    attrs = {"traceloop.span.kind": "agent", "gen_ai.agent.name": name, "gen_ai.operation.name": "invoke_agent"}
    return Node(SpanSpec(f"{name}.agent", attrs | _OA), children)


def _oa_request(finish_reason: str) -> Node:
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.response.model": "gpt-4o",
            "gen_ai.response.finish_reasons": (finish_reason,), **_OA}  # fmt: skip
    response = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", **_OA}
    return Node(SpanSpec("openai.response", response), [leaf("openai.chat", chat)])


@pytest.mark.parametrize("to_agent", [None, "billing"], ids=["target-unrecorded", "target-recorded"])
def test_an_openai_agents_handoff_span_is_a_handoff_and_an_unrecorded_target_is_not_guessed(
    to_agent: str | None,
) -> None:
    hand = {"traceloop.span.kind": "handoff", "gen_ai.operation.name": "handoff",
            "gen_ai.handoff.from_agent": "triage", "gen_ai.agent.name": "triage", **_OA}  # fmt: skip
    if to_agent is not None:
        hand["gen_ai.handoff.to_agent"] = to_agent
    handoff_span = Node(SpanSpec(f"triage → {to_agent or 'unknown'}.handoff", hand))
    workflow = {"traceloop.span.kind": "workflow", "traceloop.workflow.name": "Agent Workflow", **_OA}
    root = Node(SpanSpec("Agent Workflow", workflow),
                [_oa_agent("triage", _oa_request("tool_call"), handoff_span), _oa_agent("billing", _oa_request("stop"))])  # fmt: skip
    tree = spans_of(root, scope="opentelemetry.instrumentation.openai_agents")
    traj = extract(tree)
    assert [(h.source, h.target, h.agent, h.dialect) for h in traj.handoffs] == [
        ("triage", to_agent, "triage", "openllmetry")
    ]
    node = next(n for n in tree if n.name.endswith(".handoff"))
    assert openllmetry.classify(node) == openllmetry.handoff(node)
    assert [r.name for r in traj.agent_runs] == ["triage", "billing"] and len(traj.model_requests) == 2
    # the transfer is no tool call, and its span shows tool spans are recorded: no tool was called
    assert traj.all_calls == [] and traj.missing == {}
    [none_called] = grade(traj, [ToolCorrectness(expected_tools=[])])
    assert none_called.outcome == "passed", none_called.reasoning


@pytest.mark.parametrize("inner_finish", ["stop", None], ids=["provider-span-records-it", "nothing-records-it"])
def test_a_finish_reason_recorded_only_by_the_provider_span_inside_a_request_decides_the_tool_checks(
    inner_finish: str | None,
) -> None:
    """The SDK's `openai.response` records neither output nor finish reason with chat completions; the OpenAI
    instrumentation's `openai.chat` inside it (absorbed into the same request) records `stop`, content on or off."""
    request = _oa_request(inner_finish or "stop")
    if inner_finish is None:  # the same request with no finish reason anywhere
        chat = dict(request.children[0].spec.attributes)
        del chat["gen_ai.response.finish_reasons"]
        request = Node(request.spec, [leaf("openai.chat", chat)])
    tree = spans_of(_oa_agent("support", request), scope="opentelemetry.instrumentation.openai_agents")
    traj = extract(tree)
    assert len(traj.model_requests) == 1 and traj.all_calls == []
    [none_called, one_called] = grade(traj, [ToolCorrectness(expected_tools=[]),
                                             ToolCorrectness(expected_tools=["get_order"])])  # fmt: skip
    if inner_finish is not None:
        assert (none_called.outcome, one_called.outcome) == ("passed", "failed"), none_called.reasoning
        assert traj.missing == {}
    else:
        assert (none_called.outcome, one_called.outcome) == ("not_evaluated", "not_evaluated")
        assert "whether tools were called is unknown" in none_called.reasoning
        assert "TRACELOOP_TRACE_CONTENT=true" in none_called.reasoning


@pytest.mark.parametrize(
    ("scope", "switch"),
    [("opentelemetry.instrumentation.litellm", "use_legacy_attributes"),
     ("opentelemetry.instrumentation.anthropic", "use_attributes")],
)  # fmt: skip
def test_content_in_log_records_naming_no_span_names_the_instrumentors_own_switch(scope: str, switch: str) -> None:
    """OpenLLMetry's LiteLLM events (`LiteLLMInstrumentor(use_legacy_attributes=False)`, content off, as recorded
    in the corpus) carry no trace or span id: the tool checks are not_evaluated, and the fix names the argument
    that instrumentor takes (0.62.4: `use_legacy_attributes` there, `use_attributes` in the Anthropic one)."""
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "openai/gpt-4o", "llm.is_streaming": False,
            "gen_ai.provider.name": "openai", "gen_ai.response.id": "chatcmpl-fake00000001",
            "gen_ai.response.model": "gpt-4o", "gen_ai.usage.input_tokens": 49, "gen_ai.usage.output_tokens": 31,
            "gen_ai.response.finish_reasons": ("tool_call",)}  # fmt: skip
    tree = spans_of(leaf("litellm.chat", chat), scope=scope)
    choice = {"index": 0, "message": {}, "finish_reason": "tool_call", "tool_calls": [
        {"function": {"name": "get_weather"}, "id": "call_w1", "type": "function"}]}  # fmt: skip
    record = LogRecord(0, 0, 1, "gen_ai.choice", choice, {"gen_ai.provider.name": "litellm"}, scope_name=scope)
    assert tree.attach_logs([record]) == [record]
    [got] = grade(extract(tree), [ToolCorrectness(expected_tools=["get_weather"])])
    assert got.outcome == "not_evaluated", got.reasoning
    assert "1 OTel log record(s) name no span" in got.reasoning and "TRACELOOP_TRACE_CONTENT=true" in got.reasoning
    assert f"instrumentor's {switch}=True" in got.reasoning and f"{switch}=False sends it" in got.reasoning


def _agno_agent(*children: Node) -> Node:
    attrs = {"gen_ai.system": "agno", "traceloop.span.kind": "agent", "gen_ai.agent.name": "support",
             "traceloop.entity.input": "What is the status of order 1234?"}  # fmt: skip
    return Node(SpanSpec("support.agent", attrs), children)


def _agno_tool(tool: str, args: dict[str, Any]) -> Node:
    return ol_tool(tool, args, {"gen_ai.system": "agno", "gen_ai.tool.name": tool})


def test_an_agent_scoped_check_is_not_evaluated_when_calls_lie_outside_every_agent_run() -> None:
    """OpenLLMetry's Agno instrumentation on a streaming run: each tool span is a root of its own trace, beside
    the agent's span, so nothing says which agent made the calls; the unscoped check still reads them."""
    tree = spans_of(_agno_agent(), _agno_tool("get_order", {"order_id": 1234}))
    scoped, whole = grade(extract(tree), [ToolCorrectness(expected_tools=["get_order"], agent="support"),
                                          ToolCorrectness(expected_tools=["get_order"])])  # fmt: skip
    assert scoped.outcome == "not_evaluated", scoped.reasoning
    assert "1 tool call(s) lie outside every agent run" in scoped.reasoning and "'support'" in scoped.reasoning
    assert whole.outcome == "passed", whole.reasoning


def test_calls_inside_the_agent_span_are_credited_to_the_agent() -> None:
    tree = spans_of(_agno_agent(_agno_tool("get_order", {"order_id": 1234})))
    (scoped,) = grade(extract(tree), [ToolCorrectness(expected_tools=["get_order"], agent="support")])
    assert scoped.outcome == "passed", scoped.reasoning


def test_openllmetry_positional_arguments_are_recovered_from_given_messages() -> None:
    from tracegrade.dialects import recover_arguments

    tool = ol_tool("weather", {"args": ["Paris"], "kwargs": {}}, {"gen_ai.tool.call.id": "call_1"})
    traj = extract(spans_of(tool))
    part = {"type": "tool_call", "id": "call_1", "name": "weather", "arguments": {"city": "Paris"}}
    [call] = recover_arguments(traj, [{"role": "assistant", "parts": [part]}]).all_calls
    assert (call.args, call.args_source) == ({"city": "Paris"}, "messages")


# --- the turn's user message from OpenLLMetry's flattened prompt (`gen_ai.prompt.N.{role,content}`) -------------


def test_the_user_message_is_read_from_openllmetrys_flattened_prompt_and_not_without_content() -> None:
    tree = scenario_tree("openllmetry-decorators", nested=True)
    first = extract(tree).model_requests[0].span
    assert first is not None
    assert (first.attributes["gen_ai.prompt.0.role"], first.attributes["gen_ai.prompt.0.content"]) == ("user", "go")
    assert extract(tree).user_message == "go"
    assert extract(scenario_tree("openllmetry-decorators", nested=True, content=False)).user_message is None
