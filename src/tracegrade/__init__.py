"""tracegrade: grade AI agents from their OpenTelemetry traces."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_attributes
from .capture import Capture, capture  # eager: the submodule `capture` must not shadow the function

if TYPE_CHECKING:
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
    from .pytest_plugin.record import recorded_trace
    from .pytest_plugin.session import TranscriptResult
    from .pytest_plugin.transcript import AgentReply, Expect, JudgeConfig, ToolCallArgsConfig, Turn
    from .receiver import trace_headers
    from .results import EvalResult, TurnContext
    from .spans import Span
    from .trajectory import NOT_RECORDED, AgentRun, ModelRequest, ToolCall, Trajectory
    from .tree import SpanNode, SpanQuery, SpanTree

__version__ = "0.1.0"

# Everything but capture loads on first use: pytest imports this package through the plugin in every
# session of every project it is installed in, most of which never grade anything (the evaluators,
# judges, transcript models and trace readers cost ~0.3 s of imports, more when they build the
# first pydantic model of the process).
_LAZY = {
    name: module
    for module, names in {
        ".content": "instrument_content",
        ".evaluators": "ArgumentCorrectness ContainsEvaluator HasMatchingSpan JudgeEvaluator MaxModelRequests "
        "MaxToolCalls ToolCallArgsEvaluator ToolCallArgsJudgeEvaluator ToolCallEvaluator ToolCorrectness "
        "TrajectoryJudge TrajectoryMatch",
        ".grading": "agrade grade",
        ".ingest": "TraceFormatError load_traces write_otlp_json",
        ".results": "EvalResult TurnContext",
        ".pytest_plugin.record": "recorded_trace",
        ".pytest_plugin.session": "TranscriptResult",
        ".pytest_plugin.transcript": "AgentReply Expect JudgeConfig ToolCallArgsConfig Turn",
        ".receiver._propagation": "trace_headers",
        ".spans": "Span",
        ".trajectory": "NOT_RECORDED AgentRun ModelRequest ToolCall Trajectory",
        ".tree": "SpanNode SpanQuery SpanTree",
    }.items()
    for name in names.split()
}

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
    "trace_headers",
    "write_otlp_json",
]

if not TYPE_CHECKING:  # type checkers read the imports above; a misspelt name stays an error for them
    __getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY, __all__)
