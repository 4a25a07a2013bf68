"""The MLflow dialect (`dialects/mlflow.py`): MLflow Tracing's OTLP export of a hand-written loop
(`mlflow.openai.autolog()`, `@mlflow.trace` tools and loop) and of a LangGraph agent (`mlflow.langchain.autolog()`)
— committed corpus runs —, their tool, model-request and agent spans, the requested calls and tool results in the
recorded chat completions and request messages, and masked content read as not recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _dialect_spans import Node, SpanSpec, spans_of
from tracegrade import grade, load_traces
from tracegrade.dialects import classify, content_setting, extract, mlflow
from tracegrade.evaluators import ArgumentCorrectness, MaxModelRequests, MaxTokens, ToolCorrectness
from tracegrade.ingest import read_spans
from tracegrade.trajectory import NOT_RECORDED, AgentRun, ModelRequest, ToolCall
from tracegrade.tree import SpanTree

FRAMEWORKS = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"
LOOP = "openai--mlflow--content-on{}"
GRAPH = "langgraph--mlflow--content-on{}"
MASKED = ["openai--mlflow--content-off", "langgraph--mlflow--content-off--stream"]
FINAL = "Order 1234 has shipped. It is sunny in Paris. Refunds take 5 days."
SCENARIO = [
    ("get_weather", {"city": "Paris"}, "call_w1"),
    ("get_order", {"order_id": 1234}, "call_o1"),
    ("search_kb", {"query": "refund policy"}, "call_s1"),
    ("search_kb", {"query": "refund policy"}, "call_s2"),
]
RESULTS = ["sunny, 21C", "order 1234: shipped", None, "Refunds take 5 days."]


def _tree(run: str, keep: Any = None) -> SpanTree:
    spans = read_spans(FRAMEWORKS / f"{run}.traces.json")
    return SpanTree.from_spans([s for s in spans if keep is None or keep(s)])


def _typed(tree: SpanTree, span_type: str) -> list[Any]:
    return [n for n in tree if n.attributes.get(mlflow.SPAN_TYPE) == json.dumps(span_type)]


def test_a_traced_loop_is_the_agent_run_and_its_tool_spans_take_the_models_call_ids() -> None:
    """The `@mlflow.trace(span_type=AGENT)` loop is the agent run (its output the final text); the decorated tools
    record their keyword arguments and return value, no call id: the autologged requests' calls supply it."""
    traj = extract(_tree(LOOP.format("")))
    assert [(r.name, r.final_output, r.dialect) for r in traj.agent_runs] == [("support", FINAL, "mlflow")]
    got = traj.calls(include_failed=True)
    assert [(c.name, c.args, c.call_id) for c in got] == SCENARIO
    assert {(c.dialect, c.args_source, c.agent, c.executed) for c in got} == {("mlflow", "span", "support", True)}
    assert [c.status for c in got] == ["ok", "ok", "error", "ok"]
    assert got[2].error == "RuntimeError: knowledge base unavailable"
    assert [c.result for c in got] == RESULTS
    assert [(r.model, r.input_tokens, r.output_tokens, r.cache_read_tokens, r.dialect) for r in traj.model_requests] == [
        ("gpt-4o", 49, 57, 0, "mlflow"), ("gpt-4o", 157, 31, 0, "mlflow"), ("gpt-4o", 224, 31, 0, "mlflow"),
        ("gpt-4o", 288, 17, 0, "mlflow"),
    ]  # fmt: skip


def test_requested_calls_and_results_are_read_from_the_chat_completion_and_the_request() -> None:
    requests = _typed(_tree(LOOP.format("")), "CHAT_MODEL")
    requested = [[(r.name, r.arguments, r.call_id) for r in mlflow.requested_calls(n.attributes)] for n in requests]
    assert requested == [
        [("get_weather", '{"city": "Paris"}', "call_w1"), ("get_order", '{"order_id": 1234}', "call_o1")],
        [("search_kb", '{"query": "refund policy"}', "call_s1")], [("search_kb", '{"query": "refund policy"}', "call_s2")],
        [],
    ]  # fmt: skip
    assert mlflow.tool_results(requests[-1].attributes) == {
        "call_w1": "sunny, 21C", "call_o1": "order 1234: shipped", "call_s1": "Error: knowledge base unavailable",
        "call_s2": "Refunds take 5 days.",
    }  # fmt: skip
    assert mlflow.tool_results(requests[0].attributes) == {}


def test_a_streamed_requests_calls_are_read_from_its_chunk_events_so_the_tool_spans_take_their_ids() -> None:
    """MLflow reduces a streamed chat completion to its text (tool_calls null, finish_reason stop), and records the
    chunks as span events (`mlflow.chunk.item.N`): the calls are read from their deltas (id and name as first sent,
    argument fragments joined by index), so the tool spans take the model's call ids; the results the requests
    were given are still read."""
    tree = _tree(LOOP.format("--stream"))
    requests = _typed(tree, "CHAT_MODEL")
    assert [mlflow.requested_calls(n.attributes) for n in requests] == [[], [], [], []]
    streamed = [[(r.name, json.loads(r.arguments), r.call_id) for r in mlflow.streamed_calls(n)] for n in requests]
    assert streamed == [SCENARIO[:2], SCENARIO[2:3], SCENARIO[3:], []]
    assert mlflow.tool_results(requests[-1].attributes)["call_s2"] == "Refunds take 5 days."
    got = extract(tree).calls(include_failed=True)
    assert [(c.name, c.args, c.call_id, c.status) for c in got] == [
        (n, a, i, s) for (n, a, i), s in zip(SCENARIO, ["ok", "ok", "error", "ok"], strict=True)
    ]


@pytest.mark.parametrize("setting", ["on", "off"])
def test_crewai_streamed_through_the_openai_autolog_reads_the_calls_from_the_chunks(setting: str) -> None:
    """CrewAI's native provider streaming through the OpenAI client: no tool span; the requests' outputs hold text
    only, and the calls are in the chunk events, which a masking function over inputs and outputs leaves in place."""
    traj = extract(_tree(CREWAI.format(f"{setting}--stream--with-openai")))
    assert [(c.name, c.args, c.call_id, c.executed) for c in traj.all_calls] == [
        (n, a, i, None) for n, a, i in SCENARIO]  # fmt: skip
    want = [*RESULTS[:2], "Error executing tool: knowledge base unavailable", RESULTS[3]]
    assert [c.result for c in traj.all_calls] == (want if setting == "on" else [None] * 4)
    assert len(traj.model_requests) == 4 and traj.missing == {}


