"""DSPy under OpenInference (fixtures/frameworks/dspy--openinference--*): its TOOL spans are the calls; the
tools its ReAct picks in the model's text are never parsed into calls."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tracegrade import grade
from tracegrade.dialects import extract
from tracegrade.evaluators import ArgumentCorrectness, MaxModelRequests, MaxToolCalls, ToolCorrectness, TrajectoryMatch
from tracegrade.ingest import read_spans
from tracegrade.spans import Span
from tracegrade.tree import SpanTree

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"
DSPY_ON = CORPUS / "dspy--openinference--content-on.traces.json"
DSPY_SCOPE = "openinference.instrumentation.dspy"


def _spans(path: Path = DSPY_ON) -> list[Span]:
    return list(read_spans(path))


@pytest.mark.parametrize(("run", "method"), [("content-on", "__call__"), ("content-on--stream", "acall")])
def test_dspy_tool_spans_are_calls_named_after_the_tool_with_their_keyword_arguments(run: str, method: str) -> None:
    """Sync tool spans are `{tool}.__call__`, async ones (streaming through dspy.streamify) `{tool}.acall`."""
    spans = _spans(CORPUS / f"dspy--openinference--{run}.traces.json")
    assert {s.name for s in spans if s.attributes.get("openinference.span.kind") == "TOOL"} == {
        f"{tool}.{method}" for tool in ("get_weather", "get_order", "search_kb", "finish")}  # fmt: skip
    calls = extract(SpanTree.from_spans(spans)).all_calls
    assert [(c.name, c.args, c.status) for c in calls] == [
        ("get_weather", {"city": "Paris"}, "ok"),
        ("get_order", {"order_id": 1234}, "ok"),
        ("search_kb", {"query": "refund policy"}, "error"),
        ("search_kb", {"query": "refund policy"}, "ok"),
        ("finish", {}, "ok"),
    ]


def test_a_method_suffix_and_kwargs_wrapper_are_dspys_only() -> None:
    """Another OpenInference instrumentation's TOOL span named `x.__call__` keeps its name and its recorded input."""
    spans = [dataclasses.replace(s, scope_name="openinference.instrumentation.other") for s in _spans()]
    calls = extract(SpanTree.from_spans(spans)).all_calls
    assert calls[0].name == "get_weather.__call__"
    assert calls[0].args == {"kwargs": {"city": "Paris"}}


def test_tools_dspy_picks_in_the_models_text_are_not_read_as_calls() -> None:
    """Without its tool spans, DSPy's model spans hold ReAct's choices only as text (next_tool_name /
    next_tool_args): every tool check is not_evaluated, naming why and the spans that record the calls; the
    request budget still grades."""
    spans = [s for s in _spans() if s.attributes.get("openinference.span.kind") != "TOOL"]
    llm = [s for s in spans if s.attributes.get("openinference.span.kind") == "LLM"]
    assert llm and all("[[ ## next_tool_name ## ]]" in str(s.attributes["output.value"]) for s in llm[:5])
    traj = extract(SpanTree.from_spans(spans))
    assert traj.all_calls == []
    checks = [ToolCorrectness(expected_tools=["get_weather"]), TrajectoryMatch(expected_trajectory=["get_weather"]),
              MaxToolCalls(max_calls=5), ArgumentCorrectness("get_weather", {"city": "Paris"})]  # fmt: skip
    got = grade(traj, [*checks, MaxModelRequests(max_requests=6), MaxModelRequests(max_requests=5)])
    assert [r.outcome for r in got] == ["not_evaluated"] * 4 + ["passed", "failed"], [r.reasoning for r in got]
    for r in got[:4]:
        assert "'LM.__call__' (openinference.instrumentation.dspy) records the model's output as text" in r.reasoning
        assert "next_tool_name / next_tool_args" in r.reasoning and "Tool.__call__" in r.reasoning


def test_text_output_of_another_instrumentation_still_shows_no_tool_was_called() -> None:
    """The same model spans from another instrumentation: a recorded text output without tool calls means none
    was requested, so the tool checks grade (as before)."""
    spans = [dataclasses.replace(s, scope_name="openinference.instrumentation.other") for s in _spans()
             if s.attributes.get("openinference.span.kind") != "TOOL"]  # fmt: skip
    got = grade(extract(SpanTree.from_spans(spans)), [ToolCorrectness(expected_tools=["get_weather"]),
                                                      MaxToolCalls(max_calls=5)])  # fmt: skip
    assert [r.outcome for r in got] == ["failed", "passed"], [r.reasoning for r in got]
