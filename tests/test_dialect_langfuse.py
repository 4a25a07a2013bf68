"""The Langfuse dialect (`dialects/langfuse.py`): observations typed by `langfuse.observation.type`, read from
the runs recorded with the Langfuse SDK (fixtures/frameworks/openai--langfuse--*, langgraph--langfuse--*) and
from SDK spans of the same shape; content masked or not captured is not_evaluated with Langfuse's own switches
named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _dialect_spans import Node, SpanSpec, calls, spans_of
from tracegrade import grade
from tracegrade.dialects import extract
from tracegrade.evaluators import ArgumentCorrectness, MaxToolCalls, ToolCorrectness
from tracegrade.ingest import read_spans
from tracegrade.trajectory import NOT_RECORDED, Cost, Trajectory
from tracegrade.tree import SpanTree

FRAMEWORKS = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"
SWITCHES = ("mask=", "LANGFUSE_OBSERVE_DECORATOR_IO_CAPTURE_ENABLED=true")


def recorded(run: str) -> Trajectory:
    return extract(SpanTree.from_spans(read_spans(FRAMEWORKS / f"{run}.traces.json")))


def observation(name: str, kind: str, attrs: dict[str, Any] | None = None, *children: Node, failed: str = "") -> Node:
    """A span as the Langfuse SDK records an observation (`failed`: the error status's description)."""
    spec = SpanSpec(name, {"langfuse.observation.type": kind} | (attrs or {}))
    if failed:
        spec = SpanSpec(name, spec.attributes, status="error", description=failed)
    return Node(spec, children)


def tool(name: str, kwargs: Any, *, args: list[Any] | None = None, **attrs: Any) -> Node:
    attributes = {"langfuse.observation.input": json.dumps({"args": args or [], "kwargs": kwargs}), **attrs}
    return observation(name, "tool", attributes)


def generation(output: Any = None, **attrs: Any) -> Node:
    attributes: dict[str, Any] = {"langfuse.observation.model.name": "gpt-4o", **attrs}
    if output is not None:
        attributes["langfuse.observation.output"] = output if isinstance(output, str) else json.dumps(output)
    return observation("OpenAI-generation", "generation", attributes)


def test_decorated_tools_and_the_openai_drop_in_make_the_trajectory() -> None:
    traj = recorded("openai--langfuse--content-on")
    got = [(c.name, c.args, c.args_source, c.call_id, c.status, c.agent, c.result) for c in traj.all_calls]
    assert got == [
        ("get_weather", {"city": "Paris"}, "span", "call_w1", "ok", "support", "sunny, 21C"),
        ("get_order", {"order_id": 1234}, "span", "call_o1", "ok", "support", "order 1234: shipped"),
        ("search_kb", {"query": "refund policy"}, "span", "call_s1", "error", "support", None),
        ("search_kb", {"query": "refund policy"}, "span", "call_s2", "ok", "support", "Refunds take 5 days."),
    ]  # the call ids are the model's, matched by tool name and order (the tool spans record none)
    assert traj.all_calls[2].error == "knowledge base unavailable"
    assert [(r.model, r.input_tokens, r.output_tokens, r.cache_read_tokens, r.agent) for r in traj.model_requests] == [
        ("gpt-4o", 49, 57, 0, "support"), ("gpt-4o", 157, 31, 0, "support"),
        ("gpt-4o", 224, 31, 0, "support"), ("gpt-4o", 288, 17, 0, "support"),
    ]  # fmt: skip
    [run] = traj.agent_runs
    assert (run.name, run.final_output) == (
        "support",
        "Order 1234 has shipped. It is sunny in Paris. Refunds take 5 days.",
    )


@pytest.mark.parametrize("run", ["openai--langfuse--content-off", "openai--langfuse--content-off--stream"])
def test_uncaptured_tool_input_names_langfuses_capture_switches(run: str) -> None:
    traj = recorded(run)
    assert [c.name for c in traj.all_calls] == ["get_weather", "get_order", "search_kb", "search_kb"]
    assert all(c.args is NOT_RECORDED for c in traj.all_calls)
    [result] = grade(traj, [ArgumentCorrectness("get_order", {"order_id": 1234})])
    assert result.outcome == "not_evaluated"
    assert "langfuse-sdk" in result.reasoning and all(s in result.reasoning for s in SWITCHES), result.reasoning


def test_generations_alone_give_the_requested_calls_and_their_results() -> None:
    traj = recorded("openai--langfuse--content-on--openai-only")
    got = [(c.name, c.args, c.args_source, c.call_id, c.executed, c.agent, c.result) for c in traj.all_calls]
    assert got == [
        ("get_weather", {"city": "Paris"}, "messages", "call_w1", None, "support", "sunny, 21C"),
        ("get_order", {"order_id": 1234}, "messages", "call_o1", None, "support", "order 1234: shipped"),
        ("search_kb", {"query": "refund policy"}, "messages", "call_s1", None, "support",
         "Error: knowledge base unavailable"),
        ("search_kb", {"query": "refund policy"}, "messages", "call_s2", None, "support", "Refunds take 5 days."),
    ]  # fmt: skip


def test_masked_generations_leave_tool_checks_not_evaluated() -> None:
    traj = recorded("openai--langfuse--content-off--openai-only")
    assert traj.all_calls == [] and len(traj.model_requests) == 4
    results = grade(traj, [ToolCorrectness(expected_tools=["get_order"]), MaxToolCalls(max_calls=4)])
    assert [r.outcome for r in results] == ["not_evaluated", "not_evaluated"]
    for r in results:
        assert "OpenAI-generation" in r.reasoning and all(s in r.reasoning for s in SWITCHES), r.reasoning


@pytest.mark.parametrize(
    ("recorded_input", "expected"),
    [
        ({"args": [], "kwargs": {"city": "Paris"}}, {"city": "Paris"}),
        ({"args": [], "kwargs": {}}, {}),
        ({"args": ["Paris"], "kwargs": {}}, NOT_RECORDED),  # names unknown: not guessed
        ({"args": ["Paris"], "kwargs": {"units": "C"}}, {"units": "C"}),
        ({"city": "Paris"}, {"city": "Paris"}),  # set with update(input=...): not a wrapper
        ("[REDACTED]", NOT_RECORDED),  # a mask= function's marker
        ("Paris", "Paris"),
    ],
    ids=["kwargs", "no-args", "positional", "positional-and-kwargs", "plain", "masked", "text"],
)
def test_tool_arguments_are_the_decorated_functions_kwargs(recorded_input: Any, expected: Any) -> None:
    raw = recorded_input if isinstance(recorded_input, str) else json.dumps(recorded_input)
    [call] = calls(spans_of(observation("get_weather", "tool", {"langfuse.observation.input": raw})))
    assert call.args == expected


def test_positional_arguments_take_the_models_requested_ones() -> None:
    requested = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
        ],
    }
    tree = spans_of(observation("support", "agent", {}, generation(requested), tool("get_weather", {}, args=["Paris"])))
    [call] = extract(tree).all_calls
    assert (call.args, call.args_source, call.call_id, call.executed) == ({"city": "Paris"}, "messages", "call_1", True)


