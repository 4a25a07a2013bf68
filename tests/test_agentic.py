"""The agentic evaluators of shared/reference/003 on real agent runs (spans from Pydantic AI)."""

from __future__ import annotations

import pytest

from _agents import run_captured
from tracegrade import EvalResult, grade
from tracegrade.evaluators import (
    ArgumentCorrectness,
    HasMatchingSpan,
    MaxModelRequests,
    MaxToolCalls,
    ToolCallArgsEvaluator,
    ToolCorrectness,
    TrajectoryMatch,
)
from tracegrade.results import TurnContext
from tracegrade.tree import SpanTree


def one(source: object, evaluator: object) -> EvalResult:
    [result] = grade(source, [evaluator])  # type: ignore[arg-type]
    return result


def calls(*names: str) -> list[tuple[str, dict[str, object]]]:
    return [(n, {}) for n in names]


# --- TrajectoryMatch -------------------------------------------------------------------------------


def test_in_order_worked_example_scores_two_thirds() -> None:
    cap = run_captured(calls("a", "x", "b"))
    result = one(cap, TrajectoryMatch(expected_trajectory=["a", "b", "c"], order="in_order"))
    assert result.score == pytest.approx(2 / 3)
    assert not result.passed and result.outcome == "failed"
    assert "LCS=2, precision=2/3=0.667, recall=2/3=0.667, F1=0.667" in result.reasoning


def test_score_passes_at_its_threshold() -> None:
    cap = run_captured(calls("a", "x", "b"))
    assert one(cap, TrajectoryMatch(["a", "b", "c"], threshold=0.6)).passed
    assert not one(cap, TrajectoryMatch(["a", "b", "c"], threshold=0.7)).passed


def test_any_order_uses_multiset_overlap() -> None:
    cap = run_captured(calls("b", "a", "a"))
    result = one(cap, TrajectoryMatch(["a", "b", "c"], order="any_order"))
    assert result.score == pytest.approx(2 / 3)
    assert "multiset overlap=2, precision=2/3=0.667, recall=2/3=0.667" in result.reasoning


def test_exact_is_all_or_nothing() -> None:
    cap = run_captured(calls("validate", "enrich", "submit"))
    assert one(cap, TrajectoryMatch(["validate", "enrich", "submit"], order="exact")).score == 1.0
    miss = one(cap, TrajectoryMatch(["validate", "submit"], order="exact"))
    assert miss.score == 0.0 and "does not equal expected" in miss.reasoning


def test_extra_calls_only_reduce_precision_in_order() -> None:
    cap = run_captured(calls("validate", "log", "enrich", "submit"))
    result = one(cap, TrajectoryMatch(["validate", "enrich", "submit"]))
    assert result.score == pytest.approx(2 * 0.75 * 1.0 / 1.75)
    assert "recall=3/3=1.000" in result.reasoning


@pytest.mark.parametrize("order", ["exact", "in_order", "any_order"])
def test_both_empty_score_one_and_one_empty_scores_zero(order: str) -> None:
    empty = run_captured([])
    assert one(empty, TrajectoryMatch([], order=order)).score == 1.0  # type: ignore[arg-type]
    assert one(empty, TrajectoryMatch(["a"], order=order)).score == 0.0  # type: ignore[arg-type]
    assert one(run_captured(calls("a")), TrajectoryMatch([], order=order)).score == 0.0  # type: ignore[arg-type]


def test_failed_attempts_are_excluded_unless_asked() -> None:
    cap = run_captured(calls("a", "b"), fail=[0])  # the first `a` asks for a retry
    assert one(cap, TrajectoryMatch(["a", "b"], order="exact")).passed
    assert one(cap, TrajectoryMatch(["a", "a", "b"], order="exact", include_failed=True)).passed


def test_invalid_order_and_threshold_are_rejected() -> None:
    with pytest.raises(ValueError, match="TrajectoryMatch.order: must be"):
        TrajectoryMatch(["a"], order="sorted")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threshold"):
        TrajectoryMatch(["a"], threshold=1.5)


# --- ToolCorrectness --------------------------------------------------------------------------------


def test_tool_correctness_is_a_multiset() -> None:
    cap = run_captured(calls("search", "rerank", "generate"))
    assert one(cap, ToolCorrectness(expected_tools=["generate", "search", "rerank"])).passed
    twice = one(cap, ToolCorrectness(expected_tools=["search", "search", "rerank", "generate"]))
    assert not twice.passed and "missing tools: 'search' (x1) (called: " in twice.reasoning