@pytest.mark.parametrize("stream", ["", "--stream"])
def test_a_crewai_tasks_recorded_conversation_gives_the_calls_when_nothing_else_records_them(stream: str) -> None:
    """mlflow.crewai.autolog() with this CrewAI records no tool or model-request span, but the Task.execute_sync
    span's outputs are the TaskOutput with the whole conversation: the calls in order with ids, arguments and
    results, credited to the task's agent; the request budget stays not_evaluated (no request spans)."""
    tree = _tree(CREWAI.format(f"on{stream}"))
    explain: dict[int, str] = {}
    traj = extract(tree, explain=explain)
    assert [(c.name, c.args, c.call_id, c.agent, c.executed) for c in traj.all_calls] == [
        (n, a, i, "support", None) for n, a, i in SCENARIO]  # fmt: skip
    assert [c.result for c in traj.all_calls][::3] == ["sunny, 21C", "Refunds take 5 days."]
    (task,) = [n for n in tree if n.name == "Task.execute_sync"]
    assert {c.span for c in traj.all_calls} == {task}
    assert explain[id(task)] == "mlflow: a recorded conversation holding the trace's tool calls"
    right, budget = grade(traj, [ToolCorrectness(expected_tools=[n for n, _, _ in SCENARIO]),
                                 MaxModelRequests(max_requests=4)])  # fmt: skip
    assert (right.outcome, budget.outcome) == ("passed", "not_evaluated"), (right.reasoning, budget.reasoning)
    # the Crew.kickoff span repeats the conversation in its tasks_output: no call is read twice
    assert mlflow.transcript(next(n for n in tree if n.name == "Crew.kickoff")) is None


def test_a_loops_model_spans_alone_give_the_calls_their_arguments_ids_and_results() -> None:
    traj = extract(_tree(LOOP.format(""), keep=lambda s: s.attributes.get(mlflow.SPAN_TYPE) != '"TOOL"'))
    got = traj.calls(include_failed=True)
    assert [(c.name, c.args, c.call_id) for c in got] == SCENARIO
    assert {(c.args_source, c.executed, c.agent) for c in got} == {("messages", None, "support")}
    assert [c.result for c in got] == ["sunny, 21C", "order 1234: shipped", "Error: knowledge base unavailable",
                                       "Refunds take 5 days."]  # fmt: skip


@pytest.mark.parametrize("setting", ["", "--stream"])
def test_a_langgraph_graph_is_the_run_and_its_tool_spans_carry_langchains_call_ids(setting: str) -> None:
    """The graph's outermost CHAIN span (LangGraph metadata without a node) is the run, not its nodes' CHAIN spans;
    a tool span's `tool_call_id` attribute is the model's call id, its ToolMessage output's content the result."""
    traj = extract(_tree(GRAPH.format(setting)))
    assert [(r.name, r.final_output, r.dialect) for r in traj.agent_runs] == [("support", FINAL, "mlflow")]
    got = traj.calls(include_failed=True)
    assert [(c.name, c.args, c.call_id) for c in got] == SCENARIO
    assert {(c.dialect, c.args_source, c.agent) for c in got} == {("mlflow", "span", "support")}
    assert [c.status for c in got] == ["ok", "ok", "error", "ok"]
    assert got[2].error == "knowledge base unavailable"
    assert [c.result for c in got] == RESULTS
    assert [(r.model, r.provider, r.input_tokens) for r in traj.model_requests] == [
        ("gpt-4o", "openai", 49), ("gpt-4o", "openai", 161), ("gpt-4o", "openai", 245), ("gpt-4o", "openai", 314),
    ]  # fmt: skip


def test_langchain_requests_record_the_calls_in_the_chat_completion_shape() -> None:
    requests = _typed(_tree(GRAPH.format("")), "CHAT_MODEL")
    requested = [[(r.name, r.call_id) for r in mlflow.requested_calls(n.attributes)] for n in requests]
    assert requested == [[("get_weather", "call_w1"), ("get_order", "call_o1")], [("search_kb", "call_s1")],
                         [("search_kb", "call_s2")], []]  # fmt: skip
    results = mlflow.tool_results(requests[-1].attributes)
    assert results["call_w1"] == "sunny, 21C" and results["call_s2"] == "Refunds take 5 days."


def test_the_genai_semconv_export_carries_no_mlflow_attributes_and_is_read_as_genai() -> None:
    """With MLFLOW_ENABLE_OTEL_GENAI_SEMCONV=true MLflow exports `gen_ai.*` in place of `mlflow.*`: the MLflow
    dialect recognizes none of it."""
    tree = _tree(LOOP.format("--genai-semconv"))
    assert not any(mlflow.recognizes(n) for n in tree)
    traj = extract(tree)
    assert [(c.name, c.args, c.call_id, c.dialect) for c in traj.calls(include_failed=True)] == [
        (n, a, i, "genai") for n, a, i in SCENARIO
    ]
    assert [(r.name, r.dialect) for r in traj.agent_runs] == [("support", "genai")]


@pytest.mark.parametrize("run", MASKED)
def test_inputs_and_outputs_a_span_processor_masked_are_not_recorded_and_the_reason_names_it(run: str) -> None:
    """Content off is a `mlflow.tracing.configure(span_processors=[...])` function setting inputs and outputs to None:
    arguments and results are not recorded (the argument check is not_evaluated, naming that setting); names,
    LangChain's call ids, failures and token usage still are."""
    traj = extract(_tree(run))
    got = traj.calls(include_failed=True)
    graph = run.startswith("langgraph")
    assert [(c.name, c.call_id, c.status) for c in got] == [
        (n, i if graph else None, s) for (n, _, i), s in zip(SCENARIO, ["ok", "ok", "error", "ok"], strict=True)
    ]
    assert all(c.args is NOT_RECORDED and c.result is None for c in got)
    assert [r.final_output for r in traj.agent_runs] == [None]
    tokens = [49, 161, 245, 314] if graph else [49, 157, 224, 288]
    assert [r.input_tokens for r in traj.model_requests] == tokens
    named, arguments = grade(traj, [ToolCorrectness(expected_tools=["get_weather", "get_order", "search_kb"]),
                                    ArgumentCorrectness("get_order", {"order_id": 1234})])  # fmt: skip
    assert named.outcome == "passed"
    assert arguments.outcome == "not_evaluated", arguments.reasoning
    assert "mlflow.tracing.configure(span_processors=" in arguments.reasoning, arguments.reasoning


# --- single behaviours, on spans made with the OpenTelemetry SDK as MLflow writes them -----------------------

SCOPE = "mlflow.tracing.provider"


def _span(name: str, span_type: str, attrs: dict[str, Any] | None = None, *children: Node, **spec: Any) -> Node:
    base = {mlflow.SPAN_TYPE: json.dumps(span_type), "mlflow.traceRequestId": json.dumps("tr-1")}
    return Node(SpanSpec(name, base | (attrs or {}), **spec), children)


def _graph_metadata(node: str | None = None) -> dict[str, str]:
    metadata: dict[str, Any] = {"ls_integration": "langgraph"}
    if node is not None:
        metadata["langgraph_node"] = node
    return {mlflow.METADATA: json.dumps(metadata)}


