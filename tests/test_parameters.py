"""Constructor checks (`tracegrade.evaluators.base.CheckedParameters`): wrong types fail at
construction, misspelt keywords name the closest parameter, and one bad value reads the same from
Python, a grading spec, a YAML transcript and the pydantic-evals bridge (files add file:line)."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path

import pytest

import tracegrade.bridges.pydantic_evals as tb
from tracegrade.errors import ExpectError, ParameterError, SpecError, TranscriptError
from tracegrade.evaluators import (
    ArgumentCorrectness,
    ContainsEvaluator,
    MaxToolCalls,
    NoToolLoops,
    ToolCallArgsEvaluator,
    ToolCorrectness,
    TrajectoryMatch,
)
from tracegrade.pytest_plugin.transcript import Expect, JudgeConfig, ToolCallArgsConfig
from tracegrade.pytest_plugin.yaml_collect import SCHEMA_FILE, load_transcript
from tracegrade.spec import build_evaluators


def test_a_wrong_type_fails_at_construction_not_at_grading() -> None:
    with pytest.raises(ParameterError) as e:
        MaxToolCalls("3")  # type: ignore[arg-type]
    assert str(e.value) == "MaxToolCalls.max_calls: must be an integer, got '3'"
    assert isinstance(e.value, ValueError) and isinstance(e.value, TypeError)
    with pytest.raises(ParameterError, match=r"^MaxToolCalls\.include_failed: must be true or false, got 1$"):
        MaxToolCalls(3, include_failed=1)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match=r"^NoToolLoops\.window: must be an integer or None, got 2\.5$"):
        NoToolLoops(window=2.5)  # type: ignore[arg-type]


def test_list_items_are_named_by_index() -> None:
    with pytest.raises(ParameterError, match=r"^ToolCorrectness\.expected_tools\[1\]: must be a string, got 2$"):
        ToolCorrectness(["a", 2])  # type: ignore[list-item]
    with pytest.raises(ParameterError, match=r"^ContainsEvaluator\.any_of: must be a list of strings, got 'x'$"):
        ContainsEvaluator(any_of="x")  # type: ignore[arg-type]


def test_tuples_are_accepted_where_lists_are_annotated() -> None:
    assert TrajectoryMatch(("a", "b")).expected_trajectory == ("a", "b")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: MaxToolCalls(max_call=3), "MaxToolCalls.max_call: unknown parameter (did you mean 'max_calls'?)"),
        (
            lambda: ArgumentCorrectness("t", {}, match_mdoe="exact"),
            "ArgumentCorrectness.match_mdoe: unknown parameter (did you mean 'match_mode'?)",
        ),
        (
            lambda: ToolCallArgsEvaluator("t", {}, zzz=1),
            "ToolCallArgsEvaluator.zzz: unknown parameter; parameters: "
            "tool, args, mode, evaluation_name, recursive, key_modes, ignore_keys, occurrence",
        ),
        (lambda: JudgeConfig(rubrc="x"), "JudgeConfig.rubrc: unknown parameter (did you mean 'rubric'?)"),
        (lambda: ToolCallArgsConfig("t", arg={}), "ToolCallArgsConfig.arg: unknown parameter (did you mean 'args'?)"),
        (lambda: tb.MaxToolCalls(max_call=3), "MaxToolCalls.max_call: unknown parameter (did you mean 'max_calls'?)"),
        (lambda: ToolCorrectness(), "ToolCorrectness: missing required parameter(s) ['expected_tools']"),
        (
            lambda: ToolCorrectness(allow_extra=True),
            "ToolCorrectness: missing required parameter(s) ['expected_tools']",
        ),
        (lambda: MaxToolCalls(1, True, None, 4), "MaxToolCalls: takes 3 positional argument(s), got 4"),
    ],  # fmt: skip
)
def test_misspelt_and_missing_keywords_are_named_in_python(make: object, message: str | None) -> None:
    with pytest.raises(TypeError) as e:
        make()  # type: ignore[operator]
    if message is not None:
        assert str(e.value) == message


def test_expect_names_unknown_fields_and_the_closest_valid_one() -> None:
    with pytest.raises(ExpectError) as e:
        Expect(judgee={"rubric": "x"})  # type: ignore[call-arg]
    assert str(e.value).startswith(
        "judgee: unknown field 'judgee'. Did you mean 'judge'? Valid fields: ['evaluators', "
    )


def test_evaluators_survive_copy_and_pickle() -> None:
    ev = ArgumentCorrectness("search", {"q": "x"}, agent="a")
    assert copy.deepcopy(ev) == ev == pickle.loads(pickle.dumps(ev))


def _yaml_error(tmp_path: Path, expect: str) -> str:
    path = tmp_path / "t.yaml"
    path.write_text(f"id: t\nturns:\n  - user: hi\n    expect:\n{expect}")
    with pytest.raises(TranscriptError) as e:
        load_transcript(path)
    message, reference = str(e.value).split("\n")  # the problem, then the schema of valid files
    assert reference == f"Schema reference: {SCHEMA_FILE}" and SCHEMA_FILE.is_file()
    return message.removeprefix(f"{path}:")


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"MaxToolCalls": "3"}, "MaxToolCalls.max_calls: must be an integer, got '3'"),
        ({"MaxToolCalls": -1}, "MaxToolCalls.max_calls: must be an integer >= 0, got -1"),
        (
            {"TrajectoryMatch": {"expected_trajectory": ["a"], "threshold": 2}},
            "TrajectoryMatch.threshold: must be between 0 and 1, got 2",
        ),
        (
            {"ToolCorrectness": {"expected_tool": ["a"]}},
            "ToolCorrectness.expected_tool: unknown parameter (did you mean 'expected_tools'?)",
        ),
        ({"JudgeEvaluator": {"rubric": "r", "retries": -1}}, "JudgeEvaluator.retries: must be an integer >= 0, got -1"),
    ],  # fmt: skip
)
def test_the_same_bad_value_reads_the_same_from_python_a_spec_a_transcript_and_the_bridge(
    tmp_path: Path, item: dict[str, object], message: str
) -> None:
    [(name, value)] = item.items()
    kwargs = value if isinstance(value, dict) else None
    cls, bridge = getattr(__import__("tracegrade.evaluators", fromlist=[name]), name), getattr(tb, name)
    for make in (cls, bridge):
        with pytest.raises((TypeError, ValueError)) as python:
            make(**kwargs) if kwargs is not None else make(value)
        assert str(python.value) == message
    with pytest.raises(SpecError) as spec:
        build_evaluators([item])
    assert str(spec.value) == f"evaluators[0]: {message}"
    import yaml

    entry = yaml.safe_dump([item], default_flow_style=True).strip()
    assert _yaml_error(tmp_path, f"      evaluators: {entry}\n") == f"5: turns[0].expect.evaluators[0]: {message}"


@pytest.mark.parametrize(
    ("expect", "field", "problem"),
    [
        ({"max_tool_calls": -1}, "max_tool_calls", "must be an integer >= 0, got -1"),
        ({"max_tool_calls": "3"}, "max_tool_calls", "must be an integer or None, got '3'"),
        ({"reply_contains_any": "ok"}, "reply_contains_any", "must be a list of strings, got 'ok'"),
        (
            {"reply_matches_any": ["ok", "("]},
            "reply_matches_any[1]",
            "Invalid regex pattern '(': missing ), unterminated subpattern at position 0",
        ),
        (
            {"trajectory": {"expected_trajectory": ["a"], "threshold": 1.5}},
            "trajectory.threshold",
            "must be between 0 and 1, got 1.5",
        ),
        ({"judge": {"rubric": "r", "timeout": 0}}, "judge.timeout", "must be a number of seconds > 0, got 0"),
        (
            {"tool_calls_args": [{"tool": "t", "args": {}, "occurrence": -1}]},
            "tool_calls_args[0].occurrence",
            "must be 'first', 'last', 'any' or a 0-based index >= 0, got -1",
        ),
    ],  # fmt: skip
)
def test_expect_fields_read_the_same_from_python_and_yaml(
    tmp_path: Path, expect: dict[str, object], field: str, problem: str
) -> None:
    with pytest.raises(ExpectError) as python:
        Expect(**expect)  # type: ignore[arg-type]
    assert (python.value.field, python.value.message) == (field, problem)
    import yaml

    block = "".join(f"      {line}\n" for line in yaml.safe_dump(expect, default_flow_style=None).splitlines())
    in_yaml = problem.replace("Invalid regex", "invalid regex")  # pytest-agent-eval's loader's wording
    assert _yaml_error(tmp_path, block).split(": ", 1)[1] == f"turns[0].expect.{field}: {in_yaml}"


# --- bug: Expect(foo=1) raised a ValueError where Python (and pytest-agent-eval) raise TypeError ---


def test_an_unknown_expect_keyword_is_a_type_error_naming_the_closest_field() -> None:
    with pytest.raises(TypeError) as e:
        Expect(reply_contains=["x"])  # type: ignore[call-arg]
    assert isinstance(e.value, ExpectError) and isinstance(e.value, ValueError)  # `except ValueError` still works
    assert str(e.value).startswith("reply_contains: unknown field 'reply_contains'. Did you mean 'reply_contains_")
    with pytest.raises(TypeError, match=r"takes 14 positional argument\(s\), got 15"):
        Expect(*[None] * 15)
