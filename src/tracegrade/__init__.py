"""tracegrade: grade AI agents from their OpenTelemetry traces."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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
from .models import EvalResult, TurnContext
from .pytest_plugin.record import recorded_trace
from .pytest_plugin.session import TranscriptResult
from .pytest_plugin.transcript import AgentReply, Expect, JudgeConfig, ToolCallArgsConfig, Turn
from .spans import Span
from .trajectory import NOT_RECORDED, AgentRun, ModelRequest, ToolCall, Trajectory
from .tree import SpanNode, SpanQuery, SpanTree

if TYPE_CHECKING:
    from .ingest import TraceFormatError, load_traces, write_otlp_json

__version__ = "0.1.0"

# The trace-file readers load on first use: the pytest plugin imports this package in every
# session, and most sessions never read a file (~60 ms of imports saved).
_LAZY = {"TraceFormatError": ".ingest", "load_traces": ".ingest", "write_otlp_json": ".ingest"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tracegrade' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


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
