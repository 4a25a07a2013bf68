"""tracegrade evaluators inside pydantic-evals (`tracegrade.bridges.pydantic_evals`).

Real `Dataset.evaluate` experiments over Pydantic AI agents driven by FunctionModel:
- side by side with pydantic-evals' own evaluators on the same runs (success, failed attempt,
  argument-validation failure, parallel calls, deferred calls, output function, include_content=False):
  the values are equal for ToolCorrectness, TrajectoryMatch, ArgumentCorrectness, MaxToolCalls,
  MaxModelRequests and HasMatchingSpan;
- the reference page's recipes (RAG agent, ordered-with-slack, refund handling with budgets);
- what pydantic-evals' evaluators cannot do: OpenInference / OpenLLMetry tasks, arguments recovered
  from the run's messages;
- no span tree, judges, wrapped custom evaluators, names, the per-case cache, serialization;
- `SpanTree` conversions both ways (hypothesis round trips, and against a real capture);
- every python block of docs/pydantic-evals.md and docs/content.md runs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry import trace
from pydantic_ai import Agent, CallDeferred, DeferredToolRequests, InstrumentationSettings, ModelRetry, ToolOutput
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_evals import Case, Dataset
from pydantic_evals import evaluators as pe
from pydantic_evals.evaluators import EvaluationReason, EvaluatorContext
from pydantic_evals.otel import SpanNode as PESpanNode
from pydantic_evals.otel import SpanTree as PESpanTree
from pydantic_evals.otel import SpanTreeRecordingError
from pydantic_evals.reporting import EvaluationReport

import tracegrade.bridges.pydantic_evals as tb
from tracegrade import EvalResult, Span, Trajectory, TurnContext, capture
from tracegrade import evaluators as tg
from tracegrade.capture import ensure_recorder
from tracegrade.content import instrument_content
from tracegrade.evaluators import judge as judge_module
from tracegrade.tree import SpanTree

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True, scope="module")
def sdk_provider() -> None:
    """pydantic-evals records `ctx.span_tree` from the global SDK tracer provider."""
    ensure_recorder()


# --- agents ----------------------------------------------------------------------------------------

Call = tuple[str, dict[str, Any]]


def _model(responses: list[list[Call]], reply: str = "done") -> FunctionModel:
    """One model response per entry (several calls: requested in parallel), then `reply`."""

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = sum(isinstance(m, ModelResponse) for m in messages)
        if done < len(responses):
            parts = [ToolCallPart(t, a, tool_call_id=f"c{done}_{k}") for k, (t, a) in enumerate(responses[done])]
            return ModelResponse(parts=parts)
        return ModelResponse(parts=[TextPart(reply)])

    return FunctionModel(script)


RUNS: dict[str, list[list[Call]]] = {
    "success": [[("search", {"q": "x"})], [("rerank", {"k": 1})], [("generate", {})]],
    "failed_attempt": [[("search", {"q": "x"})], [("search", {"q": "fail"})], [("search", {"q": "y"})]],
    "validation_error": [[("lookup", {"order_id": 123})], [("lookup", {"order_id": "123"})]],
    "parallel": [[("search", {"q": "b"}), ("rerank", {"k": 1}), ("search", {"q": "a"})]],
    "deferred": [[("search", {"q": "x"}), ("refund", {"order_id": "1"}), ("ship", {"order_id": "1"})]],
    "output_function": [[("search", {"q": "x"})], [("final_result", {"text": "hi"})]],
    "include_content_false": [[("search", {"q": "x"})], [("refund", {"order_id": "1"})]],
}


def _answer(text: str) -> str:
    return text


def shop_agent(kind: str) -> Agent[None, Any]:
    """The agent of one side-by-side run (see RUNS)."""
    output: Any = str
    if kind == "deferred":
        output = [str, DeferredToolRequests]
    elif kind == "output_function":
        output = ToolOutput(_answer, name="final_result")
    agent: Agent[None, Any] = Agent(_model(RUNS[kind]), name="shop", output_type=output)
    agent.instrument = InstrumentationSettings(include_content=kind != "include_content_false")

    @agent.tool_plain
    def search(q: str) -> str:
        if q == "fail":
            raise ModelRetry("search failed, try again")
        return f"results for {q}"

    @agent.tool_plain
    def rerank(k: int) -> str:
        return "reranked"

    @agent.tool_plain
    def generate() -> str:
        return "generated"

    @agent.tool_plain
    def lookup(order_id: str) -> str:
        return "found"

    @agent.tool_plain(requires_approval=kind == "deferred")
    def refund(order_id: str) -> str:
        return "refunded"

    @agent.tool_plain
    def ship(order_id: str) -> str:
        raise CallDeferred()

    return agent


# --- side by side ----------------------------------------------------------------------------------

SIDE_BY_SIDE: dict[str, Callable[[Any, str], Any]] = {
    "ToolCorrectness": lambda m, n: m.ToolCorrectness(
        expected_tools=["search", "rerank", "generate"], evaluation_name=n
    ),
    "ToolCorrectness(allow_extra, include_failed)": lambda m, n: m.ToolCorrectness(
        expected_tools=["search"], allow_extra=True, include_failed=True, evaluation_name=n
    ),
    "TrajectoryMatch(exact)": lambda m, n: m.TrajectoryMatch(
        expected_trajectory=["search", "rerank", "search"], order="exact", evaluation_name=n
    ),
    "TrajectoryMatch(in_order)": lambda m, n: m.TrajectoryMatch(
        expected_trajectory=["search", "rerank", "generate"], evaluation_name=n
    ),
    "TrajectoryMatch(any_order, include_failed)": lambda m, n: m.TrajectoryMatch(
        expected_trajectory=["search", "refund"], order="any_order", include_failed=True, evaluation_name=n
    ),
    "ArgumentCorrectness": lambda m, n: m.ArgumentCorrectness(
        tool_name="search", expected_arguments={"q": "x"}, evaluation_name=n
    ),
    "ArgumentCorrectness(last, include_failed)": lambda m, n: m.ArgumentCorrectness(
        tool_name="lookup",
        expected_arguments={"order_id": "123"},
        occurrence="last",
        include_failed=True,
        evaluation_name=n,
    ),
    "ArgumentCorrectness(exact, occurrence=1)": lambda m, n: m.ArgumentCorrectness(
        tool_name="search", expected_arguments={"q": "a"}, match_mode="exact", occurrence=1, evaluation_name=n
    ),
    "MaxToolCalls(2)": lambda m, n: m.MaxToolCalls(max_calls=2, evaluation_name=n),
    "MaxToolCalls(1, include_failed=False)": lambda m, n: m.MaxToolCalls(
        max_calls=1, include_failed=False, evaluation_name=n
    ),
    "MaxModelRequests(2)": lambda m, n: m.MaxModelRequests(max_requests=2, evaluation_name=n),
    "HasMatchingSpan(name)": lambda m, n: m.HasMatchingSpan(query={"name_contains": "search"}, evaluation_name=n),
    "HasMatchingSpan(error)": lambda m, n: m.HasMatchingSpan(query={"has_status": "error"}, evaluation_name=n),
    "HasMatchingSpan(descendant)": lambda m, n: m.HasMatchingSpan(
        query={
            "name_matches_regex": "^invoke_agent",
            "some_descendant_has": {"has_attributes": {"gen_ai.tool.name": "refund"}},
        },
        evaluation_name=n,
    ),
}


async def shop_task(kind: str) -> str:
    result = await shop_agent(kind).run("go")
    return str(result.output)


def _values(report: EvaluationReport[Any, Any, Any]) -> dict[tuple[str, str], EvaluationReason]:
    out: dict[tuple[str, str], EvaluationReason] = {}
    for case in report.cases:
        assert not case.evaluator_failures, case.evaluator_failures
        for name, result in {**case.assertions, **case.scores}.items():
            out[(case.name, name)] = EvaluationReason(result.value, result.reason)
    return out


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


# --- the reference page's recipes ------------------------------------------------------------------


def _side_by_side(dataset_factory: Callable[[Any], Dataset[Any, Any, Any]], task: Any) -> dict[str, dict[str, Any]]:
    """Run the recipe with pydantic-evals' evaluators and with the bridge's (a one-line import
    change); return {case: {evaluator: value}} after checking both gave the same values."""
    by_family = {}
    for family in (pe, tb):
        report = dataset_factory(family).evaluate_sync(task, progress=False)
        by_family[family.__name__] = {
            case: {name: r.value for (c, name), r in _values(report).items() if c == case}
            for case in {c.name for c in report.cases}
        }
    ours, theirs = by_family[tb.__name__], by_family[pe.__name__]
    assert ours == theirs
    assert {type(v) for case in ours.values() for v in case.values()} == {
        type(v) for case in theirs.values() for v in case.values()
    }
    return ours


def _rag_agent() -> Agent[None, str]:
    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = str(messages[0].parts[-1].content)  # type: ignore[union-attr]
        plan = ["search", "generate"] if "quick" in prompt else ["search", "rerank", "generate"]
        done = sum(isinstance(m, ModelResponse) for m in messages)
        if done < len(plan):
            return ModelResponse(parts=[ToolCallPart(plan[done], {}, tool_call_id=f"c{done}")])
        return ModelResponse(parts=[TextPart("Three papers on in-context learning.")])

    agent = Agent(FunctionModel(script), name="rag")
    agent.instrument = True
    for tool in ("search", "rerank", "generate"):
        agent.tool_plain(name=tool)(lambda: "ok")
    return agent


def test_recipe_rag_agent() -> None:
    agent = _rag_agent()

    async def task(query: str) -> str:
        return (await agent.run(query)).output

    def dataset(m: Any) -> Dataset[Any, Any, Any]:
        return Dataset(
            name="rag_pipeline",
            cases=[
                Case(name="full", inputs="Find papers on in-context learning"),
                Case(name="skips_rerank", inputs="quick: find papers on in-context learning"),
            ],
            evaluators=[
                m.ToolCorrectness(expected_tools=["search", "rerank", "generate"]),
                m.TrajectoryMatch(expected_trajectory=["search", "rerank", "generate"], order="exact"),
            ],
        )

    assert _side_by_side(dataset, task) == {
        "full": {"ToolCorrectness": True, "TrajectoryMatch": 1.0},
        "skips_rerank": {"ToolCorrectness": False, "TrajectoryMatch": 0.0},
    }


def _shipment_agent() -> Agent[None, str]:
    """validate → enrich → submit; "flaky": the first validate attempt asks for a retry; "chatty":
    enriches twice."""

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = str(messages[0].parts[-1].content)  # type: ignore[union-attr]
        plan: list[Call] = [("validate", {"shipment": 99}), ("enrich", {"shipment": 99}), ("submit", {"shipment": 99})]
        if "flaky" in prompt:
            plan.insert(0, ("validate", {"shipment": 99, "busy": True}))
        elif "chatty" in prompt:
            plan.insert(1, ("enrich", {"shipment": 99}))
        done = sum(isinstance(m, ModelResponse) for m in messages)
        if done < len(plan):
            tool, args = plan[done]
            return ModelResponse(parts=[ToolCallPart(tool, args, tool_call_id=f"c{done}")])
        return ModelResponse(parts=[TextPart("Shipment 99 filed.")])

    agent = Agent(FunctionModel(script), name="shipping")
    agent.instrument = True

    @agent.tool_plain
    def validate(shipment: int, busy: bool = False) -> str:
        if busy:
            raise ModelRetry("validation service busy")
        return "valid"

    @agent.tool_plain
    def enrich(shipment: int) -> str:
        return "enriched"

    @agent.tool_plain
    def submit(shipment: int) -> str:
        return "submitted"

    return agent


def test_recipe_ordered_with_slack() -> None:
    agent = _shipment_agent()

    async def task(query: str) -> str:
        return (await agent.run(query)).output

    def dataset(m: Any) -> Dataset[Any, Any, Any]:
        return Dataset(
            name="ordered_with_slack",
            cases=[
                Case(name="clean", inputs="Process shipment 99"),
                Case(name="retried", inputs="Process shipment 99 (flaky)"),
                Case(name="extra_call", inputs="Process shipment 99 (chatty)"),
            ],
            evaluators=[m.TrajectoryMatch(expected_trajectory=["validate", "enrich", "submit"], order="in_order")],
        )

    values = _side_by_side(dataset, task)
    assert values["clean"] == {"TrajectoryMatch": 1.0}
    assert values["retried"] == {"TrajectoryMatch": 1.0}  # the failed attempt is not part of the trajectory
    assert values["extra_call"]["TrajectoryMatch"] == pytest.approx(2 * 0.75 * 1.0 / 1.75)  # F1 of P=3/4, R=1


def support_agent(*, include_content: bool | None = True, name: str = "support") -> Agent[None, str]:
    """Refunds the order named in the prompt; "chatty" looks it up twice first (more model requests).
    `include_content=None`: no instrumentation settings of its own (`Agent.instrument_all` decides)."""

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = str(messages[0].parts[-1].content)  # type: ignore[union-attr]
        order_id = re.findall(r"\d+", prompt)[-1]
        plan: list[Call] = [("issue_refund", {"order_id": order_id})]
        if "chatty" in prompt:
            plan = [("lookup_order", {"order_id": order_id})] * 2 + plan
        done = sum(isinstance(m, ModelResponse) for m in messages)
        if done < len(plan):
            tool, args = plan[done]
            return ModelResponse(parts=[ToolCallPart(tool, args, tool_call_id=f"call_{done}")])
        return ModelResponse(parts=[TextPart(f"Refund issued for order {order_id}.")])

    agent = Agent(FunctionModel(script), name=name)
    if include_content is not None:
        agent.instrument = InstrumentationSettings(include_content=include_content)

    @agent.tool_plain
    def issue_refund(order_id: str) -> str:
        return f"Refund issued for order {order_id}."

    @agent.tool_plain
    def lookup_order(order_id: str) -> str:
        return "paid"

    return agent


def refund_dataset(m: Any) -> Dataset[Any, Any, Any]:
    """The reference page's refund_handling recipe (plus a chatty case that breaks the budget)."""
    return Dataset(
        name="refund_handling",
        cases=[
            Case(
                name="valid_refund",
                inputs={"query": "Refund my order", "order_id": "12345"},
                evaluators=[
                    m.ArgumentCorrectness(tool_name="issue_refund", expected_arguments={"order_id": "12345"}),
                ],
            ),
            Case(
                name="chatty_refund",
                inputs={"query": "Refund my order (chatty)", "order_id": "777"},
                evaluators=[m.ArgumentCorrectness(tool_name="issue_refund", expected_arguments={"order_id": "777"})],
            ),
        ],
        evaluators=[m.MaxToolCalls(max_calls=4), m.MaxModelRequests(max_requests=2)],
    )