def test_tool_correctness_rejects_extras_unless_allowed() -> None:
    cap = run_captured(calls("search", "log"))
    result = one(cap, ToolCorrectness(["search"]))
    assert not result.passed and "unexpected tools: 'log' (x1) (called: ['search', 'log'])" in result.reasoning
    assert one(cap, ToolCorrectness(["search"], allow_extra=True)).passed


def test_tool_correctness_counts_failed_attempts_only_when_asked() -> None:
    cap = run_captured(calls("search"), fail=[0])
    assert one(cap, ToolCorrectness(["search"])).passed
    assert not one(cap, ToolCorrectness(["search"], include_failed=True)).passed
    assert one(cap, ToolCorrectness(["search", "search"], include_failed=True)).passed


# --- ArgumentCorrectness ----------------------------------------------------------------------------


def test_argument_subset_and_exact() -> None:
    cap = run_captured([("issue_refund", {"order_id": "12345", "amount": 10})])
    assert one(cap, ArgumentCorrectness("issue_refund", {"order_id": "12345"})).passed
    exact = one(cap, ArgumentCorrectness("issue_refund", {"order_id": "12345"}, match_mode="exact"))
    assert not exact.passed and "unexpected key 'amount' with value 10" in exact.reasoning


def test_subset_compares_nested_values_in_full() -> None:
    cap = run_captured([("book", {"opts": {"a": 1, "b": 2}})])
    result = one(cap, ArgumentCorrectness("book", {"opts": {"a": 1}}))
    assert not result.passed
    assert "key 'opts': expected {'a': 1}, got {'a': 1, 'b': 2}" in result.reasoning


def test_occurrence_selects_first_last_or_index() -> None:
    cap = run_captured([("search", {"q": "a"}), ("search", {"q": "b"}), ("search", {"q": "c"})])
    assert one(cap, ArgumentCorrectness("search", {"q": "a"})).passed
    assert one(cap, ArgumentCorrectness("search", {"q": "c"}, occurrence="last")).passed
    assert one(cap, ArgumentCorrectness("search", {"q": "b"}, occurrence=1)).passed
    out = one(cap, ArgumentCorrectness("search", {"q": "b"}, occurrence=3))
    assert not out.passed and "called 3 time(s)" in out.reasoning


def test_failed_attempts_are_separate_occurrences_with_include_failed() -> None:
    cap = run_captured([("search", {"q": "a"}), ("search", {"q": "b"})], fail=[0])
    # failed attempt 0 is search(q=a); the model retries it, then calls search(q=b)
    assert one(cap, ArgumentCorrectness("search", {"q": "a"}, occurrence=1, include_failed=True)).passed
    assert one(cap, ArgumentCorrectness("search", {"q": "b"}, occurrence=1)).passed


def test_never_called_differs_from_mismatch() -> None:
    cap = run_captured([("search", {"q": "a"})])
    never = one(cap, ArgumentCorrectness("refund", {"id": 1}))
    assert never.reasoning == "No calls to tool 'refund' were recorded. Tools called: ['search']"  # pydantic-evals' words
    mismatch = one(cap, ArgumentCorrectness("search", {"q": "z"}))
    assert mismatch.reasoning.startswith("Tool 'search' argument mismatch: key 'q': expected 'z', got 'a'. ")


def test_both_argument_checks_give_the_same_verdicts_each_in_its_peers_words() -> None:
    cap = run_captured([("search", {"q": "a"}), ("search", {"q": "b"})])
    cases = [("search", {"q": "z"}, "first"), ("search", {"q": "b"}, "any"), ("search", {"q": "z"}, "any"),
             ("search", {"q": "a"}, 5), ("search", {"q": "b"}, "last"), ("refund", {}, "first")]  # fmt: skip
    words = []
    for tool, args, occurrence in cases:
        core = one(cap, ArgumentCorrectness(tool, args, occurrence=occurrence))
        pytest_family = one(cap, ToolCallArgsEvaluator(tool, args, occurrence=occurrence))
        assert core.outcome == pytest_family.outcome, (tool, occurrence)
        words.append((core.reasoning, pytest_family.reasoning))
    first, any_match, any_miss, fifth, _, never = words
    assert first == ("Tool 'search' argument mismatch: key 'q': expected 'z', got 'a'. Expected {'q': 'z'} (subset), "
                     "observed {'q': 'a'} (call 'first')",  # pydantic-evals' words first
                     "Tool 'search' argument mismatch (subset mode, call 'first'): expected {'q': 'z'}, observed "
                     "{'q': 'a'} (key 'q': expected 'z', got 'a')")  # pytest-agent-eval's  # fmt: skip
    assert any_match[1].startswith("Tool 'search' called with expected args (subset): ")
    assert any_miss[1].startswith("Tool 'search' argument mismatch (subset mode): expected {'q': 'z'}, observed "
                                  "[{'q': 'a'}, {'q': 'b'}]")  # fmt: skip
    assert fifth[0] == fifth[1] and "occurrence=5 does not select any of them" in fifth[0]
    assert never == ("No calls to tool 'refund' were recorded. Tools called: ['search', 'search']",
                     "Tool 'refund' was never called (tools called: ['search', 'search'])")  # fmt: skip


