"""Arguments missing from tool spans (include_content=False) recovered from the run's messages by call id.

Real Pydantic AI agents (FunctionModel) instrumented with include_content=False, and real SDK spans for
the case the agents cannot produce (content on for messages, a tool span without arguments). The call
id decides, never the order: parallel calls of one tool with different arguments keep their own when
the message parts are swapped, and an id that matches nothing stays NOT_RECORDED.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart

from _agents import scripted_agent
from tracegrade import NOT_RECORDED, AgentReply, ToolCall, Trajectory, Turn, capture, grade
from tracegrade.dialects import DIALECTS, extract, register_dialect
from tracegrade.dialects._recovery import recover_arguments, tool_call_parts
from tracegrade.evaluators import ArgumentCorrectness, ToolCallArgsEvaluator, TrajectoryMatch
from tracegrade.pytest_plugin.session import EvalSession
from tracegrade.pytest_plugin.transcript import Expect, ToolCallArgsConfig
from tracegrade.trajectory import AgentRun
from tracegrade.tree import SpanTree

PARALLEL = [[("search", {"q": "alpha"}), ("search", {"q": "beta"})], ("answer", {"text": "done"})]
"""One model response asks for two searches at once (ids call_0_0, call_0_1), then `answer` (call_1_0)."""


def _run(steps: Any = PARALLEL, **kwargs: Any) -> tuple[Any, Any]:
    agent = scripted_agent(steps, include_content=False, **kwargs)
    with capture() as cap:
        result = agent.run_sync("go")
    return cap, result


def _swapped(messages: list[ModelMessage]) -> list[ModelMessage]:
    """The same messages with the tool-call parts of every model response in reverse order."""
    return [
        dataclasses.replace(m, parts=list(reversed(m.parts))) if isinstance(m, ModelResponse) else m for m in messages
    ]


def _by_id(calls: list[Any]) -> dict[str, Any]:
    return {c.call_id: c.args for c in calls}


# --- without recovery ------------------------------------------------------------------------------


def test_include_content_false_leaves_arguments_not_recorded_and_names_the_agent() -> None:
    cap, _ = _run(name="support")
    calls = cap.trajectory.tool_calls
    assert [c.name for c in calls] == ["search", "search", "answer"]  # names and order still work
    assert all(c.args is NOT_RECORDED and c.args_source is None for c in calls)
    [result] = grade(cap, [ArgumentCorrectness("search", {"q": "alpha"})])
    assert result.outcome == "not_evaluated"
    assert "by agent 'support'" in result.reasoning and "add_messages" in result.reasoning
    [order] = grade(cap, [TrajectoryMatch(["search", "search", "answer"], order="exact")])
    assert order.passed


# --- the three ways to give messages ---------------------------------------------------------------


def test_add_messages_after_the_run_recovers_arguments_by_call_id() -> None:
    cap, result = _run()
    cap.add_messages(result.all_messages())
    calls = cap.trajectory.tool_calls
    assert _by_id(calls) == {"call_0_0": {"q": "alpha"}, "call_0_1": {"q": "beta"}, "call_1_0": {"text": "done"}}
    assert {c.args_source for c in calls} == {"messages"}
    first, second = grade(cap, [ArgumentCorrectness("search", {"q": "alpha"}), ArgumentCorrectness("answer", {})])
    assert first.passed and "recovered from the run's messages" in first.reasoning
    assert second.passed


def test_capture_messages_argument_seeds_the_recovery() -> None:
    agent = scripted_agent(PARALLEL, include_content=False)
    recorded = agent.run_sync("go").all_messages()  # the scripted model issues the same ids every run
    with capture(messages=recorded) as cap:
        agent.run_sync("go")
    assert _by_id(cap.trajectory.tool_calls)["call_0_1"] == {"q": "beta"}
    assert grade(cap, [ToolCallArgsEvaluator("search", {"q": "beta"})])[0].passed


def test_messages_in_an_agent_reply_reach_the_turn_capture() -> None:
    agent = scripted_agent(PARALLEL, include_content=False)

    async def call(history: list[dict[str, Any]]) -> AgentReply:
        result = await agent.run(history[-1]["content"])
        return AgentReply(result.output, messages=result.all_messages())

    expect = Expect(tool_calls_args=[ToolCallArgsConfig("search", {"q": "beta"})])
    outcome = EvalSession().run_sync(call, [Turn("go", expect=expect)])
    [turn] = outcome.runs[0].turn_results
    assert outcome.passed, turn.eval_results
    assert {c.args_source for c in turn.tool_calls} == {"messages"}


def test_a_pydantic_ai_run_result_returned_by_the_agent_callable_is_used_too() -> None:
    agent = scripted_agent(PARALLEL, include_content=False)
    expect = Expect(tool_calls_args=[ToolCallArgsConfig("answer", {"text": "done"})])
    outcome = EvalSession().run_sync(lambda history: agent.run_sync("go"), [Turn("go", expect=expect)])
    assert outcome.passed, outcome.runs[0].turn_results[0].eval_results


# --- the call id decides ---------------------------------------------------------------------------


def test_parallel_calls_of_one_tool_keep_their_own_arguments_when_the_parts_are_swapped() -> None:
    cap, result = _run()
    swapped = _swapped(result.all_messages())
    parts = [p for m in swapped if isinstance(m, ModelResponse) for p in m.parts if isinstance(p, ToolCallPart)]
    assert [p.args for p in parts[:2]] == [{"q": "beta"}, {"q": "alpha"}]  # the order really is reversed
    cap.add_messages(swapped)
    first, second, _ = cap.trajectory.tool_calls  # span order: call_0_0 started first
    assert (first.call_id, first.args) == ("call_0_0", {"q": "alpha"})
    assert (second.call_id, second.args) == ("call_0_1", {"q": "beta"})
    results = grade(
        cap,
        [
            ArgumentCorrectness("search", {"q": "alpha"}, occurrence="first"),
            ArgumentCorrectness("search", {"q": "beta"}, occurrence="last"),
            ArgumentCorrectness("search", {"q": "beta"}, occurrence="first"),
        ],
    )
    assert [r.passed for r in results] == [True, True, False]
    assert "expected 'beta', got 'alpha'" in results[2].reasoning


def test_a_call_id_that_matches_nothing_stays_not_recorded() -> None:
    cap, result = _run()
    renamed = [
        dataclasses.replace(
            m,
            parts=[
                dataclasses.replace(p, tool_call_id="other_" + p.tool_call_id)
                if isinstance(p, ToolCallPart) and p.tool_call_id == "call_0_1"
                else p
                for p in m.parts
            ],
        )
        if isinstance(m, ModelResponse)
        else m
        for m in result.all_messages()
    ]
    cap.add_messages(renamed)
    args = _by_id(cap.trajectory.tool_calls)
    assert args["call_0_0"] == {"q": "alpha"}
    assert args["call_0_1"] is NOT_RECORDED  # not the other search's arguments, not a guess from order
    [result_] = grade(cap, [ArgumentCorrectness("search", {"q": "beta"}, occurrence=1)])
    assert result_.outcome == "not_evaluated"


def test_the_tool_name_must_match_too() -> None:
    traj = Trajectory([ToolCall("search", call_id="c1")])
    recover_arguments(traj, [{"parts": [{"type": "tool_call", "id": "c1", "name": "answer", "arguments": "{}"}]}])
    assert traj.all_calls[0].args is NOT_RECORDED


def test_ids_reused_by_independent_runs_in_one_capture_match_in_order() -> None:
    first = scripted_agent([("search", {"q": "one"})], include_content=False)
    second = scripted_agent([("search", {"q": "two"})], include_content=False)
    with capture() as cap:
        r1 = first.run_sync("go")
        r2 = second.run_sync("go")
    cap.add_messages(r1.all_messages())
    cap.add_messages(r2.all_messages())
    calls = cap.trajectory.tool_calls
    assert [c.call_id for c in calls] == ["call_0_0", "call_0_0"]
    assert [c.args for c in calls] == [{"q": "one"}, {"q": "two"}]


def test_a_conversation_history_repeating_earlier_calls_is_not_ambiguous() -> None:
    agent = scripted_agent([("search", {"q": "one"})], include_content=False)
    with capture() as cap:
        r1 = agent.run_sync("go")
    history = r1.all_messages()
    cap.add_messages(history)
    cap.add_messages(history + history)  # a later turn's all_messages() holds the earlier turns again
    assert cap.trajectory.tool_calls[0].args == {"q": "one"}


def test_tool_call_parts_reads_both_message_forms() -> None:
    _, result = _run()
    parts = tool_call_parts(result.all_messages())
    assert parts["call_0_1"] == ("search", {"q": "beta"})
    otel = [{"role": "assistant", "parts": [{"type": "tool_call", "id": "x", "name": "t", "arguments": {"a": 1}}]}]
    assert tool_call_parts(otel) == {"x": ("t", {"a": 1})}
    assert tool_call_parts([{"parts": [{"type": "tool_call", "id": "y", "name": "t"}]}]) == {}  # content off


# --- messages recorded on the spans themselves (real SDK spans) -------------------------------------


@contextmanager
def _sdk_spans() -> Iterator[tuple[Any, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer("pydantic-ai", "2.62.0"), exporter
    provider.shutdown()


def _all_messages(calls: list[tuple[str, str, dict[str, Any]]]) -> str:
    """`pydantic_ai.all_messages` as Pydantic AI records it with content on."""
    parts = [{"type": "tool_call", "id": cid, "name": name, "arguments": args} for name, cid, args in calls]
    return json.dumps(
        [{"role": "user", "parts": [{"type": "text", "content": "go"}]}, {"role": "assistant", "parts": parts}]
    )


def _agent_run(
    tracer: Any,
    name: str,
    calls: list[tuple[str, str, dict[str, Any]]],
    *,
    on_span: bool = True,
    messages: list[tuple[str, str, dict[str, Any]]] | None = None,
) -> None:
    """An agent run whose tool spans (started in `calls` order) carry no arguments, while the run's
    messages (`messages`, default `calls`) are recorded on the agent span (`on_span`) or on its
    model-request span (`gen_ai.output.messages`)."""
    recorded = _all_messages(calls if messages is None else messages)
    attrs: dict[str, Any] = {
        "gen_ai.agent.name": name,
        "gen_ai.agent.call.id": f"run-{name}",
        "gen_ai.operation.name": "invoke_agent",
        "logfire.msg": f"{name} run",
    }
    with tracer.start_as_current_span(f"invoke_agent {name}", attributes=attrs) as agent_span:
        chat = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.agent.call.id": f"run-{name}",
        }
        if not on_span:
            chat["gen_ai.output.messages"] = recorded
        with tracer.start_as_current_span("chat gpt-4o", attributes=chat):
            pass
        for tool, cid, _ in calls:
            tool_attrs = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.id": cid,
                "gen_ai.agent.call.id": f"run-{name}",
                "logfire.msg": f"running tool: {tool}",
            }
            with tracer.start_as_current_span(f"execute_tool {tool}", attributes=tool_attrs):
                pass
        if on_span:  # Pydantic AI sets it when the run ends
            agent_span.set_attribute("pydantic_ai.all_messages", recorded)


@pytest.mark.parametrize("on_span", [True, False], ids=["pydantic_ai.all_messages", "gen_ai.output.messages"])
def test_messages_recorded_on_the_agent_spans_fill_tool_spans_without_arguments(on_span: bool) -> None:
    run = [("search", "c1", {"q": "alpha"}), ("search", "c2", {"q": "beta"})]
    with _sdk_spans() as (tracer, exporter):
        _agent_run(tracer, "main", run, on_span=on_span, messages=list(reversed(run)))  # parts in reverse
    spans = exporter.get_finished_spans()
    tool_spans = [s for s in spans if s.name.startswith("execute_tool")]
    assert len(tool_spans) == 2
    assert all("gen_ai.tool.call.arguments" not in (s.attributes or {}) for s in tool_spans)
    traj = extract(SpanTree.from_readable_spans(spans))
    assert [(c.call_id, c.args, c.args_source) for c in traj.tool_calls] == [
        ("c1", {"q": "alpha"}, "messages"),
        ("c2", {"q": "beta"}, "messages"),
    ]
    [result] = grade(traj, [ArgumentCorrectness("search", {"q": "beta"}, occurrence="last")])
    assert result.passed


def test_span_messages_are_scoped_to_the_call_s_own_agent_run() -> None:
    """Two runs whose model reused call ids: each call takes its own run's arguments."""
    with _sdk_spans() as (tracer, exporter), tracer.start_as_current_span("session"):
        _agent_run(tracer, "first", [("search", "c1", {"q": "one"})], on_span=True)
        _agent_run(tracer, "second", [("search", "c1", {"q": "two"})], on_span=True)
    traj = extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))
    assert [(c.agent, c.args) for c in traj.tool_calls] == [("first", {"q": "one"}), ("second", {"q": "two"})]


