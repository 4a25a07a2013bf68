"""pytest-agent-eval's module paths under `tracegrade.`: every name its users import from
`pytest_agent_eval.<module>` imports from `tracegrade.<module>` and is the very object of its home,
and the compat modules list nothing in `__all__` (the home stays the one public home)."""

from __future__ import annotations

import asyncio
import importlib
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

# pytest-agent-eval 0.3.0's module → {name: tracegrade's home module of that name}
PATHS: dict[str, dict[str, str]] = {
    "adapters.pydantic_ai": {"PydanticAIAdapter": "tracegrade.pytest_plugin.adapters"},
    "adapters.openai": {"OpenAIAdapter": "tracegrade.pytest_plugin.adapters"},
    "adapters.langchain": {"LangChainAdapter": "tracegrade.pytest_plugin.adapters"},
    "adapters.smolagents": {"SmolagentsAdapter": "tracegrade.pytest_plugin.adapters"},
    "models": {
        "Turn": "tracegrade.pytest_plugin.transcript",
        "Expect": "tracegrade.pytest_plugin.transcript",
        "JudgeConfig": "tracegrade.pytest_plugin.transcript",
        "ToolCallArgsConfig": "tracegrade.pytest_plugin.transcript",
        "Transcript": "tracegrade.pytest_plugin.yaml_collect",
        "ToolCall": "tracegrade.trajectory",
        "TurnContext": "tracegrade.results",
        "EvalResult": "tracegrade.results",
        "TurnResult": "tracegrade.pytest_plugin.session",
        "RunResult": "tracegrade.pytest_plugin.session",
        "TranscriptResult": "tracegrade.pytest_plugin.session",
    },
    "evaluators.judge": {
        "JudgeEvaluator": "tracegrade.evaluators",
        "ToolCallArgsJudgeEvaluator": "tracegrade.evaluators",
    },
    "evaluators.contains": {"ContainsEvaluator": "tracegrade.evaluators"},
    "evaluators.tool_call": {
        "ToolCallEvaluator": "tracegrade.evaluators",
        "ToolCallArgsEvaluator": "tracegrade.evaluators",
    },
    "evaluators.base": {"Evaluator": "tracegrade.evaluators"},
    "yaml_loader": {
        "TranscriptError": "tracegrade.errors",
        "load_transcript": "tracegrade.pytest_plugin.runner",
        "validate_transcript_dict": "tracegrade.pytest_plugin.yaml_collect",
    },
    "runner": {
        "EvalSession": "tracegrade.pytest_plugin.session",
        "run_transcript": "tracegrade.pytest_plugin.runner",
    },
}
# the modules that exist only as pytest-agent-eval's paths (the others are homes of their own names)
COMPAT = [
    "adapters",
    "adapters.pydantic_ai",
    "adapters.openai",
    "adapters.langchain",
    "adapters.smolagents",
    "models",
    "evaluators.contains",
    "evaluators.tool_call",
    "yaml_loader",
    "runner",
]


@pytest.mark.parametrize(
    ("module", "name", "home"),
    [(module, name, home) for module, names in PATHS.items() for name, home in names.items()],
)
def test_each_pytest_agent_eval_import_path_gives_the_object_of_its_home(module: str, name: str, home: str) -> None:
    imported = getattr(importlib.import_module(f"tracegrade.{module}"), name)
    assert imported is getattr(importlib.import_module(home), name)


@pytest.mark.parametrize("module", COMPAT)
def test_compat_modules_export_nothing_and_say_whose_path_they_are(module: str) -> None:
    mod: ModuleType = importlib.import_module(f"tracegrade.{module}")
    assert not hasattr(mod, "__all__")  # `from x import *` and the one-public-home rule see no names
    assert f"pytest_agent_eval.{module}" in (mod.__doc__ or "")