def _refund_task(agent: Agent[None, str], *, return_result: bool = False) -> Any:
    async def task(inputs: dict[str, str]) -> Any:
        result = await agent.run(f"{inputs['query']}: order {inputs['order_id']}")
        return result if return_result else result.output

    return task


def test_recipe_refund_handling_with_budgets() -> None:
    assert _side_by_side(refund_dataset, _refund_task(support_agent())) == {
        "valid_refund": {"ArgumentCorrectness": True, "MaxToolCalls": True, "MaxModelRequests": True},
        "chatty_refund": {"ArgumentCorrectness": True, "MaxToolCalls": True, "MaxModelRequests": False},
    }


# --- include_content=False in pydantic-evals: the two options ----------------------------------------


def _refund_values(m: Any, task: Any) -> dict[str, tuple[Any, str]]:
    report = refund_dataset(m).evaluate_sync(task, progress=False)
    return {c: (r.value, r.reason or "") for (c, n), r in _values(report).items() if n == "ArgumentCorrectness"}


def test_include_content_false_without_options_fails_argument_checks_in_both() -> None:
    task = _refund_task(support_agent(include_content=False))
    theirs, ours = _refund_values(pe, task), _refund_values(tb, task)
    assert (
        {c: v for c, (v, _) in theirs.items()}
        == {c: v for c, (v, _) in ours.items()}
        == {
            "valid_refund": False,
            "chatty_refund": False,
        }
    )
    reason = ours["valid_refund"][1]
    assert reason.startswith("not evaluated:") and "by agent 'support'" in reason
    assert "return the run result" in reason  # how to fix it, in pydantic-evals terms


