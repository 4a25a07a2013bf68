"""`load_transcript` / `run_transcript` (pytest-agent-eval's signatures) and YAML `audio:`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from _plugin_helpers import clean_agent_eval_env, src  # noqa: F401
from tracegrade import EvalResult, Expect, Turn, TurnContext
from tracegrade.errors import TranscriptError
from tracegrade.evaluators import JudgeEvaluator
from tracegrade.evaluators import judge as judge_module
from tracegrade.pytest_plugin.runner import load_transcript, run_transcript
from tracegrade.pytest_plugin.yaml_collect import Transcript

AUDIO_YAML = src(
    """
    id: voice
    turns:
      - user: book a table
        audio: audio/book.wav
      - user: thanks
      - user: bye
        audio: /abs/bye.wav
    """
)


def test_load_transcript_resolves_audio_against_the_file_and_fills_defaults(tmp_path: Path) -> None:
    path = tmp_path / "evals" / "voice.yaml"
    path.parent.mkdir()
    path.write_text(AUDIO_YAML)
    transcript = load_transcript(path)
    assert [t.audio for t in transcript.turns] == [path.parent / "audio" / "book.wav", None, Path("/abs/bye.wav")]
    assert (transcript.threshold, transcript.runs) == (0.8, 1)
    unset = load_transcript(str(path), default_threshold=None, default_runs=None)
    assert (unset.threshold, unset.runs) == (None, None)


def test_audio_that_is_not_a_path_is_a_transcript_error_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("id: t\nturns:\n  - user: hi\n    audio: [a, b]\n")
    with pytest.raises(TranscriptError) as info:
        load_transcript(path)
    assert str(info.value).startswith(f"{path}:4: turns[0].audio: ")


class Config:
    """A custom evaluator recording the settings the judges would see."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    async def evaluate(self, ctx: TurnContext) -> EvalResult:
        self.seen.append(dict(ctx.config))
        return EvalResult(True)


def test_run_transcript_runs_with_pytest_agent_evals_defaults_and_judge_models() -> None:
    calls: list[int] = []

    async def agent(history: list[dict[str, Any]]) -> tuple[str, list[str]]:
        calls.append(len(history))
        return ("confirmed" if len(calls) % 2 else "no"), []

    check = Config()
    transcript = Transcript("t", [Turn("book", expect=Expect(evaluators=[check], reply_contains_any=["confirmed"]))], runs=4)
    result = asyncio.run(run_transcript(transcript, agent, "openai:fallback", "openai:judge"))
    assert (result.threshold, len(result.runs), result.score, result.passed) == (0.8, 4, 0.5, False)
    assert check.seen[0]["model"] == "openai:fallback" and check.seen[0]["judge_model"] == "openai:judge"
    lenient = asyncio.run(run_transcript(Transcript("t", transcript.turns, threshold=0.5, runs=2), agent))
    assert lenient.passed


def test_run_transcript_judge_limits_are_those_of_the_judges_that_set_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(judge_module, "RETRY_BACKOFF_SECONDS", 0)
    attempts: list[str] = []

    def down(name: str) -> FunctionModel:
        def call(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            attempts.append(name)
            raise ConnectionError("API down")

        return FunctionModel(call)

    own = JudgeEvaluator(rubric="polite", model=down("own"), retries=1)
    expect = Expect(evaluators=[own], judge={"rubric": "confirms", "model": down("config")})
    transcript = Transcript("t", [Turn("hi", expect=expect)], threshold=0.0)
    result = asyncio.run(run_transcript(transcript, lambda h: "hello", judge_retries=0, judge_timeout=5.0))
    assert sorted(attempts) == ["config", "own", "own"]  # as pytest-agent-eval: an explicit judge keeps its own
    assert {v.outcome for v in result.runs[0].turn_results[0].eval_results} == {"error"}
    attempts.clear()
    asyncio.run(run_transcript(transcript, lambda h: "hello"))
    assert sorted(attempts) == ["config"] * 3 + ["own"] * 2  # pytest-agent-eval's default: 2 retries


def test_yaml_audio_reaches_the_llm_eval_agent(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"tests/evals/voice": AUDIO_YAML})
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture
        def llm_eval_agent():
            def agent(history):
                print("AUDIO", history[-1].get("audio"))
                return "ok"
            return agent
        """
    )
    result = pytester.runpytest("--agent-eval-live", "-s")
    result.assert_outcomes(passed=1)
    wav = pytester.path / "tests" / "evals" / "audio" / "book.wav"
    result.stdout.fnmatch_lines([f"*AUDIO {wav}", "AUDIO None", "AUDIO /abs/bye.wav"])
