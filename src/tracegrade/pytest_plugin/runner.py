"""Transcripts outside pytest collection: `load_transcript(path)` and `await run_transcript(transcript, agent)`,
with pytest-agent-eval's signatures."""

from __future__ import annotations

import dataclasses
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import DEFAULT_RUNS, DEFAULT_THRESHOLD
from .session import AgentCallable, EvalSession, TranscriptResult
from .transcript import Expect, Turn

if TYPE_CHECKING:
    from .yaml_collect import Transcript

__all__ = ["load_transcript", "run_transcript"]


def load_transcript(
    path: str | PathLike[str],
    *,
    default_threshold: float | None = DEFAULT_THRESHOLD,
    default_runs: int | None = DEFAULT_RUNS,
) -> Transcript:
    """Read and validate one YAML transcript (`TranscriptError` naming the file, line and field).

    A `threshold` / `runs` the file omits is `default_threshold` / `default_runs` (None keeps it
    unset, as the plugin does so that `[tool.agent_eval]` applies); `audio:` paths are resolved
    against the file's directory.
    """
    from .yaml_collect import load_transcript as load

    transcript = load(Path(path))
    if transcript.threshold is None:
        transcript.threshold = default_threshold
    if transcript.runs is None:
        transcript.runs = default_runs
    return transcript


async def run_transcript(
    transcript: Transcript,
    agent: AgentCallable,
    config_model: str | None = None,
    judge_model: str | None = None,
    judge_retries: int | None = None,
    judge_timeout: float | None = None,
) -> TranscriptResult:
    """Run `transcript` `transcript.runs` times against `agent` and grade it, as the plugin does for a
    YAML file (each turn captured and graded from its spans).

    `config_model` / `judge_model` are the judges' model when a judge names none (`judge_model`
    first); `judge_retries` / `judge_timeout`, when given, replace every judge's own `retries` /
    `timeout`.
    """
    threshold = DEFAULT_THRESHOLD if transcript.threshold is None else transcript.threshold
    runs = DEFAULT_RUNS if transcript.runs is None else transcript.runs
    turns = list(transcript.turns)
    if judge_retries is not None or judge_timeout is not None:
        turns = [_with_judge_limits(turn, judge_retries, judge_timeout) for turn in turns]
    session = EvalSession(threshold, runs, config={"model": config_model, "judge_model": judge_model})
    return await session.run(agent, turns)


def _with_judge_limits(turn: Turn, retries: int | None, timeout: float | None) -> Turn:
    """`turn` with its judges' retries / timeout replaced (a new Turn; the original is left as it is)."""
    changes: dict[str, Any] = {}
    if retries is not None:
        changes["retries"] = retries
    if timeout is not None:
        changes["timeout"] = timeout
    evaluators = [dataclasses.replace(ev, **changes) if _is_judge(ev) else ev for ev in turn.expect.build()]
    return Turn(turn.user, Expect(evaluators=evaluators), audio=turn.audio)


def _is_judge(evaluator: Any) -> bool:
    from ..evaluators import JudgeEvaluator, ToolCallArgsJudgeEvaluator, TrajectoryJudge

    return isinstance(evaluator, (JudgeEvaluator, ToolCallArgsJudgeEvaluator, TrajectoryJudge))