def test_returning_the_run_messages_recovers_arguments_by_call_id() -> None:
    task = _refund_task(support_agent(include_content=False), return_result=True)
    ours = _refund_values(tb, task)
    assert {c: v for c, (v, _) in ours.items()} == {"valid_refund": True, "chatty_refund": True}
    assert "recovered from the run's messages" in ours["valid_refund"][1]
    assert {c: v for c, (v, _) in _refund_values(pe, task).items()} == {"valid_refund": False, "chatty_refund": False}


def test_the_reference_page_s_output_and_messages_record_is_read_too() -> None:
    agent = support_agent(include_content=False)

    @dataclasses.dataclass
    class SupportRun:
        output: str
        messages: list[ModelMessage]

    async def task(inputs: dict[str, str]) -> SupportRun:
        result = await agent.run(f"{inputs['query']}: order {inputs['order_id']}")
        return SupportRun(result.output, result.all_messages())

    dataset = refund_dataset(tb)
    dataset.add_evaluator(tb.ContainsEvaluator(any_of=["refund issued"]))
    report = dataset.evaluate_sync(task, progress=False)
    values = {(c, n): r.value for (c, n), r in _values(report).items()}
    assert values[("valid_refund", "ArgumentCorrectness")] is True
    assert values[("valid_refund", "ContainsEvaluator")] is True  # reply = the record's output


