"""`tracegrade.matching`: the bit-parallel LCS against the plain dynamic programme, the step
alignments against the LCS and sequence equality on name-only steps, and the TrajectoryMatch scores."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade.errors import ParameterError
from tracegrade.matching import (
    Step,
    align_any_order,
    align_exact,
    align_in_order,
    check_args_options,
    lcs_length,
    score_steps,
    score_trajectory,
    step_matches,
)
from tracegrade.trajectory import ToolCall

names = st.lists(st.sampled_from("abcde"), max_size=40)
long_names = st.lists(st.integers(0, 6), min_size=60, max_size=200)  # more than one 64-bit word


def plain_lcs(a: list[object], b: list[object]) -> int:
    """The textbook O(nm) table."""
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a, 1):
        for j, y in enumerate(b, 1):
            table[i][j] = table[i - 1][j - 1] + 1 if x == y else max(table[i - 1][j], table[i][j - 1])
    return table[len(a)][len(b)]


@settings(max_examples=300, deadline=None)
@given(names, names)
def test_fast_lcs_equals_the_plain_dp(a: list[str], b: list[str]) -> None:
    assert lcs_length(a, b) == plain_lcs(a, b)  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(long_names, long_names)
def test_fast_lcs_equals_the_plain_dp_across_machine_words(a: list[int], b: list[int]) -> None:
    assert lcs_length(a, b) == plain_lcs(a, b)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(names, names)
def test_lcs_is_symmetric_and_bounded(a: list[str], b: list[str]) -> None:
    n = lcs_length(a, b)
    assert n == lcs_length(b, a) and 0 <= n <= min(len(a), len(b))
    assert lcs_length(a, a) == len(a)


def _match(actual: list[str], steps: list[Step]):  # type: ignore[no-untyped-def]
    return lambda i, j: actual[i] == steps[j].tool


@settings(max_examples=200, deadline=None)
@given(names, names)
def test_alignment_on_name_only_steps_is_the_lcs(actual: list[str], expected: list[str]) -> None:
    steps = [Step(n) for n in expected]
    matched, optional = align_in_order(len(actual), steps, _match(actual, steps))
    assert (matched, optional) == (lcs_length(actual, expected), 0)


@settings(max_examples=200, deadline=None)
@given(names, names)
def test_exact_alignment_on_required_name_only_steps_is_equality(actual: list[str], expected: list[str]) -> None:
    steps = [Step(n) for n in expected]
    assert align_exact(len(actual), steps, _match(actual, steps)) == (actual == expected)


@settings(max_examples=200, deadline=None)
@given(names, names)
def test_any_order_alignment_on_name_only_steps_is_the_multiset_overlap(actual: list[str], expected: list[str]) -> None:
    steps = [Step(n) for n in expected]
    matched, optional, extra = align_any_order(len(actual), steps, _match(actual, steps))
    overlap = sum((Counter(actual) & Counter(expected)).values())
    assert (matched, optional, extra) == (overlap, 0, len(actual) - overlap)


@settings(max_examples=100, deadline=None)
@given(names, names, st.sampled_from(["exact", "in_order", "any_order"]))
def test_step_scores_of_plain_names_are_the_reference_formulas(
    actual: list[str], expected: list[str], order: str
) -> None:
    calls = [ToolCall(n) for n in actual]
    assert score_steps(calls, [Step(n) for n in expected], order) == score_trajectory(actual, expected, order)  # type: ignore[arg-type]


def test_in_order_score_is_the_f1_of_the_lcs() -> None:
    score, reason = score_trajectory(["a", "x", "b"], ["a", "b", "c"], "in_order")
    assert score == pytest.approx(2 / 3)
    assert reason.startswith("LCS=2, precision=2/3=0.667, recall=2/3=0.667, F1=0.667")


def test_optional_steps_neither_count_against_nor_are_required() -> None:
    steps = [Step("search"), Step("log", optional=True), Step("answer")]
    assert score_steps([ToolCall("search"), ToolCall("answer")], steps, "exact")[0] == 1.0
    assert score_steps([ToolCall("search"), ToolCall("log"), ToolCall("answer")], steps, "exact")[0] == 1.0
    assert score_steps([ToolCall("search")], steps, "superset")[0] == 0.0


def test_steps_with_arguments_match_by_the_argument_mode() -> None:
    steps = [Step("search", {"q": "lamp"})]
    assert score_steps([ToolCall("search", {"q": "lamp", "page": 2})], steps, "exact")[0] == 1.0
    assert score_steps([ToolCall("search", {"q": "lamp", "page": 2})], steps, "exact", args_mode="exact")[0] == 0.0


def test_unknown_modes_name_the_owner_and_parameter() -> None:
    with pytest.raises(
        ParameterError, match=r"^Owner\.mode: must be one of \('exact', 'subset', 'superset', 'ignore'\), got 'x'$"
    ):
        check_args_options("x", None, "Owner.mode")
    with pytest.raises(ParameterError, match=r"^Owner\.key_modes\.q: must be a mode in"):
        check_args_options("exact", {"q": "fuzzy"}, "Owner.mode")


# --- any-order matching with argument steps: the best assignment, whatever the order of the steps ---
def _best_assignment(n_calls: int, steps: list[Step], match: Any) -> tuple[int, int]:
    """(required steps matched, steps matched) of the best assignment, by trying every one (small inputs)."""
    best = (0, 0)

    def walk(j: int, used: frozenset[int], required: int, total: int) -> None:
        nonlocal best
        if j == len(steps):
            best = max(best, (required, total))
            return
        walk(j + 1, used, required, total)
        for i in range(n_calls):
            if i not in used and match(i, j):
                walk(j + 1, used | {i}, required + (not steps[j].optional), total + 1)

    walk(0, frozenset(), 0, 0)
    return best


_arg_calls = st.lists(
    st.tuples(st.sampled_from("ab"), st.dictionaries(st.sampled_from("xy"), st.integers(1, 2), max_size=2)),
    max_size=5,
)
_arg_steps = st.lists(
    st.tuples(
        st.sampled_from("ab"),
        st.none() | st.dictionaries(st.sampled_from("xy"), st.integers(1, 2), max_size=2),
        st.booleans(),
    ),
    max_size=5,
)


@settings(max_examples=300, deadline=None)
@given(_arg_calls, _arg_steps, st.randoms(use_true_random=False))
def test_any_order_alignment_with_arguments_is_the_best_assignment_in_any_step_order(
    raw_calls: list[tuple[str, dict[str, int]]], raw_steps: list[tuple[str, dict[str, int] | None, bool]], rnd: Any
) -> None:
    calls = [ToolCall(name, args) for name, args in raw_calls]
    steps = [Step(tool, args, optional) for tool, args, optional in raw_steps]

    def align(steps: list[Step]) -> tuple[int, int, int]:
        return align_any_order(
            len(calls), steps, lambda i, j: step_matches(steps[j], calls[i].name, calls[i].args, "subset")
        )

    matched, optional, extra = align(steps)
    assert (matched - optional, matched) == _best_assignment(
        len(calls), steps, lambda i, j: step_matches(steps[j], calls[i].name, calls[i].args, "subset")
    )
    assert extra == len(calls) - matched
    shuffled = list(steps)
    rnd.shuffle(shuffled)
    assert align(shuffled) == (matched, optional, extra)


@pytest.mark.parametrize("order", ["any_order", "unordered", "superset", "subset"])
def test_any_order_modes_do_not_depend_on_the_order_of_argument_steps(order: str) -> None:
    # the first step would take the call the second one needs, were calls handed out first come, first served
    calls = [ToolCall("a", {"x": 1, "y": 2}), ToolCall("a", {"x": 1})]
    x, y = Step("a", {"x": 1}), Step("a", {"y": 2})
    for steps in ([x, y], [y, x]):
        score, reason = score_steps(calls, steps, order)  # type: ignore[arg-type]
        assert score == 1.0, reason


@pytest.mark.parametrize("value", ["false", "no", 0, 1, None])
def test_a_step_optional_flag_must_be_true_or_false(value: object) -> None:
    with pytest.raises(ValueError, match=r"steps\[0\]\.optional: expected true or false"):
        Step.parse({"tool": "a", "optional": value}, "steps[0]")