def test_a_graph_inside_a_node_a_plain_chain_and_other_span_types_are_no_steps() -> None:
    """A graph run inside another graph's node carries that node's metadata: its calls are the outer graph's. A
    CHAIN span without LangGraph metadata, and a RETRIEVER span, are recognized but are no steps; an LLM span is a
    model request; a span without `mlflow.spanType` is not MLflow's."""
    tool = _span("lookup", "TOOL", {mlflow.INPUTS: '{"q": "x"}', mlflow.OUTPUTS: '"found"'})
    tree = spans_of(
        _span("outer", "CHAIN", _graph_metadata(),
              _span("agent", "CHAIN", _graph_metadata("agent"),
                    _span("inner", "CHAIN", _graph_metadata("agent"), tool)),
              _span("RunnableSequence", "CHAIN"), _span("docs", "RETRIEVER"),
              _span("complete", "LLM", {mlflow.MODEL: '"gpt-4o"', mlflow.USAGE: '{"input_tokens": 5, "output_tokens": 2}'}),
              Node(SpanSpec("http GET", {"http.method": "GET"}))),
        scope=SCOPE,
    )  # fmt: skip
    by_name = {n.name: n for n in tree}
    assert [classify(by_name[n]) for n in ("agent", "inner", "RunnableSequence", "docs")] == [True] * 4
    assert classify(by_name["http GET"]) is False and not mlflow.recognizes(by_name["http GET"])
    assert isinstance(run := classify(by_name["outer"]), AgentRun) and run.name == "outer"
    assert isinstance(request := classify(by_name["complete"]), ModelRequest)
    assert (request.model, request.input_tokens, request.output_tokens) == ("gpt-4o", 5, 2)
    traj = extract(tree)
    assert [(c.name, c.args, c.result, c.agent) for c in traj.calls()] == [("lookup", {"q": "x"}, "found", "outer")]


def test_a_failed_tool_without_a_status_message_takes_the_exception_events_message() -> None:
    tree = spans_of(_span("search", "TOOL", {mlflow.INPUTS: '{"q": "x"}'}, status="error",
                          exception=RuntimeError("index offline")), scope=SCOPE)  # fmt: skip
    (call,) = extract(tree).calls(include_failed=True)
    assert (call.status, call.error, call.result) == ("error", "index offline", None)


def test_masked_inputs_and_outputs_are_not_recorded_and_the_reason_names_mlflows_span_processors() -> None:
    """A user's `mlflow.tracing.configure(span_processors=[...])` function that sets a span's inputs and outputs to
    None leaves `null`: not recorded, and the argument check says which setting records them."""
    tree = spans_of(_span("support", "AGENT", {mlflow.OUTPUTS: '"done"'},
                          _span("get_order", "TOOL", {mlflow.INPUTS: "null", mlflow.OUTPUTS: "null"})),
                    scope=SCOPE)  # fmt: skip
    traj = extract(tree)
    (call,) = traj.calls()
    assert (call.name, call.args, call.result, call.agent) == ("get_order", NOT_RECORDED, None, "support")
    named, arguments = grade(traj, [ToolCorrectness(expected_tools=["get_order"]),
                                    ArgumentCorrectness("get_order", {"order_id": 1234})])  # fmt: skip
    assert named.outcome == "passed"
    assert arguments.outcome == "not_evaluated", arguments.reasoning
    assert "mlflow.tracing.configure(span_processors=" in arguments.reasoning, arguments.reasoning


# --- more autolog integrations: the OpenAI Agents SDK, DSPy ReAct, the Anthropic client (committed corpus runs) ------

AGENTS = "openai-agents--mlflow--content-{}"
AGENTS_RESULTS = ["sunny, 21C", "order 1234: shipped", "An error occurred while running the tool. Please try again.",
                  "Refunds take 5 days."]  # fmt: skip


@pytest.mark.parametrize("setting", ["on", "on--stream"])
def test_an_agents_sdk_run_is_the_runners_unnamed_run_around_the_sdks_named_agent(setting: str) -> None:
    """`mlflow.openai.autolog()` opens an AGENT span around `Runner.run` (`AgentRunner.run`, marked
    `mlflow.openai.agent_run_root`): a run with no agent's name holding the final output; the SDK's agent span is the
    agent `support`, whose recorded `{"output_type": "str"}` is no output. The calls are the agent's."""
    traj = extract(_tree(AGENTS.format(setting)))
    assert [(r.name, r.final_output) for r in traj.agent_runs] == [(None, FINAL), ("support", None)]
    assert traj.final_output == FINAL
    got = traj.calls(include_failed=True)
    assert [(c.name, c.args, c.call_id) for c in got] == SCENARIO
    assert {(c.dialect, c.args_source, c.agent) for c in got} == {("mlflow", "span", "support")}
    assert [c.status for c in got] == ["ok", "ok", "error", "ok"]
    assert [c.result for c in got] == AGENTS_RESULTS


def test_an_agents_sdk_generation_span_and_the_client_span_inside_it_are_one_request() -> None:
    """Each request is the SDK's generation span (CHAT_MODEL) with the autologged client request (CHAT_MODEL) inside:
    read once, with the generation's tokens."""
    traj = extract(_tree(AGENTS.format("on")))
    assert [(r.span.name, r.model, r.input_tokens, r.output_tokens) for r in traj.model_requests] == [
        ("Generation", "gpt-4o", 49, 57), ("Generation", "gpt-4o", 157, 31), ("Generation", "gpt-4o", 231, 31),
        ("Generation", "gpt-4o", 295, 17),
    ]  # fmt: skip


@pytest.mark.parametrize("setting", ["on", "on--stream"])
def test_an_agents_sdk_generation_records_its_calls_as_messages_or_streamed_responses(setting: str) -> None:
    """A generation span's outputs are the assistant messages (`tool_calls`), or streamed, the Responses API responses
    the SDK builds (`function_call` items with `call_id`); its inputs are the list of messages sent (`role: tool`)."""
    generations = [n for n in _typed(_tree(AGENTS.format(setting)), "CHAT_MODEL") if n.name == "Generation"]
    requested = [[(r.name, r.arguments, r.call_id) for r in mlflow.requested_calls(n.attributes)] for n in generations]
    assert requested == [
        [("get_weather", '{"city": "Paris"}', "call_w1"), ("get_order", '{"order_id": 1234}', "call_o1")],
        [("search_kb", '{"query": "refund policy"}', "call_s1")], [("search_kb", '{"query": "refund policy"}', "call_s2")],
        [],
    ]  # fmt: skip
    assert mlflow.tool_results(generations[-1].attributes) == dict(
        zip(["call_w1", "call_o1", "call_s1", "call_s2"], AGENTS_RESULTS, strict=True)
    )