def _booking_agent() -> Agent[None, str]:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not any(isinstance(m, ModelResponse) for m in messages):
            return ModelResponse(parts=[ToolCallPart("book_slot", {"time": "10am"}, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart("Booked for 10am.")])

    agent: Agent[None, str] = Agent(FunctionModel(model))

    @agent.tool_plain
    def book_slot(time: str) -> str:
        return f"booked {time}"

    return agent


def test_a_pydantic_ai_agent_runs_through_pytest_agent_eval_import_paths() -> None:
    from tracegrade.adapters.pydantic_ai import PydanticAIAdapter
    from tracegrade.evaluators.contains import ContainsEvaluator
    from tracegrade.evaluators.tool_call import ToolCallArgsEvaluator, ToolCallEvaluator
    from tracegrade.models import Expect, Transcript, Turn
    from tracegrade.runner import run_transcript

    expect = Expect(
        evaluators=[
            ToolCallEvaluator(must_include=["book_slot"]),
            ToolCallArgsEvaluator(tool="book_slot", args={"time": "10am"}),
            ContainsEvaluator(any_of=["booked"]),
        ]
    )
    transcript = Transcript("booking", [Turn("Book 10am", expect=expect)], threshold=1.0)
    result = asyncio.run(run_transcript(transcript, PydanticAIAdapter(_booking_agent())))
    assert result.passed, result.describe_failures()
    [turn] = result.runs[0].turn_results
    assert turn.tool_calls == ["book_slot"] and turn.tool_calls[0].args == {"time": "10am"}
    assert [r.passed for r in turn.eval_results] == [True, True, True]

    wrong = Expect(evaluators=[ToolCallArgsEvaluator(tool="book_slot", args={"time": "3pm"})])
    transcript = Transcript("booking", [Turn("Book 3pm", expect=wrong)], threshold=1.0)
    failed = asyncio.run(run_transcript(transcript, PydanticAIAdapter(_booking_agent())))
    assert not failed.passed


# --- yaml_loader: validate_transcript_dict, with pytest-agent-eval's signature -------------------------------


def test_validate_transcript_dict_accepts_a_valid_document() -> None:
    from tracegrade.yaml_loader import validate_transcript_dict

    document = {"id": "t", "turns": [{"user": "hi", "expect": {"reply_contains_any": ["hello"]}}], "runs": 2}
    assert validate_transcript_dict(document) is None


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (["not", "a", "mapping"], "x.yaml: a transcript must be a YAML mapping with `id` and `turns`, got list"),
        ({"id": "t", "turns": [{"user": "hi"}], "thresold": 0.8}, "x.yaml: thresold: unknown field 'thresold'"),
        ({"id": "t", "turns": [{"user": "hi", "expect": {"judge": {"model": "m"}}}]}, "x.yaml: turns[0].expect.judge"),
        ({"id": "t", "turns": []}, "x.yaml: turns:"),
    ],
)
def test_validate_transcript_dict_names_the_source_and_the_path_of_the_problem(document: object, message: str) -> None:
    from tracegrade.yaml_loader import TranscriptError, validate_transcript_dict

    with pytest.raises(TranscriptError) as excinfo:
        validate_transcript_dict(document, source="x.yaml")
    assert str(excinfo.value).startswith(message)
    assert excinfo.value.line is None  # a parsed document has no lines


def test_validate_transcript_dict_checks_what_loading_the_file_checks(tmp_path: Path) -> None:
    from tracegrade.yaml_loader import TranscriptError, load_transcript, validate_transcript_dict

    text = textwrap.dedent(
        """\
        id: t
        turns:
          - user: hi
            expect:
              reply_matches_any: ["("]
        """
    )
    (path := tmp_path / "t.yaml").write_text(text)
    with pytest.raises(TranscriptError) as from_file:
        load_transcript(path)
    with pytest.raises(TranscriptError) as from_dict:
        validate_transcript_dict({"id": "t", "turns": [{"user": "hi", "expect": {"reply_matches_any": ["("]}}]})
    assert (from_dict.value.loc, from_dict.value.message) == (from_file.value.loc, from_file.value.message)
    assert str(from_dict.value).startswith("transcript: turns[0].expect.reply_matches_any[0]: invalid regex pattern")


# --- pytest-agent-eval's semantics behind those paths ---------------------------------------------------------


def test_a_transcript_built_in_python_has_pytest_agent_eval_s_defaults_and_a_file_leaves_them_to_the_config(
    tmp_path: Path,
) -> None:
    from tracegrade.models import Transcript
    from tracegrade.pytest_plugin.yaml_collect import load_transcript as collect

    assert (Transcript("t", []).threshold, Transcript("t", []).runs) == (0.8, 1)
    (path := tmp_path / "t.yaml").write_text("id: t\nturns:\n  - user: hi\n")
    collected = collect(path)  # what the plugin collects: `[tool.agent_eval]` fills what the file omits
    assert (collected.threshold, collected.runs) == (None, None)


def test_expect_holds_configs_where_it_was_given_mappings(tmp_path: Path) -> None:
    from tracegrade.models import Expect, JudgeConfig, ToolCallArgsConfig
    from tracegrade.yaml_loader import load_transcript

    text = textwrap.dedent(
        """\
        id: t
        turns:
          - user: hi
            expect:
              judge: {rubric: Be polite.}
              tool_calls_args:
                - {tool: book_slot, args: {time: 10am}, mode: exact}
                - {tool: book_slot, judge: {rubric: Business hours.}}
        """
    )
    (path := tmp_path / "t.yaml").write_text(text)
    expect = load_transcript(path).turns[0].expect
    first, second = expect.tool_calls_args
    assert isinstance(first, ToolCallArgsConfig) and isinstance(second, ToolCallArgsConfig)
    assert (first.tool, first.args, first.mode, first.judge) == ("book_slot", {"time": "10am"}, "exact", None)
    assert second.args is None and isinstance(second.judge, JudgeConfig) and second.judge.rubric == "Business hours."
    assert isinstance(expect.judge, JudgeConfig) and expect.judge.rubric == "Be polite."
    given = [{"tool": "a", "args": {}}]
    assert isinstance(Expect(tool_calls_args=given).tool_calls_args[0], ToolCallArgsConfig)
    assert given == [{"tool": "a", "args": {}}]  # the caller's list is left as it was


def test_a_transcript_error_is_a_value_error_as_in_pytest_agent_eval(tmp_path: Path) -> None:
    from tracegrade.yaml_loader import load_transcript

    (path := tmp_path / "t.yaml").write_text(
        "id: t\nturns:\n  - user: hi\n    expect:\n      tool_calls_args:\n        - tool: book\n"
    )
    with pytest.raises(ValueError, match=r"needs 'args' \(a deterministic check\), 'judge' \(an LLM-judged rubric\)"):
        load_transcript(path)