def test_instrument_content_records_arguments_for_agents_without_settings_of_their_own() -> None:
    plain = support_agent(include_content=None)
    with instrument_content():
        both = {m.__name__: _refund_values(m, _refund_task(plain)) for m in (pe, tb)}
    for values in both.values():
        assert {c: v for c, (v, _) in values.items()} == {"valid_refund": True, "chatty_refund": True}
    # outside the block the same agent records nothing at all: tracegrade says so
    value, reason = _refund_values(tb, _refund_task(plain))["valid_refund"]
    assert value is False and "no agent spans were recorded" in reason


def test_instrument_content_leaves_agents_with_their_own_settings_and_names_them() -> None:
    legacy = support_agent(include_content=False, name="legacy_support")
    with instrument_content():
        value, reason = _refund_values(tb, _refund_task(legacy))["valid_refund"]
    assert value is False and "by agent 'legacy_support'" in reason


# --- every dialect ---------------------------------------------------------------------------------


def _openinference_run() -> str:
    tracer = trace.get_tracer("openinference.instrumentation.openai_agents")
    with (
        tracer.start_as_current_span("Agent workflow", attributes={"openinference.span.kind": "CHAIN"}),
        tracer.start_as_current_span(
            "support", attributes={"openinference.span.kind": "AGENT", "agent.name": "support"}
        ),
    ):
        llm = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o", "llm.token_count.prompt": 12}
        with tracer.start_as_current_span("response", attributes=llm):
            pass
        tool = {
            "openinference.span.kind": "TOOL",
            "tool.name": "issue_refund",
            "input.value": json.dumps({"order_id": "12345"}),
        }
        with tracer.start_as_current_span("issue_refund", attributes=tool):
            pass
    return "Refund issued for order 12345."


