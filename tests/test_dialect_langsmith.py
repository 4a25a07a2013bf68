"""The LangSmith dialect (`dialects/langsmith.py`): the LangSmith SDK's OpenTelemetry export of a LangGraph
agent, a hand-written loop (`@traceable` + `wrap_openai`) and an OpenAI Agents SDK agent (LangSmith's
`OpenAIAgentsTracingProcessor`) — committed corpus runs —, their tool, model-request and agent spans, the requested
calls and tool results in LangChain's, OpenAI's and the Responses API's recorded messages, and hidden content
(`LANGSMITH_HIDE_INPUTS` / `_OUTPUTS`) read as not recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _dialect_spans import Node, SpanSpec, spans_of
from tracegrade import grade
from tracegrade.dialects import extract, langsmith
from tracegrade.evaluators import ArgumentCorrectness, MaxModelRequests, ToolCorrectness
from tracegrade.ingest import read_spans
from tracegrade.trajectory import NOT_RECORDED
from tracegrade.tree import SpanTree

FRAMEWORKS = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"
RUN = "langgraph--langsmith--content-{}"
SCENARIO = [
    ("get_weather", {"city": "Paris"}, "call_w1"),
    ("get_order", {"order_id": 1234}, "call_o1"),
    ("search_kb", {"query": "refund policy"}, "call_s1"),
    ("search_kb", {"query": "refund policy"}, "call_s2"),
]


def _tree(run: str, keep: Any = None) -> SpanTree:
    spans = read_spans(FRAMEWORKS / f"{run}.traces.json")
    return SpanTree.from_spans([s for s in spans if keep is None or keep(s)])


@pytest.mark.parametrize("setting", ["on", "on--stream"])
def test_tool_spans_give_names_arguments_ids_results_and_the_failure(setting: str) -> None:
    traj = extract(_tree(RUN.format(setting)))
    got = traj.calls(include_failed=True)
    assert [(c.name, c.args, c.call_id) for c in got] == SCENARIO
    assert {(c.dialect, c.args_source, c.agent) for c in got} == {("langsmith", "span", "support")}
    assert [c.status for c in got] == ["ok", "ok", "error", "ok"]
    assert got[2].error == "RuntimeError('knowledge base unavailable')"  # the error's repr, not its traceback
    assert [c.result for c in got] == ["sunny, 21C", "order 1234: shipped", None, "Refunds take 5 days."]
    assert [r.name for r in traj.agent_runs] == ["support"]  # the graph, not its nodes
    assert [(r.model, r.provider, r.input_tokens) for r in traj.model_requests] == [
        ("gpt-4o", "openai", 49), ("gpt-4o", "openai", 161), ("gpt-4o", "openai", 245), ("gpt-4o", "openai", 314),
    ]  # fmt: skip


@pytest.mark.parametrize("setting", ["on", "on--stream"])
def test_requested_calls_and_results_are_read_from_langchain_messages(setting: str) -> None:
    requests = [n for n in _tree(RUN.format(setting)) if n.attributes.get(langsmith.KIND) == "llm"]
    requested = [[(r.name, r.arguments, r.call_id) for r in langsmith.requested_calls(n.attributes)] for n in requests]
    assert requested == [SCENARIO[:2], SCENARIO[2:3], SCENARIO[3:], []]
    results = langsmith.tool_results(requests[-1].attributes)
    assert results["call_w1"] == "sunny, 21C" and results["call_s2"] == "Refunds take 5 days."
    assert results["call_s1"].startswith("Error: RuntimeError('knowledge base unavailable')")
    assert langsmith.tool_results(requests[0].attributes) == {}


def test_model_spans_alone_give_the_calls_their_arguments_and_results() -> None:
    """Without the tool spans, the calls the model requested form the trajectory, with the results the
    following requests were given."""
    traj = extract(_tree(RUN.format("on"), keep=lambda s: s.attributes.get(langsmith.KIND) != "tool"))
    got = traj.calls(include_failed=True)
    assert [(c.name, c.args, c.call_id) for c in got] == SCENARIO
    assert {(c.args_source, c.executed, c.agent) for c in got} == {("messages", None, "support")}
    assert got[0].result == "sunny, 21C" and got[3].result == "Refunds take 5 days."


def test_hidden_inputs_and_outputs_are_not_recorded_and_the_reason_names_the_switch() -> None:
    traj = extract(_tree(RUN.format("off")))
    got = traj.calls(include_failed=True)
    assert [(c.name, c.call_id, c.status) for c in got] == [(n, i, s) for (n, _, i), s in
                                                          zip(SCENARIO, ["ok", "ok", "error", "ok"], strict=True)]  # fmt: skip
    assert all(c.args is NOT_RECORDED and c.result is None for c in got)
    right, arguments = grade(traj, [ToolCorrectness(expected_tools=["get_weather", "get_order", "search_kb"]),
                                    ArgumentCorrectness("get_order", {"order_id": 1234})])  # fmt: skip
    assert right.outcome == "passed"
    assert arguments.outcome == "not_evaluated" and "LANGSMITH_HIDE_INPUTS" in arguments.reasoning, arguments.reasoning


def _ls(name: str, kind: str, attrs: dict[str, Any], *children: Node) -> Node:
    base = {langsmith.KIND: kind, langsmith.RUN_NAME: name, "langsmith.trace.session_name": "default"}
    return Node(SpanSpec(name, base | attrs), children)


def _chat_output(*calls: tuple[str, dict[str, Any], str]) -> str:
    message = {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "AIMessage"],
               "kwargs": {"content": "", "type": "ai", "tool_calls": [
                   {"name": n, "args": a, "id": i, "type": "tool_call"} for n, a, i in calls]}}  # fmt: skip
    return json.dumps({"generations": [[{"text": "", "type": "ChatGeneration", "message": message}]]})


def test_an_empty_input_object_is_no_arguments_and_the_model_supplies_them() -> None:
    """`{}` is what the client writes for hidden inputs and for a tool without arguments: not recorded on the
    tool span; the model's requested `{}` (with content recorded) then gives the call its arguments."""
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "now", "gen_ai.tool.call.id": "call_1",
            "gen_ai.prompt": "{}", "gen_ai.completion": json.dumps({"output": "12:00"})}  # fmt: skip
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}
    graph = {"gen_ai.operation.name": "chain", langsmith.INTEGRATION: "langgraph"}
    node = {"gen_ai.operation.name": "chain", langsmith.INTEGRATION: "langgraph", langsmith.GRAPH_NODE: "tools"}
    recorded = spans_of(_ls("clock", "chain", graph,
                            _ls("ChatOpenAI", "llm", chat | {"gen_ai.completion": _chat_output(("now", {}, "call_1"))}),
                            _ls("tools", "chain", node, _ls("now", "tool", tool))), scope="langsmith")  # fmt: skip
    (call,) = extract(recorded).calls()
    assert (call.args, call.args_source, call.result, call.agent) == ({}, "messages", "12:00", "clock")
    hidden = spans_of(_ls("clock", "chain", graph, _ls("ChatOpenAI", "llm", chat | {"gen_ai.completion": "{}"}),
                          _ls("tools", "chain", node, _ls("now", "tool", tool | {"gen_ai.completion": "{}"}))),
                      scope="langsmith")  # fmt: skip
    (call,) = extract(hidden).calls()
    assert (call.args, call.result) == (NOT_RECORDED, None)


