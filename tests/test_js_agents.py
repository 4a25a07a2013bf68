"""JavaScript agents' telemetry read from the committed corpus files (fixtures/frameworks/, recorded by
gen/langgraphjs/run.mjs): LangGraph.js under OpenLLMetry-JS's LangChain instrumentation, whose tool spans are
named after the LangChain tool class (`execute_tool DynamicStructuredTool`), never the tool."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracegrade import grade
from tracegrade.dialects import classify, extract
from tracegrade.dialects import genai as genai_dialect
from tracegrade.evaluators import ArgumentCorrectness, MaxToolCalls, NoToolLoops, ToolCorrectness
from tracegrade.ingest import read_spans
from tracegrade.trajectory import ToolCall, Trajectory
from tracegrade.tree import SpanNode, SpanTree

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"
LANGGRAPH_JS = "langgraph-js--openllmetry--content-{}.traces.json"


def _tree(content: str) -> SpanTree:
    return SpanTree.from_spans(read_spans(CORPUS / LANGGRAPH_JS.format(content)))


def _tool_spans(tree: SpanTree) -> list[SpanNode]:
    spans = [n for n in tree if n.name.startswith("execute_tool ")]
    assert [n.name for n in spans] == ["execute_tool DynamicStructuredTool"] * 4  # the class, not the tool
    return spans


@pytest.mark.parametrize("content", ["on", "on--stream"])
def test_langgraph_js_tool_calls_are_named_by_the_recorded_tool_message(content: str) -> None:
    traj: Trajectory = extract(_tree(content))
    got = sorted((c.name, c.call_id, c.args, c.result, c.status) for c in traj.tool_calls)
    assert got == [
        ("get_order", "call_o1", {"order_id": 1234}, "order 1234: shipped", "ok"),
        ("get_weather", "call_w1", {"city": "Paris"}, "sunny, 21C", "ok"),
        ("search_kb", "call_s2", {"query": "refund policy"}, "Refunds take 5 days.", "ok"),
    ]
    assert {c.dialect for c in traj.tool_calls} == {"openllmetry"}
    results = grade(
        traj,
        [
            ToolCorrectness(expected_tools=["get_weather", "get_order", "search_kb"]),
            ArgumentCorrectness("get_weather", {"city": "Paris"}),
        ],
    )
    assert [r.outcome for r in results] == ["passed", "passed"], [r.reasoning for r in results]


def test_langgraph_js_tool_span_without_output_is_an_execution_whose_tool_is_not_recorded() -> None:
    # search_kb's first attempt raised: its span has error status and an exception event but no output, so
    # nothing on it names the tool; it is an execution of an unknown tool (never one of 'DynamicStructuredTool')
    failed = [n for n in _tool_spans(_tree("on")) if n.status == "error"]
    assert len(failed) == 1 and "traceloop.entity.output" not in failed[0].attributes
    step = classify(failed[0])
    assert isinstance(step, ToolCall) and step.name == "" and step.failed and step.args == {"query": "refund policy"}
    assert "a tool that raised has no such output" in str(step.name_missing)
    assert genai_dialect.tool_call(failed[0]) is None
    traj = extract(_tree("on"))
    assert traj.unnamed_calls == [step] and "" not in traj.all_calls
    # checks of the successful calls grade; those that count the failed attempt cannot: which tool it was is unknown
    right, counted, budget, loops = grade(traj, [
        ToolCorrectness(expected_tools=["get_weather", "get_order", "search_kb"]),
        ToolCorrectness(expected_tools=["get_weather", "get_order", "search_kb"], include_failed=True),
        MaxToolCalls(max_calls=3),  # 4 attempts were made: a pass on the 3 named ones would be false
        NoToolLoops(max_repeats=1),
    ])  # fmt: skip
    assert right.outcome == "passed", right.reasoning
    for r in (counted, budget, loops):
        assert r.outcome == "not_evaluated", r.reasoning
        assert r.reasoning.startswith("1 tool execution (1 failed) among the calls checked does not record which tool "
                                      "ran (span 'execute_tool DynamicStructuredTool' "), r.reasoning  # fmt: skip


def test_langgraph_js_content_off_leaves_tool_checks_not_evaluated_naming_trace_content() -> None:
    tree = _tree("off")
    for node in _tool_spans(tree):
        step = classify(node)  # an execution, but nothing names the tool
        assert isinstance(step, ToolCall) and step.name_missing is not None
    traj = extract(tree)
    assert traj.tool_calls == [] and len(traj.model_requests) == 4 and len(traj.unnamed_calls) == 4
    for result in grade(traj, [ToolCorrectness(expected_tools=["get_weather"]), MaxToolCalls(max_calls=10)]):
        assert result.outcome == "not_evaluated"
        assert result.reasoning.startswith("4 tool span(s) record tool executions but not which tools ran")
        assert "traceContent: true" in result.reasoning and "LangChain tool class" in result.reasoning


def test_langgraph_js_tool_span_read_by_classify_matches_its_reader() -> None:
    node = next(n for n in _tool_spans(_tree("on")) if n.status != "error")
    step = classify(node)
    assert isinstance(step, ToolCall) and step.name in {"get_weather", "get_order", "search_kb"}
