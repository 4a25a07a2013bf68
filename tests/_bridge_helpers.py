"""Agents, tasks and datasets shared by the pydantic-evals bridge tests (`test_bridge_*.py`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, CallDeferred, DeferredToolRequests, InstrumentationSettings, ModelRetry, ToolOutput
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import EvaluationReason
from pydantic_evals.reporting import EvaluationReport

from tracegrade.capture import ensure_recorder

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
