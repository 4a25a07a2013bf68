"""OpenLIT's GenAI spans, read by the genai dialect: from the committed OpenLIT corpus runs
(fixtures/frameworks/*--openlit--*) and from real SDK spans shaped as OpenLIT writes them.

OpenLIT writes its own vintage beside the conventions: a summary of a response's tool calls on the model span
(`gen_ai.tool.name` / `gen_ai.tool.call.id` / `gen_ai.tool.args`, joined with ", ", whatever the content setting),
a plain `gen_ai.usage.cost` (USD), LangChain tool spans whose arguments are the Python `str()` of the input dict
and whose call id stays LangChain's run id when the tool raised, nameless `invoke_agent` spans for the OpenAI
Agents SDK's task and turn spans, CrewAI's agent executor as an `invoke_workflow` span inside the agent's run,
Pydantic AI's graph steps as `execute_tool {model}` spans that are no tool calls, smolagents tool spans whose call id
is a UUID of OpenLIT's making (and, for a tool that raised, only `error.type`), and, its Strands processor failing to
load in openlit 1.45, its openai span inside each of Strands' own chat spans.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from tracegrade import grade
from tracegrade.dialects import content_setting, extract
from tracegrade.dialects._messages import summary_requests
from tracegrade.evaluators import ArgumentCorrectness, MaxCost, MaxModelRequests, MaxToolCalls, ToolCorrectness
from tracegrade.ingest import read_logs, read_spans
from tracegrade.trajectory import NOT_RECORDED, Cost, Trajectory
from tracegrade.tree import SpanTree

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"
SEQUENCE = ["get_weather", "get_order", "search_kb", "search_kb"]
ARGS = [{"city": "Paris"}, {"order_id": 1234}, {"query": "refund policy"}, {"query": "refund policy"}]
IDS = ["call_w1", "call_o1", "call_s1", "call_s2"]


def _run(name: str) -> Trajectory:
    entry = json.loads((CORPUS / "entries" / f"{name}.json").read_text())
    tree = SpanTree.from_spans(read_spans(CORPUS / entry["traces"]))
    if entry.get("logs"):
        tree.attach_logs(read_logs(CORPUS / entry["logs"]))
    return extract(tree)


@contextmanager
def _tracer() -> Iterator[tuple[Any, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer("openlit.instrumentation.openai"), exporter
    provider.shutdown()


def test_content_off_arguments_and_call_ids_come_from_openlits_tool_call_summary_on_the_chat_span() -> None:
    # content off: the execute_tool spans record no arguments; each chat span's joined summary does
    for run in ("openai-agents--openlit--content-off", "langgraph--openlit--content-off--stream"):
        traj = _run(run)
        calls = traj.all_calls
        assert [c.name for c in calls] == SEQUENCE, run
        assert [c.args for c in calls] == ARGS, run
        assert [c.call_id for c in calls] == IDS, run
        assert {c.args_source for c in calls} == {"messages"}, run
        assert all(c.executed for c in calls), run  # matched to their tool spans, not requested-only copies
        got = grade(
            traj,
            [
                ArgumentCorrectness("get_order", {"order_id": 1234}),
                ArgumentCorrectness("get_order", {"order_id": 9999}),
            ],
        )
        assert [r.outcome for r in got] == ["passed", "failed"], run


def test_summary_of_parallel_calls_is_split_into_one_request_per_call() -> None:
    attrs = {
        "gen_ai.tool.name": "get_weather, get_order",
        "gen_ai.tool.call.id": "call_w1, call_o1",
        "gen_ai.tool.args": '{"city": "Paris, France"}, {"order_id": 1234}',
    }
    found = summary_requests(attrs)
    assert [(r.name, r.call_id) for r in found] == [("get_weather", "call_w1"), ("get_order", "call_o1")]
    assert [json.loads(r.arguments) for r in found] == [{"city": "Paris, France"}, {"order_id": 1234}]


def test_summary_arguments_that_do_not_split_into_one_json_value_per_call_are_not_recorded() -> None:
    base = {"gen_ai.tool.name": "get_weather, get_order", "gen_ai.tool.call.id": "call_w1, call_o1"}
    for args in ('{"city": "Paris"}', '{"city": "Paris"}; {"order_id": 1}', '{"city": "Paris"}, {"order_id": '):
        found = summary_requests({**base, "gen_ai.tool.call.arguments": args})
        assert [(r.name, r.call_id, r.arguments) for r in found] == [
            ("get_weather", "call_w1", None),
            ("get_order", "call_o1", None),
        ], args
    assert summary_requests({**base, "gen_ai.tool.call.id": "call_w1"}) == []  # names and ids do not pair up


def test_summary_on_a_real_sdk_span_gives_requested_calls_when_no_tool_span_ran() -> None:
    with _tracer() as (tracer, exporter):
        with tracer.start_as_current_span("chat gpt-4o") as span:
            span.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "gpt-4o",
                    "gen_ai.tool.name": "search_kb",
                    "gen_ai.tool.call.id": "call_s1",
                    "gen_ai.tool.args": '{"query": "refund policy"}',
                }
            )
        traj = extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))
    [call] = traj.all_calls
    assert (call.name, call.args, call.call_id, call.executed) == (
        "search_kb",
        {"query": "refund policy"},
        "call_s1",
        None,
    )


def test_python_repr_arguments_of_openlit_langchain_tool_spans_give_way_to_the_models_arguments() -> None:
    traj = _run("langgraph--openlit--content-on")
    spans = [c.span for c in traj.all_calls if c.span is not None]
    assert spans[0].attributes["gen_ai.tool.call.arguments"] == "{'city': 'Paris'}"  # str() of a dict, not JSON
    assert [c.args for c in traj.all_calls] == ARGS
    assert {c.args_source for c in traj.all_calls} == {"messages"}


def test_json_cut_short_on_a_tool_span_is_kept_and_reported_not_replaced() -> None:
    with _tracer() as (tracer, exporter):
        with tracer.start_as_current_span("chat gpt-4o") as span:
            span.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.tool.name": "search_kb",
                    "gen_ai.tool.call.id": "call_s1",
                    "gen_ai.tool.args": '{"query": "refund policy"}',
                }
            )
        with tracer.start_as_current_span("execute_tool search_kb") as span:
            span.set_attributes(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "search_kb",
                    "gen_ai.tool.call.id": "call_s1",
                    "gen_ai.tool.call.arguments": '{"query": "ref',
                }
            )
        traj = extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))
    [call] = traj.all_calls
    assert (call.args_source, call.args_text) == ("span", '{"query": "ref')
    assert call.args_truncated is not None


def test_a_failed_langchain_tool_keeps_the_models_call_id_not_langchains_run_id() -> None:
    traj = _run("langgraph--openlit--content-on")
    failed = [c for c in traj.all_calls if c.status == "error"]
    assert [c.name for c in failed] == ["search_kb"]
    recorded = failed[0].span.attributes["gen_ai.tool.call.id"] if failed[0].span else None
    assert isinstance(recorded, str) and recorded.count("-") == 4  # the span holds LangChain's run id (a UUID)
    assert failed[0].call_id == "call_s1"
    assert len(traj.all_calls) == 4  # not a fifth, requested-only copy of call_s1


def test_uuid_call_id_outside_openlits_langchain_scope_is_a_call_id() -> None:
    with _tracer() as (tracer, exporter):
        with tracer.start_as_current_span("execute_tool search_kb") as span:
            span.set_attributes(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "search_kb",
                    "gen_ai.tool.call.id": "01a241e6-3df8-7531-8e39-7678ec2c050a",
                }
            )
            span.set_status(Status(StatusCode.ERROR))
        traj = extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))
    assert [c.call_id for c in traj.all_calls] == ["01a241e6-3df8-7531-8e39-7678ec2c050a"]


def test_calls_under_nameless_agent_spans_are_credited_to_the_enclosing_named_agent() -> None:
    traj = _run("openai-agents--openlit--content-on")
    assert any(r.name is None and r.operation == "invoke_agent" for r in traj.agent_runs)  # SDK task / turn spans
    assert {c.agent for c in traj.all_calls} == {"support"}
    assert {r.agent for r in traj.model_requests} == {"support"}
    done = ["get_weather", "get_order", "search_kb"]  # the failed attempt is not a call made
    scoped = grade(
        traj,
        [
            ToolCorrectness(expected_tools=done, agent="support"),
            ToolCorrectness(expected_tools=[*done, "cancel_order"], agent="support"),
        ],
    )
    assert [r.outcome for r in scoped] == ["passed", "failed"]


def test_openlit_cost_is_read_in_usd_and_graded() -> None:
    for run in ("openai-agents--openlit--content-off", "langgraph--openlit--content-on--stream"):
        traj = _run(run)
        costs = [r.cost for r in traj.model_requests]
        assert len(costs) == 4 and all(isinstance(c, Cost) for c in costs), run
        assert {(c.currency, c.source) for c in costs if c} == {("USD", "local")}, run
        spans = [r.span for r in traj.model_requests if r.span is not None]
        total = sum(s.attributes["gen_ai.usage.cost"] for s in spans)
        got = grade(traj, [MaxCost(max_cost=total * 1.01), MaxCost(max_cost=total * 0.99)])
        assert [r.outcome for r in got] == ["passed", "failed"], run


def test_content_setting_of_an_openlit_span_names_capture_message_content() -> None:
    traj = _run("openai-agents--openlit--content-off")
    node = traj.model_requests[0].span
    assert node is not None and node.scope_name == "openlit.instrumentation.openai"
    assert "capture_message_content=True" in content_setting(node)


def test_content_off_tool_spans_record_no_arguments_of_their_own() -> None:
    # what the summary reading is for: without it these runs would have no arguments at all
    traj = _run("openai-agents--openlit--content-off")
    for call in traj.all_calls:
        assert call.span is not None and "gen_ai.tool.call.arguments" not in call.span.attributes
        assert call.args is not NOT_RECORDED


def test_responses_api_call_ids_come_from_the_summary_not_the_output_items_id() -> None:
    traj = _run("openai-agents--openlit--content-on--responses")
    first = traj.model_requests[0].span
    assert first is not None and '"id": "fc_call_o1"' in first.attributes["gen_ai.output.messages"]
    assert first.attributes["gen_ai.tool.call.id"] == "call_o1"
    # OpenLIT kept only the last call of the parallel first response: get_weather's id is recorded nowhere
    assert [(c.name, c.call_id) for c in traj.all_calls] == [
        ("get_weather", None),
        ("get_order", "call_o1"),
        ("search_kb", "call_s1"),
        ("search_kb", "call_s2"),
    ]


def test_crewai_calls_in_the_agents_executor_workflow_are_credited_to_the_agent_not_the_workflow() -> None:
    # OpenLIT records CrewAI's agent executor (a Flow) as 'invoke_workflow AgentExecutor' under 'invoke_agent
    # support'; the chat spans, and so the requested calls, are the workflow's children
    for run in ("crewai--openlit--content-on", "crewai--openlit--content-off--stream"):
        traj = _run(run)
        executor = next(r for r in traj.agent_runs if r.name == "AgentExecutor")
        assert executor.operation == "invoke_workflow" and executor.parent is not None, run
        assert executor.parent.name == "support" and executor.parent.operation == "invoke_agent", run
        assert all(r.run is executor for r in traj.model_requests), run
        assert [(c.name, c.args, c.call_id, c.agent) for c in traj.all_calls] == [
            (n, a, i, "support") for n, a, i in zip(SEQUENCE, ARGS, IDS, strict=True)
        ], run
        assert {r.agent for r in traj.model_requests} == {"support"}, run
        # (search_kb's failure is recorded nowhere: CrewAI sends it to the model as a tool result)
        got = grade(traj, [ToolCorrectness(expected_tools=SEQUENCE, agent="support"),
                           ToolCorrectness(expected_tools=SEQUENCE, agent="AgentExecutor")])  # fmt: skip
        assert [r.outcome for r in got] == ["passed", "failed"], run
        assert "(called: [])" in got[1].reason, run


def test_crewai_flow_method_spans_are_no_agent_runs() -> None:
    # OpenLIT writes 'invoke_agent {method}' for each method of the executor's Flow (generate_plan,
    # call_llm_native_tools, ...) without gen_ai.agent.name: flow steps, not agents
    for run in ("crewai--openlit--content-on", "crewai--openlit--content-off--stream"):
        traj = _run(run)
        assert [(r.name, r.operation) for r in traj.agent_runs] == [
            ("crew", "invoke_workflow"), ("support", "invoke_agent"), ("AgentExecutor", "invoke_workflow")
        ], run
        steps = [n for n in traj.tree if n.name == "invoke_agent call_llm_native_tools"]
        assert steps and all(n.scope_name == "openlit.instrumentation.crewai" for n in steps), run
    # the same span from another OpenLIT instrumentation is still an agent run, named by its span name
    with _tracer() as (tracer, exporter), tracer.start_as_current_span("invoke_agent planner") as span:
        span.set_attribute("gen_ai.operation.name", "invoke_agent")
    [run_] = extract(SpanTree.from_readable_spans(exporter.get_finished_spans())).agent_runs
    assert run_.name == "planner"


def test_a_workflow_run_names_its_calls_unless_an_agent_run_encloses_it() -> None:
    with _tracer() as (tracer, exporter):
        with tracer.start_as_current_span("invoke_workflow graph") as span:
            span.set_attributes({"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": "graph"})
            with tracer.start_as_current_span("execute_tool get_weather") as tool:
                tool.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather"})
        with tracer.start_as_current_span("invoke_agent support") as agent:
            agent.set_attributes({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support"})
            with tracer.start_as_current_span("invoke_workflow AgentExecutor") as flow:
                flow.set_attributes({"gen_ai.operation.name": "invoke_workflow",
                                     "gen_ai.workflow.name": "AgentExecutor"})  # fmt: skip
                with tracer.start_as_current_span("execute_tool get_order") as tool:
                    tool.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_order"})
                with tracer.start_as_current_span("invoke_agent researcher") as inner:
                    inner.set_attributes({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "researcher"})
                    with tracer.start_as_current_span("execute_tool search_kb") as tool:
                        tool.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_kb"})
        traj = extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))
    assert [(c.name, c.agent) for c in traj.all_calls] == [
        ("get_weather", "graph"),  # no agent run encloses the workflow: its name stands
        ("get_order", "support"),  # the workflow works for the agent around it
        ("search_kb", "researcher"),  # an agent run inside the workflow names its own calls
    ]


def test_openlit_ag2_message_spans_are_the_agents_turns_not_model_requests() -> None:
    # OpenLIT writes AG2's send / receive / generate_reply spans ('execute_task <agent>') with operation 'chat'
    # and request model 'unknown'; read as requests they would double the count and swallow the real chat spans
    for run in ("ag2--openlit--content-on", "ag2--openlit--content-off--stream"):
        traj = _run(run)
        assert [(r.model, r.agent) for r in traj.model_requests] == [("gpt-4o", "support")] * 4, run
        tasks = [r for r in traj.agent_runs if r.span is not None and r.span.name.startswith("execute_task ")]
        assert tasks and {r.name for r in tasks} == {"support", "user"}, run
        assert [(c.name, c.args, c.call_id, c.agent) for c in traj.all_calls] == [
            (n, a, i, "support") for n, a, i in zip(SEQUENCE, ARGS, IDS, strict=True)
        ], run
        got = grade(traj, [MaxModelRequests(max_requests=4), MaxModelRequests(max_requests=3)])
        assert [r.outcome for r in got] == ["passed", "failed"], run


def test_an_openlit_ag2_message_span_is_the_agents_run_and_the_chat_span_beneath_it_the_request() -> None:
    with _tracer() as (tracer, exporter):
        with tracer.start_as_current_span("execute_task support") as span:
            span.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.agent.name": "support",
                                 "gen_ai.agent.message_type": "generate_reply", "gen_ai.request.model": "unknown"})
            with tracer.start_as_current_span("chat gpt-4o") as chat:
                chat.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"})
        traj = extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))
    assert [(r.name, r.operation) for r in traj.agent_runs] == [("support", "invoke_agent")]
    assert [(r.model, r.agent) for r in traj.model_requests] == [("gpt-4o", "support")]


BARE_CLIENTS = [
    f"{client}--openlit--content-{c}{s}"
    for client in ("anthropic", "openai")
    for c in ("on", "off")
    for s in ("", "--stream")
]


def test_bare_client_calls_are_the_models_requested_calls_with_content_on_or_off() -> None:
    # only the client is instrumented: no tool spans; content off leaves OpenLIT's tool-call summary on the chat spans
    for run in BARE_CLIENTS:
        traj = _run(run)
        assert len(traj.model_requests) == 4, run
        calls = traj.all_calls
        assert [c.name for c in calls] == SEQUENCE, run
        assert [c.args for c in calls] == ARGS, run
        assert [c.call_id for c in calls] == IDS, run
        assert all(c.executed is None for c in calls), run  # requested, no tool span says whether it ran
        got = grade(
            traj, [ToolCorrectness(expected_tools=SEQUENCE), ArgumentCorrectness("get_order", {"order_id": 9999})]
        )
        assert [r.outcome for r in got] == ["passed", "failed"], run


def test_bare_client_tool_results_are_read_from_the_next_requests_messages_only_with_content_on() -> None:
    results = ["sunny, 21C", "order 1234: shipped", "Error: knowledge base unavailable", "Refunds take 5 days."]
    for run in BARE_CLIENTS:
        got = [c.result for c in _run(run).all_calls]
        assert got == (results if "content-on" in run else [None] * 4), (run, got)


def test_openlits_integer_zero_cost_is_no_price_not_a_free_request() -> None:
    # claude-sonnet-4-5 is not in the generator's pricing table: OpenLIT writes the integer 0 on every chat span
    traj = _run("anthropic--openlit--content-on")
    spans = [r.span for r in traj.model_requests if r.span is not None]
    assert [s.attributes["gen_ai.usage.cost"] for s in spans] == [0] * 4
    assert all(type(s.attributes["gen_ai.usage.cost"]) is int for s in spans)
    assert [r.cost for r in traj.model_requests] == [None] * 4
    [got] = grade(traj, [MaxCost(max_cost=1.0)])
    assert got.outcome == "not_evaluated" and "4 of 4 model request(s) carry no cost" in got.reasoning
    # the priced client run (gpt-4o) is summed as before
    priced = _run("openai--openlit--content-on")
    assert all(r.cost is not None and r.cost.amount > 0 for r in priced.model_requests)


def test_a_computed_zero_cost_is_a_free_request_and_an_integer_zero_is_unpriced() -> None:
    with _tracer() as (tracer, exporter):
        for cost in (0.0, 0):
            with tracer.start_as_current_span("chat gpt-4o") as span:
                span.set_attributes(
                    {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.cost": cost}
                )
        traj = extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))
    assert [r.cost for r in traj.model_requests] == [Cost(0.0, "USD", "local"), None]


def test_adk_content_off_arguments_come_from_openlits_litellm_span_inside_adks_model_span() -> None:
    # ADK's 'generate_content' span is the request; OpenLIT's litellm 'chat' span inside it is the same request
    # recorded again, and only it (its tool-call summary) records the requested calls when content is off
    for run in ("google-adk--openlit--content-off", "google-adk--openlit--content-off--stream"):
        traj = _run(run)
        assert [r.span.name for r in traj.model_requests if r.span is not None] == ["generate_content openai/gpt-4o"] * 4
        assert all(r.cost is not None and r.cost.currency == "USD" for r in traj.model_requests), run
        calls = traj.all_calls
        assert [c.name for c in calls] == SEQUENCE, run
        assert [c.args for c in calls] == ARGS, run
        assert [c.call_id for c in calls] == IDS, run
        assert {c.args_source for c in calls} == {"messages"} and all(c.executed for c in calls), run
        got = grade(traj, [ArgumentCorrectness("get_order", {"order_id": 1234}),
                           ArgumentCorrectness("get_order", {"order_id": 9999})])  # fmt: skip
        assert [r.outcome for r in got] == ["passed", "failed"], run


def test_requested_calls_are_read_from_a_provider_span_inside_a_model_span_that_records_none() -> None:
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    framework, openlit = provider.get_tracer("gcp.vertex.agent"), provider.get_tracer("openlit.instrumentation.litellm")
    with framework.start_as_current_span("invoke_agent support") as run:
        run.set_attributes({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support"})
        with framework.start_as_current_span("generate_content gpt-4o") as outer:
            outer.set_attributes({"gen_ai.operation.name": "generate_content", "gen_ai.request.model": "gpt-4o"})
            with openlit.start_as_current_span("chat gpt-4o") as inner:
                inner.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                                      "gen_ai.tool.name": "get_order", "gen_ai.tool.call.id": "call_o1",
                                      "gen_ai.tool.args": '{"order_id": 1234}'})  # fmt: skip
        with framework.start_as_current_span("execute_tool get_order") as tool:
            tool.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_order",
                                 "gen_ai.tool.call.id": "call_o1"})  # fmt: skip
    traj = extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))
    provider.shutdown()
    assert [r.span.name for r in traj.model_requests if r.span is not None] == ["generate_content gpt-4o"]
    [call] = traj.all_calls
    assert (call.name, call.args, call.call_id, call.executed, call.args_source) == (
        "get_order", {"order_id": 1234}, "call_o1", True, "messages"
    )  # fmt: skip


def test_openlit_pydantic_ai_graph_step_spans_are_not_tool_calls_the_chat_summaries_give_the_calls() -> None:
    # OpenLIT's Pydantic AI instrumentation writes each CallToolsNode run as 'execute_tool gpt-4o' (operation
    # execute_tool, no gen_ai.tool.name, also after the final answer); read by name they would be calls of 'gpt-4o'
    for run in ("pydantic-ai--openlit--content-on", "pydantic-ai--openlit--content-off--stream"):
        traj = _run(run)
        assert [(c.name, c.args, c.call_id, c.dialect) for c in traj.all_calls] == [
            (n, a, i, "genai") for n, a, i in zip(SEQUENCE, ARGS, IDS, strict=True)
        ], run
        assert [(r.model, r.dialect) for r in traj.model_requests] == [("gpt-4o", "genai")] * 4, run
        assert {(r.name, r.dialect) for r in traj.agent_runs} == {("support", "genai")}, run
        got = grade(traj, [ToolCorrectness(expected_tools=SEQUENCE), MaxModelRequests(max_requests=3)])
        assert [r.outcome for r in got] == ["passed", "failed"], run


def test_a_nameless_execute_tool_span_is_a_tool_call_by_its_name_outside_openlits_pydantic_ai_scope() -> None:
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.agent.name": "support", "gen_ai.request.model": "gpt-4o"}
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    for scope in ("openlit.instrumentation.pydantic_ai", "my.instrumentation"):
        with provider.get_tracer(scope).start_as_current_span("execute_tool search_kb") as span:
            span.set_attributes(attrs)
    provider.shutdown()
    spans = exporter.get_finished_spans()
    assert [[c.name for c in extract(SpanTree.from_readable_spans([s])).all_calls] for s in spans] == [
        [],  # OpenLIT's Pydantic AI graph step: the suffix is the model, not a tool
        ["search_kb"],
    ]


def test_openlit_pydantic_ai_execute_task_span_is_the_agents_run_and_names_its_calls_and_requests() -> None:
    # 'execute_task support' (Agent.run) encloses the chat spans; the 'invoke_workflow support' span (Agent.iter)
    # beside them ends at once and encloses nothing. Streamed runs have no execute_task span (run_stream is not
    # wrapped) and every span is a trace of its own, so nothing names the agent there.
    traj = _run("pydantic-ai--openlit--content-on")
    assert [(r.name, r.operation, r.input_tokens, r.output_tokens) for r in traj.agent_runs] == [
        ("support", "invoke_agent", 732, 136),
        ("support", "invoke_workflow", None, None),
    ]
    assert {c.agent for c in traj.all_calls} | {r.agent for r in traj.model_requests} == {"support"}
    streamed = _run("pydantic-ai--openlit--content-on--stream")
    assert {c.agent for c in streamed.all_calls} | {r.agent for r in streamed.model_requests} == {None}


def test_openlit_agno_tool_spans_are_the_calls_and_mark_the_failed_attempt_content_on_or_off() -> None:
    # OpenLIT's Agno 'execute_tool <tool>' spans carry the model's call id, so each merges with the chat summary's
    # requested call: one executed call each, never two. Content off, the summary gives the arguments; the
    # failed attempt is the span's error status ('Tool execution failed'), content on or off, streamed or not.
    for run in ("agno--openlit--content-on", "agno--openlit--content-off", "agno--openlit--content-off--stream"):
        traj = _run(run)
        assert [(c.name, c.args, c.call_id, c.state) for c in traj.all_calls] == [
            (n, a, i, "failed" if i == "call_s1" else "executed") for n, a, i in zip(SEQUENCE, ARGS, IDS, strict=True)
        ], run
        assert {c.args_source for c in traj.all_calls} == ({"span"} if "content-on" in run else {"messages"}), run
        assert traj.all_calls[2].error == "Tool execution failed", run
        got = grade(traj, [ToolCorrectness(expected_tools=["get_weather", "get_order", "search_kb"]),
                           MaxModelRequests(max_requests=4), MaxModelRequests(max_requests=3)])  # fmt: skip
        assert [r.outcome for r in got] == ["passed", "passed", "failed"], run


def test_openlit_agno_invoke_agent_span_names_its_calls_unless_the_streamed_run_ended_it_at_once() -> None:
    # Agent.run(stream=True) returns a generator: OpenLIT's invoke_agent span ends before it is iterated, and every
    # chat and execute_tool span is a trace of its own, so nothing credits them to the agent.
    traj = _run("agno--openlit--content-on")
    assert [(r.name, r.input_tokens, r.output_tokens) for r in traj.agent_runs] == [("support", 715, 136)]
    assert {c.agent for c in traj.all_calls} | {r.agent for r in traj.model_requests} == {"support"}
    streamed = _run("agno--openlit--content-on--stream")
    assert [r.name for r in streamed.agent_runs] == ["support"]
    assert {c.agent for c in streamed.all_calls} | {r.agent for r in streamed.model_requests} == {None}
    got = grade(streamed, [ToolCorrectness(expected_tools=["get_order"], agent="support")])
    assert [r.outcome for r in got] == ["not_evaluated"], got[0].reasoning


def test_openlit_llamaindex_agent_records_only_chat_spans_whose_requested_calls_are_the_trajectory() -> None:
    # OpenLIT's LlamaIndex instrumentation wraps nothing on the FunctionAgent path (and the base LLM methods that
    # llama-index-llms-openai's OpenAI overrides): no agent run, no tool span. The calls are the chat spans'
    # requested calls; their results come from the next request's tool messages (content on only), where the failed
    # search_kb is the plain text LlamaIndex handed back to the model, not a failure.
    for run in ("llamaindex--openlit--content-on", "llamaindex--openlit--content-off--stream"):
        traj = _run(run)
        assert traj.agent_runs == [] and len(traj.model_requests) == 4, run
        assert [(c.name, c.args, c.call_id, c.state) for c in traj.all_calls] == [
            (n, a, i, "requested") for n, a, i in zip(SEQUENCE, ARGS, IDS, strict=True)
        ], run
    on, off = _run("llamaindex--openlit--content-on"), _run("llamaindex--openlit--content-off--stream")
    assert [c.result for c in on.all_calls] == ["sunny, 21C", "order 1234: shipped", "knowledge base unavailable",
                                                "Refunds take 5 days."]  # fmt: skip
    assert [c.result for c in off.all_calls] == [None] * 4


# smolagents: the non-streaming retry of search_kb repeats call id call_s1 (smolagents leaves the failed step's
# model turn out of the next request); the final answer is the final_answer tool
SMOL_SEQUENCE = [*SEQUENCE, "final_answer"]
SMOL_ARGS = [*ARGS, {"answer": "Order 1234 has shipped. It is sunny in Paris. Refunds take 5 days."}]


def test_openlit_smolagents_tool_spans_made_up_call_ids_give_way_to_the_models_by_name_and_order() -> None:
    # OpenLIT's smolagents tool spans carry a UUID of its own as gen_ai.tool.call.id; the model's ids are in the chat
    # spans' summaries. Each executed call is matched to the model's request by name and order: one call per
    # execution, the model's id and arguments (with content off, the summary's), the failed attempt included.
    for run, retry_id in (("smolagents--openlit--content-on", "call_s1"), ("smolagents--openlit--content-off", "call_s1"),
                          ("smolagents--openlit--content-on--stream", "call_s2"),
                          ("smolagents--openlit--content-off--stream", "call_s2")):  # fmt: skip
        traj = _run(run)
        calls = traj.all_calls
        assert [(c.name, c.args, c.call_id, c.status, c.executed) for c in calls] == [
            (n, a, i, s, True)
            for n, a, i, s in zip(
                SMOL_SEQUENCE, SMOL_ARGS, ["call_w1", "call_o1", "call_s1", retry_id, "call_f1"],
                ["ok", "ok", "error", "ok", "ok"], strict=True,
            )
        ], run  # fmt: skip
        assert all(c.span is not None and c.span.name == f"execute_tool {c.name}" for c in calls), run
        made_up = [c.span.attributes.get("gen_ai.tool.call.id") for c in calls if c.span is not None]
        assert all(isinstance(i, str) and i.count("-") == 4 for i in made_up[:2] + made_up[3:]), run
        assert {c.args_source for c in calls} == ({"messages"} if "content-off" in run else {"span", "messages"}), run
        got = grade(traj, [ArgumentCorrectness("get_order", {"order_id": 1234}), MaxModelRequests(max_requests=3)])
        assert [r.outcome for r in got] == ["passed", "failed"], run


def test_a_failed_openlit_smolagents_tool_span_holding_only_error_type_is_a_failed_call_of_the_named_tool() -> None:
    # OpenLIT's smolagents wrapper sets the span's attributes only when the tool returns: a tool that raised leaves
    # 'execute_tool search_kb' with error.type, status ERROR and an exception event
    failed = _run("smolagents--openlit--content-off").all_calls[2]
    assert failed.span is not None and set(failed.span.attributes) == {"error.type"}
    assert (failed.name, failed.status) == ("search_kb", "error")
    assert failed.error is not None and "knowledge base unavailable" in failed.error
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("openlit.instrumentation.smolagents")
    with tracer.start_as_current_span("execute_tool search_kb") as span:
        span.set_attribute("error.type", "AgentToolExecutionError")
        span.set_status(Status(StatusCode.ERROR, "knowledge base unavailable"))
    with tracer.start_as_current_span("execute_tool search_kb"):
        pass  # neither a tool name nor an error: a span named so is not enough
    provider.shutdown()
    traj = extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))
    assert [(c.name, c.status, c.error) for c in traj.all_calls] == [
        ("search_kb", "error", "knowledge base unavailable")
    ]


def test_strands_native_chat_span_with_openlits_openai_chat_span_inside_is_one_request() -> None:
    # openlit 1.45's Strands processor does not load, so OpenLIT's openai span records each request again inside
    # Strands' own chat span; content off, the calls' arguments come from the inner span's summary
    for run in ("strands--openlit--content-on--stream", "strands--openlit--content-off--stream"):
        traj = _run(run)
        assert [(r.model, r.span.scope_name if r.span else None) for r in traj.model_requests] == [
            ("gpt-4o", "strands.telemetry.tracer")
        ] * 4, run
        assert all(isinstance(r.cost, Cost) for r in traj.model_requests), run  # OpenLIT's, from the inner span
        assert [(c.name, c.args, c.call_id) for c in traj.all_calls] == list(zip(SEQUENCE, ARGS, IDS, strict=True))
        assert [c.status for c in traj.all_calls] == ["ok", "ok", "error", "ok"], run


def test_openlit_smolagents_step_spans_are_no_agent_runs() -> None:
    # 'invoke_agent support step_N' (gen_ai.smolagents.step_number) holds one step's model request and calls: a step
    # of the agent's run, not a run of its own
    for run in ("smolagents--openlit--content-on", "smolagents--openlit--content-off--stream"):
        traj = _run(run)
        [agent] = traj.agent_runs
        assert (agent.name, agent.operation, agent.parent) == ("support", "invoke_agent", None), run
        steps = [n for n in traj.tree if "gen_ai.smolagents.step_number" in n.attributes]
        assert len(steps) >= 4 and all(n.name.startswith("invoke_agent support step_") for n in steps), run
        assert all(c.run is agent and c.agent == "support" for c in traj.all_calls), run
        assert all(r.run is agent for r in traj.model_requests), run


LITELLM = [f"litellm--openlit--content-{c}{s}" for c in ("on", "off") for s in ("", "--stream")]


def test_litellm_chat_spans_requested_calls_are_the_trajectory_and_the_caught_failure_is_no_failure() -> None:
    # OpenLIT's litellm instrumentation writes one 'chat openai/gpt-4o' span per request (its openai one records
    # nothing: LiteLLM posts through the client's low-level post()); no tool spans, so the summary's calls (content
    # on or off) are the trajectory. The loop hands search_kb's exception to the model as a tool message: a result.
    results = ["sunny, 21C", "order 1234: shipped", "Error: knowledge base unavailable", "Refunds take 5 days."]
    for run in LITELLM:
        traj = _run(run)
        assert [(r.model, r.response_model, r.provider) for r in traj.model_requests] == [
            ("openai/gpt-4o", "gpt-4o", "litellm")] * 4, run  # fmt: skip
        assert all(r.cost is not None and r.cost.amount > 0 for r in traj.model_requests), run
        assert traj.agent_runs == [], run
        assert [(c.name, c.args, c.call_id, c.state) for c in traj.all_calls] == [
            (n, a, i, "requested") for n, a, i in zip(SEQUENCE, ARGS, IDS, strict=True)
        ], run
        assert [c.result for c in traj.all_calls] == (results if "content-on" in run else [None] * 4), run
        got = grade(traj, [ToolCorrectness(expected_tools=SEQUENCE), MaxModelRequests(max_requests=4),
                           ArgumentCorrectness("get_order", {"order_id": 9999})])  # fmt: skip
        assert [r.outcome for r in got] == ["passed", "passed", "failed"], run


MCP_RUNS = ["pydantic-ai--mcp-openlit--content-on", "pydantic-ai--mcp-openlit--content-off",
            "pydantic-ai--mcp-openlit--content-on--stream", "pydantic-ai--mcp-openlit--content-off--stream",
            "pydantic-ai--mcp-openlit--content-on--sdk-server", "pydantic-ai--mcp-openlit--content-off--sdk-server"]  # fmt: skip


def test_openlit_mcp_client_spans_and_fastmcps_client_and_server_spans_of_one_call_are_one_call() -> None:
    # Each call: FastMCP's client span 'tools/call <tool>' > OpenLIT's 'mcp tools/call' (async wrapper) > its sync
    # wrapper's 'mcp tools/call' + 'mcp transport/request', and the server's spans (FastMCP's in the agent's trace;
    # the MCP SDK's FastMCP in variant sdk-server, whose OpenLIT spans sit in the server's own trace without a tool
    # name). Plus the chat summary's requested call: one executed call each. OpenLIT's client span gives the
    # arguments and result with content on; with content off the summary gives the arguments.
    for run in MCP_RUNS:
        traj = _run(run)
        assert [(c.name, c.args, c.call_id, c.state, c.dialect) for c in traj.all_calls] == [
            (n, a, i, "failed" if i == "call_s1" else "executed", "mcp")
            for n, a, i in zip(SEQUENCE, ARGS, IDS, strict=True)
        ], run
        assert {c.args_source for c in traj.all_calls} == ({"span"} if "content-on" in run else {"messages"}), run
        assert all(c.span is not None and c.span.name == f"tools/call {c.name}" for c in traj.all_calls), run
        assert len(traj.model_requests) == 4, run
        got = grade(traj, [ToolCorrectness(expected_tools=["get_weather", "get_order", "search_kb"]), MaxToolCalls(max_calls=4),
                           MaxToolCalls(max_calls=3), ArgumentCorrectness("get_order", {"order_id": 1234})])  # fmt: skip
        assert [r.outcome for r in got] == ["passed", "passed", "failed", "passed"], run
    on = _run("pydantic-ai--mcp-openlit--content-on")
    # FastMCP marks a non-object result it sent as {"result": value} (meta.fastmcp.wrap_result); the SDK's does not
    assert [c.result for c in on.all_calls] == ["sunny, 21C", "order 1234: shipped", None, "Refunds take 5 days."]
    sdk = _run("pydantic-ai--mcp-openlit--content-on--sdk-server")
    assert [c.result for c in sdk.all_calls] == [
        {"result": "sunny, 21C"}, {"result": "order 1234: shipped"}, None, {"result": "Refunds take 5 days."}]  # fmt: skip
    assert [c.result for c in _run("pydantic-ai--mcp-openlit--content-off").all_calls] == [None] * 4


def test_openlit_mcp_client_span_alone_is_the_call_its_server_spans_and_placeholders_are_none() -> None:
    # The committed sdk-server run without FastMCP's client spans (an MCP client that does not trace itself, e.g.
    # mcp's ClientSession used directly): OpenLIT's 'mcp tools/call' client span is then the call. Its sync wrapper's
    # span inside (payload: the coroutine's placeholder) is the same call; its server spans (tool only in the request
    # payload, the server's own trace) and start-up spans (handler registrations) are no calls.
    entry = json.loads((CORPUS / "entries" / "pydantic-ai--mcp-openlit--content-on--sdk-server.json").read_text())
    spans = [s for s in read_spans(CORPUS / entry["traces"]) if s.scope_name != "fastmcp"]
    openlit_call_spans = [s for s in spans if s.attributes.get("mcp.method") == "call_tool"]
    assert len(openlit_call_spans) == 1 + 4 * 2 + 4 * 4  # registration; client async + sync; server 4 per call
    traj = extract(SpanTree.from_spans(spans))
    calls = traj.all_calls
    assert [(c.name, c.args, c.args_source, c.state, c.dialect) for c in calls] == [
        (n, a, "span", "failed" if n == "search_kb" and k == 2 else "executed", "mcp")
        for k, (n, a) in enumerate(zip(SEQUENCE, ARGS, strict=True))
    ]
    assert all(c.span is not None and c.span.name == "mcp tools/call" for c in calls)
    assert calls[2].error == "the MCP server answered isError: true" and calls[2].result is None
    assert [c.result for c in calls[:2]] == [{"result": "sunny, 21C"}, {"result": "order 1234: shipped"}]
    assert [r.outcome for r in grade(traj, [MaxToolCalls(max_calls=4), MaxToolCalls(max_calls=3)])] == [
        "passed", "failed"]  # fmt: skip


def test_openlit_haystack_component_span_is_the_request_and_its_model_comes_from_the_openai_span_inside() -> None:
    # OpenLIT's Haystack instrumentation writes 'chat openai_chat_generator' (operation chat, no model, no tokens)
    # around OpenLIT's openai 'chat gpt-4o': one request each, whose model, tokens and cost are the inner span's; the
    # name's suffix is the component (gen_ai.framework.component.name), not a model
    for run in ("haystack--openlit--content-on", "haystack--openlit--content-off--stream"):
        traj = _run(run)
        requests = traj.model_requests
        assert [(r.span.name, r.model) for r in requests if r.span is not None] == [
            ("chat openai_chat_generator", "gpt-4o")
        ] * 4, run
        assert all(r.input_tokens and r.output_tokens is not None and r.cost is not None for r in requests), run
        got = grade(traj, [MaxModelRequests(max_requests=4), MaxModelRequests(max_requests=3)])
        assert [r.outcome for r in got] == ["passed", "failed"], run


def test_openlit_haystack_agent_records_no_run_or_tool_span_its_calls_are_the_requested_ones() -> None:
    # the Agent and its ToolInvoker are not wrapped: the calls are the chat spans' requested calls (the summary with
    # content off); the failed search_kb is only the error text Haystack handed back to the model (content on)
    for run in ("haystack--openlit--content-on", "haystack--openlit--content-on--stream",
                "haystack--openlit--content-off", "haystack--openlit--content-off--stream"):  # fmt: skip
        traj = _run(run)
        assert traj.agent_runs == [], run
        assert [(c.name, c.args, c.call_id, c.state) for c in traj.all_calls] == [
            (n, a, i, "requested") for n, a, i in zip(SEQUENCE, ARGS, IDS, strict=True)
        ], run
        results = [c.result for c in traj.all_calls]
        if "content-on" in run:
            assert results[2].startswith("Failed to invoke Tool `search_kb`"), (run, results)
            assert [results[0], results[1], results[3]] == ["sunny, 21C", "order 1234: shipped",
                                                            "Refunds take 5 days."], run  # fmt: skip
        else:
            assert results == [None] * 4, run


def test_a_model_span_named_after_an_openlit_component_gives_no_model_unless_an_attribute_does() -> None:
    component = {"gen_ai.operation.name": "chat", "gen_ai.framework.component.name": "openai_chat_generator"}
    with _tracer() as (tracer, exporter):
        for attrs in (
            component,
            {**component, "gen_ai.request.model": "gpt-4o"},
            {**component, "gen_ai.framework.component.name": "other_component"},
            {"gen_ai.operation.name": "chat"},
        ):
            with tracer.start_as_current_span("chat openai_chat_generator") as span:
                span.set_attributes(attrs)
        spans = exporter.get_finished_spans()
    got = [[r.model for r in extract(SpanTree.from_readable_spans([s])).model_requests] for s in spans]
    assert got == [[None], ["gpt-4o"], ["openai_chat_generator"], ["openai_chat_generator"]]


AGENT_FRAMEWORK = [f"agent-framework--openlit--content-{c}{s}" for c in ("on", "off") for s in ("", "--stream")]


def test_openlit_agent_framework_tool_spans_are_the_calls_and_mark_the_failed_attempt_content_on_or_off() -> None:
    # OpenLIT's Agent Framework 'execute_tool <tool>' spans carry the model's call id, so each merges with the chat
    # summary's requested call: one executed call each. Content off, the summary gives the arguments; the failed
    # attempt is the span's error status, content on or off, streamed or not
    for run in AGENT_FRAMEWORK:
        traj = _run(run)
        assert [(c.name, c.args, c.call_id, c.state) for c in traj.all_calls] == [
            (n, a, i, "failed" if i == "call_s1" else "executed") for n, a, i in zip(SEQUENCE, ARGS, IDS, strict=True)
        ], run
        assert {c.args_source for c in traj.all_calls} == ({"span"} if "content-on" in run else {"messages"}), run
        assert traj.all_calls[2].error == "RuntimeError: knowledge base unavailable", run
        results = [c.result for c in traj.all_calls]
        assert results == (["sunny, 21C", "order 1234: shipped", None, "Refunds take 5 days."]
                           if "content-on" in run else [None] * 4), run  # fmt: skip


def test_openlit_agent_framework_invoke_agent_span_is_the_run_of_every_call_and_request_streamed_or_not() -> None:
    # 'create_agent support' (a trace of its own) is no run; 'invoke_agent support' encloses the chat and tool spans,
    # also when streamed (its output messages' tool calls are the run's, not another model request's)
    for run in AGENT_FRAMEWORK:
        traj = _run(run)
        assert [(r.name, r.operation, r.input_tokens, r.output_tokens) for r in traj.agent_runs] == [
            ("support", "invoke_agent", 687, 136)
        ], run
        assert [(r.model, r.agent) for r in traj.model_requests] == [("gpt-4o", "support")] * 4, run
        assert {c.agent for c in traj.all_calls} == {"support"}, run
        got = grade(traj, [ToolCorrectness(expected_tools=["get_weather", "get_order", "search_kb"], agent="support"),
                           MaxModelRequests(max_requests=4), MaxModelRequests(max_requests=3)])  # fmt: skip
        assert [r.outcome for r in got] == ["passed", "passed", "failed"], run
