"""tracegrade: grade AI agents from their OpenTelemetry traces."""

from __future__ import annotations

from .capture import Capture, SpanRecorder, capture
from .evaluators import (
    ArgumentCorrectness,
    ContainsEvaluator,
    HasMatchingSpan,
    MaxModelRequests,
    MaxToolCalls,
    ToolCallArgsEvaluator,
    ToolCallEvaluator,
    ToolCorrectness,
    TrajectoryMatch,
)
from .grading import agrade, grade
from .models import EvalResult, TurnContext
from .spans import Span
from .trajectory import NOT_RECORDED, AgentRun, ModelRequest, ToolCall, Trajectory
from .tree import SpanNode, SpanQuery, SpanTree

__version__ = "0.1.0"

__all__ = [
    "NOT_RECORDED",
    "AgentRun",
    "ArgumentCorrectness",
    "Capture",
    "ContainsEvaluator",
    "EvalResult",
    "HasMatchingSpan",
    "MaxModelRequests",
    "MaxToolCalls",
    "ModelRequest",
    "Span",
    "SpanNode",
    "SpanQuery",
    "SpanRecorder",
    "SpanTree",
    "ToolCall",
    "ToolCallArgsEvaluator",
    "ToolCallEvaluator",
    "ToolCorrectness",
    "Trajectory",
    "TrajectoryMatch",
    "TurnContext",
    "__version__",
    "agrade",
    "capture",
    "grade",
]