def test_a_streamed_agents_sdk_run_without_its_tool_spans_takes_the_calls_from_the_generations() -> None:
    """The streamed client span records text only: the generation spans' responses alone give the calls their
    names, arguments, call ids and results."""
    traj = extract(_tree(AGENTS.format("on--stream"), keep=lambda s: s.attributes.get(mlflow.SPAN_TYPE) != '"TOOL"'))
    got = traj.calls(include_failed=True)
    assert [(c.name, c.args, c.call_id) for c in got] == SCENARIO
    assert {(c.args_source, c.executed, c.agent) for c in got} == {("messages", None, "support")}
    assert [c.result for c in got] == AGENTS_RESULTS


DSPY = "dspy--mlflow--content-{}"


@pytest.mark.parametrize("setting", ["on", "on--stream", "off"])
def test_dspy_tool_spans_are_named_by_their_name_attribute_not_the_tool_method(setting: str) -> None:
    """MLflow's DSPy callback names a tool span `Tool.<name>` and records the tool's name in its `name` attribute:
    the call is named after the tool. ReAct's `finish` is not traced; the failed search_kb keeps its error."""
    traj = extract(_tree(DSPY.format(setting)))
    got = traj.calls(include_failed=True)
    assert [c.span.name for c in got] == ["Tool.get_weather", "Tool.get_order", "Tool.search_kb", "Tool.search_kb"]
    assert [(c.name, c.status) for c in got] == [(n, s) for (n, _, _), s in zip(SCENARIO, ["ok", "ok", "error", "ok"],
                                                                                  strict=True)]  # fmt: skip
    assert got[2].error == "knowledge base unavailable"
    if setting == "off":
        assert all(c.args is NOT_RECORDED for c in got)
    else:
        assert [(c.args, c.result) for c in got] == [(a, r) for (_, a, _), r in zip(SCENARIO, RESULTS, strict=True)]
    assert [(r.name, r.span.name) for r in traj.agent_runs] == [(None, "ReAct.forward")]  # a method's name, no agent's
    assert {c.agent for c in got} == {None}


def test_a_dspy_predictor_and_the_lm_call_inside_it_are_one_request() -> None:
    """A DSPy `Predict.forward` span (LLM) holds its `LM.__call__` span (CHAT_MODEL): six requests, not twelve, the
    model and provider from the LM's span (the DSPy LM records no token usage)."""
    traj = extract(_tree(DSPY.format("on")))
    requests = [(r.model, r.provider, r.input_tokens) for r in traj.model_requests]
    assert requests == [("openai/gpt-4o", "openai", None)] * 6


ANTHROPIC = "anthropic--mlflow--content-{}"


def test_an_anthropic_message_gives_the_tool_spans_the_models_call_ids_and_the_results() -> None:
    """`mlflow.anthropic.autolog()` records the Message (`tool_use` blocks: the requested calls) and the request's
    user messages (`tool_result` blocks): the decorated tool spans take the call ids by order."""
    tree = _tree(ANTHROPIC.format("on"))
    requests = _typed(tree, "CHAT_MODEL")
    assert [[(r.name, r.arguments, r.call_id) for r in mlflow.requested_calls(n.attributes)] for n in requests] == [
        [("get_weather", {"city": "Paris"}, "call_w1"), ("get_order", {"order_id": 1234}, "call_o1")],
        [("search_kb", {"query": "refund policy"}, "call_s1")], [("search_kb", {"query": "refund policy"}, "call_s2")],
        [],
    ]  # fmt: skip
    assert mlflow.tool_results(requests[-1].attributes) == {
        "call_w1": "sunny, 21C", "call_o1": "order 1234: shipped", "call_s1": "Error: knowledge base unavailable",
        "call_s2": "Refunds take 5 days.",
    }  # fmt: skip
    traj = extract(tree)
    got = traj.calls(include_failed=True)
    assert [(c.name, c.args, c.call_id, c.agent) for c in got] == [(n, a, i, "support") for n, a, i in SCENARIO]
    assert [(r.model, r.provider, r.input_tokens) for r in traj.model_requests] == [
        ("claude-sonnet-4-5", "anthropic", 42), ("claude-sonnet-4-5", "anthropic", 144),
        ("claude-sonnet-4-5", "anthropic", 214), ("claude-sonnet-4-5", "anthropic", 276),
    ]  # fmt: skip


def test_anthropic_requests_streamed_with_messages_stream_are_not_traced_so_the_budget_is_not_evaluated() -> None:
    """The autolog patches `Messages.create` only: a loop streaming with `messages.stream()` records agent and tool
    spans, no request, and a request budget is not_evaluated."""
    traj = extract(_tree(ANTHROPIC.format("on--stream")))
    assert traj.model_requests == []
    assert [(c.name, c.args) for c in traj.calls(include_failed=True)] == [(n, a) for n, a, _ in SCENARIO]
    (budget,) = grade(traj, [MaxModelRequests(max_requests=4)])
    assert budget.outcome == "not_evaluated", budget.reasoning


def test_a_tool_spans_name_attribute_names_the_call_and_an_output_type_is_no_final_output() -> None:
    tree = spans_of(
        _span("AgentRunner.run", "AGENT", {mlflow.RUN_ROOT: "true", mlflow.OUTPUTS: '"done"'},
              _span("triage", "AGENT", {mlflow.OUTPUTS: '{"output_type": "str"}', "output_type": '"str"'},
                    _span("Tool.lookup", "TOOL", {"name": '"lookup"', mlflow.INPUTS: '{"q": "x"}'}))),
        _span("planner", "AGENT", {mlflow.OUTPUTS: '{"output_type": "Plan"}'}),
        scope=SCOPE,
    )  # fmt: skip
    traj = extract(tree)
    # an `output_type` output without the `output_type` attribute is a user's output
    runs = [(r.name, r.final_output) for r in traj.agent_runs]
    assert runs == [(None, "done"), ("triage", None), ("planner", {"output_type": "Plan"})]
    assert [(c.name, c.args, c.agent) for c in traj.calls()] == [("lookup", {"q": "x"}, "triage")]


@pytest.mark.parametrize("setting", ["on--responses", "on--stream--responses"])
def test_an_agents_sdk_response_span_records_output_items_results_and_the_responses_usage(setting: str) -> None:
    """Over the Responses API the SDK's response span (CHAT_MODEL 'Response') records the output items
    (`function_call`, with `call_id`), the input items (`function_call_output`) and the response's own `usage` (no
    `mlflow.chat.tokenUsage`; streamed, the client span inside records none either)."""
    tree = _tree(AGENTS.format(setting))
    responses = [n for n in _typed(tree, "CHAT_MODEL") if n.name == "Response"]
    assert all(mlflow.USAGE not in n.attributes for n in responses)
    assert [[(r.name, r.call_id) for r in mlflow.requested_calls(n.attributes)] for n in responses] == [
        [("get_weather", "call_w1"), ("get_order", "call_o1")], [("search_kb", "call_s1")], [("search_kb", "call_s2")], [],
    ]  # fmt: skip
    assert mlflow.tool_results(responses[-1].attributes) == dict(
        zip(["call_w1", "call_o1", "call_s1", "call_s2"], AGENTS_RESULTS, strict=True)
    )
    traj = extract(tree)
    assert [(c.name, c.args, c.call_id) for c in traj.calls(include_failed=True)] == SCENARIO
    assert [(r.input_tokens, r.output_tokens, r.cache_read_tokens) for r in traj.model_requests] == [
        (42, 76, 0), (160, 40, 0), (232, 40, 0), (295, 62, 0),
    ]  # fmt: skip