def _openllmetry_run() -> str:
    tracer = trace.get_tracer("traceloop.tracer")
    agent = {"traceloop.span.kind": "agent", "traceloop.entity.name": "support", "traceloop.workflow.name": "refunds"}
    with tracer.start_as_current_span("support.agent", attributes=agent):
        chat = {"llm.request.type": "chat", "gen_ai.request.model": "gpt-4o", "traceloop.workflow.name": "refunds"}
        with tracer.start_as_current_span("openai.chat", attributes=chat):
            pass
        tool = {
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": "issue_refund",
            "traceloop.workflow.name": "refunds",
            "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"order_id": "12345"}}),
        }
        with tracer.start_as_current_span("issue_refund.tool", attributes=tool):
            pass
    return "Refund issued for order 12345."


@pytest.mark.parametrize("run", [_openinference_run, _openllmetry_run], ids=["openinference", "openllmetry"])
def test_openinference_and_openllmetry_tasks_are_graded(run: Callable[[], str]) -> None:
    def evaluators(m: Any) -> list[Any]:
        return [
            m.ToolCorrectness(expected_tools=["issue_refund"]),
            m.TrajectoryMatch(expected_trajectory=["issue_refund"]),
            m.ArgumentCorrectness(tool_name="issue_refund", expected_arguments={"order_id": "12345"}),
            m.MaxToolCalls(max_calls=1),
            m.MaxModelRequests(max_requests=1),
        ]

    def values(m: Any) -> dict[str, Any]:
        ds = Dataset(
            name="dialects", cases=[Case(name="refund", inputs="Refund order 12345")], evaluators=evaluators(m)
        )
        return {n: r.value for (_, n), r in _values(ds.evaluate_sync(lambda _: run(), progress=False)).items()}

    assert values(tb) == {
        "ToolCorrectness": True,
        "TrajectoryMatch": 1.0,
        "ArgumentCorrectness": True,
        "MaxToolCalls": True,
        "MaxModelRequests": True,
    }
    theirs = values(pe)  # pydantic-evals' evaluators only know Pydantic AI's spans
    assert theirs["ToolCorrectness"] is False and theirs["ArgumentCorrectness"] is False


