"""tracegrade: grade AI agents from their OpenTelemetry traces.

The top level holds the names of the everyday API and the core data types; everything else has one
home in a named submodule: the evaluators in `tracegrade.evaluators`, the span tree in
`tracegrade.tree`, the errors in `tracegrade.errors`, `OTLPReceiver` in `tracegrade.receiver`,
`grade_traces` in `tracegrade.batch`. The pytest-facing evaluators are here as well as in
`tracegrade.evaluators`, as in pytest-agent-eval.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_attributes
from ._version import __version__ as __version__  # the attribute, not a name of `__all__`
from .capture import Capture, capture  # eager: the submodule `capture` must not shadow the function

if TYPE_CHECKING:
    from .errors import TranscriptError
    from .evaluators import (
        ContainsEvaluator,
        Evaluator,
        JudgeEvaluator,
        ToolCallArgsEvaluator,
        ToolCallArgsJudgeEvaluator,
        ToolCallEvaluator,
    )
    from .grading import agrade, grade
    from .ingest._traces import load_traces
    from .ingest._write import write_otlp_json
    from .pytest_plugin.transcript import AgentReply, Expect, JudgeConfig, ToolCallArgsConfig, Turn
    from .pytest_plugin.yaml_collect import Transcript
    from .receiver._propagation import trace_headers
    from .results import EvalResult, TurnContext
    from .spans import Span
    from .trajectory import NOT_RECORDED, AgentRun, ModelRequest, ToolCall, Trajectory

# Everything but capture loads on first use: pytest imports this package through the plugin in every
# session of every project it is installed in, most of which never grade anything (the evaluators,
# judges, transcript models and trace readers are the bulk of the package's import time).
_LAZY = {
    name: module
    for module, names in {
        ".errors": "TranscriptError",
        ".evaluators": "ContainsEvaluator Evaluator JudgeEvaluator ToolCallArgsEvaluator ToolCallArgsJudgeEvaluator "
        "ToolCallEvaluator",
        ".grading": "agrade grade",
        ".ingest._traces": "load_traces",
        ".ingest._write": "write_otlp_json",
        ".pytest_plugin.transcript": "AgentReply Expect JudgeConfig ToolCallArgsConfig Turn",
        ".pytest_plugin.yaml_collect": "Transcript",
        ".receiver._propagation": "trace_headers",
        ".results": "EvalResult TurnContext",
        ".spans": "Span",
        ".trajectory": "NOT_RECORDED AgentRun ModelRequest ToolCall Trajectory",
    }.items()
    for name in names.split()
}

__all__ = [
    "NOT_RECORDED",
    "AgentReply",
    "AgentRun",
    "Capture",
    "ContainsEvaluator",
    "EvalResult",
    "Evaluator",
    "Expect",
    "JudgeConfig",
    "JudgeEvaluator",
    "ModelRequest",
    "Span",
    "ToolCall",
    "ToolCallArgsConfig",
    "ToolCallArgsEvaluator",
    "ToolCallArgsJudgeEvaluator",
    "ToolCallEvaluator",
    "Trajectory",
    "Transcript",
    "TranscriptError",
    "Turn",
    "TurnContext",
    "agrade",
    "capture",
    "grade",
    "load_traces",
    "trace_headers",
    "write_otlp_json",
]

if not TYPE_CHECKING:  # type checkers read the imports above; a misspelt name stays an error for them
    __getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY, __all__)
