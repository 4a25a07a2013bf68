"""Built-in evaluators. Each reads the run's span tree / trajectory, never the agent's return value
(except ContainsEvaluator and the reply judge, which grade the reply itself)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .agentic import ArgumentCorrectness, MaxModelRequests, MaxToolCalls, ToolCorrectness, TrajectoryMatch
from .base import BaseEvaluator, Evaluator, ScopedEvaluator
from .cost import MaxCost
from .health import MaxDuration, MaxTokens, NoErrorSpans, NoToolLoops
from .reply import ContainsEvaluator
from .span_match import HasMatchingSpan
from .tools import ToolCallArgsEvaluator, ToolCallEvaluator

if TYPE_CHECKING:
    from .judge import JudgeEvaluator, ToolCallArgsJudgeEvaluator, TrajectoryJudge

_JUDGES = ("JudgeEvaluator", "ToolCallArgsJudgeEvaluator", "TrajectoryJudge")


def __getattr__(name: str) -> Any:
    """The judges load on first use: their verdict models are pydantic models, whose first
    definition in a process loads every installed pydantic plugin (Logfire's imports most of Logfire),
    a cost a process that grades without a judge (a batch worker) need not pay."""
    if name in _JUDGES:
        from . import judge

        value = getattr(judge, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

__all__ = [
    "ArgumentCorrectness",
    "BaseEvaluator",
    "ContainsEvaluator",
    "Evaluator",
    "HasMatchingSpan",
    "JudgeEvaluator",
    "MaxCost",
    "MaxDuration",
    "MaxModelRequests",
    "MaxTokens",
    "MaxToolCalls",
    "NoErrorSpans",
    "NoToolLoops",
    "ScopedEvaluator",
    "ToolCallArgsEvaluator",
    "ToolCallArgsJudgeEvaluator",
    "ToolCallEvaluator",
    "ToolCorrectness",
    "TrajectoryJudge",
    "TrajectoryMatch",
]