def test_langfuse_usage_and_cost_details_are_read() -> None:
    usage = json.dumps({"input": 120, "output": 30, "total": 150, "input_cached_tokens": 100})
    cost = json.dumps({"input": 0.0012, "output": 0.0009, "total": 0.0021})
    traj = extract(spans_of(generation(**{"langfuse.observation.usage_details": usage,
                                          "langfuse.observation.cost_details": cost})))  # fmt: skip
    [req] = traj.model_requests
    assert (req.input_tokens, req.output_tokens, req.cache_read_tokens, req.cost) == (120, 30, 100, Cost(0.0021, "USD"))


@pytest.mark.parametrize(
    ("output", "outcome"),
    [({"role": "assistant", "content": "Hello."}, "passed"), ("[REDACTED]", "not_evaluated")],
    ids=["recorded", "masked"],
)
def test_a_generation_without_tool_calls_shows_none_were_called_only_when_its_output_is_recorded(
    output: Any, outcome: str
) -> None:
    traj = extract(spans_of(observation("support", "agent", {}, generation(output))))
    [result] = grade(traj, [MaxToolCalls(max_calls=0)])
    assert result.outcome == outcome, result.reasoning


@pytest.mark.parametrize(
    ("attrs", "failed", "error"),
    [
        ({"langfuse.observation.level": "ERROR", "langfuse.observation.status_message": "timed out"}, "", "timed out"),
        ({}, "boom", "boom"),
        ({"langfuse.observation.level": "WARNING"}, "", None),
    ],
    ids=["level-error", "status-error", "warning"],
)  # fmt: skip
def test_a_failed_tool_observation_is_a_failed_call(attrs: dict[str, Any], failed: str, error: str | None) -> None:
    node = observation("search_kb", "tool", {"langfuse.observation.input": '{"args": [], "kwargs": {}}', **attrs},
                       failed=failed)  # fmt: skip
    [call] = calls(spans_of(node))
    assert (call.status, call.error) == ("error" if error else "ok", error)


