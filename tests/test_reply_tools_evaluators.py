"""ContainsEvaluator, ToolCallEvaluator and ToolCallArgsEvaluator against shared/reference/000."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from typing import Any

import pytest

from _agents import run_captured
from tracegrade import EvalResult, ToolCall, TurnContext, grade
from tracegrade.errors import ParameterError
from tracegrade.evaluators import ContainsEvaluator, ToolCallArgsEvaluator, ToolCallEvaluator, ToolCorrectness
from tracegrade.pytest_plugin.transcript import ToolCallArgsConfig


def check(evaluator: Any, ctx: TurnContext) -> EvalResult:
    result: EvalResult = asyncio.run(evaluator.evaluate(ctx))
    return result


def reply(text: str) -> TurnContext:
    return TurnContext(user="u", reply=text)


def calls(*items: str | ToolCall, source: str = "spans") -> TurnContext:
    return TurnContext(
        tool_calls=[c if isinstance(c, ToolCall) else ToolCall(c) for c in items],
        tool_calls_source=source,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("cls", [ContainsEvaluator, ToolCallEvaluator, ToolCallArgsEvaluator])
def test_evaluate_is_async_as_the_protocol_says(cls: type) -> None:
    assert inspect.iscoroutinefunction(cls.evaluate)


# --- ContainsEvaluator ----------------------------------------------------------------------------


def test_any_of_is_case_insensitive_by_default() -> None:
    assert check(ContainsEvaluator(any_of=["confirmed", "booked"]), reply("Your table is BOOKED")).passed
    result = check(ContainsEvaluator(any_of=["confirmed", "booked"]), reply("Sorry, we are full"))
    assert not result.passed and "Reply did not contain any of ['confirmed', 'booked']" in result.reasoning


def test_all_of_names_what_is_missing() -> None:
    result = check(ContainsEvaluator(all_of=["booking", "reference number"]), reply("Booking done"))
    assert not result.passed and "Reply missing required strings: ['reference number']" in result.reasoning


def test_regexes_use_search() -> None:
    ev = ContainsEvaluator(matches_any=[r"ref(erence)? number[:# ]*[A-Z]{2}-\d+"])
    assert check(ev, reply("Your reference number: BK-1234.")).passed
    ev = ContainsEvaluator(matches_all=[r"\d{1,2}(am|pm)", r"tomorrow"])
    assert check(ev, reply("Tomorrow at 10AM")).passed  # case-insensitive regexes too
    result = check(ev, reply("Tomorrow at noon"))
    assert not result.passed and r"Reply missing required patterns: ['\\d{1,2}(am|pm)']" in result.reasoning


def test_substring_and_regex_checks_compose() -> None:
    ev = ContainsEvaluator(any_of=["confirmed", "booked"], matches_all=[r"BK-\d+"])
    assert check(ev, reply("Confirmed: BK-9")).passed
    assert not check(ev, reply("Confirmed, no reference")).passed


def test_case_sensitive_matching() -> None:
    ev = ContainsEvaluator(all_of=["Booking"], case_sensitive=True)
    assert check(ev, reply("Booking ok")).passed
    assert not check(ev, reply("booking ok")).passed
    assert not check(ContainsEvaluator(matches_any=["BK"], case_sensitive=True), reply("bk-1")).passed


def test_invalid_regex_raises_value_error_at_construction() -> None:
    with pytest.raises(ValueError, match=r"Invalid regex pattern '\('"):
        ContainsEvaluator(matches_any=["("])
    with pytest.raises(ValueError, match="matches_all"):
        ContainsEvaluator(matches_all=["[a-"])


def test_a_string_instead_of_a_list_is_rejected() -> None:
    with pytest.raises(ValueError, match="must be a list of strings"):
        ContainsEvaluator(any_of="confirmed")  # type: ignore[arg-type]


# --- ToolCallEvaluator --------------------------------------------------------------------------------


def test_must_include_and_must_exclude() -> None:
    ev = ToolCallEvaluator(must_include=["book_slot"], must_exclude=["cancel_slot"])
    assert check(ev, calls("search", "book_slot")).passed
    result = check(ev, calls("search", "cancel_slot"))
    assert not result.passed
    assert "Expected tool 'book_slot' not in ['search', 'cancel_slot']" in result.reasoning
    assert "Forbidden tool 'cancel_slot' was called" in result.reasoning


def test_ordered_requires_the_given_order_as_a_subsequence() -> None:
    ev = ToolCallEvaluator(must_include=["authenticate", "fetch_availability", "create_booking"], ordered=True)
    assert check(ev, calls("authenticate", "log", "fetch_availability", "create_booking")).passed
    result = check(ev, calls("fetch_availability", "authenticate", "create_booking"))
    assert not result.passed and "not called in order in ['fetch_availability', 'authenticate', 'create_booking']" in result.reasoning


def test_reason_says_when_tool_calls_did_not_come_from_spans() -> None:
    assert "as returned by the agent" in check(ToolCallEvaluator(["a"]), calls("a", source="returned")).reasoning
    assert "no agent spans were recorded" in check(ToolCallEvaluator(["a"]), calls(source="none")).reasoning
    assert "[" not in check(ToolCallEvaluator(["a"]), calls("a")).reasoning.split(")")[-1]


def test_tool_call_evaluator_reads_real_spans() -> None:
    cap = run_captured([("search", {"q": "x"}), ("book", {"time": "10am"})], fail=[1])
    [ok, bad] = grade(cap, [ToolCallEvaluator(["search", "book"], ordered=True), ToolCallEvaluator(["cancel"])])
    assert ok.passed, ok.reasoning
    assert not bad.passed and "not in ['search', 'book']" in bad.reasoning  # the failed attempt excluded


# --- ToolCallArgsEvaluator ------------------------------------------------------------------------------


def test_subset_is_the_default_and_extra_observed_keys_are_fine() -> None:
    ctx = calls(ToolCall("book_slot", {"time": "10am", "date": "tomorrow"}))
    assert check(ToolCallArgsEvaluator(tool="book_slot", args={"time": "10am"}), ctx).passed
    assert not check(ToolCallArgsEvaluator(tool="book_slot", args={"time": "10am"}, mode="exact"), ctx).passed
    exact = ToolCallArgsEvaluator(tool="book_slot", args={"time": "10am", "date": "tomorrow"}, mode="exact")
    assert check(exact, ctx).passed


def test_subset_compares_top_level_keys_and_nested_values_exactly() -> None:
    ctx = calls(ToolCall("t", {"opts": {"a": 1, "b": 2}}))
    assert not check(ToolCallArgsEvaluator(tool="t", args={"opts": {"a": 1}}), ctx).passed
    assert check(ToolCallArgsEvaluator(tool="t", args={"opts": {"a": 1, "b": 2}}), ctx).passed


def test_any_call_of_the_tool_may_match() -> None:
    ctx = calls(ToolCall("book_slot", {"time": "8pm"}), ToolCall("book_slot", {"time": "10am"}))
    assert check(ToolCallArgsEvaluator(tool="book_slot", args={"time": "10am"}), ctx).passed


def test_three_distinct_failure_messages() -> None:
    ev = ToolCallArgsEvaluator(tool="book_slot", args={"time": "10am"})
    never = check(ev, calls("search"))
    unrecorded = check(ev, calls(ToolCall("book_slot")))
    mismatch = check(ev, calls(ToolCall("book_slot", {"time": "3pm"})))
    assert (never.outcome, unrecorded.outcome, mismatch.outcome) == ("failed", "not_evaluated", "failed")
    assert "Tool 'book_slot' was never called (tools called: ['search'])" in never.reasoning
    assert "tool 'book_slot' was called but no dict arguments were captured" in unrecorded.reasoning
    assert "were not recorded; to record them" in unrecorded.reasoning
    assert mismatch.reasoning == ("Tool 'book_slot' argument mismatch (subset mode): expected {'time': '10am'}, "
                                  "observed [{'time': '3pm'}] (key 'time': expected '10am', got '3pm')")
    assert len({never.reasoning, unrecorded.reasoning, mismatch.reasoning}) == 3


def test_several_mismatching_calls_are_all_shown() -> None:
    ctx = calls(ToolCall("b", {"t": 1}), ToolCall("b", {"t": 2}))
    result = check(ToolCallArgsEvaluator(tool="b", args={"t": 3}), ctx)
    assert "observed [{'t': 1}, {'t': 2}] (first call: key 't': expected 3, got 1)" in result.reasoning


def test_returned_plain_names_say_how_to_give_arguments() -> None:
    result = check(ToolCallArgsEvaluator(tool="b", args={}), calls("b", source="returned"))
    assert result.outcome == "failed" and "return ToolCall(name, args)" in result.reasoning


def test_non_dict_arguments_are_reported_as_not_captured() -> None:
    result = check(ToolCallArgsEvaluator(tool="b", args={}), calls(ToolCall("b", "not json")))
    assert result.outcome == "failed" and "no dict arguments were captured: 'not json'" in result.reasoning


def test_arguments_from_real_spans_and_include_content_false() -> None:
    steps = [("book", {"time": "10am", "date": "tomorrow"})]
    ev = ToolCallArgsEvaluator(tool="book", args={"time": "10am"})
    assert grade(run_captured(steps), [ev])[0].passed
    [hidden] = grade(run_captured(steps, include_content=False), [ev])
    assert (
        hidden.outcome == "not_evaluated"
        and "were not recorded by pydantic-ai" in hidden.reasoning
        and "include_content=True" in hidden.reasoning
    )


def test_invalid_parameters_raise() -> None:
    with pytest.raises(
        ValueError, match=r"mode: must be one of \('exact', 'subset', 'superset', 'ignore'\), got 'fuzzy'"
    ):
        ToolCallArgsEvaluator(tool="t", args={}, mode="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ToolCallArgsEvaluator.args: must be a dict"):
        ToolCallArgsEvaluator(tool="t", args=["time"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ToolCallEvaluator.must_include: must be a list of strings"):
        ToolCallEvaluator(must_include="book")  # type: ignore[arg-type]


# --- one body and one declaration across the two families ------------------------------------------


def test_tool_correctness_and_tool_call_evaluator_each_report_in_their_peers_words() -> None:
    cap = run_captured([("search", {}), ("log", {})])
    core, pytest_family = grade(cap, [ToolCorrectness(["search", "refund"], allow_extra=True),
                                      ToolCallEvaluator(must_include=["search", "refund"])])  # fmt: skip
    assert core.reasoning == "missing tools: 'refund' (x1) (called: ['search', 'log'])"  # pydantic-evals'
    assert pytest_family.reasoning == "Expected tool 'refund' not in ['search', 'log']"  # pytest-agent-eval's
    strict, forbidding = grade(cap, [ToolCorrectness(["search"]), ToolCallEvaluator(must_exclude=["log"])])
    assert strict.reasoning == "unexpected tools: 'log' (x1) (called: ['search', 'log'])"
    assert forbidding.reasoning == "Forbidden tool 'log' was called"
    # each keeps its documented semantics: ToolCorrectness counts repeats, ToolCallEvaluator does not
    twice = ["search", "search"]
    counted, present = grade(cap, [ToolCorrectness(twice, allow_extra=True), ToolCallEvaluator(must_include=twice)])
    assert counted.reasoning.startswith("missing tools: 'search' (x1) ") and present.passed


def test_tool_call_args_config_takes_the_evaluators_own_parameters() -> None:
    evaluator = {f.name: f for f in dataclasses.fields(ToolCallArgsEvaluator)}
    config = {f.name: f for f in dataclasses.fields(ToolCallArgsConfig)}
    shared = ["tool", "mode", "recursive", "key_modes", "ignore_keys", "occurrence"]
    assert all(config[name] is evaluator[name] for name in shared)
    assert config["args"].default is None  # optional here: a `judge` may stand alone
    params = inspect.signature(ToolCallArgsConfig).parameters
    assert list(params) == ["tool", "args", "mode", "judge", "recursive", "key_modes", "ignore_keys", "occurrence"]
    built = ToolCallArgsConfig("book", {"time": "10am"}, "exact", None, True, None, ["id"], "last").build()
    assert built == [ToolCallArgsEvaluator("book", {"time": "10am"}, "exact", None, True, None, ["id"], "last")]
    for cls in (ToolCallArgsEvaluator, ToolCallArgsConfig):
        with pytest.raises(ParameterError) as caught:
            cls("book", {}, key_modes={"id": "fuzzy"})
        assert str(caught.value) == (
            f"{cls.__name__}.key_modes.id: must be a mode in ('exact', 'subset', 'superset', 'ignore') "
            "or a callable, got 'fuzzy'"
        )


def test_a_pass_says_which_text_matched_and_a_failure_names_only_what_is_missing() -> None:
    ev = ContainsEvaluator(any_of=["confirmed", "booked"], matches_all=[r"BK-\d+", "tomorrow"])
    ok = check(ev, reply("Booked for tomorrow, ref BK-12."))
    assert ok.passed
    assert ok.reasoning == (
        "All substring and pattern checks passed (contains 'booked'; 'BK-\\\\d+' matched 'BK-12'; "
        "'tomorrow' matched 'tomorrow')"
    )
    bad = check(ContainsEvaluator(matches_all=["tomorrow", r"BK-\d+"]), reply("Booked for tomorrow."))
    assert not bad.passed and "BK-" in bad.reasoning and "tomorrow" not in bad.reasoning  # as pytest-agent-eval


# --- the reply: a check of it on spans that recorded none is not evaluated -----------------------------------------


def test_reply_checks_on_spans_that_recorded_no_final_output_are_not_evaluated() -> None:
    """Graded from spans, the reply is the run's recorded final output; where none was recorded (content off, or an
    instrumentation that records none), a reply check is not_evaluated — never failed on an empty string — and the
    judge is not asked. A reply given to the check is graded as given, an empty one too."""
    from pathlib import Path

    from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from tracegrade import JudgeEvaluator, load_traces
    from tracegrade.dialects import extract

    fixtures = Path(__file__).resolve().parent.parent / "fixtures" / "dialects"
    asked: list[int] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        asked.append(1)
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"passed": True, "reasoning": "ok"})])

    checks = [ContainsEvaluator(any_of=["shipped"]), JudgeEvaluator("Says it shipped.", model=FunctionModel(respond))]
    [tree] = load_traces(fixtures / "genai.json")
    silent = grade(tree, checks)  # its agent span records no output
    assert [r.outcome for r in silent] == ["not_evaluated"] * 2 and asked == []
    assert silent[0].reasoning.startswith("the agent's reply is not in the telemetry: agent run ")
    recorded = grade(load_traces(fixtures / "pydantic_ai.json")[0], checks)  # final_result: "Shipped."
    assert [r.outcome for r in recorded] == ["passed", "passed"] and asked == [1]
    given = asyncio.run(checks[0].evaluate(TurnContext.for_trajectory(extract(tree), reply="")))
    assert given.outcome == "failed"  # an empty reply the agent gave is a reply


# --- "any call" argument checks when some calls recorded no arguments ---
def test_an_any_call_argument_check_is_not_evaluated_when_the_unmatched_calls_include_unrecorded_ones() -> None:
    from _agents import scripted_agent
    from tracegrade import capture
    from tracegrade.evaluators import ArgumentCorrectness

    loud = scripted_agent([("search", {"q": "a"})], name="loud")
    quiet = scripted_agent([("search", {"q": "b"})], name="quiet", include_content=False)
    with capture() as cap:
        loud.run_sync("go")
        quiet.run_sync("go")
    assert [(c.name, c.args) for c in cap.trajectory.tool_calls] == [("search", {"q": "a"}), ("search", None)]
    checks = [
        ToolCallArgsEvaluator(tool="search", args={"q": "b"}),  # maybe the quiet agent's call: unknown
        ArgumentCorrectness("search", {"q": "b"}, occurrence="any"),
        ToolCallArgsEvaluator(tool="search", args={"q": "a"}),  # the loud agent's call matches
        ToolCallArgsEvaluator(tool="search", args={"q": "b"}, occurrence="first"),  # the first call: recorded, wrong
    ]
    unknown, unknown_pe, matched, wrong = grade(cap, checks)
    for result in (unknown, unknown_pe):
        assert result.outcome == "not_evaluated", result.reasoning
        assert result.reasoning.startswith("no call of tool 'search' with recorded arguments matches {'q': 'b'}")
        assert "1 other call of it recorded no arguments" in result.reasoning and "'quiet'" in result.reasoning
    assert matched.outcome == "passed", matched.reasoning
    assert wrong.outcome == "failed", wrong.reasoning