# --- no span tree ----------------------------------------------------------------------------------


def _context(
    span_tree: Any, output: Any = "done", metrics: dict[str, Any] | None = None
) -> EvaluatorContext[Any, Any, Any]:
    return EvaluatorContext(
        name="case", inputs="go", metadata=None, expected_output=None, output=output, duration=0.1,
        _span_tree=span_tree, attributes={}, metrics=metrics or {},
    )  # fmt: skip


def test_without_a_span_tree_the_values_are_pydantic_evals_graceful_failures() -> None:
    ctx = _context(SpanTreeRecordingError("call logfire.configure()"), metrics={"requests": 1})
    for label, make in SIDE_BY_SIDE.items():
        ours = make(tb, None).evaluate(ctx)
        assert isinstance(ours, EvaluationReason)
        assert ours.reason is not None and "No span tree available" in ours.reason
        assert "call logfire.configure()" in ours.reason
        if label.startswith("HasMatchingSpan"):  # pydantic-evals raises; the bridge fails gracefully
            with pytest.raises(SpanTreeRecordingError):
                make(pe, None).evaluate(ctx)
            assert ours.value is False
            continue
        theirs = make(pe, None).evaluate(ctx)
        assert (type(ours.value), ours.value) == (type(theirs.value), theirs.value), label


def test_without_a_span_tree_in_a_real_experiment(monkeypatch: pytest.MonkeyPatch) -> None:
    import pydantic_evals.dataset

    @contextmanager
    def no_tree() -> Iterator[SpanTreeRecordingError]:
        yield SpanTreeRecordingError("no tracer provider")

    monkeypatch.setattr(pydantic_evals.dataset, "context_subtree", no_tree)
    dataset = Dataset(
        name="no_tree",
        cases=[Case(name="c", inputs="success")],
        evaluators=[
            tb.ToolCorrectness(expected_tools=["search"]),
            tb.TrajectoryMatch(expected_trajectory=["search"]),
            tb.ContainsEvaluator(any_of=["done"]),  # reads the output: still graded
        ],
    )
    values = {n: r.value for (_, n), r in _values(dataset.evaluate_sync(shop_task, progress=False)).items()}
    assert values == {"ToolCorrectness": False, "TrajectoryMatch": 0.0, "ContainsEvaluator": True}


def test_a_case_with_spans_but_no_agent_is_not_evaluated_rather_than_vacuously_passed() -> None:
    def task(_: str) -> str:
        with trace.get_tracer("app").start_as_current_span("plain work"):
            return "done"

    ds = Dataset(name="x", cases=[Case(name="c", inputs="go")], evaluators=[tb.MaxToolCalls(max_calls=3)])
    [(value, reason)] = [(r.value, r.reason) for r in _values(ds.evaluate_sync(task, progress=False)).values()]
    assert value is False and reason is not None and reason.startswith("not evaluated:")
    assert "none is an agent, model or tool span" in reason


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


# --- SpanTree conversions ------------------------------------------------------------------------

_ATTR_VALUES = st.one_of(
    st.text(max_size=8),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.lists(st.text(max_size=4), max_size=3).map(tuple),
    st.lists(st.integers(min_value=-5, max_value=5), max_size=3).map(tuple),
)
_ATTRS = st.dictionaries(st.text(min_size=1, max_size=10), _ATTR_VALUES, max_size=5)
_NS = st.integers(min_value=0, max_value=2**62)