def test_a_prompt_run_is_no_model_request() -> None:
    """The client exports a `prompt` run (a template's formatting, e.g. `@traceable(run_type="prompt")`) with
    `gen_ai.operation.name` = `chat`, like an `llm` run: only the `llm` run is a model request."""
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 7}
    tree = spans_of(_ls("pipeline", "chain", {"gen_ai.operation.name": "chain"},
                        _ls("format_prompt", "prompt", {"gen_ai.operation.name": "chat"}),
                        _ls("ChatOpenAI", "llm", chat)), scope="langsmith")  # fmt: skip
    traj = extract(tree)
    assert [(r.span.name if r.span else None, r.dialect) for r in traj.model_requests] == [("ChatOpenAI", "langsmith")]
    (budget,) = grade(traj, [MaxModelRequests(max_requests=1)])
    assert budget.outcome == "passed", budget.reasoning


# --- outside LangChain: a hand-written loop (@traceable + wrap_openai) and the OpenAI Agents SDK processor -------

LOOP = "openai--langsmith--content-{}"
AGENTS = "openai-agents--langsmith--content-{}"
FINAL = "Order 1234 has shipped. It is sunny in Paris. Refunds take 5 days."


def _kind(tree: SpanTree, kind: str) -> list[Any]:
    return [n for n in tree if n.attributes.get(langsmith.KIND) == kind]