def test_arguments_not_recorded_is_not_evaluated() -> None:
    cap = run_captured([("issue_refund", {"order_id": "1"})], include_content=False)
    result = one(cap, ArgumentCorrectness("issue_refund", {"order_id": "1"}))
    assert result.outcome == "not_evaluated" and not result.passed
    assert "were not recorded by pydantic-ai" in result.reasoning and "include_content=True" in result.reasoning


def test_argument_parameters_are_validated() -> None:
    with pytest.raises(ValueError, match="occurrence"):
        ArgumentCorrectness("t", {}, occurrence=-1)
    with pytest.raises(ValueError, match="match_mode"):
        ArgumentCorrectness("t", {}, match_mode="fuzzy")  # type: ignore[arg-type]


# --- budgets --------------------------------------------------------------------------------------


def test_max_tool_calls_counts_failed_attempts_by_default() -> None:
    cap = run_captured(calls("a", "b"), fail=[0])
    result = one(cap, MaxToolCalls(max_calls=2))
    assert not result.passed and result.reasoning == "3 tool call(s), budget=2"
    assert one(cap, MaxToolCalls(max_calls=2, include_failed=False)).passed


def test_max_model_requests_counts_chat_spans() -> None:
    cap = run_captured(calls("a", "b"))  # a, b, final text: three requests
    assert one(cap, MaxModelRequests(max_requests=3)).reasoning == "3 model request(s) (from span tree), budget=3"
    assert not one(cap, MaxModelRequests(max_requests=2)).passed


def test_max_model_requests_prefers_the_requests_metric() -> None:
    cap = run_captured(calls("a"))
    ctx = TurnContext.for_trajectory(cap.trajectory, metrics={"requests": 7})
    result = one(ctx, MaxModelRequests(max_requests=5))
    assert not result.passed and "7 model request(s) (from ctx.metrics['requests'])" in result.reasoning


# --- no spans, HasMatchingSpan, evaluation names ------------------------------------------------------


@pytest.mark.parametrize(
    "evaluator",
    [
        ToolCorrectness(["a"]),
        TrajectoryMatch(["a"]),
        ArgumentCorrectness("a", {}),
        MaxToolCalls(1),
        MaxModelRequests(1),
        HasMatchingSpan({"name_equals": "x"}),
    ],  # fmt: skip
    ids=lambda e: type(e).__name__,
)
def test_no_spans_is_not_evaluated_and_says_how_to_instrument(evaluator: object) -> None:
    result = one(SpanTree(), evaluator)
    assert result.outcome == "not_evaluated" and not result.passed
    assert "instrument" in result.reasoning and "tracegrade.capture()" in result.reasoning


def test_has_matching_span() -> None:
    cap = run_captured(calls("search"), fail=[0])
    assert one(cap, HasMatchingSpan({"name_equals": "execute_tool search", "has_status": "error"})).passed
    miss = one(cap, HasMatchingSpan({"name_contains": "refund"}))
    assert not miss.passed and "'execute_tool search'" in miss.reasoning


def test_has_matching_span_validates_its_query() -> None:
    with pytest.raises(ValueError, match="did you mean 'name_equals'"):
        HasMatchingSpan({"name_equal": "x"})  # type: ignore[typeddict-unknown-key]


def test_results_carry_the_evaluator_name() -> None:
    cap = run_captured(calls("a"))
    results = grade(cap, [MaxToolCalls(1), MaxToolCalls(1, evaluation_name="tool budget")])
    assert [r.name for r in results] == ["MaxToolCalls", "tool budget"]