def test_a_streamed_agents_sdk_generations_zero_usage_is_not_recorded_so_a_token_budget_is_not_evaluated() -> None:
    """Streaming chat completions without a usage chunk, the SDK records a usage of zeros on its generation span (and
    the client span none): no token count is recorded, and a token budget is not_evaluated, not passed."""
    tree = _tree(AGENTS.format("on--stream"))
    generations = [n for n in _typed(tree, "CHAT_MODEL") if n.name == "Generation"]
    assert {json.loads(n.attributes[mlflow.USAGE])["input_tokens"] for n in generations} == {0}
    traj = extract(tree)
    assert [(r.input_tokens, r.output_tokens) for r in traj.model_requests] == [(None, None)] * 4
    (budget,) = grade(traj, [MaxTokens(max_total=10)])
    assert budget.outcome == "not_evaluated", budget.reasoning


SMOLAGENTS, PYDANTIC_AI, LLAMAINDEX = "smolagents--mlflow--content-{}", "pydantic-ai--mlflow--content-{}", "llamaindex--mlflow--content-{}"
CREWAI = "crewai--mlflow--content-{}"


@pytest.mark.parametrize("setting", ["on", "off--stream"])
def test_an_agent_span_named_after_the_patched_method_takes_the_agents_name_attribute(setting: str) -> None:
    """MLflow's Pydantic AI and smolagents autologs name the agent span after the patched method (`Agent.run`,
    `ToolCallingAgent.run`) and record the agent's name in its `name` attribute: the run is the agent's."""
    for run, method in ((PYDANTIC_AI, {"Agent.run", "Agent.run_stream"}), (SMOLAGENTS, {"ToolCallingAgent.run"})):
        traj = extract(_tree(run.format(setting)))
        assert [(r.name, r.dialect) for r in traj.agent_runs] == [("support", "mlflow")]
        assert traj.agent_runs[0].span.name in method
    traj = extract(_tree(PYDANTIC_AI.format(setting)))
    got = traj.calls(include_failed=True)
    assert [(c.name, c.status, c.agent) for c in got] == [
        ("get_weather", "ok", "support"), ("get_order", "ok", "support"), ("search_kb", "error", "support"),
        ("search_kb", "ok", "support"),
    ]  # fmt: skip
    assert [r.input_tokens for r in traj.model_requests] == [49, 157, 231, 295]


def test_a_method_named_span_without_a_name_attribute_names_no_agent_and_no_tool() -> None:
    """A span named `{Class}.{method}` with no `name` attribute is named after the method, not an agent or a tool:
    LlamaIndex's `FunctionAgent.run` is a run without an agent's name; smolagents' `SimpleTool.__call__` spans (the
    tool's name is recorded nowhere) are executions whose tool is not recorded, not calls of the trajectory, and
    tool checks are not_evaluated rather than failed, with a reason naming those spans."""
    tree = spans_of(
        _span("FunctionAgent.run", "AGENT", {mlflow.OUTPUTS: '"done"'},
              _span("SimpleTool.__call__", "TOOL", {mlflow.INPUTS: '{"kwargs": {"q": "x"}}'}),
              _span("FunctionTool.acall", "TOOL", {"name": '"lookup"', mlflow.INPUTS: '{"kwargs": {"q": "y"}}'}),
              _span("lookup", "TOOL", {mlflow.INPUTS: '{"kwargs": {"q": "z"}}'})),
        scope=SCOPE,
    )  # fmt: skip
    by_name = {n.name: n for n in tree}
    unnamed = classify(by_name["SimpleTool.__call__"])
    assert isinstance(unnamed, ToolCall) and unnamed.name == "" and "'SimpleTool.__call__'" in str(unnamed.name_missing)
    assert mlflow.tool_call(by_name["SimpleTool.__call__"]).name_missing == unnamed.name_missing  # type: ignore[union-attr]
    traj = extract(tree)
    assert [(r.name, r.final_output) for r in traj.agent_runs] == [(None, "done")]
    # a patched method's bound `{"kwargs": {...}}` is the keyword arguments; a span named after the tool keeps its own
    assert [(c.name, c.args) for c in traj.calls()] == [("lookup", {"q": "y"}), ("lookup", {"kwargs": {"q": "z"}})]
    assert [c.describe() for c in traj.unnamed_calls] == ["<tool name not recorded>(q='x')"]  # kwargs unwrapped
    # the lookups are recorded, but so is a call of an unknown tool: which tools ran is not known
    (named,) = grade(traj, [ToolCorrectness(expected_tools=["lookup"])])
    assert named.outcome == "not_evaluated" and "1 tool execution among the calls checked does not record" in named.reasoning
    smol = extract(_tree(SMOLAGENTS.format("on")))
    assert smol.all_calls == [] and smol.model_requests == [] and len(smol.unnamed_calls) == 3
    tools, budget = grade(smol, [ToolCorrectness(expected_tools=["get_weather"]), MaxModelRequests(max_requests=4)])
    assert (tools.outcome, budget.outcome) == ("not_evaluated", "not_evaluated"), (tools.reasoning, budget.reasoning)
    assert tools.reasoning.startswith("3 tool span(s) record tool executions but not which tools ran (span "
                                      "'SimpleTool.__call__' (mlflow.tracing.provider))"), tools.reasoning  # fmt: skip


@pytest.mark.parametrize("setting", ["on", "on--stream"])
def test_llamaindex_prepare_chat_with_tools_is_not_a_request_and_the_tool_spans_kwargs_are_the_arguments(
    setting: str,
) -> None:
    """MLflow's LlamaIndex autolog records `OpenAI._prepare_chat_with_tools` as an LLM span beside each `OpenAI.achat`
    / `astream_chat` CHAT_MODEL span: four requests, not eight. `FunctionTool.acall` records the tool's name in its
    `name` attribute and its bound arguments `{"kwargs": {...}}`: the keyword arguments. Not streamed, the ChatResponse
    output (`message.additional_kwargs.tool_calls`) supplies the call ids."""
    tree = _tree(LLAMAINDEX.format(setting))
    prepared = [n for n in _typed(tree, "LLM") if n.name == "OpenAI._prepare_chat_with_tools"]
    assert len(prepared) == 4 and all(classify(n) is True and mlflow.model_request(n) is None for n in prepared)
    traj = extract(tree)
    assert [r.span.name for r in traj.model_requests] == ["OpenAI.astream_chat" if "stream" in setting else "OpenAI.achat"] * 4
    got = traj.calls(include_failed=True)
    assert [(c.name, c.status, c.span.name) for c in got] == [
        (n, s, "FunctionTool.acall") for (n, _, _), s in zip(SCENARIO, ["ok", "ok", "error", "ok"], strict=True)
    ]
    if setting == "off":
        assert all(c.args is NOT_RECORDED for c in got)
        return
    assert [c.args for c in got] == [a for _, a, _ in SCENARIO]
    ids = [c.call_id for c in got]
    assert ids == ([None] * 4 if "stream" in setting else [i for _, _, i in SCENARIO])
    if setting == "on":
        chat = next(n for n in _typed(tree, "CHAT_MODEL") if n.name == "OpenAI.achat")
        assert [(r.name, r.call_id) for r in mlflow.requested_calls(chat.attributes)] == [
            ("get_weather", "call_w1"), ("get_order", "call_o1"),
        ]  # fmt: skip


