"""pytest-agent-eval's `pytest_agent_eval.models` import path, so that its users switch with one import
change. Each name is re-exported from its home: `EvalResult`, `TurnContext` in `tracegrade.results`;
`ToolCall` in `tracegrade.trajectory`; `Turn`, `Expect`, `JudgeConfig`, `ToolCallArgsConfig` in
`tracegrade.pytest_plugin.transcript`; `Transcript` in `tracegrade.pytest_plugin.yaml_collect`;
`TurnResult`, `RunResult`, `TranscriptResult` in `tracegrade.pytest_plugin.session`.
"""

from __future__ import annotations

from .pytest_plugin.session import RunResult as RunResult
from .pytest_plugin.session import TranscriptResult as TranscriptResult
from .pytest_plugin.session import TurnResult as TurnResult
from .pytest_plugin.transcript import Expect as Expect
from .pytest_plugin.transcript import JudgeConfig as JudgeConfig
from .pytest_plugin.transcript import ToolCallArgsConfig as ToolCallArgsConfig
from .pytest_plugin.transcript import Turn as Turn
from .pytest_plugin.yaml_collect import Transcript as Transcript
from .results import EvalResult as EvalResult
from .results import TurnContext as TurnContext
from .trajectory import ToolCall as ToolCall
