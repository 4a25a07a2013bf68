"""The pydantic-evals reference page's recipes run with tracegrade's bridge evaluators.

The RAG agent, ordered-with-slack and refund handling with budgets; the two options for
include_content=False (arguments recovered from the run's messages, `instrument_content`); every
python block of docs/pydantic-evals.md and docs/content.md runs.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_evals import Case, Dataset
from pydantic_evals import evaluators as pe

import tracegrade.bridges.pydantic_evals as tb
from _bridge_helpers import ROOT, Call, _refund_task, _values, refund_dataset, sdk_provider, support_agent  # noqa: F401 (sdk_provider: an autouse fixture)
from tracegrade.content import instrument_content

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