def test_crewai_with_the_openai_autolog_too_reads_the_calls_from_the_client_requests() -> None:
    """With this CrewAI, mlflow.crewai.autolog() records the crew, task and agent spans only (no request, no tool
    span: a request budget is not_evaluated); with mlflow.openai.autolog() too, the client's requests give the four
    calls with their ids and arguments, credited to the agent span named after the agent's role."""
    plain = extract(_tree(CREWAI.format("off")))
    assert plain.model_requests == [] and [r.name for r in plain.agent_runs] == ["support"]
    (budget,) = grade(plain, [MaxModelRequests(max_requests=4)])
    assert budget.outcome == "not_evaluated", budget.reasoning
    traj = extract(_tree(CREWAI.format("on--with-openai")))
    got = traj.calls(include_failed=True)
    assert [(c.name, c.args, c.call_id, c.agent) for c in got] == [(n, a, i, "support") for n, a, i in SCENARIO]
    assert len(traj.model_requests) == 4


def test_a_patched_run_methods_result_object_gives_the_final_output() -> None:
    """An autologged run method's span records the fields of the result object it returned: Pydantic AI's
    AgentRunResult (`output`), smolagents' AgentText (`_value`), LlamaIndex's AgentOutput (its response's text
    blocks) give the final text; masked outputs none; a span not named after a method keeps its outputs as recorded."""
    for run in (PYDANTIC_AI.format("on"), SMOLAGENTS.format("on--stream"), LLAMAINDEX.format("on")):
        assert [r.final_output for r in extract(_tree(run)).agent_runs] == [FINAL], run
    assert [r.final_output for r in extract(_tree(PYDANTIC_AI.format("off"))).agent_runs] == [None]
    tree = spans_of(_span("support", "AGENT", {mlflow.OUTPUTS: '{"_value": "kept"}'}), scope=SCOPE)
    assert [r.final_output for r in extract(tree).agent_runs] == [{"_value": "kept"}]


@pytest.mark.parametrize("run", ["smolagents--mlflow--content-on", "anthropic--mlflow--content-on--stream"])
def test_a_request_budget_without_request_spans_names_mlflows_client_autolog(run: str) -> None:
    """Only agent and tool spans: the budget is not_evaluated, and the advice is MLflow's (a client autolog), with
    the two ways the corpus shows one missing the requests, not another instrumentation's."""
    (budget,) = grade(extract(_tree(run)), [MaxModelRequests(max_requests=9)])
    assert budget.outcome == "not_evaluated"
    assert "(mlflow.tracing.provider)" in budget.reasoning and "mlflow.openai.autolog()" in budget.reasoning
    assert "messages.stream()" in budget.reasoning and "OpenInference" not in budget.reasoning


# --- Haystack x MLflow ---------------------------------------------------------------------------------------------

HAYSTACK = "haystack--mlflow--content-{}"


@pytest.mark.parametrize("setting", ["on", "off", "on--stream", "off--stream"])
def test_haystacks_autolog_spans_are_read_as_haystacks_own(setting: str) -> None:
    """mlflow.haystack.autolog() exports Haystack's agent spans with `mlflow.spanType` `null`: no step of MLflow's
    (classify True, so `haystack` reads them). The tool spans give the calls, the failed search_kb by
    `haystack.tool.error`, the replies their call ids; content off (a span processor function MLflow does not run on
    these spans) records as much as content on. Streamed replies carry no usage."""
    tree = _tree(HAYSTACK.format(setting))
    assert {n.attributes.get(mlflow.SPAN_TYPE) for n in tree} == {"null"}
    assert all(mlflow.classify(n) is True for n in tree)
    traj = extract(tree)
    got = traj.calls(include_failed=True)
    assert [(c.name, c.args, c.call_id) for c in got] == SCENARIO
    assert {(c.dialect, c.args_source, c.executed) for c in got} == {("haystack", "span", True)}
    assert [c.status for c in got] == ["ok", "ok", "error", "ok"]
    assert [c.result for c in got] == RESULTS
    tokens = [None] * 4 if "stream" in setting else [49, 152, 235, 295]
    assert [(r.model, r.input_tokens, r.dialect) for r in traj.model_requests] == [
        ("gpt-4o", t, "haystack") for t in tokens
    ]
    assert [(r.name, r.dialect) for r in traj.agent_runs] == [(None, "haystack")]


# --- Agno x MLflow ------------------------------------------------------------------------------------------------

AGNO = "agno--mlflow--content-{}"


@pytest.mark.parametrize("setting", ["on", "on--stream", "off", "off--stream"])
def test_agnos_autolog_records_openinference_spans_read_by_openinference(setting: str) -> None:
    """mlflow.agno.autolog() runs OpenInference's Agno instrumentor on MLflow's tracer: every span is OpenInference's
    with `mlflow.spanType` `null` added, no step for MLflow's reader; OpenInference's reads the agent run, the four
    requests and the four calls (arguments from `tool.parameters` in every setting, call ids from the recorded
    messages, which content off drops)."""
    tree = _tree(AGNO.format(setting))
    assert {n.scope_name for n in tree} == {"openinference.instrumentation.agno"}
    assert {n.attributes[mlflow.SPAN_TYPE] for n in tree} == {"null"}
    assert all(mlflow.classify(n) is True for n in tree)
    traj = extract(tree)
    got = traj.calls(include_failed=True)
    assert {s.dialect for s in [*traj.agent_runs, *traj.model_requests, *got]} == {"openinference"}
    assert [r.name for r in traj.agent_runs] == ["support"] and len(traj.model_requests) == 4
    on = setting.startswith("on")
    assert [(c.name, c.args, c.call_id, c.status, c.agent) for c in got] == [
        (n, a, i if on else None, s, "support")
        for (n, a, i), s in zip(SCENARIO, ["ok", "ok", "error", "ok"], strict=True)
    ]
    assert [r.final_output for r in traj.agent_runs] == [FINAL if on else None]


