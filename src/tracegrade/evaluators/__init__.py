"""Built-in evaluators. Each reads the run's span tree / trajectory, never the agent's return value
(except ContainsEvaluator and the reply judge, which grade the reply itself)."""

from __future__ import annotations

from .agentic import ArgumentCorrectness, MaxModelRequests, MaxToolCalls, ToolCorrectness, TrajectoryMatch
from .base import BaseEvaluator, Evaluator, ScopedEvaluator
from .cost import MaxCost
from .health import MaxDuration, MaxTokens, NoErrorSpans, NoToolLoops
from .judge import JudgeEvaluator, ToolCallArgsJudgeEvaluator, TrajectoryJudge
from .reply import ContainsEvaluator
from .span_match import HasMatchingSpan
from .tools import ToolCallArgsEvaluator, ToolCallEvaluator

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
