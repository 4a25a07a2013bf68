"""The shortcuts of the grading path give exactly the results of the general path: naming the results
`grade` returns, the scoped trajectory of an unscoped check, the tool-name multiset check, and
TrajectoryMatch on name-only steps."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from _agents import run_captured
from tracegrade import EvalResult, Trajectory, TurnContext, grade
from tracegrade.evaluators import ArgumentCorrectness, MaxModelRequests, MaxToolCalls, ToolCorrectness, TrajectoryMatch
from tracegrade.matching import ORDERS, Step, score_steps

names = st.lists(st.sampled_from("abcd"), max_size=8)


class Tagged(EvalResult):
    __slots__ = ()


class Returns:
    def __init__(self, result: EvalResult) -> None:
        self.result = result

    def evaluate(self, ctx: TurnContext) -> EvalResult:
        return self.result


def test_grade_names_unnamed_results_and_keeps_named_ones_and_subclasses() -> None:
    traj = Trajectory.from_calls(["a"])
    plain, named, tagged = EvalResult(True, "ok", 0.5), EvalResult(False, "no", None, "failed", "mine"), Tagged(True)
    r_plain, r_named, r_tagged = grade(traj, [Returns(plain), Returns(named), Returns(tagged)])
    assert r_plain == EvalResult(True, "ok", 0.5, "passed", "Returns") == dataclasses.replace(plain, name="Returns")
    assert plain.name == ""  # the evaluator's own result is left as it was
    assert r_named is named
    assert type(r_tagged) is Tagged and r_tagged.name == "Returns" and r_tagged.passed


def test_a_context_over_a_trajectory_is_the_same_built_directly_or_with_fields() -> None:
    cap = run_captured([("a", {"x": 1})], reply="done")
    direct = TurnContext.for_trajectory(cap.trajectory)
    assert direct == TurnContext.for_trajectory(cap.trajectory, history=[])
    assert (direct.user, direct.reply, direct.tool_calls, direct.tool_calls_source) == ("go", "done", ["a"], "spans")
    assert direct.user_missing is None and direct.reply_missing is None
    assert direct.span_tree is cap.tree and direct.trajectory is cap.trajectory
    assert direct.history == [] and direct.metrics == {} and direct.config == {}
    assert direct.history is not TurnContext.for_trajectory(cap.trajectory).history  # fresh defaults each time
    assert TurnContext.for_trajectory(Trajectory()).tool_calls_source == "none"
    sub = _Context.for_trajectory(cap.trajectory)  # a subclass is built by keyword, with its own fields
    assert type(sub) is _Context and sub.turn == 0 and sub.tool_calls == direct.tool_calls


@dataclasses.dataclass
class _Context(TurnContext):
    turn: int = 0


def test_unscoped_checks_on_a_complete_run_read_the_whole_trajectory() -> None:
    cap = run_captured([("a", {"x": 1}), ("b", {})])
    evaluators = [ToolCorrectness(["a", "b"]), TrajectoryMatch(["a", "b"]), ArgumentCorrectness("a", {"x": 1}),
                  MaxToolCalls(2), MaxModelRequests(3)]  # fmt: skip
    assert [r.outcome for r in grade(cap, evaluators)] == ["passed"] * 5
    assert [r.outcome for r in grade(cap, [MaxToolCalls(1), MaxModelRequests(2)])] == ["failed", "failed"]


def test_what_the_telemetry_lacks_or_an_incomplete_run_still_leaves_checks_not_evaluated() -> None:
    traj = Trajectory.from_calls(["a", "b"])
    traj.missing["model_requests"] = "no model spans were recorded"
    tool_check, request_check = grade(traj, [ToolCorrectness(["a", "b"]), MaxModelRequests(3)])
    assert tool_check.outcome == "passed"  # it does not need model requests
    assert (request_check.outcome, request_check.reasoning) == ("not_evaluated", "no model spans were recorded")
    traj.incomplete.append("span 'x' had not ended")
    results = grade(traj, [ToolCorrectness(["a", "b"]), TrajectoryMatch(["a", "b"]), MaxToolCalls(5)])
    assert {(r.outcome, r.reasoning) for r in results} == {
        ("not_evaluated", "the recorded run is incomplete: span 'x' had not ended")
    }
    assert results[1].score == 0.0


@settings(max_examples=300, deadline=None)
@given(names.filter(bool), names, st.booleans())  # (no call at all is no evidence: not_evaluated)
def test_tool_correctness_compares_tool_names_as_multisets_in_any_order(
    called: list[str], expected: list[str], allow_extra: bool
) -> None:
    missing, extra = Counter(expected) - Counter(called), Counter(called) - Counter(expected)
    problems = ["missing tools: " + ", ".join(f"{n!r} (x{k})" for n, k in sorted(missing.items()))] if missing else []
    if extra and not allow_extra:
        problems.append("unexpected tools: " + ", ".join(f"{n!r} (x{k})" for n, k in sorted(extra.items())))
    [result] = grade(Trajectory.from_calls(called), [ToolCorrectness(expected, allow_extra=allow_extra)])
    if problems:
        assert (result.passed, result.reasoning) == (False, f"{'; '.join(problems)} (called: {called!r})")
    else:
        assert (result.passed, result.reasoning) == (True, f"called {called!r}, as expected")


@settings(max_examples=300, deadline=None)
@given(names.filter(bool), names, st.sampled_from(ORDERS), st.sampled_from([1.0, 0.5]))
def test_trajectory_match_on_tool_names_scores_as_score_steps(
    actual: list[str], expected: list[str], order: Any, threshold: float
) -> None:
    traj = Trajectory.from_calls(actual)
    steps: list[str | dict[str, Any]] = list(expected)
    [result] = grade(traj, [TrajectoryMatch(steps, order=order, threshold=threshold, parallel="ordered")])
    score, reason = score_steps(traj.calls(), [Step(t) for t in expected], order)
    reason += f"; threshold={threshold:g}" if threshold < 1.0 else ""
    assert (result.score, result.reasoning, result.passed) == (score, reason, score >= threshold)