def test_agnos_autolog_content_is_switched_by_openinference_not_by_mlflow() -> None:
    """Content off: MLflow's span processor functions never see these spans and OpenInference's TraceConfig redacted
    them, so the setting named for their content is OpenInference's; the arguments (`tool.parameters`) stay."""
    tree = _tree(AGNO.format("off"))
    tool = next(n for n in tree if n.name == "get_order")
    assert "OPENINFERENCE_HIDE_INPUTS=false" in content_setting(tool) and "mlflow" not in content_setting(tool)
    (args,) = grade(extract(tree), [ArgumentCorrectness("get_order", {"order_id": 1234})])
    assert args.outcome == "passed", args.reasoning


# --- Strands Agents x MLflow --------------------------------------------------------------------------------------

STRANDS = "strands--mlflow--content-{}--stream{}"
STRANDS_RUNS = [STRANDS.format(c, v) for c in ("on", "off") for v in ("", "--semconv-latest")]


@pytest.mark.parametrize("run", STRANDS_RUNS)
def test_strands_spans_the_autolog_adopted_are_read_as_genai_spans(run: str) -> None:
    """mlflow.strands.autolog() adds MLflow's attributes to Strands' own GenAI spans: the tools are named by
    `gen_ai.tool.name` with their call ids (not after the `execute_tool <tool>` span), the agent by
    `gen_ai.agent.name`, and the four chat spans are the requests, all read by `genai`; the failed attempt is
    marked. The arguments are recorded unless Strands redacted them."""
    tree = _tree(run)
    tool = next(n for n in _typed(tree, "TOOL") if n.name == "execute_tool get_weather")
    assert mlflow.recognizes(tool) and mlflow.adopted(tool.attributes)
    assert mlflow.classify(tool) is True and mlflow.tool_call(tool) is None
    assert all(mlflow.model_request(n) is None for n in _typed(tree, "CHAT_MODEL"))
    traj = extract(tree)
    got = traj.calls(include_failed=True)
    assert [(c.name, c.call_id, c.agent, c.dialect) for c in got] == [(n, i, "support", "genai") for n, _, i in SCENARIO]
    assert [c.status for c in got] == ["ok", "ok", "error", "ok"]
    assert [c.args for c in got] == ([a for _, a, _ in SCENARIO] if "content-on" in run else [NOT_RECORDED] * 4)
    assert [(r.model, r.dialect) for r in traj.model_requests] == [("gpt-4o", "genai")] * 4
    assert [r.name for r in traj.agent_runs] == ["support"]


def test_a_strands_agent_spans_final_output_is_mlflows_outputs_unless_redacted_or_not_recorded() -> None:
    """The adopted `invoke_agent` span is `genai`'s agent run with MLflow's outputs (the reply Strands recorded) as its
    final output; Strands' redaction marker, or no outputs (Strands' latest conventions, which MLflow does not read),
    is none."""
    (run,) = extract(_tree(STRANDS.format("on", ""))).agent_runs
    assert (run.name, run.final_output, run.dialect, run.operation) == ("support", FINAL + "\n", "mlflow", "invoke_agent")
    for name in STRANDS_RUNS[1:]:
        assert [r.final_output for r in extract(_tree(name)).agent_runs] == [None], name
    adopted = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support", mlflow.OUTPUTS: '"[REDACTED]"'}
    assert [(r.name, r.final_output) for r in extract(spans_of(_span("invoke_agent support", "AGENT", adopted),
                                                                scope="strands.telemetry.tracer")).agent_runs] == [
        ("support", None)
    ]  # fmt: skip


def test_strands_content_off_names_strands_redaction_not_mlflows_span_processors() -> None:
    """MLflow's span-processor functions never run on Strands' spans: the content-off run's arguments are Strands'
    redaction markers, and the argument check names Strands' switch."""
    (check,) = grade(extract(_tree(STRANDS.format("off", ""))), [ArgumentCorrectness("get_order", {"order_id": 1234})])
    assert check.outcome == "not_evaluated", check.reasoning
    assert "gen_ai_unredacted_attributes=" in check.reasoning and "span_processors" not in check.reasoning


# --- LiteLLM x MLflow ----------------------------------------------------------------------------------------------

LITELLM = "litellm--mlflow--content-{}{}"
LITELLM_RUNS = [LITELLM.format(c, s) for c in ("on", "off") for s in ("", "--stream")]


@pytest.mark.parametrize("run", LITELLM_RUNS)
def test_litellm_callback_spans_are_the_requests_and_their_responses_the_calls(run: str) -> None:
    """mlflow.litellm.autolog(): one `litellm-completion` LLM span per request, each a trace of its own, no agent or
    tool span; the calls are the requested ones, with their ids and arguments and in their responses' steps, whether
    the outputs are recorded or masked (then read from `raw_llm_response`). Only the next request's messages hold
    the results, so masked inputs leave them unrecorded."""
    tree = _tree(run)
    assert len({n.trace_id for n in tree}) == 4 and all(n.parent is None for n in tree)
    traj = extract(tree)
    got = traj.calls(include_failed=True)
    assert [(c.name, c.args, c.call_id) for c in got] == SCENARIO
    assert {(c.dialect, c.agent, c.status) for c in got} == {("mlflow", None, "ok")}
    assert traj.steps(got) == [1, 1, 2, 3]
    on = "content-on" in run
    results = ["sunny, 21C", "order 1234: shipped", "Error: knowledge base unavailable", "Refunds take 5 days."]
    assert [c.result for c in got] == (results if on else [None] * 4)
    assert [(r.model, r.input_tokens, r.output_tokens, r.dialect) for r in traj.model_requests] == [
        ("gpt-4o", 49, 57, "mlflow"), ("gpt-4o", 152, 31, "mlflow"), ("gpt-4o", 216, 31, "mlflow"),
        ("gpt-4o", 276, 17, "mlflow"),
    ]  # fmt: skip
    assert traj.agent_runs == []
    first = min(tree, key=lambda n: n.start_ns)
    assert mlflow.LITELLM_RESPONSE in first.attributes  # the response, whatever the outputs hold
    assert len(mlflow.litellm_requested_calls(first.attributes)) == (0 if on else 2)  # outputs first, when recorded


@pytest.mark.parametrize("run", LITELLM_RUNS)
def test_a_litellm_request_that_called_no_tool_is_graded_as_calling_none(run: str) -> None:
    """Each request is a trace of its own: the final answer's trace has no call, and its recorded response (its
    outputs, or `raw_llm_response` when they are masked) shows that none was requested, so a tool check fails
    instead of being not_evaluated."""
    last = extract(load_traces(FRAMEWORKS / f"{run}.traces.json")[-1])
    assert last.all_calls == [] and [r.output_tokens for r in last.model_requests] == [17]  # the final answer
    called, none = grade(last, [ToolCorrectness(expected_tools=["get_weather"]), ToolCorrectness(expected_tools=[])])
    assert (called.outcome, none.outcome) == ("failed", "passed"), (called.reasoning, none.reasoning)


