"""The evaluator protocol and the base class of the built-in evaluators."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..models import EvalResult, TurnContext

if TYPE_CHECKING:
    from ..trajectory import Trajectory

__all__ = [
    "NO_SPANS_REASON",
    "BaseEvaluator",
    "Evaluator",
    "evaluator_name",
    "require_trajectory",
    "scoped_trajectory",
]

NO_SPANS_REASON = (
    "no agent spans were recorded: instrument the agent (Agent.instrument_all(), `agent.instrument = True`, "
    "or logfire.instrument_pydantic_ai()) and run it inside `tracegrade.capture()`"
)


@runtime_checkable
class Evaluator(Protocol):
    """Anything with `evaluate(ctx) -> EvalResult`, sync or async. No base class is required."""

    def evaluate(self, ctx: TurnContext) -> EvalResult | Awaitable[EvalResult]: ...


class BaseEvaluator:
    """Base of the built-ins: parameters are plain dataclass fields (so YAML specs can build them)."""

    evaluation_name: str | None = None

    @property
    def name(self) -> str:
        return self.evaluation_name or type(self).__name__

    def evaluate(self, ctx: TurnContext) -> EvalResult | Awaitable[EvalResult]:
        raise NotImplementedError

    def __repr__(self) -> str:
        if not dataclasses.is_dataclass(self):
            return f"{type(self).__name__}()"
        shown = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            if f.init and value != default:
                shown.append(f"{f.name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"


def evaluator_name(evaluator: object) -> str:
    name = getattr(evaluator, "name", None)
    if isinstance(name, str) and name:
        return name
    evaluation_name = getattr(evaluator, "evaluation_name", None)
    return evaluation_name if isinstance(evaluation_name, str) and evaluation_name else type(evaluator).__name__


def require_trajectory(ctx: TurnContext) -> Trajectory | EvalResult:
    """The context's trajectory, or a `not_evaluated` result saying how to get spans."""
    traj = ctx.trajectory
    if traj is None or traj.is_empty:
        n = len(ctx.span_tree) if ctx.span_tree is not None else 0
        if n:
            return EvalResult.not_evaluated(
                f"{n} span(s) were recorded but none is an agent, model or tool span of a known "
                f"instrumentation; {NO_SPANS_REASON}"
            )
        return EvalResult.not_evaluated(NO_SPANS_REASON)
    if traj.incomplete:
        more = f" (+{len(traj.incomplete) - 3} more)" if len(traj.incomplete) > 3 else ""
        return EvalResult.not_evaluated("the recorded run is incomplete: " + "; ".join(traj.incomplete[:3]) + more)
    return traj


def scoped_trajectory(ctx: TurnContext, agent: str | None, subtree: object | None) -> Trajectory | EvalResult:
    """`require_trajectory`, narrowed to one agent's calls and/or one subtree (`not_evaluated` if absent)."""
    traj = require_trajectory(ctx)
    if isinstance(traj, EvalResult) or (agent is None and subtree is None):
        return traj
    try:
        return traj.scope(agent=agent, subtree=subtree)
    except LookupError as e:
        return EvalResult.not_evaluated(f"cannot scope the trajectory: {e}")
