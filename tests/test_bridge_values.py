"""The values tracegrade's evaluators give inside pydantic-evals (`tracegrade.bridges.pydantic_evals`).

Real `Dataset.evaluate` experiments over Pydantic AI agents driven by FunctionModel, side by side
with pydantic-evals' own evaluators on the same runs (success, failed attempt, argument-validation
failure, parallel calls, deferred calls, output function, include_content=False): the values are
equal for ToolCorrectness, TrajectoryMatch, ArgumentCorrectness, MaxToolCalls, MaxModelRequests and
HasMatchingSpan. Also judges, wrapped custom evaluators, names and parameters, the per-case cache
and serialization.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_evals import Case, Dataset
from pydantic_evals import evaluators as pe
from pydantic_evals.evaluators import EvaluatorContext
from pydantic_evals.otel import SpanTree as PESpanTree

import tracegrade.bridges.pydantic_evals as tb
from _bridge_helpers import (  # noqa: F401 (sdk_provider: an autouse fixture)
    RUNS,
    SIDE_BY_SIDE,
    _refund_task,
    _values,
    refund_dataset,
    sdk_provider,
    shop_task,
    support_agent,
)
from tracegrade import EvalResult, Trajectory, TurnContext
from tracegrade import evaluators as tg
from tracegrade.evaluators import judge as judge_module
from tracegrade.tree import SpanTree


@pytest.fixture(scope="module")
def side_by_side() -> list[tuple[str, str, Any, Any, str]]:
    """(run, evaluator, pydantic-evals value, tracegrade value, tracegrade reason) for every pair,
    from one experiment: both families grade the very same runs."""
    evaluators = [make(pe, f"pe {label}") for label, make in SIDE_BY_SIDE.items()]
    evaluators += [make(tb, f"tg {label}") for label, make in SIDE_BY_SIDE.items()]
    dataset = Dataset(name="side_by_side", cases=[Case(name=k, inputs=k) for k in RUNS], evaluators=evaluators)
    values = _values(dataset.evaluate_sync(shop_task, progress=False))
    return [
        (
            run,
            label,
            values[(run, f"pe {label}")].value,
            values[(run, f"tg {label}")].value,
            values[(run, f"tg {label}")].reason or "",
        )  # fmt: skip
        for run in RUNS
        for label in SIDE_BY_SIDE
    ]


def verdict_table(rows: list[tuple[str, str, Any, Any, str]]) -> str:
    lines = [f"{'run':22} {'evaluator':44} {'pydantic-evals':>14} {'tracegrade':>10}"]
    for run, label, ours, theirs, _ in rows:
        fmt = lambda v: f"{v:.3f}" if isinstance(v, float) else str(v)  # noqa: E731
        mark = "" if (type(ours), ours) == (type(theirs), theirs) else "   <-- differs"
        lines.append(f"{run:22} {label:44} {fmt(ours):>14} {fmt(theirs):>10}{mark}")
    return "\n".join(lines)


def test_values_equal_pydantic_evals_on_the_same_runs(side_by_side: list[tuple[str, str, Any, Any, str]]) -> None:
    table = verdict_table(side_by_side)
    assert all((type(p), p) == (type(t), t) for _, _, p, t, _ in side_by_side), table
    assert len(side_by_side) == len(RUNS) * len(SIDE_BY_SIDE)


def test_the_side_by_side_runs_exercise_what_they_claim(side_by_side: list[tuple[str, str, Any, Any, str]]) -> None:
    got = {(run, label): (value, reason) for run, label, _, value, reason in side_by_side}
    # a failed attempt counts against the budget but not as a call
    assert got[("failed_attempt", "MaxToolCalls(2)")][0] is False
    assert got[("failed_attempt", "MaxToolCalls(1, include_failed=False)")][0] is False
    assert "3 tool call(s)" in got[("failed_attempt", "MaxToolCalls(2)")][1]
    assert got[("validation_error", "ArgumentCorrectness(last, include_failed)")][0] is True
    assert got[("validation_error", "HasMatchingSpan(error)")][0] is True
    # deferred calls and output functions are not tool calls
    assert got[("deferred", "MaxToolCalls(1, include_failed=False)")] == (True, "1 tool call(s), budget=1")
    assert got[("output_function", "MaxToolCalls(1, include_failed=False)")][0] is True
    # parallel calls are compared in the order they ran, as pydantic-evals does
    assert got[("parallel", "TrajectoryMatch(exact)")][0] == 1.0
    assert got[("parallel", "ArgumentCorrectness(exact, occurrence=1)")][0] is True
    # include_content=False: names and budgets work, arguments are "not recorded" (named agent)
    assert got[("include_content_false", "TrajectoryMatch(any_order, include_failed)")][0] == 1.0
    value, reason = got[("include_content_false", "ArgumentCorrectness")]
    assert value is False and reason.startswith("not evaluated:") and "by agent 'shop'" in reason
    # reasons are tracegrade's: reproducible F1
    assert "precision=1/2=0.500, recall=1/3=0.333, F1=0.400" in got[("failed_attempt", "TrajectoryMatch(in_order)")][1]


# --- judges ----------------------------------------------------------------------------------------


class Judge:
    def __init__(self, verdict: bool = True, error: Exception | None = None) -> None:
        self.verdict, self.error = verdict, error
        self.prompts: list[str] = []
        self.model = FunctionModel(self._respond)

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.prompts.append("".join(str(p.content) for m in messages for p in m.parts if p.part_kind == "user-prompt"))
        if self.error is not None:
            raise self.error
        args = {"reason": "cites the order", "pass_": self.verdict, "score": 0.9}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args)])


def test_judges_return_their_verdict_and_see_the_case() -> None:
    judge = Judge()
    dataset = Dataset(
        name="judged",
        cases=[Case(name="refund", inputs={"query": "Refund my order", "order_id": "12345"})],
        evaluators=[
            tb.JudgeEvaluator(rubric="Confirms the refund", model=judge.model),
            tb.ToolCallArgsJudgeEvaluator(tool="issue_refund", rubric="A real order id", model=judge.model),
            tb.TrajectoryJudge(rubric="Refunded without detours", model=judge.model, evaluation_name="trajectory"),
        ],
    )
    values = _values(dataset.evaluate_sync(_refund_task(support_agent()), progress=False))
    assert {n: r.value for (_, n), r in values.items()} == {
        "JudgeEvaluator": True,
        "ToolCallArgsJudgeEvaluator": True,
        "trajectory": True,
    }
    assert "cites the order (score 0.900)" in (values[("refund", "trajectory")].reason or "")
    assert len(judge.prompts) == 3
    [args_prompt] = [p for p in judge.prompts if "<tool_calls>" in p]
    [trajectory_prompt] = [p for p in judge.prompts if "<trajectory>" in p]
    [reply_prompt] = [p for p in judge.prompts if p not in (args_prompt, trajectory_prompt)]
    assert "Refund issued for order 12345." in reply_prompt and '\\"order_id\\": \\"12345\\"' in reply_prompt
    assert '{"order_id": "12345"}' in args_prompt
    assert '"step": 1, "tool": "issue_refund"' in trajectory_prompt


def test_judge_failures_are_evaluator_failures_and_the_default_judge_model_is_pydantic_evals(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pydantic_evals.evaluators import llm_as_a_judge

    monkeypatch.setattr(judge_module, "RETRY_BACKOFF_SECONDS", 0.0)
    broken = Judge(error=RuntimeError("judge API down"))
    monkeypatch.setattr(llm_as_a_judge, "_default_model", broken.model)  # set_default_judge_model(...)
    dataset = Dataset(
        name="judged",
        cases=[Case(name="c", inputs="success")],
        evaluators=[tb.JudgeEvaluator(rubric="Says done", retries=0)],
    )
    report = dataset.evaluate_sync(shop_task, progress=False)
    [case] = report.cases
    assert not case.assertions
    [failure] = case.evaluator_failures
    assert failure.error_type == "TracegradeEvaluationError" and "judge API down" in failure.error_message
    assert len(broken.prompts) == 1


# --- wrapping any tracegrade evaluator ---------------------------------------------------------------


@dataclasses.dataclass
class NoRefundsTwice:
    """A custom tracegrade evaluator (no base class)."""

    name: str = "no_refunds_twice"

    def evaluate(self, ctx: TurnContext) -> EvalResult:
        n = sum(c.name == "issue_refund" for c in ctx.tool_calls)
        return EvalResult(n <= 1, f"{n} refund(s)")


class AsyncScore:
    async def evaluate(self, ctx: TurnContext) -> float:
        await asyncio.sleep(0)
        return 0.25


class Broken:
    def evaluate(self, ctx: TurnContext) -> EvalResult:
        raise KeyError("oops")


def test_to_pydantic_evals_wraps_custom_and_builtin_evaluators() -> None:
    dataset = Dataset(
        name="wrapped",
        cases=[Case(name="c", inputs={"query": "Refund my order", "order_id": "12345"})],
        evaluators=[
            tb.to_pydantic_evals(NoRefundsTwice()),
            tb.to_pydantic_evals(AsyncScore(), evaluation_name="async_score"),
            tb.to_pydantic_evals(tg.TrajectoryMatch(["issue_refund"])),  # scoring: reports the F1
            tb.to_pydantic_evals(tg.ToolCorrectness(["issue_refund"]), value="score", evaluation_name="as_score"),
            tb.to_pydantic_evals(tg.NoErrorSpans()),
            tb.to_pydantic_evals(tg.MaxToolCalls(1), dialect="openinference", evaluation_name="forced_dialect"),
            tb.to_pydantic_evals(Broken()),
        ],
    )
    report = dataset.evaluate_sync(_refund_task(support_agent()), progress=False)
    [case] = report.cases
    values = {n: (r.value, r.reason) for n, r in {**case.assertions, **case.scores}.items()}
    assert values["no_refunds_twice"] == (True, "1 refund(s)")
    assert values["async_score"][0] == 0.25
    assert values["TrajectoryMatch"][0] == 1.0
    assert values["as_score"][0] == 1.0
    assert values["NoErrorSpans"][0] is True
    forced = values["forced_dialect"]  # no OpenInference span in a Pydantic AI run
    assert forced[0] is False and forced[1] is not None and forced[1].startswith("not evaluated:")
    [failure] = case.evaluator_failures
    assert failure.name == "Broken" and "KeyError" in failure.error_message


def test_to_pydantic_evals_rejects_what_is_not_an_evaluator() -> None:
    with pytest.raises(TypeError, match="evaluate"):
        tb.to_pydantic_evals(object())
    with pytest.raises(ValueError, match="value must be"):
        tb.to_pydantic_evals(NoRefundsTwice(), value="label")  # type: ignore[arg-type]


def test_turn_context_gives_custom_pydantic_evals_evaluators_the_trajectory() -> None:
    @dataclasses.dataclass
    class RefundedOnce(pe.Evaluator):
        def evaluate(self, ctx: EvaluatorContext[Any, Any, Any]) -> bool:
            turn = tb.turn_context(ctx)
            return [c.describe() for c in turn.tool_calls] == ["issue_refund(order_id='12345')"]

    ds = Dataset(
        name="x", cases=[Case(name="c", inputs={"query": "Refund", "order_id": "12345"})], evaluators=[RefundedOnce()]
    )
    assert _values(ds.evaluate_sync(_refund_task(support_agent()), progress=False))[("c", "RefundedOnce")].value is True


# --- names, parameters, caching, serialization ---------------------------------------------------


AGENTIC = [
    "ToolCorrectness",
    "TrajectoryMatch",
    "ArgumentCorrectness",
    "MaxToolCalls",
    "MaxModelRequests",
    "HasMatchingSpan",
]


def _init_fields(cls: type) -> list[tuple[str, Any]]:
    """The constructor's parameters in signature order (keyword-only ones last), with their defaults."""
    out = []
    for f in sorted(dataclasses.fields(cls), key=lambda f: f.kw_only):
        if f.init:
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            out.append((f.name, default))
    return out


