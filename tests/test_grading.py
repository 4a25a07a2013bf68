"""grade / agrade: sources, sync and async evaluators, exceptions turned into error results."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from _agents import run_captured
from tracegrade import EvalResult, Trajectory, TurnContext, agrade, grade
from tracegrade.evaluators import MaxToolCalls, ToolCorrectness
from tracegrade.tree import SpanTree


class Boom:
    def evaluate(self, ctx: TurnContext) -> EvalResult:
        raise KeyError("nope")


class AsyncCount:
    async def evaluate(self, ctx: TurnContext) -> EvalResult:
        await asyncio.sleep(0)
        return EvalResult(passed=len(ctx.tool_calls) == 2, reasoning=f"{len(ctx.tool_calls)} calls")


class ReturnsScore:
    threshold = 0.5

    def evaluate(self, ctx: TurnContext) -> float:
        return 0.6


class ReturnsJunk:
    def evaluate(self, ctx: TurnContext) -> Any:
        return "yes"


@pytest.fixture(scope="module")
def cap() -> Any:
    return run_captured([("a", {}), ("b", {})])


def test_results_in_evaluator_order_with_sync_and_async(cap: Any) -> None:
    results = grade(cap, [AsyncCount(), MaxToolCalls(1), ToolCorrectness(["a", "b"])])
    assert [(r.name, r.passed) for r in results] == [("AsyncCount", True), ("MaxToolCalls", False),
                                                      ("ToolCorrectness", True)]  # fmt: skip


def test_evaluator_exception_becomes_an_error_result(cap: Any) -> None:
    [result] = grade(cap, [Boom()])
    assert result.outcome == "error" and not result.passed
    assert result.reasoning == "Boom raised KeyError: 'nope'"


def test_scores_and_bad_return_values_are_coerced(cap: Any) -> None:
    score, junk = grade(cap, [ReturnsScore(), ReturnsJunk()])
    assert score.passed and score.score == 0.6
    assert junk.outcome == "error" and "returned 'yes'" in junk.reasoning


def test_every_source_kind_gives_the_same_verdict(cap: Any) -> None:
    ev = [ToolCorrectness(["a", "b"])]
    sources: list[Any] = [cap, cap.tree, cap.trajectory, list(cap.spans), TurnContext.for_trajectory(cap.trajectory),
                          SpanTree.from_spans([n.span for n in cap.tree])]  # fmt: skip
    assert [grade(s, ev)[0].passed for s in sources] == [True] * len(sources)


def test_grade_works_inside_a_running_loop(cap: Any) -> None:
    async def main() -> list[EvalResult]:
        return grade(cap, [AsyncCount()])

    assert asyncio.run(main())[0].passed


def test_agrade(cap: Any) -> None:
    assert [r.passed for r in asyncio.run(agrade(cap, [AsyncCount(), Boom()]))] == [True, False]


def test_bad_source_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="source must be"):
        grade(42, [MaxToolCalls(1)])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="found int"):
        grade([1, 2], [MaxToolCalls(1)])


def test_eval_result_invariants() -> None:
    assert EvalResult(True).outcome == "passed" and EvalResult(False, "x").reason == "x"
    with pytest.raises(ValueError, match="contradicts"):
        EvalResult(True, outcome="failed")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        EvalResult(True, score=1.5)
    assert EvalResult.not_evaluated("why").passed is False


def test_returned_calls_trajectory() -> None:
    traj = Trajectory.from_calls(["a", "b"])
    assert grade(traj, [ToolCorrectness(["a", "b"])])[0].passed


def test_not_recorded_arguments_are_none_and_no_arguments_are_an_empty_dict() -> None:
    """DESIGN and pytest-agent-eval: `ToolCall.args` is None when not recorded (`NOT_RECORDED is None`);
    `{}` means the call was recorded with no arguments; JSON `null` text is kept as recorded."""
    from tracegrade import NOT_RECORDED, ToolCall
    from tracegrade.trajectory import parse_args

    assert NOT_RECORDED is None
    assert ToolCall("search").args is None and not ToolCall("search").args_recorded
    assert ToolCall("search", {}).args == {} and ToolCall("search", {}).args_recorded
    assert parse_args("null") == "null" and parse_args('{"q": 1}') == {"q": 1}


# --- Spans holding no step: every check family names the instrumentation, not Pydantic AI ----------------------------


def test_every_check_family_names_the_instrumentation_of_spans_holding_no_step() -> None:
    from pathlib import Path

    from tracegrade import load_traces
    from tracegrade.evaluators import ToolCallEvaluator

    stream = Path(__file__).resolve().parent.parent / "fixtures/frameworks/openai--logfire--content-on--stream.traces.json"
    [opening] = [t for t in load_traces(stream) if format(t.nodes[0].trace_id, "032x").startswith("01a2428da45f")]
    pytest_family, agentic = grade(opening, [ToolCallEvaluator(must_include=["get_weather"]), MaxToolCalls(3)])
    assert pytest_family.outcome == agentic.outcome == "not_evaluated"
    assert agentic.reasoning.startswith("1 span was recorded by Logfire (logfire.openai), but no agent run, model "
                                        "request or tool span: span 'Chat Completion with ")  # fmt: skip
    assert pytest_family.reasoning == f"{agentic.reasoning}, and the agent returned no tool calls: nothing tells which tools were called"
    assert "instrument_pydantic_ai" not in agentic.reasoning
