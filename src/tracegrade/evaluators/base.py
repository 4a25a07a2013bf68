"""The evaluator protocol and the base class of the built-in evaluators."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..results import EvalResult, TurnContext

if TYPE_CHECKING:
    from ..trajectory import Trajectory

__all__ = [
    "NO_SPANS_REASON",
    "BaseEvaluator",
    "Evaluator",
    "evaluator_name",
    "missing_tool_evidence",
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


def missing_tool_evidence(ctx: TurnContext) -> str | None:
    """Why the turn's tool calls cannot be judged (the pytest-family checks read `ctx.tool_calls`):
    no spans and no calls returned by the agent, or spans whose telemetry does not hold the calls."""
    if ctx.tool_calls_source == "none" and not ctx.tool_calls:
        return f"{NO_SPANS_REASON}, and the agent returned no tool calls: nothing tells which tools were called"
    traj = ctx.trajectory
    if ctx.tool_calls_source == "spans" and traj is not None:
        return traj.missing.get("tool_calls")
    return None


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


def scoped_trajectory(
    ctx: TurnContext, agent: str | None, subtree: object | None, needs: tuple[str, ...] = ()
) -> Trajectory | EvalResult:
    """`require_trajectory`, narrowed to one agent's calls and/or one subtree (`not_evaluated` if absent
    or when the telemetry does not hold what the check `needs`: `"tool_calls"`, `"model_requests"`)."""
    traj = require_trajectory(ctx)
    if isinstance(traj, EvalResult):
        return traj
    for need in needs:
        if (reason := traj.missing.get(need)) is not None:
            return EvalResult.not_evaluated(reason)
    if agent is None and subtree is None:
        return traj
    try:
        return traj.scope(agent=agent, subtree=subtree)
    except LookupError as e:
        return EvalResult.not_evaluated(f"cannot scope the trajectory: {e}")