@pytest.mark.parametrize("kind", ["span", "chain", "retriever", "embedding", "evaluator", "guardrail", "event"])
def test_other_observation_types_are_recognized_but_are_no_steps(kind: str) -> None:
    explain: dict[int, str] = {}
    tree = spans_of(observation("step", kind))
    traj = extract(tree, explain=explain)
    assert (traj.all_calls, traj.model_requests, traj.agent_runs) == ([], [], [])
    assert list(explain.values()) == ["langfuse: recognized, not a step"]


def test_positional_arguments_without_a_recorded_request_are_not_evaluated() -> None:
    """No generation supplies the arguments: their names are unknown, so the check is not decided either way."""
    tree = spans_of(observation("support", "agent", {}, tool("get_weather", {}, args=["Paris"])))
    [call] = extract(tree).all_calls
    assert (call.args, call.args_source) == (NOT_RECORDED, "span")
    [result] = grade(tree, [ArgumentCorrectness("get_weather", {"city": "Paris"})])
    assert result.outcome == "not_evaluated"
    assert "recorded by test without their names ('{\"args\": [\"Paris\"]" in result.reasoning, result.reasoning


# --- Langfuse's LangChain integration (`langfuse.langchain.CallbackHandler`) on a LangGraph agent:
# fixtures/frameworks/langgraph--langfuse--*

LANGGRAPH = {"langfuse.trace.metadata.ls_integration": '"langgraph"'}  # on every span of a LangGraph trace


def langchain_generation(output: dict[str, Any], messages: list[dict[str, Any]] | None = None) -> Node:
    """A ChatOpenAI generation as the handler records it: LangChain's assistant message as output."""
    attrs = {**LANGGRAPH, "langfuse.observation.output": json.dumps(output)}
    if messages is not None:
        attrs["langfuse.observation.input"] = json.dumps(messages)
    return observation("ChatOpenAI", "generation", attrs)


@pytest.mark.parametrize("run", ["langgraph--langfuse--content-on", "langgraph--langfuse--content-on--stream"])
def test_callback_handler_tools_read_arguments_call_ids_and_tool_message_results(run: str) -> None:
    traj = recorded(run)
    got = [(c.name, c.args, c.args_source, c.call_id, c.status, c.agent, c.result) for c in traj.all_calls]
    assert got == [
        ("get_weather", {"city": "Paris"}, "span", "call_w1", "ok", "support", "sunny, 21C"),
        ("get_order", {"order_id": 1234}, "span", "call_o1", "ok", "support", "order 1234: shipped"),
        ("search_kb", {"query": "refund policy"}, "span", "call_s1", "error", "support", None),
        ("search_kb", {"query": "refund policy"}, "span", "call_s2", "ok", "support", "Refunds take 5 days."),
    ]  # results are the ToolMessages' content; call ids from the tool_call_id metadata
    assert traj.all_calls[2].error == "knowledge base unavailable"
    assert [(r.model, r.input_tokens, r.output_tokens, r.agent) for r in traj.model_requests] == [
        ("gpt-4o", 49, 57, "support"), ("gpt-4o", 161, 31, "support"),
        ("gpt-4o", 245, 31, "support"), ("gpt-4o", 314, 17, "support"),
    ]  # fmt: skip


