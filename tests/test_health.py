"""Health checks (`MaxDuration`, `NoErrorSpans`, `MaxTokens`, `NoToolLoops`) on real Pydantic AI runs."""

from __future__ import annotations

from typing import Any

from _agents import run_captured
from tracegrade import EvalResult, grade
from tracegrade.evaluators import MaxDuration, MaxTokens, NoErrorSpans, NoToolLoops


def one(source: Any, evaluator: Any) -> EvalResult:
    [result] = grade(source, [evaluator])
    return result


def names(*tools: str) -> list[tuple[str, dict[str, Any]]]:
    return [(t, {}) for t in tools]


def test_max_duration_whole_run_and_per_tool() -> None:
    cap = run_captured(names("slow", "fast"), sleep={"slow": 0.05})
    assert one(cap, MaxDuration(10)).passed
    assert not one(cap, MaxDuration(0.001)).passed
    per_tool = one(cap, MaxDuration(0.02, tool="*"))
    assert not per_tool.passed and "slow()" in per_tool.reasoning and "fast" not in per_tool.reasoning
    assert one(cap, MaxDuration(0.02, tool="fast")).passed
    p50 = one(cap, MaxDuration(0.02, tool="*", percentile=50))
    assert p50.passed and "p50 of 2" in p50.reasoning


def test_no_error_spans() -> None:
    cap = run_captured(names("a", "b"), fail=[1])
    result = one(cap, NoErrorSpans())
    assert not result.passed and "1 error span(s): 'execute_tool b'" in result.reasoning
    assert one(cap, NoErrorSpans(allowed_names=["execute_tool b*"])).passed
    assert one(cap, NoErrorSpans(allow_retries=True)).passed
    assert one(run_captured(names("a")), NoErrorSpans()).passed


def test_max_tokens_sums_model_requests_only() -> None:
    cap = run_captured(names("a"))
    total_in = sum(r.input_tokens or 0 for r in cap.trajectory.model_requests)
    agent_in = cap.trajectory.agent_runs[0].input_tokens
    assert agent_in == total_in  # the agent span aggregates the same usage: it must not be added again
    assert one(cap, MaxTokens(max_input=total_in)).passed
    over = one(cap, MaxTokens(max_input=total_in - 1))
    assert not over.passed and f"input {total_in} > {total_in - 1}" in over.reasoning


def test_no_tool_loops() -> None:
    loop = run_captured([("search", {"q": "x"})] * 3 + [("search", {"q": "y"})])
    result = one(loop, NoToolLoops(max_repeats=2))
    assert not result.passed and "search" in result.reasoning and "x3" in result.reasoning
    assert one(loop, NoToolLoops(max_repeats=3)).passed
    spaced = run_captured([("search", {"q": "x"}), ("other", {}), ("search", {"q": "x"}), ("search", {"q": "x"})])
    assert one(spaced, NoToolLoops(max_repeats=2)).passed
    assert not one(spaced, NoToolLoops(max_repeats=2, window=4)).passed


def test_no_tool_loops_without_arguments_is_not_evaluated() -> None:
    cap = run_captured([("search", {"q": "x"})] * 3, include_content=False)
    assert one(cap, NoToolLoops(max_repeats=2)).outcome == "not_evaluated"


def test_max_tokens_with_a_request_that_recorded_no_usage_is_not_evaluated_unless_already_over() -> None:
    from opentelemetry.sdk.trace import TracerProvider

    from tracegrade import capture

    tp = TracerProvider()
    tracer = tp.get_tracer("agent.framework")
    run = {"gen_ai.operation.name": "invoke_agent"}
    usage = {"gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 20}
    with capture(provider=tp) as cap, tracer.start_as_current_span("invoke_agent support", attributes=run):
        with tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat", **usage}):
            pass
        with tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}):
            pass  # a streamed response whose usage was not recorded
    assert [r.input_tokens for r in cap.trajectory.model_requests] == [100, None]
    unknown = one(cap, MaxTokens(max_total=1_000))
    assert unknown.outcome == "not_evaluated"
    assert "1 of 2 record no total token count: the sum would understate the use" in unknown.reasoning
    assert one(cap, MaxTokens(max_input=150)).outcome == "not_evaluated"
    over = one(cap, MaxTokens(max_input=50))  # the recorded counts alone exceed it
    assert over.outcome == "failed" and "input 100 > 50" in over.reasoning and "at least" in over.reasoning


# --- MaxDuration's limit is checked when it is built ---
def test_max_duration_refuses_a_limit_that_is_not_a_duration() -> None:
    import math
    from datetime import timedelta

    import pytest

    from tracegrade.errors import ParameterError

    for bad in (-1, -0.5, math.nan, "3", True, timedelta(seconds=-1)):
        with pytest.raises(ParameterError, match=r"MaxDuration\.seconds: must be a number"):
            MaxDuration(bad)  # type: ignore[arg-type]
    assert MaxDuration(0).limit() == 0 and MaxDuration(timedelta(milliseconds=1500)).limit() == 1.5
