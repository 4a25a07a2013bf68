"""MaxCost: a spending budget over the cost the telemetry recorded on each model request
(`gen_ai.usage.cost.*`), from Python, a grading spec and a pydantic-evals Dataset through the bridge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from pydantic_evals import Case, Dataset

import tracegrade.bridges.pydantic_evals as tb
from tracegrade import capture, grade
from tracegrade.capture import ensure_recorder
from tracegrade.errors import ParameterError
from tracegrade.evaluators import MaxCost
from tracegrade.spec import load_spec


def _chat(tracer: trace.Tracer, cost: float | None, currency: str | None = "USD") -> None:
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.output_tokens": 10,
    }
    if cost is not None:
        attrs["gen_ai.usage.cost.amount"] = cost
        attrs["gen_ai.usage.cost.source"] = "provider"
        if currency is not None:
            attrs["gen_ai.usage.cost.currency"] = currency
    with tracer.start_as_current_span("chat gpt-4o", kind=trace.SpanKind.CLIENT, attributes=attrs):
        pass


def _run(tracer: trace.Tracer, *costs: tuple[float | None, str | None]) -> None:
    with tracer.start_as_current_span(
        "invoke_agent support", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support"}
    ):
        for cost, currency in costs:
            _chat(tracer, cost, currency)


def _graded(*costs: tuple[float | None, str | None], budget: float = 0.01) -> Any:
    provider = TracerProvider()
    tracer = provider.get_tracer("app")
    with capture(provider=provider) as cap:
        _run(tracer, *costs)
    [result] = grade(cap, [MaxCost(budget)])
    return result


def test_the_recorded_costs_add_up_within_the_budget() -> None:
    ok = _graded((0.004, "USD"), (0.003, "usd"))
    assert ok.outcome == "passed", ok.reasoning
    assert ok.reasoning == "0.007 USD over 2 model request(s), budget=0.01 USD"
    over = _graded((0.008, "USD"), (0.004, "USD"))
    assert over.outcome == "failed" and over.reasoning.startswith("over budget: 0.012 USD"), over.reasoning


def test_a_request_without_a_recorded_cost_is_not_evaluated_not_a_cheap_run() -> None:
    result = _graded((0.004, "USD"), (None, None))
    assert result.outcome == "not_evaluated"
    assert (
        "1 of 2 model request(s) carry no cost" in result.reasoning and "gen_ai.usage.cost.amount" in result.reasoning
    )


def test_amounts_in_another_or_no_currency_are_not_added_up() -> None:
    other = _graded((0.004, "USD"), (0.003, "EUR"))
    assert other.outcome == "not_evaluated" and "'EUR'" in other.reasoning
    unknown = _graded((0.004, None))
    assert unknown.outcome == "not_evaluated" and "'None'" in unknown.reasoning


def test_without_model_request_spans_the_spend_is_unknown() -> None:
    provider = TracerProvider()
    tracer = provider.get_tracer("app")
    with (
        capture(provider=provider) as cap,
        tracer.start_as_current_span(
            "invoke_agent support", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "s"}
        ),
        tracer.start_as_current_span(
            "execute_tool search", attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}
        ),
    ):
        pass
    [result] = grade(cap, [MaxCost(1.0)])
    assert result.outcome == "not_evaluated", result.reasoning


def test_bad_budgets_fail_at_construction_with_the_parameter_named() -> None:
    with pytest.raises(ParameterError, match=r"MaxCost.max_cost: must be a finite number >= 0, got -1"):
        MaxCost(-1)
    with pytest.raises(ParameterError, match=r"MaxCost.max_cost"):
        MaxCost("cheap")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match=r"MaxCost.currency"):
        MaxCost(1.0, currency="")


def test_from_a_spec_file(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - MaxCost: {max_cost: 0.005, currency: EUR}\n")
    [ev] = load_spec(spec)
    assert isinstance(ev, MaxCost) and (ev.max_cost, ev.currency) == (0.005, "EUR")


def test_in_a_pydantic_evals_dataset_through_the_bridge(tmp_path: Path) -> None:
    ensure_recorder()  # pydantic-evals records `ctx.span_tree` from the global SDK tracer provider
    tracer = trace.get_tracer("app")

    async def task(inputs: float) -> str:
        _run(tracer, (inputs, "USD"), (inputs, "USD"))
        return "done"

    dataset = Dataset[Any, Any, Any](
        name="cost",
        cases=[Case(name="cheap", inputs=0.001), Case(name="dear", inputs=0.5)],
        evaluators=[tb.MaxCost(0.01)],
    )
    report = dataset.evaluate_sync(task, progress=False)
    verdicts = {case.name: case.assertions["MaxCost"].value for case in report.cases}
    assert verdicts == {"cheap": True, "dear": False}
    path = tmp_path / "cost.yaml"
    dataset.to_file(path)
    loaded = Dataset[Any, Any, Any].from_file(path, custom_evaluator_types=tb.evaluator_types())
    assert [type(e) for e in loaded.evaluators] == [tb.MaxCost]