def test_a_litellm_response_is_read_only_when_the_outputs_are_masked() -> None:
    """`raw_llm_response` is read for calls only when `mlflow.spanOutputs` is `null` or absent."""
    response = json.dumps({"choices": [{"message": {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": '{"order_id": 1}'}}]}}]})
    assert [(r.name, r.call_id) for r in mlflow.litellm_requested_calls({mlflow.LITELLM_RESPONSE: response})] == [
        ("get_order", "c1")
    ]
    assert [r.name for r in mlflow.litellm_requested_calls({mlflow.LITELLM_RESPONSE: response, mlflow.OUTPUTS: "null"})] == [
        "get_order"
    ]
    assert mlflow.litellm_requested_calls({mlflow.LITELLM_RESPONSE: response, mlflow.OUTPUTS: '{"choices": []}'}) == []


# --- AutoGen x MLflow ---------------------------------------------------------------------------------------------

AUTOGEN = "autogen--mlflow--content-{}"
FAILED = ["ok", "ok", "error", "ok"]
AUTOGEN_RESULTS = [*RESULTS[:2], "knowledge base unavailable", RESULTS[3]]


@pytest.mark.parametrize("setting", ["on", "on--with-openai"])
def test_autogens_llm_spans_give_the_calls_their_results_and_the_failed_attempt(setting: str) -> None:
    """mlflow.autogen.autolog() records no tool span: each `OpenAIChatCompletionClient.create` LLM span's outputs are
    AutoGen's CreateResult, its content the FunctionCalls (id, name, arguments); its inputs' FunctionExecutionResult
    messages the results, `is_error` marking the attempt that raised. With the OpenAI autolog too, its request span
    inside each LLM span is the same request."""
    tree = _tree(AUTOGEN.format(setting))
    (llm, *_) = [n for n in tree if n.name == "OpenAIChatCompletionClient.create"]
    assert [(r.name, r.call_id) for r in mlflow.requested_calls(llm.attributes)] == [
        ("get_weather", "call_w1"), ("get_order", "call_o1")]  # fmt: skip
    traj = extract(tree)
    got = traj.calls(include_failed=True)
    assert [(c.name, c.args, c.call_id, c.agent, c.executed) for c in got] == [
        (n, a, i, "support", None) for n, a, i in SCENARIO]  # fmt: skip
    assert [c.status for c in got] == FAILED and got[2].error == "knowledge base unavailable"
    assert [c.result for c in got] == AUTOGEN_RESULTS
    assert [r.input_tokens for r in traj.model_requests] == [53, 161, 226, 291]
    checks = grade(traj, [ToolCorrectness(expected_tools=["get_weather", "get_order", "search_kb"]),
                          MaxModelRequests(max_requests=4), MaxModelRequests(max_requests=3)])  # fmt: skip
    assert [c.outcome for c in checks] == ["passed", "passed", "failed"], [c.reasoning for c in checks]


def test_a_streaming_autogen_agents_recorded_conversation_gives_the_calls() -> None:
    """Streaming, the autolog records no model request (it does not patch `create_stream`): the calls are read from
    the conversation the agent spans' outputs record (the TaskResult's ToolCallRequestEvents and
    ToolCallExecutionEvents), once, on the outer `support.run` span; the request budget is not_evaluated."""
    tree = _tree(AUTOGEN.format("on--stream"))
    run, inner = (next(n for n in tree if n.name == f"support.{m}") for m in ("run", "on_messages"))
    assert mlflow.transcript(run) is not None and mlflow.transcript(inner) is not None
    traj = extract(tree)
    got = traj.calls(include_failed=True)
    assert [(c.name, c.args, c.call_id, c.agent, c.span) for c in got] == [(n, a, i, "support", run) for n, a, i in SCENARIO]
    assert [c.status for c in got] == FAILED and [c.result for c in got] == AUTOGEN_RESULTS
    assert traj.model_requests == []
    (budget,) = grade(traj, [MaxModelRequests(max_requests=4)])
    assert budget.outcome == "not_evaluated" and "mlflow.openai.autolog()" in budget.reasoning, budget.reasoning


@pytest.mark.parametrize("setting", ["on", "off"])
def test_autogen_streamed_through_the_openai_autolog_takes_the_failure_from_the_agents_events(setting: str) -> None:
    """With the OpenAI autolog too, a streamed request's calls are in its chunk events and its tool messages carry no
    error flag: the failed attempt is the one whose FunctionExecutionResult in the enclosing agent span's outputs has
    `is_error`, which a masking function leaves out (content off: no result, no failure recorded)."""
    traj = extract(_tree(AUTOGEN.format(f"{setting}--stream--with-openai")))
    got = traj.calls(include_failed=True)
    assert [(c.name, c.args, c.call_id, c.agent) for c in got] == [(n, a, i, "support") for n, a, i in SCENARIO]
    on = setting == "on"
    assert [c.status for c in got] == (FAILED if on else ["ok"] * 4)
    assert [c.result for c in got] == (AUTOGEN_RESULTS if on else [None] * 4)


@pytest.mark.parametrize("setting", ["on", "off", "on--stream", "off--stream"])
def test_autogen_agent_spans_name_the_agent_and_give_its_reply(setting: str) -> None:
    """The autolog names its AGENT spans `{agent}.run` and `{agent}.on_messages` (no `name` attribute): both are runs
    of that agent, their final output the reply (the TaskResult's last message, the Response's chat message)."""
    traj = extract(_tree(AUTOGEN.format(setting)))
    final = FINAL if setting.startswith("on") else None
    assert [(r.name, r.final_output) for r in traj.agent_runs] == [("support", final)] * 2


def test_only_autogens_method_names_name_an_agent() -> None:
    """`{x}.on_messages`, and `{x}.run` around it, name agent x; a lone `Agent.run` (another autolog's method) names
    none, nor does an `on_messages` span that is not an AGENT span."""
    inner = _span("support.on_messages", "AGENT")
    runs = extract(spans_of(_span("support.run", "AGENT", None, inner), _span("Agent.run", "AGENT"),
                            _span("x.on_messages", "CHAIN"), scope=SCOPE)).agent_runs  # fmt: skip
    assert [r.name for r in runs] == ["support", "support", None]


def test_autogen_streamed_with_content_off_names_mlflows_span_processors() -> None:
    """Streaming with content off (a masking function): only the agent spans are recorded, their outputs, which would
    hold the conversation, masked; the tool checks name MLflow's setting."""
    traj = extract(_tree(AUTOGEN.format("off--stream")))
    assert traj.all_calls == [] and traj.model_requests == []
    (check,) = grade(traj, [ToolCorrectness(expected_tools=["get_order"])])
    assert check.outcome == "not_evaluated", check.reasoning
    assert "mlflow.autogen.autolog()" in check.reasoning and "span_processors=[...]" in check.reasoning
