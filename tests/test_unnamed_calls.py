"""Tool executions whose spans do not record which tool ran (`ToolCall.name_missing`, `Trajectory.unnamed_calls`).

Such a span shows that a tool ran but not which one (smolagents' `SimpleTool.__call__` under MLflow, a LangGraph.js
tool that raised under OpenLLMetry-JS): it is no call of the trajectory, and a check whose selection of calls would
include it is not_evaluated, never passed or failed on the named calls alone.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from _dialect_spans import Node, SpanSpec, spans_of
from tracegrade import TurnContext, grade
from tracegrade.dialects import extract
from tracegrade.evaluators import (
    ArgumentCorrectness,
    MaxToolCalls,
    NoToolLoops,
    ToolCallEvaluator,
    ToolCorrectness,
    TrajectoryJudge,
    TrajectoryMatch,
)
from tracegrade.reporting.terminal import trajectory_lines
from tracegrade.reporting.trace import trace_view
from tracegrade.trajectory import UNNAMED, Trajectory
from tracegrade.tree import SpanTree

SCOPE = "mlflow.tracing.provider"


def _mlflow(name: str, span_type: str, attrs: dict[str, Any] | None = None, *children: Node,
            status: str = "unset") -> Node:  # fmt: skip
    base = {"mlflow.spanType": json.dumps(span_type)}
    return Node(SpanSpec(name, base | (attrs or {}), status=status), children)  # type: ignore[arg-type]


def _named(tool: str, args: dict[str, Any]) -> Node:
    return _mlflow(f"{tool}", "TOOL", {"mlflow.spanInputs": json.dumps(args)})


def _unnamed(args: dict[str, Any], *, failed: bool = False) -> Node:
    inputs = json.dumps({"sanitize_inputs_outputs": True, "kwargs": args})
    return _mlflow("SimpleTool.__call__", "TOOL", {"mlflow.spanInputs": inputs}, status="error" if failed else "unset")


def _run(*tools: Node, agent: str = "support") -> SpanTree:
    return spans_of(_mlflow("Agent.run", "AGENT", {"name": json.dumps(agent)}, *tools), scope=SCOPE)


def test_an_unnamed_execution_is_no_call_of_the_trajectory_but_is_listed_in_start_order() -> None:
    traj = extract(_run(_named("search", {"q": "x"}), _unnamed({"q": "y"}, failed=True), _named("fetch", {"id": 7})))
    assert traj.tool_names == ["search", "fetch"] and "" not in traj.all_calls
    (unnamed,) = traj.unnamed_calls
    assert (unnamed.name, unnamed.failed, unnamed.agent, unnamed.dialect) == ("", True, "support", "mlflow")
    assert unnamed and "'SimpleTool.__call__'" in str(unnamed.name_missing)  # a call is true, even with name ""
    assert [c.describe() for c in traj.listed(traj.calls())] == [
        "search(q='x')", f"{UNNAMED}(q='y')", "fetch(id=7)"]  # fmt: skip
    assert traj.recognized_spans == 4 and not traj.is_empty
    lines = [line.plain for line in trajectory_lines(traj)]
    assert lines[1] == f"  2. {UNNAMED}(q='y') (failed) support", lines  # smolagents' bound arguments unwrapped
    view = trace_view(traj)
    assert [c["name"] for c in view["calls"]] == ["search", UNNAMED, "fetch"]
    assert [s["label"] for s in view["spans"] if s["kind"] == "tool"] == ["search", UNNAMED, "fetch"]


def test_a_failed_unnamed_attempt_leaves_only_the_checks_that_count_failed_attempts_not_evaluated() -> None:
    traj = extract(_run(_named("search", {"q": "x"}), _unnamed({"q": "y"}, failed=True), _named("fetch", {"id": 7})))
    results = grade(traj, [
        ToolCorrectness(expected_tools=["search", "fetch"]),
        TrajectoryMatch(expected_trajectory=["search", "fetch"], order="exact"),
        ArgumentCorrectness("fetch", {"id": 7}),
        MaxToolCalls(max_calls=2, include_failed=False),
        MaxToolCalls(max_calls=2),  # three attempts were made: two named ones would pass it falsely
        ToolCorrectness(expected_tools=["search", "fetch"], include_failed=True),
        NoToolLoops(max_repeats=1),
        ToolCorrectness(expected_tools=["search"], agent="support"),
    ])  # fmt: skip
    assert [r.outcome for r in results] == ["passed"] * 4 + ["not_evaluated"] * 3 + ["failed"], [
        r.reasoning for r in results]  # fmt: skip
    assert results[4].reasoning == (
        "1 tool execution (1 failed) among the calls checked does not record which tool ran (span "
        "'SimpleTool.__call__' (mlflow.tracing.provider)): MLflow named the span after the method it patched "
        "('SimpleTool.__call__') and recorded no 'name' attribute naming the tool"
    )


def test_a_successful_unnamed_execution_leaves_every_tool_check_not_evaluated() -> None:
    traj = extract(_run(_named("search", {"q": "x"}), _unnamed({"q": "y"}), _unnamed({"q": "z"})))
    results = grade(traj, [ToolCorrectness(expected_tools=["search"]), MaxToolCalls(max_calls=1),
                           MaxToolCalls(max_calls=5, include_failed=False), ArgumentCorrectness("search", {"q": "x"})])  # fmt: skip
    assert [r.outcome for r in results] == ["not_evaluated"] * 4
    assert all(r.reasoning.startswith("2 tool executions among the calls checked do not record") for r in results)
    # the pytest-family checks read the successful calls too
    ctx = TurnContext.for_trajectory(traj)
    tool_check = asyncio.run(ToolCallEvaluator(must_include=["search"]).evaluate(ctx))
    assert tool_check.outcome == "not_evaluated" and "do not record which tool ran" in tool_check.reasoning


def test_scoping_keeps_the_unnamed_executions_of_the_scope_only() -> None:
    tree = spans_of(
        _mlflow("Agent.run", "AGENT", {"name": '"main"'}, _named("search", {"q": "x"}),
                _mlflow("Agent.run", "AGENT", {"name": '"writer"'}, _named("write", {"t": 1}), _unnamed({"t": 2}))),
        scope=SCOPE,
    )  # fmt: skip
    traj = extract(tree)
    assert [c.agent for c in traj.unnamed_calls] == ["writer"]
    main, writer = grade(traj, [ToolCorrectness(expected_tools=["search"], agent="main"),
                                ToolCorrectness(expected_tools=["write"], agent="writer")])  # fmt: skip
    assert (main.outcome, writer.outcome) == ("passed", "not_evaluated"), (main.reasoning, writer.reasoning)
    assert traj.scope(agent="main").unnamed_calls == [] and len(traj.scope(agent="writer").unnamed_calls) == 1


def test_an_unnamed_span_inside_a_named_tool_span_is_that_call() -> None:
    """Two instrumentations record one call: the outer span names the tool, the inner does not."""
    outer = Node(SpanSpec("execute_tool search", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
                                                  "gen_ai.tool.call.id": "c1"}), [_unnamed({"q": "x"})])  # fmt: skip
    traj = extract(spans_of(outer))
    assert traj.tool_names == ["search"] and traj.unnamed_calls == []
    assert grade(traj, [MaxToolCalls(max_calls=1)])[0].outcome == "passed"


def test_without_named_calls_the_missing_tool_evidence_names_the_unnamed_spans() -> None:
    traj = extract(_run(_unnamed({"q": "y"}), _unnamed({"q": "z"}, failed=True)))
    assert traj.missing["tool_calls"].startswith(
        "2 tool span(s) record tool executions but not which tools ran (span 'SimpleTool.__call__' "
        "(mlflow.tracing.provider)), and no other span names a called tool: MLflow named the span")
    assert "only agent spans" not in traj.missing["model_requests"] + traj.missing["tool_calls"]
    (budget,) = grade(traj, [MaxToolCalls(max_calls=9)])
    assert budget.outcome == "not_evaluated" and budget.reasoning == traj.missing["tool_calls"]


def test_the_trajectory_judge_is_shown_the_unnamed_execution_as_a_step_without_a_tool() -> None:
    prompts: list[str] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts.append("".join(str(p.content) for m in messages for p in m.parts if p.part_kind == "user-prompt"))
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"passed": True, "reasoning": "ok"})])

    traj: Trajectory = extract(_run(_named("search", {"q": "x"}), _unnamed({"q": "y"}, failed=True)))
    ctx = TurnContext.for_trajectory(traj, user="find x", history=[])
    result = asyncio.run(TrajectoryJudge("Searches once.", model=FunctionModel(respond)).evaluate(ctx))
    assert result.outcome == "passed"
    steps = json.loads(prompts[0].split("<trajectory>\n")[1].split("\n</trajectory>")[0])
    assert [(s["step"], s["tool"], s.get("tool_name_not_recorded"), s["outcome"]) for s in steps] == [
        (1, "search", None, "ok"), (2, None, True, "error")]  # fmt: skip


def test_a_genai_tool_span_that_names_no_tool_is_an_execution_of_an_unknown_tool() -> None:
    """`execute_tool` with no `gen_ai.tool.name` and no tool in its name: a tool ran, which one is not recorded;
    it was silently dropped before, so a budget passed on one call fewer than ran."""
    op = {"gen_ai.operation.name": "execute_tool"}
    tree = spans_of(Node(SpanSpec("invoke_agent a", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}), [
        Node(SpanSpec("execute_tool search", op | {"gen_ai.tool.name": "search"})),
        Node(SpanSpec("execute_tool", op | {"gen_ai.tool.call.arguments": '{"q": 1}'}), ()),
    ]))  # fmt: skip
    traj = extract(tree)
    assert traj.tool_names == ["search"]
    (unnamed,) = traj.unnamed_calls
    assert (unnamed.args, unnamed.agent, unnamed.dialect) == ({"q": 1}, "a", "genai")
    (budget,) = grade(traj, [MaxToolCalls(max_calls=1)])
    assert budget.outcome == "not_evaluated"
    assert budget.reasoning.endswith("the span ('execute_tool') records a tool execution without gen_ai.tool.name, "
                                     "and its name names no tool")  # fmt: skip


def test_an_unnamed_execution_takes_the_name_the_model_requested_by_its_call_id() -> None:
    """The model's output names the call (`gen_ai.output.messages`); the tool span records only the call id: by
    that id the execution is the named call, with its own span, status and result (nothing guessed by order)."""
    op = "gen_ai.operation.name"
    output = json.dumps([{"role": "assistant", "parts": [
        {"type": "tool_call", "id": "c1", "name": "search", "arguments": {"q": "x"}},
        {"type": "tool_call", "id": "c2", "name": "fetch", "arguments": {"id": 7}}]}])  # fmt: skip
    tool = {op: "execute_tool", "gen_ai.tool.call.result": "found"}
    tree = spans_of(Node(SpanSpec("invoke_agent a", {op: "invoke_agent", "gen_ai.agent.name": "a"}), [
        Node(SpanSpec("chat m", {op: "chat", "gen_ai.request.model": "m", "gen_ai.output.messages": output})),
        Node(SpanSpec("execute_tool", tool | {"gen_ai.tool.call.id": "c1"})),
        Node(SpanSpec("execute_tool", tool | {"gen_ai.tool.call.id": "c9"})),  # an id the model did not request
    ]))  # fmt: skip
    traj = extract(tree)
    by_id = {c.call_id: c for c in traj.all_calls}
    assert by_id["c1"].name == "search" and by_id["c1"].executed is True and by_id["c1"].span.name == "execute_tool"
    assert (by_id["c1"].args, by_id["c1"].result, by_id["c1"].agent, by_id["c1"].name_missing) == (
        {"q": "x"}, "found", "a", None)  # fmt: skip
    assert by_id["c2"].name == "fetch" and by_id["c2"].executed is False  # requested, no span ran it
    assert [c.call_id for c in traj.unnamed_calls] == ["c9"]
    assert grade(traj, [ToolCorrectness(expected_tools=["search"])])[0].outcome == "not_evaluated"


def test_max_duration_times_unnamed_executions_under_any_tool_and_not_for_a_named_one() -> None:
    from tracegrade.evaluators import MaxDuration

    traj = extract(_run(_named("search", {"q": "x"}), _unnamed({"q": "y"}), _unnamed({"q": "z"}, failed=True)))
    every, named, ok_only = grade(traj, [MaxDuration(seconds=60, tool="*"), MaxDuration(seconds=60, tool="search"),
                                         MaxDuration(seconds=60, tool="*", include_failed=False)])  # fmt: skip
    assert every.outcome == "passed" and every.reasoning.startswith("3 call(s)"), every.reasoning
    assert ok_only.outcome == "passed" and ok_only.reasoning.startswith("2 call(s)"), ok_only.reasoning
    assert named.outcome == "not_evaluated" and "do not record which tool ran" in named.reasoning