def test_arguments_recorded_on_the_span_are_never_replaced() -> None:
    agent = scripted_agent([("search", {"q": "span"})], include_content=True)
    with capture() as cap:
        agent.run_sync("go")
    cap.add_messages([ModelResponse(parts=[ToolCallPart("search", {"q": "messages"}, tool_call_id="call_0_0")])])
    [call] = cap.trajectory.tool_calls
    assert (call.args, call.args_source) == ({"q": "span"}, "span")


class _HomeGrownDialect:
    """A dialect of one in-house framework: `my.agent` / `my.tool` spans, the run's messages on the agent
    span under `my.messages` (named in `RUN_MESSAGES`, which is all recovery needs to know)."""

    name = "home_grown"
    RUN_MESSAGES: tuple[str, ...] = ("my.messages",)

    def recognizes(self, node: Any) -> bool:
        return bool(node.name.startswith("my."))

    def agent_run(self, node: Any) -> AgentRun | None:
        return AgentRun(name="mine", span=node, dialect=self.name) if node.name == "my.agent" else None

    def tool_call(self, node: Any) -> ToolCall | None:
        if node.name != "my.tool":
            return None
        return ToolCall(node.attributes["tool"], call_id=node.attributes["id"], span=node, dialect=self.name)

    def model_request(self, node: Any) -> None:
        return None

    def classify(self, node: Any) -> object:
        if not self.recognizes(node):
            return False
        return self.agent_run(node) or self.tool_call(node) or True


def test_a_registered_dialect_names_the_agent_span_attribute_that_holds_the_run_s_messages() -> None:
    with _sdk_spans() as (tracer, exporter), tracer.start_as_current_span("my.agent") as agent_span:
        with tracer.start_as_current_span("my.tool", attributes={"tool": "search", "id": "c1"}):
            pass
        agent_span.set_attribute("my.messages", _all_messages([("search", "c1", {"q": "alpha"})]))
    tree = SpanTree.from_readable_spans(exporter.get_finished_spans())
    dialect = _HomeGrownDialect()
    register_dialect(dialect, first=True)
    try:
        [call] = extract(tree).tool_calls
        assert (call.agent, call.args, call.args_source) == ("mine", {"q": "alpha"}, "messages")
        DIALECTS.remove(dialect)  # the attribute is dialect data (taken when the dialect is registered):
        dialect.RUN_MESSAGES = ()  # without it nothing is recovered
        register_dialect(dialect, first=True)
        [call] = extract(tree).tool_calls
        assert (call.args, call.args_source) == (NOT_RECORDED, None)
    finally:
        DIALECTS.remove(dialect)
