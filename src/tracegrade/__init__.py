"""tracegrade: grade AI agents from their OpenTelemetry traces."""

from __future__ import annotations

from .capture import Capture, SpanRecorder, capture
from .content import instrument_content
from .evaluators import (
    ArgumentCorrectness,
    ContainsEvaluator,
    HasMatchingSpan,
    JudgeEvaluator,
    MaxModelRequests,
    MaxToolCalls,
    ToolCallArgsEvaluator,
    ToolCallArgsJudgeEvaluator,
    ToolCallEvaluator,
    ToolCorrectness,
    TrajectoryJudge,
    TrajectoryMatch,
)
from .grading import agrade, grade
from .ingest import TraceFormatError, load_traces, write_otlp_json
from .models import EvalResult, TurnContext
from .pytest_plugin.record import recorded_trace
from .pytest_plugin.session import TranscriptResult
from .pytest_plugin.transcript import AgentReply, Expect, JudgeConfig, ToolCallArgsConfig, Turn
from .spans import Span
from .trajectory import NOT_RECORDED, AgentRun, ModelRequest, ToolCall, Trajectory
from .tree import SpanNode, SpanQuery, SpanTree

__version__ = "0.1.0"

__all__ = [
    "NOT_RECORDED",
    "AgentReply",
    "AgentRun",
    "ArgumentCorrectness",
    "Capture",
    "ContainsEvaluator",
    "EvalResult",
    "Expect",
    "HasMatchingSpan",
    "JudgeConfig",
    "JudgeEvaluator",
    "MaxModelRequests",
    "MaxToolCalls",
    "ModelRequest",
    "Span",
    "SpanNode",
    "SpanQuery",
    "SpanRecorder",
    "SpanTree",
    "ToolCall",
    "ToolCallArgsConfig",
    "ToolCallArgsEvaluator",
    "ToolCallArgsJudgeEvaluator",
    "ToolCallEvaluator",
    "ToolCorrectness",
    "TraceFormatError",
    "Trajectory",
    "TrajectoryJudge",
    "TrajectoryMatch",
    "TranscriptResult",
    "Turn",
    "TurnContext",
    "__version__",
    "agrade",
    "capture",
    "grade",
    "instrument_content",
    "load_traces",
    "recorded_trace",
    "write_otlp_json",
]