@st.composite
def span_forests(draw: st.DrawFn) -> list[Span]:
    """Spans of one to three traces: roots, children of earlier spans, orphans (absent parents)."""
    traces = draw(st.lists(st.integers(min_value=1, max_value=2**128 - 1), min_size=1, max_size=3, unique=True))
    ids = draw(st.lists(st.integers(min_value=1, max_value=2**64 - 1), min_size=1, max_size=12, unique=True))
    spans: list[Span] = []
    for span_id in ids:
        trace_id = draw(st.sampled_from(traces))
        earlier = [s.span_id for s in spans if s.trace_id == trace_id]
        parent = draw(
            st.one_of(
                st.none(),
                st.sampled_from(earlier) if earlier else st.none(),
                st.integers(1, 2**64 - 1).filter(lambda p: p not in ids),  # absent: not a cycle by chance
            )
        )
        start = draw(_NS)
        spans.append(
            Span(
                trace_id=trace_id,
                span_id=span_id,
                parent_id=parent,
                name=draw(st.text(max_size=12)),
                start_ns=start,
                end_ns=start + draw(st.integers(min_value=0, max_value=10**12)),
                attributes=draw(_ATTRS),
                status=draw(st.sampled_from(["unset", "ok", "error"])),
            )
        )
    return spans


def _shape(tree: SpanTree, *, by_key: bool = False) -> list[tuple[Any, ...]]:
    """Every node's fields and links, in tree order (`by_key`: sorted by ids, children too, for
    trees whose equal start times may list ties either way)."""
    rows = [
        (n.trace_id, n.span_id, n.parent_span_id, n.name, dict(n.attributes), n.status,
         n.parent.span_id if n.parent else None,
         sorted(c.span_id for c in n.children) if by_key else [c.span_id for c in n.children])
        for n in tree
    ]  # fmt: skip
    return sorted(rows, key=lambda r: (r[0], r[1])) if by_key else rows


def _pe_shape(tree: PESpanTree) -> list[tuple[Any, ...]]:
    """Every node's fields and links; ordered by key (ties in start time may be listed either way)."""
    return sorted(
        (n.node_key, n.parent_span_id, n.name, n.attributes, n.status, n.start_timestamp, n.end_timestamp,
         n.parent.node_key if n.parent else None, sorted(c.node_key for c in n.children))
        for n in tree
    )  # fmt: skip


def _micro(ns: int) -> int:
    return (ns + 500) // 1000 * 1000


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(span_forests())
def test_round_trip_tracegrade_to_pydantic_evals_and_back(spans: list[Span]) -> None:
    tree = SpanTree.from_spans(spans)
    converted = tb.to_pydantic_evals_tree(tree)
    assert [n.node_key for n in converted.roots] == [n.node_key for n in tree.roots]
    back = tb.from_pydantic_evals_tree(converted)
    assert _shape(back) == _shape(tree)
    assert [(n.start_ns, n.end_ns) for n in back] == [(n.start_ns, n.end_ns) for n in tree]  # ns precision kept
    for node in converted:  # a pydantic-evals tree that lost the originals: microsecond times
        delattr(node, "_tracegrade_span")
    plain = tb.from_pydantic_evals_tree(converted)
    assert _shape(plain, by_key=True) == _shape(tree, by_key=True)  # rounding to µs may tie start times
    assert {n.node_key: (n.start_ns, n.end_ns) for n in plain} == {
        n.node_key: (_micro(n.start_ns), _micro(n.end_ns or 0)) for n in tree
    }


@st.composite
def pe_trees(draw: st.DrawFn) -> PESpanTree:
    nodes = []
    for span in draw(span_forests()):
        start = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=span.start_ns // 1000)
        nodes.append(
            PESpanNode(
                name=span.name,
                trace_id=span.trace_id,
                span_id=span.span_id,
                parent_span_id=span.parent_id,
                start_timestamp=start,
                end_timestamp=start + timedelta(microseconds=draw(st.integers(0, 10**9))),
                attributes=dict(span.attributes),
                status=span.status,
            )
        )
    tree = PESpanTree()
    tree.add_spans(nodes)
    return tree


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pe_trees())
def test_round_trip_pydantic_evals_to_tracegrade_and_back(tree: PESpanTree) -> None:
    back = tb.to_pydantic_evals_tree(tb.from_pydantic_evals_tree(tree))
    assert _pe_shape(back) == _pe_shape(tree)
    assert sorted(n.node_key for n in back.roots) == sorted(n.node_key for n in tree.roots)
    assert [n.start_timestamp for n in back] == sorted(n.start_timestamp for n in tree)


