"""The options of the trajectory evaluators on real Pydantic AI runs: matching modes, steps with
arguments, parallel calls, argument modes, agent and subtree scoping, and checks whose data the
capture lost (open spans, attributes dropped by span limits) being not evaluated."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from pydantic_ai import Agent, InstrumentationSettings
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from _agents import run_captured, scripted_agent
from tracegrade import EvalResult, capture, grade
from tracegrade.evaluators import (
    ArgumentCorrectness,
    MaxDuration,
    MaxModelRequests,
    MaxTokens,
    MaxToolCalls,
    NoErrorSpans,
    NoToolLoops,
    ToolCorrectness,
    TrajectoryMatch,
)
from tracegrade.matching import diff_arguments


def one(source: Any, evaluator: Any) -> EvalResult:
    [result] = grade(source, [evaluator])
    return result


def names(*tools: str) -> list[tuple[str, dict[str, Any]]]:
    return [(t, {}) for t in tools]


# --- matching modes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("order", "expected", "passed"),
    [
        ("strict", ["a", "b", "c"], True),
        ("strict", ["a", "c", "b"], False),
        ("unordered", ["c", "b", "a"], True),
        ("unordered", ["c", "b"], False),
        ("subset", ["a", "b", "c", "d"], True),  # every call was expected; `d` may be missing
        ("subset", ["a", "b"], False),  # `c` was not expected
        ("superset", ["a", "c"], True),  # the expected ones were all called; extras fine
        ("superset", ["a", "d"], False),
    ],
)
def test_agentevals_modes(order: str, expected: list[str], passed: bool) -> None:
    cap = run_captured(names("a", "b", "c"))
    result = one(cap, TrajectoryMatch(expected, order=order))  # type: ignore[arg-type]
    assert result.passed is passed
    assert result.score == (1.0 if passed else 0.0)
    assert "precision=" in result.reasoning and "recall=" in result.reasoning


def test_steps_with_arguments() -> None:
    cap = run_captured([("search", {"q": "x", "k": 5}), ("answer", {"text": "hi"})])
    ok = TrajectoryMatch([{"tool": "search", "args": {"q": "x"}}, "answer"], order="exact")
    assert one(cap, ok).passed
    wrong = one(cap, TrajectoryMatch([{"tool": "search", "args": {"q": "y"}}, "answer"], order="in_order"))
    assert wrong.score == pytest.approx(0.5) and "search(q='y')" in wrong.reasoning


def test_step_arguments_not_recorded_is_not_evaluated() -> None:
    cap = run_captured([("search", {"q": "x"})], include_content=False)
    result = one(cap, TrajectoryMatch([{"tool": "search", "args": {"q": "x"}}]))
    assert result.outcome == "not_evaluated" and "not recorded" in result.reasoning
    assert one(cap, TrajectoryMatch(["search"])).passed  # names alone still work


def test_optional_steps_may_be_skipped() -> None:
    expected: list[Any] = ["validate", {"tool": "log", "optional": True}, "submit"]
    assert one(run_captured(names("validate", "submit")), TrajectoryMatch(expected, order="exact")).passed
    assert one(run_captured(names("validate", "log", "submit")), TrajectoryMatch(expected, order="exact")).passed
    in_order = one(run_captured(names("validate", "submit")), TrajectoryMatch(expected))
    assert in_order.score == 1.0 and "recall=2/2" in in_order.reasoning


def test_step_syntax_errors_name_the_step() -> None:
    with pytest.raises(ValueError, match=r"expected_trajectory\[1\]: .*unknown key 'arg'"):
        TrajectoryMatch(["a", {"tool": "b", "arg": {}}])


def test_parallel_calls_match_in_any_order_by_default() -> None:
    cap = run_captured([[("b", {}), ("a", {})], ("c", {})])  # one response issues b and a together
    assert one(cap, TrajectoryMatch(["a", "b", "c"], order="exact")).passed
    strict = one(cap, TrajectoryMatch(["a", "b", "c"], order="exact", parallel="ordered"))
    assert not strict.passed


def test_sequential_calls_are_not_reordered() -> None:
    cap = run_captured(names("b", "a", "c"))  # three separate responses
    assert not one(cap, TrajectoryMatch(["a", "b", "c"], order="exact")).passed


def test_without_recorded_model_requests_which_calls_were_parallel_is_unknown() -> None:
    """The tool spans give the order the calls ran in; which were requested together (and so may match in any
    order) is in the model-request spans. Without them an order that matches only if some calls were parallel is
    not_evaluated, never passed on a guess; an order no grouping explains still fails."""
    cap = run_captured([[("b", {}), ("a", {})], ("c", {})])
    spans = [s for s in cap.spans if not s.name.startswith("chat ")]  # the model client was not instrumented
    assert len(spans) == len(cap.spans) - 3  # three responses: b and a, c, the answer
    swapped = one(spans, TrajectoryMatch(["a", "b", "c"], order="exact"))
    assert swapped.outcome == "not_evaluated", swapped.reasoning
    assert "which response requested each is not recorded (no model-request span was recorded" in swapped.reasoning
    assert one(spans, TrajectoryMatch(["b", "a", "c"], order="exact")).passed  # the recorded order
    assert one(spans, TrajectoryMatch(["a", "b", "d"], order="exact")).outcome == "failed"
    assert one(spans, TrajectoryMatch(["a", "b", "c"], order="exact", parallel="ordered")).outcome == "failed"
    assert one(cap, TrajectoryMatch(["a", "b", "c"], order="exact")).passed  # with them: b and a were parallel


# --- argument modes ---------------------------------------------------------------------------------


def test_argument_modes_on_a_run() -> None:
    cap = run_captured([("book", {"time": "10am", "opts": {"seat": "aisle", "meal": "veg"}, "ts": 123})])
    base: dict[str, Any] = {"tool_name": "book"}
    assert one(cap, ArgumentCorrectness(**base, expected_arguments={"opts": {"seat": "aisle"}}, recursive=True)).passed
    assert not one(cap, ArgumentCorrectness(**base, expected_arguments={"opts": {"seat": "aisle"}})).passed
    superset = {"time": "10am", "opts": {"seat": "aisle", "meal": "veg"}, "ts": 0, "extra": 1}
    assert one(cap, ArgumentCorrectness(**base, expected_arguments=superset, match_mode="superset",
                                        key_modes={"ts": "ignore"})).passed  # fmt: skip
    assert one(cap, ArgumentCorrectness(**base, expected_arguments={}, match_mode="ignore")).passed
    exact = {"time": "10am", "opts": {"seat": "aisle", "meal": "veg"}, "ts": 999}
    assert one(
        cap, ArgumentCorrectness(**base, expected_arguments=exact, match_mode="exact", ignore_keys=["t?"])
    ).passed
    rule = one(cap, ArgumentCorrectness(**base, expected_arguments={}, key_modes={"ts": lambda v: v < 100}))
    assert not rule.passed and "key 'ts': 123 does not satisfy <lambda>" in rule.reasoning


def test_occurrence_any() -> None:
    cap = run_captured([("search", {"q": "a"}), ("search", {"q": "b"})])
    assert one(cap, ArgumentCorrectness("search", {"q": "b"}, occurrence="any")).passed
    miss = one(cap, ArgumentCorrectness("search", {"q": "z"}, occurrence="any"))
    assert not miss.passed and "observed [{'q': 'a'}, {'q': 'b'}]" in miss.reasoning


def test_nested_key_paths_and_globs() -> None:
    actual = {"filters": {"date": "2026-01-01", "city": "Paris", "debug": {"trace": 1}}}
    assert diff_arguments(actual, {"filters": {"city": "Paris"}}, key_modes={"filters": "subset"}) == []
    assert diff_arguments(actual, {"filters": {"city": "Paris", "date": "x"}}, "exact",
                          ignore_keys=["filters.d*"]) == []  # fmt: skip
    assert diff_arguments(actual, {"filters": {"city": "Rome"}}, recursive=True) == [
        "key 'filters.city': expected 'Rome', got 'Paris'"
    ]


def test_unknown_argument_mode_is_rejected_at_construction() -> None:
    with pytest.raises(ValueError, match=r"key_modes\.q: must be a mode in"):
        ArgumentCorrectness("t", {}, key_modes={"q": "fuzzy"})


# --- scoping ----------------------------------------------------------------------------------------


def _two_agents() -> Any:
    tp = TracerProvider()
    settings = InstrumentationSettings(tracer_provider=tp)

    def child_script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("lookup", {"k": "z"}, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart("child done")])

    def parent_script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("delegate", {"task": "t"}, tool_call_id="p1")])
        if len(messages) == 3:
            return ModelResponse(parts=[ToolCallPart("lookup", {"k": "p"}, tool_call_id="p2")])
        return ModelResponse(parts=[TextPart("parent done")])

    child: Agent[None, str] = Agent(FunctionModel(child_script), name="researcher")
    parent: Agent[None, str] = Agent(FunctionModel(parent_script), name="planner")
    child.instrument = parent.instrument = settings

    @child.tool_plain(name="lookup")
    def child_lookup(k: str) -> str:
        return k

    @parent.tool_plain(name="lookup")
    def parent_lookup(k: str) -> str:
        return k

    @parent.tool_plain
    async def delegate(task: str) -> str:
        return (await child.run(task)).output

    with capture(provider=tp) as cap:
        parent.run_sync("go")
    return cap


def test_agent_scoping_grades_one_agent() -> None:
    cap = _two_agents()
    assert one(cap, TrajectoryMatch(["delegate", "lookup"], order="exact", agent="planner")).passed
    assert one(cap, TrajectoryMatch(["lookup"], order="exact", agent="researcher")).passed
    assert one(cap, ArgumentCorrectness("lookup", {"k": "z"}, agent="researcher")).passed
    assert one(cap, ArgumentCorrectness("lookup", {"k": "p"}, agent="planner")).passed
    assert one(cap, MaxModelRequests(2, agent="researcher")).passed
    missing = one(cap, ToolCorrectness(["x"], agent="writer"))
    assert missing.outcome == "not_evaluated" and "no agent run named 'writer'" in missing.reasoning
    assert "'planner'" in missing.reasoning


def test_subtree_scoping() -> None:
    cap = _two_agents()
    sub = {"name_equals": "execute_tool delegate"}
    assert one(cap, ToolCorrectness(["lookup"], subtree=sub)).passed  # only what ran under delegate
    assert one(cap, MaxToolCalls(1, subtree=sub)).passed
    none = one(cap, MaxToolCalls(1, subtree={"name_equals": "nope"}))
    assert none.outcome == "not_evaluated" and "no span matches subtree" in none.reasoning


# --- capture integrity ------------------------------------------------------------------------------


def test_open_spans_make_trajectory_checks_not_evaluated() -> None:
    tp = TracerProvider()
    tracer = tp.get_tracer("t")
    with capture(provider=tp) as cap:
        with tracer.start_as_current_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}):
            pass
        tracer.start_span("execute_tool slow", attributes={"gen_ai.operation.name": "execute_tool",
                                                             "gen_ai.tool.name": "slow"})  # fmt: skip
    assert [s.name for s in cap.open_spans] == ["execute_tool slow"]
    result = one(cap, MaxToolCalls(5))
    assert result.outcome == "not_evaluated" and "'execute_tool slow' was still open" in result.reasoning


def test_attributes_dropped_by_span_limits_make_checks_not_evaluated() -> None:
    tp = TracerProvider(span_limits=SpanLimits(max_span_attributes=5))
    agent = scripted_agent([("search", {"q": "x"})], tracer_provider=tp)
    with capture(provider=tp) as cap:
        agent.run_sync("go")
    assert cap.dropped  # the SDK dropped the oldest attributes: the tool name among them
    for evaluator in (ToolCorrectness(["search"]), ArgumentCorrectness("search", {"q": "x"})):
        result = one(cap, evaluator)
        assert result.outcome == "not_evaluated" and "span limits" in result.reasoning


def test_calls_without_spans_are_never_treated_as_parallel() -> None:
    from tracegrade import Trajectory

    assert not one(Trajectory.from_calls(["b", "a"]), TrajectoryMatch(["a", "b"], order="exact")).passed


def test_vocabulary_from_a_yaml_spec(tmp_path: Any) -> None:
    from tracegrade.spec import load_spec

    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "evaluators:\n"
        "  - TrajectoryMatch: {expected_trajectory: [{tool: search, args: {q: x}}, {tool: log, optional: true}],"
        " order: strict}\n"
        "  - ArgumentCorrectness: {tool_name: search, expected_arguments: {q: x}, occurrence: any,"
        " key_modes: {k: ignore}}\n"
        "  - NoToolLoops: {max_repeats: 1}\n"
        "  - MaxTokens: {max_total: 100000}\n"
        "  - NoErrorSpans: {allowed_names: ['execute_tool flaky*']}\n"
    )
    cap = run_captured([("search", {"q": "x", "k": 1})])
    assert [r.outcome for r in grade(cap, load_spec(spec))] == ["passed"] * 5


@pytest.mark.parametrize(
    "make",
    [
        ToolCorrectness,
        MaxToolCalls,
        MaxModelRequests,
        NoErrorSpans,
        MaxDuration,
        MaxTokens,
        NoToolLoops,
        ArgumentCorrectness,
        TrajectoryMatch,
    ],  # fmt: skip
    ids=lambda c: c.__name__,
)
def test_every_scoped_evaluator_validates_its_subtree_query(make: Any) -> None:
    required: dict[str, Any] = {
        ToolCorrectness: {"expected_tools": []}, MaxToolCalls: {"max_calls": 1}, MaxModelRequests: {"max_requests": 1},
        MaxDuration: {"seconds": 1}, MaxTokens: {"max_total": 1}, ArgumentCorrectness: {"tool_name": "t",
        "expected_arguments": {}}, TrajectoryMatch: {"expected_trajectory": []},
    }.get(make, {})  # fmt: skip
    with pytest.raises(ValueError, match=r"subtree: unknown SpanQuery key 'name_equal'"):
        make(**required, subtree={"name_equal": "x"})