@pytest.mark.parametrize("run", ["langgraph--langfuse--content-on", "langgraph--langfuse--content-off"])
def test_the_langgraph_graph_is_the_one_agent_run_not_its_agent_typed_node(run: str) -> None:
    traj = recorded(run)
    final = "Order 1234 has shipped. It is sunny in Paris. Refunds take 5 days."
    assert [(r.name, r.final_output) for r in traj.agent_runs] == [("support", final if run.endswith("on") else None)]


@pytest.mark.parametrize("run", ["langgraph--langfuse--content-off", "langgraph--langfuse--content-off--stream"])
def test_masked_callback_handler_run_keeps_names_tokens_and_the_failure(run: str) -> None:
    traj = recorded(run)
    got = [(c.name, c.call_id, c.status, c.agent) for c in traj.all_calls]
    assert got == [("get_weather", None, "ok", "support"), ("get_order", None, "ok", "support"),
                   ("search_kb", None, "error", "support"), ("search_kb", None, "ok", "support")]  # fmt: skip
    assert all(c.args is NOT_RECORDED and c.result is None for c in traj.all_calls)
    assert [r.input_tokens for r in traj.model_requests] == [49, 161, 245, 314]
    [result] = grade(traj, [ArgumentCorrectness("get_order", {"order_id": 1234})])
    assert result.outcome == "not_evaluated"
    assert "mask=" in result.reasoning and "LangChain integrations" in result.reasoning, result.reasoning