def test_edited_pydantic_evals_nodes_are_read_as_edited() -> None:
    tree = SpanTree.from_spans([Span(1, 2, None, "a", 1_000_000_123, 2_000_000_456, {"k": 1}, "ok")])
    converted = tb.to_pydantic_evals_tree(tree)
    [node] = list(converted)
    node.attributes["k"] = 2
    [back] = list(tb.from_pydantic_evals_tree(converted))
    assert dict(back.attributes) == {"k": 2} and back.start_ns == 1_000_000_000  # the node's microseconds


def test_open_spans_get_their_start_as_end_in_pydantic_evals_and_come_back_open() -> None:
    tree = SpanTree.from_spans([Span(1, 2, None, "open", 5_000, None)])
    [node] = list(tb.to_pydantic_evals_tree(tree))
    assert node.end_timestamp == node.start_timestamp
    [back] = list(tb.from_pydantic_evals_tree(tb.to_pydantic_evals_tree(tree)))
    assert back.end_ns is None


def test_a_real_ctx_span_tree_converts_to_what_capture_recorded() -> None:
    """The same run, recorded by pydantic-evals and by tracegrade.capture(): same spans, times to 1 µs."""
    captured: list[SpanTree] = []
    trees: list[PESpanTree] = []

    async def task(kind: str) -> str:
        async with capture() as cap:
            out = await shop_task(kind)
        captured.append(cap.tree)
        return out

    class Keep(pe.Evaluator):
        def evaluate(self, ctx: EvaluatorContext[Any, Any, Any]) -> bool:
            trees.append(ctx.span_tree)
            return True

    Dataset(name="x", cases=[Case(name="c", inputs="parallel")], evaluators=[Keep()]).evaluate_sync(
        task, progress=False
    )
    ours, theirs = captured[0], tb.from_pydantic_evals_tree(trees[0])
    assert _shape(ours) == _shape(theirs)
    assert all(abs(a.start_ns - b.start_ns) <= 1000 and abs((a.end_ns or 0) - (b.end_ns or 0)) <= 1000
               for a, b in zip(ours, theirs, strict=True))  # fmt: skip
    round_trip = tb.to_pydantic_evals_tree(ours)
    assert [(n.node_key, n.attributes, n.status) for n in round_trip] == [
        (n.node_key, n.attributes, n.status) for n in trees[0]
    ]


def test_spans_by_kind_resource_and_events_survive_a_round_trip_through_pydantic_evals() -> None:
    from tracegrade.spans import SpanEvent

    span = Span(1, 2, None, "tool", 10, 20, {"a": 1}, "error", "boom", "client",
                (SpanEvent("exception", 15, {"exception.type": "ValueError"}),), {"service.name": "shop"}, "scope", "1")  # fmt: skip
    [back] = list(tb.from_pydantic_evals_tree(tb.to_pydantic_evals_tree(SpanTree.from_spans([span]))))
    assert back.span == span


# --- the docs -------------------------------------------------------------------------------------

BLOCK = re.compile(r"```python\n(.*?)```", re.S)


PRINTED = re.compile(r"^print\(.*\)  # (.*)$")


@pytest.mark.parametrize("doc", ["pydantic-evals.md", "content.md"])
def test_every_python_block_of_the_docs_runs(
    doc: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The blocks of one page run in order, in one namespace (the page reads top to bottom), and each
    top-level `print(...)  # output` prints what its comment says."""
    from pydantic_ai import Agent as _Agent

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_Agent, "_instrument_default", _Agent._instrument_default)  # restored afterwards
    blocks = BLOCK.findall((ROOT / "docs" / doc).read_text())
    assert blocks
    module = types.ModuleType("__doc_example__")  # a real module: pydantic resolves generics through it
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for i, code in enumerate(blocks):
        capsys.readouterr()
        exec(compile(code, f"{doc}#{i}", "exec"), module.__dict__)
        printed = capsys.readouterr().out.splitlines()
        claims = [PRINTED.match(line) for line in code.splitlines() if line.startswith("print(")]
        assert len(printed) == len(claims), f"{doc}#{i}: {printed}"
        for line, claim in zip(printed, claims, strict=True):
            if claim is not None:
                assert line == claim.group(1), f"{doc}#{i}"