@pytest.mark.parametrize("setting", ["on", "on--stream"])
def test_a_traceable_loop_is_the_agent_run_and_its_tool_runs_take_the_models_call_ids(setting: str) -> None:
    """The loop's outermost `@traceable` chain run is the agent run (its output the final text); its decorated tool
    runs record the keyword arguments and no call id, which the wrapped client's requested calls supply."""
    traj = extract(_tree(LOOP.format(setting)))
    assert [(r.name, r.final_output, r.dialect) for r in traj.agent_runs] == [("support", FINAL, "langsmith")]
    got = traj.calls(include_failed=True)
    assert [(c.name, c.args, c.call_id) for c in got] == SCENARIO
    assert {(c.args_source, c.agent, c.executed) for c in got} == {("span", "support", True)}
    assert [c.status for c in got] == ["ok", "ok", "error", "ok"]
    assert got[2].error == "RuntimeError('knowledge base unavailable')"
    assert [c.result for c in got] == ["sunny, 21C", "order 1234: shipped", None, "Refunds take 5 days."]
    assert [(r.model, r.provider, r.input_tokens, r.output_tokens) for r in traj.model_requests] == [
        ("gpt-4o", "openai", 49, 57), ("gpt-4o", "openai", 157, 31), ("gpt-4o", "openai", 224, 31),
        ("gpt-4o", "openai", 288, 17),
    ]  # fmt: skip


@pytest.mark.parametrize("setting", ["on", "on--stream"])
def test_requested_calls_and_results_are_read_from_the_openai_request_and_response(setting: str) -> None:
    """`wrap_openai` records the chat completion (streamed: its chunks reduced to one) and the request's messages."""
    requests = _kind(_tree(LOOP.format(setting)), "llm")
    requested = [[(r.name, r.arguments, r.call_id) for r in langsmith.requested_calls(n.attributes)] for n in requests]
    assert requested == [
        [("get_weather", '{"city": "Paris"}', "call_w1"), ("get_order", '{"order_id": 1234}', "call_o1")],
        [("search_kb", '{"query": "refund policy"}', "call_s1")], [("search_kb", '{"query": "refund policy"}', "call_s2")],
        [],
    ]  # fmt: skip
    assert langsmith.tool_results(requests[-1].attributes) == {
        "call_w1": "sunny, 21C", "call_o1": "order 1234: shipped", "call_s1": "Error: knowledge base unavailable",
        "call_s2": "Refunds take 5 days.",
    }  # fmt: skip
    assert langsmith.tool_results(requests[0].attributes) == {}


def test_a_loops_model_runs_alone_give_the_calls_their_arguments_ids_and_results() -> None:
    traj = extract(_tree(LOOP.format("on"), keep=lambda s: s.attributes.get(langsmith.KIND) != "tool"))
    got = traj.calls(include_failed=True)
    assert [(c.name, c.args, c.call_id) for c in got] == SCENARIO
    assert {(c.args_source, c.executed, c.agent) for c in got} == {("messages", None, "support")}
    assert [c.result for c in got] == ["sunny, 21C", "order 1234: shipped", "Error: knowledge base unavailable",
                                       "Refunds take 5 days."]  # fmt: skip


def test_a_decorated_function_inside_another_run_and_an_undecorated_chain_are_no_agent_runs() -> None:
    """Only the outermost run of a `@traceable` function (or `trace()` block) is a hand-written agent's run: a
    decorated helper inside it is not, nor is a chain the client did not make from a decorated function (a
    LangChain runnable's)."""
    traced = {"gen_ai.operation.name": "chain", langsmith.METHOD: "traceable"}
    tree = spans_of(_ls("support", "chain", traced | {"gen_ai.completion": json.dumps({"output": "done"})},
                        _ls("plan", "chain", traced), _ls("ChatOpenAI", "llm", {"gen_ai.operation.name": "chat"})),
                    _ls("RunnableSequence", "chain", {"gen_ai.operation.name": "chain"}),
                    _ls("block", "chain", {langsmith.METHOD: "trace", "gen_ai.completion": "{}"}),
                    scope="langsmith")  # fmt: skip
    traj = extract(tree)
    assert [(r.name, r.final_output) for r in traj.agent_runs] == [("support", "done"), ("block", None)]
    assert [r.agent for r in traj.model_requests] == ["support"]


def test_an_agents_sdk_agent_span_is_the_run_not_its_trace_task_or_turns() -> None:
    """LangSmith's Agents SDK processor makes chain runs of the trace, the task, the agent and each turn; the
    agent's is the one whose `output_type` metadata its parent does not have (its descendants inherit it)."""
    tree = _tree(AGENTS.format("on"))
    chains = _kind(tree, "chain")
    assert sorted({n.name for n in chains}) == ["Span", "support", "support workflow"]
    traj = extract(tree)
    assert [(r.name, r.dialect) for r in traj.agent_runs] == [("support", "langsmith")]
    got = traj.calls(include_failed=True)
    assert [(c.name, c.args, c.call_id, c.agent) for c in got] == [(n, a, i, "support") for n, a, i in SCENARIO]
    assert [c.status for c in got] == ["ok", "ok", "error", "ok"]
    assert got[2].result == "An error occurred while running the tool. Please try again."