@pytest.mark.parametrize("name", AGENTIC)
def test_pydantic_evals_parameters_come_first_with_the_same_defaults(name: str) -> None:
    theirs, ours = _init_fields(getattr(pe, name)), _init_fields(getattr(tb, name))
    assert ours[: len(theirs)] == theirs
    assert issubclass(getattr(tb, name), pe.Evaluator)


@pytest.mark.parametrize("cls", tb.EVALUATOR_TYPES, ids=lambda c: c.__name__)
def test_bridge_parameters_are_the_tracegrade_evaluator_s(cls: type) -> None:
    ours = dict(_init_fields(cls))
    theirs = dict(_init_fields(getattr(tg, cls.__name__)))
    if cls is tb.TrajectoryMatch:  # compares in recorded order by default, as pydantic-evals does
        assert (ours.pop("parallel"), theirs.pop("parallel")) == ("ordered", "unordered")
    assert ours == theirs


def test_evaluation_names_follow_pydantic_evals() -> None:
    assert tb.ToolCorrectness(expected_tools=["a"]).get_default_evaluation_name() == "ToolCorrectness"
    assert tb.MaxToolCalls(max_calls=1, evaluation_name="budget").get_default_evaluation_name() == "budget"
    assert tb.to_pydantic_evals(NoRefundsTwice()).get_default_evaluation_name() == "no_refunds_twice"
    assert tb.to_pydantic_evals(tg.MaxToolCalls(2, evaluation_name="calls")).get_default_evaluation_name() == "calls"
    assert tb.to_pydantic_evals(AsyncScore()).get_default_evaluation_name() == "AsyncScore"
    assert repr(tb.ToolCorrectness(expected_tools=["a"])) == "ToolCorrectness(expected_tools=['a'])"
    assert isinstance(tb.ToolCorrectness(["a"]).tracegrade_evaluator, tg.ToolCorrectness)


