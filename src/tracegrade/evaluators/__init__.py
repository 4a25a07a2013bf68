"""Built-in evaluators. Each reads the run's span tree / trajectory, never the agent's return value
(except ContainsEvaluator and the reply judge, which grade the reply itself)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes
from .agentic import ArgumentCorrectness, MaxModelRequests, MaxToolCalls, ToolCorrectness, TrajectoryMatch
from .base import BaseEvaluator, Evaluator, ScopedEvaluator
from .cost import MaxCost
from .health import MaxDuration, MaxTokens, NoErrorSpans, NoToolLoops
from .reply import ContainsEvaluator
from .span_match import HasMatchingSpan
from .tools import ToolCallArgsEvaluator, ToolCallEvaluator

if TYPE_CHECKING:
    from .judge import JudgeEvaluator, ToolCallArgsJudgeEvaluator, TrajectoryJudge

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

# The judges load on first use: their verdict models are pydantic models, and the first one defined in
# a process loads every installed pydantic plugin (Logfire's imports most of Logfire), a cost a process
# that grades without a judge (a batch worker) need not pay.
_LAZY = {name: ".judge" for name in ("JudgeEvaluator", "ToolCallArgsJudgeEvaluator", "TrajectoryJudge")}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY, __all__)