@pytest.mark.parametrize("setting", ["on", "on--stream", "on--responses"])
def test_agents_sdk_model_runs_give_the_requested_calls_and_results(setting: str) -> None:
    """A generation run's output is the assistant message (streamed: the Response the SDK assembles); a response
    run's the Responses output items; their inputs hold the tool messages / `function_call_output` items."""
    requests = _kind(_tree(AGENTS.format(setting)), "llm")
    requested = [[(r.name, r.call_id) for r in langsmith.requested_calls(n.attributes)] for n in requests]
    assert requested == [[("get_weather", "call_w1"), ("get_order", "call_o1")], [("search_kb", "call_s1")],
                         [("search_kb", "call_s2")], []]  # fmt: skip
    results = langsmith.tool_results(requests[-1].attributes)
    assert (results["call_o1"], results["call_s2"]) == ("order 1234: shipped", "Refunds take 5 days.")
    assert results["call_s1"].startswith("An error occurred while running the tool")
    traj = extract(_tree(AGENTS.format(setting), keep=lambda s: s.attributes.get(langsmith.KIND) != "tool"))
    assert [(c.name, c.args, c.call_id, c.executed) for c in traj.calls(include_failed=True)] == [
        (n, a, i, None) for n, a, i in SCENARIO
    ]


def test_a_streamed_agents_sdk_run_counts_every_request_despite_the_placeholder_response_id() -> None:
    """The Agents SDK gives every response it assembles from a streamed chat completion the id `__fake_id__`: that
    names no response, so the four requests are not one request recorded four times."""
    tree = _tree(AGENTS.format("on--stream"))
    assert {n.attributes.get("gen_ai.response.id") for n in _kind(tree, "llm")} == {"__fake_id__"}
    traj = extract(tree)
    assert len(traj.model_requests) == 4
    right, wrong = grade(traj, [MaxModelRequests(max_requests=4), MaxModelRequests(max_requests=3)])
    assert (right.outcome, wrong.outcome) == ("passed", "failed"), (right.reasoning, wrong.reasoning)
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}
    twice = spans_of(_ls("a", "llm", chat | {"gen_ai.response.id": "chatcmpl-1"}),
                     _ls("b", "llm", chat | {"gen_ai.response.id": "chatcmpl-1"}), scope="langsmith")  # fmt: skip
    assert len(extract(twice).model_requests) == 1  # a real id shared: one response recorded twice


@pytest.mark.parametrize(("run", "tokens"), [
    (AGENTS.format("on"), [(49, 57), (157, 31), (231, 31), (295, 17)]),
    (AGENTS.format("off"), [(49, 57), (157, 31), (231, 31), (295, 17)]),
    (RUN.format("off"), [(49, 57), (161, 31), (245, 31), (314, 17)]),
])  # fmt: skip
def test_token_usage_comes_from_the_usage_metadata_when_no_gen_ai_usage_is_recorded(
    run: str, tokens: list[tuple[int, int]]
) -> None:
    """The Agents SDK's generation runs and every model run with hidden outputs record no `gen_ai.usage.*`, but
    the `usage_metadata` metadata; an unknown provider (`gen_ai.system` = `langchain`) is none."""
    requests = extract(_tree(run)).model_requests
    assert not any("gen_ai.usage.input_tokens" in r.span.attributes for r in requests if r.span is not None)
    assert [(r.input_tokens, r.output_tokens) for r in requests] == tokens
    providers = {(r.span.attributes.get("gen_ai.system"), r.provider) for r in requests if r.span is not None}
    assert providers == ({("langchain", None)} if run.startswith("openai-agents") else {("openai", "openai")})


def test_hidden_content_of_a_traceable_loop_is_not_recorded_and_the_reason_names_the_switch() -> None:
    traj = extract(_tree(LOOP.format("off")))
    got = traj.calls(include_failed=True)
    assert [(c.name, c.call_id, c.status) for c in got] == [(n, None, s) for (n, _, _), s in
                                                          zip(SCENARIO, ["ok", "ok", "error", "ok"], strict=True)]  # fmt: skip
    assert all(c.args is NOT_RECORDED and c.result is None for c in got)
    assert [(r.name, r.final_output) for r in traj.agent_runs] == [("support", None)]
    right, arguments = grade(traj, [ToolCorrectness(expected_tools=["get_weather", "get_order", "search_kb"]),
                                    ArgumentCorrectness("get_order", {"order_id": 1234})])  # fmt: skip
    assert right.outcome == "passed"
    assert arguments.outcome == "not_evaluated" and "LANGSMITH_HIDE_INPUTS" in arguments.reasoning, arguments.reasoning
