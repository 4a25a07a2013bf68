"""Transcripts outside pytest collection: `load_transcript(path)` and `await run_transcript(transcript, agent)`,
with pytest-agent-eval's signatures."""

from __future__ import annotations

from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING

from .config import DEFAULT_RUNS, DEFAULT_THRESHOLD
from .session import AgentCallable, EvalSession, TranscriptResult
from .transcript import JUDGE_RETRIES, JUDGE_TIMEOUT

if TYPE_CHECKING:
    from pydantic_ai.models import Model

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
    config_model: str | Model | None = None,
    judge_model: str | Model | None = None,
    judge_retries: int = JUDGE_RETRIES,
    judge_timeout: float = JUDGE_TIMEOUT,
) -> TranscriptResult:
    """Run `transcript` `transcript.runs` times against `agent` and grade it, as the plugin does for a
    YAML file (each turn captured and graded from its spans).

    The other parameters are `EvalSession`'s: `config_model` / `judge_model` are the judges' model
    when a judge names none (`judge_model` first); `judge_retries` / `judge_timeout` are the retries
    and seconds per call of the judges of `judge` and `tool_calls_args` that set none.
    """
    threshold = DEFAULT_THRESHOLD if transcript.threshold is None else transcript.threshold
    runs = DEFAULT_RUNS if transcript.runs is None else transcript.runs
    session = EvalSession(threshold, runs, config_model, judge_model, judge_retries, judge_timeout)
    return await session.run(agent, list(transcript.turns))
