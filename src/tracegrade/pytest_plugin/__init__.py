"""The pytest plugin (registered through the `pytest11` entry point as `tracegrade.pytest_plugin.plugin`).

The plugin module itself is loaded by pytest; the values below are plain Python and usable anywhere.
"""

from __future__ import annotations

from .session import EvalSession, RunResult, TranscriptResult, TurnResult
from .transcript import AgentReply, Expect, JudgeConfig, ToolCallArgsConfig, Turn

__all__ = [
    "AgentReply",
    "EvalSession",
    "Expect",
    "JudgeConfig",
    "RunResult",
    "ToolCallArgsConfig",
    "TranscriptResult",
    "Turn",
    "TurnResult",
]
