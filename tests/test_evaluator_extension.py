"""A new evaluator costs one class and one line: defined here, registered with `register_evaluator`,
it works from Python (`grade`), grading specs, YAML transcripts and a real `pydantic_evals.Dataset`
evaluation through the bridge, with the scoped base's preconditions (not_evaluated without spans)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic_evals import Case, Dataset

import tracegrade.bridges.pydantic_evals as tb
from _agents import run_captured, scripted_agent
from tracegrade import EvalResult, Trajectory, TurnContext, grade
from tracegrade.capture import ensure_recorder
from tracegrade.errors import ParameterError
from tracegrade.evaluators import ScopedEvaluator
from tracegrade.pytest_plugin.yaml_collect import load_transcript
from tracegrade.spec import build_evaluators, evaluator_registry, load_spec, register_evaluator


@dataclass(repr=False)
class MaxDistinctTools(ScopedEvaluator):
    """At most `limit` different tools were called."""

    needs: ClassVar[tuple[str, ...]] = ("tool_calls",)

    limit: int
    evaluation_name: str | None = field(default=None)

    def check(self, traj: Trajectory, ctx: TurnContext) -> EvalResult:
        names = sorted({c.name for c in traj.calls()})
        return EvalResult(len(names) <= self.limit, f"{len(names)} distinct tool(s) {names}, limit {self.limit}")


register_evaluator(MaxDistinctTools)  # the one line


@pytest.fixture(scope="module", autouse=True)
def sdk_provider() -> None:
    ensure_recorder()  # pydantic-evals records `ctx.span_tree` from the global SDK tracer provider


STEPS: list[Any] = [("search", {"q": "a"}), ("fetch", {"id": 1}), ("search", {"q": "b"})]


def test_a_registered_evaluator_is_listed_by_name() -> None:
    assert evaluator_registry()["MaxDistinctTools"] is MaxDistinctTools


def test_from_python_it_runs_with_the_scoped_preconditions() -> None:
    cap = run_captured(STEPS)
    [ok, over] = grade(cap, [MaxDistinctTools(2), MaxDistinctTools(1)])
    assert (ok.outcome, ok.reasoning) == ("passed", "2 distinct tool(s) ['fetch', 'search'], limit 2")
    assert over.outcome == "failed"
    [scoped] = grade(cap, [MaxDistinctTools(5, agent="nobody")])
    assert scoped.outcome == "not_evaluated" and "cannot scope" in scoped.reasoning
    [empty] = grade(TurnContext(user="hi"), [MaxDistinctTools(2)])
    assert empty.outcome == "not_evaluated" and "no agent spans were recorded" in empty.reasoning


def test_from_python_its_parameters_are_checked_at_construction() -> None:
    with pytest.raises(ParameterError, match=r"^MaxDistinctTools\.limit: must be an integer, got '2'$"):
        MaxDistinctTools("2")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"MaxDistinctTools\.limt: unknown parameter \(did you mean 'limit'\?\)"):
        MaxDistinctTools(limt=2)  # type: ignore[call-arg]


def test_from_a_grading_spec(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - MaxDistinctTools: 2\n  - MaxDistinctTools: {limit: 1, agent: agent}\n")
    evaluators = load_spec(spec)
    assert evaluators == [MaxDistinctTools(2), MaxDistinctTools(1, agent="agent")]
    assert [r.outcome for r in grade(run_captured(STEPS), evaluators)] == ["passed", "failed"]
    spec.write_text("evaluators:\n  - MaxDistinctTools: {limit: two}\n")
    with pytest.raises(ValueError, match=r"spec\.yaml: evaluators\[0\]: MaxDistinctTools\.limit: must be an integer"):
        load_spec(spec)


def test_from_a_yaml_transcript(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("id: t\nturns:\n  - user: hi\n    expect:\n      evaluators:\n        - MaxDistinctTools: 2\n")
    [evaluator] = load_transcript(path).turns[0].expect.build()
    assert evaluator == MaxDistinctTools(2)


@pytest.mark.filterwarnings("ignore:Could not determine the generic parameters")
def test_from_a_pydantic_evals_dataset_through_the_bridge(tmp_path: Path) -> None:
    bridge = tb.bridge_class(MaxDistinctTools)
    assert bridge is tb.bridge_class(MaxDistinctTools) and bridge in tb.evaluator_types()
    assert issubclass(bridge, MaxDistinctTools) and bridge.__name__ == "MaxDistinctTools"

    async def task(inputs: str) -> str:
        result = await scripted_agent(STEPS).run(inputs)
        return result.output

    dataset = Dataset(
        name="toy", cases=[Case(name="c", inputs="go")], evaluators=[bridge(2), bridge(1, evaluation_name="one")]
    )
    report = dataset.evaluate_sync(task, progress=False)
    [case] = report.cases
    values = {name: (r.value, r.reason) for name, r in case.assertions.items()}
    assert values == {
        "MaxDistinctTools": (True, "2 distinct tool(s) ['fetch', 'search'], limit 2"),
        "one": (False, "2 distinct tool(s) ['fetch', 'search'], limit 1"),
    }
    # a saved dataset loads back with the registered evaluator's bridge
    path = tmp_path / "toy.yaml"
    dataset.to_file(path)
    loaded = Dataset[Any, Any, Any].from_file(path, custom_evaluator_types=tb.evaluator_types())
    assert [type(e) for e in loaded.evaluators] == [bridge, bridge]


def test_the_same_bad_value_gives_the_same_message_on_every_surface(tmp_path: Path) -> None:
    message = "MaxDistinctTools.limit: must be an integer, got 'two'"
    with pytest.raises(ParameterError) as python:
        MaxDistinctTools("two")  # type: ignore[arg-type]
    with pytest.raises(ValueError) as spec:
        build_evaluators([{"MaxDistinctTools": "two"}])
    with pytest.raises(TypeError) as bridge:
        tb.bridge_class(MaxDistinctTools)("two")
    path = tmp_path / "t.yaml"
    path.write_text("id: t\nturns:\n  - user: hi\n    expect:\n      evaluators:\n        - MaxDistinctTools: two\n")
    with pytest.raises(Exception) as yaml:
        load_transcript(path)
    assert str(python.value) == message == str(bridge.value)
    assert str(spec.value) == f"evaluators[0]: {message}"
    assert yaml.value.args[0].split("\n")[0] == f"{path}:6: turns[0].expect.evaluators[0]: {message}"