def test_bad_parameters_fail_at_construction() -> None:
    with pytest.raises(ValueError, match="TrajectoryMatch.order: must be one of"):
        tb.TrajectoryMatch(expected_trajectory=["a"], order="sideways")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown SpanQuery key"):
        tb.HasMatchingSpan(query={"name_equal": "x"})  # type: ignore[typeddict-unknown-key]


def test_the_span_tree_is_converted_and_the_trajectory_extracted_once_per_case(monkeypatch: pytest.MonkeyPatch) -> None:
    conversions: list[int] = []
    extractions: list[int] = []
    real_convert, real_extract = tb.from_pydantic_evals_tree, tb.extract

    def convert(tree: PESpanTree) -> SpanTree:
        conversions.append(id(tree))
        return real_convert(tree)

    def extract(tree: SpanTree, **kwargs: Any) -> Trajectory:
        extractions.append(id(tree))
        return real_extract(tree, **kwargs)

    monkeypatch.setattr(tb, "from_pydantic_evals_tree", convert)
    monkeypatch.setattr(tb, "extract", extract)
    seen: dict[str, set[int]] = {}

    class SeesTrajectory:
        def evaluate(self, ctx: TurnContext) -> bool:
            seen.setdefault(ctx.user, set()).add(id(ctx.trajectory))
            return True

    evaluators = [make(tb, label) for label, make in SIDE_BY_SIDE.items()]
    evaluators += [tb.to_pydantic_evals(SeesTrajectory(), evaluation_name=f"sees{i}") for i in range(3)]
    dataset = Dataset(
        name="cache", cases=[Case(name=k, inputs=k) for k in ("success", "parallel")], evaluators=evaluators
    )
    dataset.evaluate_sync(shop_task, progress=False)
    assert len(conversions) == 2 and len(set(conversions)) == 2
    assert len(extractions) == 2
    assert {k: len(v) for k, v in seen.items()} == {"success": 1, "parallel": 1}


@pytest.mark.filterwarnings("ignore:Could not determine the generic parameters")
def test_a_saved_dataset_loads_back_with_the_bridge_evaluators(tmp_path: Path) -> None:
    path = tmp_path / "refunds.yaml"
    refund_dataset(tb).to_file(path)
    text = path.read_text()
    assert "ArgumentCorrectness" in text and "MaxModelRequests" in text
    loaded = Dataset[Any, Any, Any].from_file(path, custom_evaluator_types=tb.EVALUATOR_TYPES)
    assert all(type(e).__module__ == tb.__name__ for e in loaded.evaluators)
    assert isinstance(loaded.cases[0].evaluators[0], tb.ArgumentCorrectness)
    report = loaded.evaluate_sync(_refund_task(support_agent()), progress=False)
    assert _values(report)[("valid_refund", "ArgumentCorrectness")].value is True