def test_langchain_generations_alone_give_the_requested_calls_and_their_results() -> None:
    first = {"role": "assistant", "content": "", "tool_calls": [
        {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_w1", "type": "tool_call"}]}  # fmt: skip
    tool_definition = {"role": "tool", "content": {"type": "function", "function": {"name": "get_weather"}}}
    second_input = [{"role": "user", "content": "weather?"}, first,
                    {"role": "tool", "content": "sunny, 21C", "tool_call_id": "call_w1", "name": "get_weather"},
                    tool_definition]  # fmt: skip
    answer = langchain_generation({"role": "assistant", "content": "Sunny."}, second_input)
    tree = spans_of(observation("support", "chain", LANGGRAPH, langchain_generation(first), answer))
    [call] = extract(tree).all_calls
    got = (call.name, call.args, call.args_source, call.call_id, call.result, call.agent)
    assert got == ("get_weather", {"city": "Paris"}, "messages", "call_w1", "sunny, 21C", "support")


def test_only_the_outermost_span_of_a_langgraph_trace_is_a_run() -> None:
    node = observation("agent", "agent", LANGGRAPH)  # the prebuilt agent's node, typed agent by its name
    subgraph = observation("researcher", "chain", LANGGRAPH, node)  # a graph inside a node of the outer graph
    graph = observation("LangGraph", "chain", LANGGRAPH, subgraph)
    assert [r.name for r in extract(spans_of(graph)).agent_runs] == ["LangGraph"]
    # a graph called inside an @observe(as_type="agent") function is a run inside that run
    outer = extract(spans_of(observation("support", "agent", {}, graph))).agent_runs
    nesting = [(r.name, r.parent.name if r.parent else None) for r in outer]
    assert nesting == [("support", None), ("LangGraph", "support")]
    # a chain outside LangGraph is no run
    assert extract(spans_of(observation("RunnableSequence", "chain"))).agent_runs == []


# --- Langfuse's Haystack integration (`langfuse-haystack`'s `LangfuseConnector`) on a Haystack Agent:
# fixtures/frameworks/haystack--langfuse--*

HAYSTACK_FINAL = "Order 1234 has shipped. It is sunny in Paris. Refunds take 5 days."
HAYSTACK_ERROR = ("Failed to invoke Tool `search_kb` with parameters {'query': 'refund policy'}. "
                  "Error: knowledge base unavailable")  # fmt: skip


@pytest.mark.parametrize("run", ["haystack--langfuse--content-on", "haystack--langfuse--content-on--stream"])
def test_haystack_tool_observations_are_their_tools_with_the_models_call_ids(run: str) -> None:
    traj = recorded(run)
    got = [(c.name, c.args, c.args_source, c.call_id, c.status, c.agent, c.result) for c in traj.all_calls]
    assert got == [
        ("get_weather", {"city": "Paris"}, "span", "call_w1", "ok", "support", "sunny, 21C"),
        ("get_order", {"order_id": 1234}, "span", "call_o1", "ok", "support", "order 1234: shipped"),
        ("search_kb", {"query": "refund policy"}, "span", "call_s1", "error", "support", None),
        ("search_kb", {"query": "refund policy"}, "span", "call_s2", "ok", "support", "Refunds take 5 days."),
    ]  # named 'tool - <name>', the tool from the haystack.tool.name metadata; ids matched by name and order
    assert traj.all_calls[2].error == HAYSTACK_ERROR  # the {"error": ...} output of the flagged observation
    assert [(r.name, r.final_output) for r in traj.agent_runs] == [("support", HAYSTACK_FINAL)]  # last_message


@pytest.mark.parametrize("run", ["haystack--langfuse--content-off", "haystack--langfuse--content-off--stream"])
def test_haystack_content_tracing_off_keeps_names_and_the_failure_and_names_its_switch(run: str) -> None:
    traj = recorded(run)
    got = [(c.name, c.call_id, c.status, c.agent) for c in traj.all_calls]
    assert got == [("get_weather", None, "ok", "support"), ("get_order", None, "ok", "support"),
                   ("search_kb", None, "error", "support"), ("search_kb", None, "ok", "support")]  # fmt: skip
    assert all(c.args is NOT_RECORDED and c.result is None for c in traj.all_calls)
    assert [(r.model, r.input_tokens) for r in traj.model_requests] == [(None, None)] * 4
    [result] = grade(traj, [ArgumentCorrectness("get_order", {"order_id": 1234})])
    assert result.outcome == "not_evaluated"
    assert "HAYSTACK_CONTENT_TRACING_ENABLED=true" in result.reasoning, result.reasoning


def test_masked_haystack_run_names_tools_from_the_observation_name_inside_an_agent_step() -> None:
    traj = recorded("haystack--langfuse--content-off--mask")
    got = [(c.name, c.status, c.agent) for c in traj.all_calls]
    assert got == [("get_weather", "ok", "support"), ("get_order", "ok", "support"),
                   ("search_kb", "ok", "support"), ("search_kb", "ok", "support")]  # fmt: skip
    # the masked metadata took the error flag with it: the failure is not recorded, so not read
    assert all(c.args is NOT_RECORDED for c in traj.all_calls)
    assert [r.input_tokens for r in traj.model_requests] == [49, 152, 235, 295]
    [result] = grade(traj, [ArgumentCorrectness("get_order", {"order_id": 1234})])
    assert result.outcome == "not_evaluated" and "mask=" in result.reasoning, result.reasoning


@pytest.mark.parametrize(
    ("step", "name", "expected"),
    [("agent step 2", "tool - get_weather", "get_weather"), ("agent step two", "tool - get_weather",
     "tool - get_weather"), ("agent step 2", "tool - ", "tool - "), ("agent step 2", "get_weather", "get_weather")],
    ids=["haystack-step", "not-a-step", "no-tool", "no-prefix"],
)  # fmt: skip
def test_the_tool_prefix_is_haystacks_only_inside_an_agent_step_chain(step: str, name: str, expected: str) -> None:
    tree = spans_of(observation("support", "agent", {}, observation(step, "chain", {}, observation(name, "tool"))))
    assert [c.name for c in calls(tree)] == [expected]
    outside = spans_of(observation("support", "agent", {}, observation("tool - get_weather", "tool")))
    assert [c.name for c in calls(outside)] == ["tool - get_weather"]


def test_haystack_tool_name_metadata_and_error_flag_are_read() -> None:
    attrs = {"langfuse.observation.metadata.haystack.tool.name": '"search_kb"',
             "langfuse.observation.metadata.haystack.tool.error": "true",
             "langfuse.observation.output": json.dumps({"error": "knowledge base unavailable"})}  # fmt: skip
    [call] = calls(spans_of(observation("kb lookup", "tool", attrs)))
    assert (call.name, call.status, call.error, call.result) == ("search_kb", "error", "knowledge base unavailable", None)
    flagged_only = {k: v for k, v in attrs.items() if k != "langfuse.observation.output"}
    [call] = calls(spans_of(observation("kb lookup", "tool", flagged_only)))
    assert (call.status, call.error) == ("error", "error")


def test_a_haystack_agent_result_gives_its_last_messages_text() -> None:
    result = {"messages": [{"role": "user", "content": [{"text": "hi"}]}],
              "last_message": {"role": "assistant", "content": [{"text": "Hello"}, {"text": " there."}]}}  # fmt: skip
    tree = spans_of(observation("support", "agent", {"langfuse.observation.output": json.dumps(result)}))
    assert [r.final_output for r in extract(tree).agent_runs] == ["Hello there."]
    plain = {"answer": "Hello."}  # any other output is kept as recorded
    tree = spans_of(observation("support", "agent", {"langfuse.observation.output": json.dumps(plain)}))
    assert [r.final_output for r in extract(tree).agent_runs] == [plain]


def test_assistant_tool_calls_of_every_recorded_shape_are_requested_calls() -> None:
    """OpenAI function and custom tool calls and LangChain's calls are read; an entry of another shape is a call
    whose name was not recorded (noted, not dropped); an entry that is not an object is no call."""
    from tracegrade.dialects._messages import Requested, tool_calls_in

    entries = [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        {"id": "c2", "type": "custom", "custom": {"name": "run_sql", "input": "SELECT 1"}},
        {"name": "get_order", "args": {"order_id": 1234}, "id": "c3", "type": "tool_call"},
        {"id": "c4", "type": "mystery"},
        "not a call",
    ]
    assert tool_calls_in(entries) == [
        Requested("get_weather", '{"city": "Paris"}', "c1"),
        Requested("run_sql", "SELECT 1", "c2"),
        Requested("get_order", {"order_id": 1234}, "c3"),
        Requested(None, None, "c4"),
    ]
    assert tool_calls_in(None) == tool_calls_in({"id": "c1"}) == []
    message = {"role": "assistant", "content": None, "tool_calls": entries}
    traj = extract(spans_of(observation("support", "agent", {}, generation(message))))
    assert [(c.name, c.args, c.call_id, c.executed) for c in traj.all_calls] == [
        ("get_weather", {"city": "Paris"}, "c1", None), ("run_sql", "SELECT 1", "c2", None),
        ("get_order", {"order_id": 1234}, "c3", None),
    ]  # fmt: skip
    assert any("whose name was not recorded" in note for note in traj.incomplete), traj.incomplete


def test_tool_results_of_every_recorded_message_shape_are_read() -> None:
    """OpenAI tool messages, LangChain ToolMessages, Responses function_call_output items and Anthropic tool_result
    blocks give `{call_id: result}`; other messages and entries that are not objects give none."""
    from tracegrade.dialects._messages import tool_results_in

    messages = [
        {"role": "user", "content": "weather?"},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"type": "tool", "tool_call_id": "c2", "content": "shipped"},
        {"type": "function_call_output", "call_id": "c3", "output": "5 days"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c4", "content": "ok"}, {"type": "text"}]},
        {"role": "tool", "content": "no id"},
        "not a message",
    ]
    assert tool_results_in(messages) == {"c1": "sunny", "c2": "shipped", "c3": "5 days", "c4": "ok"}
    traj = extract(spans_of(observation("support", "agent", {}, generation(
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]}),
        generation({"role": "assistant", "content": "Sunny."},
                   **{"langfuse.observation.input": json.dumps(messages)}))))  # fmt: skip
    assert [(c.name, c.result) for c in traj.all_calls] == [("get_weather", "sunny")]
