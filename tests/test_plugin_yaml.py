"""YAML transcripts: collection from `yaml_dirs`, execution against `llm_eval_agent`, and one test
per class of validation error (each naming file, line, path, bad value and closest field)."""

from __future__ import annotations

from pathlib import Path

import pytest

from _plugin_helpers import PYDANTIC_AGENT, assert_in_order, clean_agent_eval_env, src  # noqa: F401
from faults._yaml_bombs import transcript_bombs
from tracegrade import _yaml
from tracegrade.evaluators import ContainsEvaluator, HasMatchingSpan, JudgeEvaluator, ToolCorrectness, TrajectoryMatch
from tracegrade.pytest_plugin.yaml_collect import SCHEMA_FILE, TranscriptError, load_transcript

CONFTEST = src(
    """
    import pytest
    from agents import make_agent

    agent = make_agent(reply="Booked! Reference BK-1234 for 10am tomorrow.")

    @pytest.fixture
    def llm_eval_agent():
        async def call(history):
            assert history[-1]["role"] == "user"
            return (await agent.run(history[-1]["content"])).output
        return call
    """
)

BOOKING = src(
    """
    id: booking_confirmation
    threshold: 1.0
    runs: 2
    tags: [gate:booking, smoke]
    turns:
      - user: |
          search {"q": "tables"}
          book {"time": "10am", "date": "tomorrow"}
        expect:
          reply_contains_any: [booked, confirmed]
          reply_contains_all: [tomorrow, "10"]
          reply_matches_any: ['BK-\\d+']
          reply_matches_all: ['\\d{1,2}(am|pm)']
          tool_calls_include: [search, book]
          tool_calls_exclude: [cancel]
          tool_calls_ordered: true
          tool_calls_args:
            - tool: book
              args: {time: 10am}
            - tool: book
              args: {time: 10am, date: tomorrow}
              mode: exact
          trajectory: [search, book]
          max_tool_calls: 2
          max_model_requests: 3
          spans:
            - name_contains: book
          evaluators:
            - ToolCorrectness: {expected_tools: [search, book]}
            - MaxToolCalls: 5
      - user: 'fetch {"id": 3}'
        expect:
          trajectory: {expected_trajectory: [fetch, search], order: in_order, threshold: 0.6}
    """
)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyprojecttoml('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    pytester.makepyfile(agents=PYDANTIC_AGENT)
    pytester.makeconftest(CONFTEST)
    pytester.syspathinsert()
    (pytester.path / "evals").mkdir()
    return pytester


def test_yaml_transcripts_are_collected_and_run_against_llm_eval_agent(project: pytest.Pytester) -> None:
    (project.path / "evals" / "booking.yaml").write_text(BOOKING)
    (project.path / "elsewhere.yaml").write_text("not: a transcript\n")  # outside yaml_dirs: ignored
    result = project.runpytest("--agent-eval-live", "-rA")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["PASSED evals/booking.yaml::booking_confirmation - score 1.00 (2/2 runs passed*"])


def test_yaml_transcripts_are_skipped_unless_live(project: pytest.Pytester) -> None:
    (project.path / "evals" / "booking.yaml").write_text(BOOKING)
    result = project.runpytest()
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["1 eval test(s) skipped — live mode is off.*"])


def test_yaml_tags_select_with_k_and_failures_are_reported(project: pytest.Pytester) -> None:
    (project.path / "evals" / "booking.yaml").write_text(BOOKING)
    (project.path / "evals" / "nested").mkdir()
    (project.path / "evals" / "nested" / "refund.yml").write_text(
        src(
            """
            id: refund
            turns:
              - user: 'search {"q": "refund"}'
                expect:
                  tool_calls_include: [refund]
                  judge: {rubric: The reply must explain the refund policy., model: test}
            """
        )
    )
    result = project.runpytest("--agent-eval-live", "-k", "refund")
    result.assert_outcomes(failed=1, deselected=1)
    assert_in_order(
        result.stdout.str(),
        "FAILED evals/nested/refund.yml::refund - score 0.00 (0/1 runs passed, threshold 0.80)",
        "ToolCallEvaluator [failed]: Expected tool 'refund' not in ['search']",
        "JudgeEvaluator [failed]: a",  # TestModel's verdict: passed false, reasoning "a"
        "trajectory (spans): search(q='refund')",
    )


def test_missing_llm_eval_agent_fixture_explains_what_to_define(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.agent_eval]\nyaml_dirs = ["evals"]\nlive = true\n')
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "t.yaml").write_text("id: t\nturns:\n  - user: hi\n")
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*YAML transcripts need an `llm_eval_agent` fixture*"])


def test_validation_errors_are_collection_errors_with_the_message(project: pytest.Pytester) -> None:
    (project.path / "evals" / "bad.yaml").write_text("id: x\nturns:\n  - user: hi\n    expect:\n      judgee: {}\n")
    result = project.runpytest("--agent-eval-live")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["*bad.yaml:5: turns[[]0[]].expect.judgee: unknown field 'judgee'. Did you mean 'judge'? Valid fields: *"]
    )


# --- loading on its own ---------------------------------------------------------------------------------


def load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "t.yaml"
    path.write_text(src(text))
    return load_transcript(path)


def test_every_expect_field_becomes_its_evaluator(tmp_path: Path) -> None:
    transcript = load(tmp_path, BOOKING)
    [first, second] = transcript.turns  # type: ignore[attr-defined]
    built = first.expect.build()
    kinds = [type(e).__name__ for e in built]
    assert kinds == [
        "ToolCorrectness", "MaxToolCalls", "ToolCallEvaluator", "ContainsEvaluator", "ToolCallArgsEvaluator",
        "ToolCallArgsEvaluator", "TrajectoryMatch", "MaxToolCalls", "MaxModelRequests", "HasMatchingSpan",
    ]  # fmt: skip
    assert isinstance(built[0], ToolCorrectness) and built[0].expected_tools == ["search", "book"]
    assert isinstance(built[3], ContainsEvaluator) and built[3].matches_any == [r"BK-\d+"]
    assert isinstance(built[9], HasMatchingSpan) and built[9].query == {"name_contains": "book"}
    [traj] = second.expect.build()
    assert isinstance(traj, TrajectoryMatch) and (traj.order, traj.threshold) == ("in_order", 0.6)
    assert (transcript.threshold, transcript.runs, transcript.tags) == (1.0, 2, ["gate:booking", "smoke"])  # type: ignore[attr-defined]


def test_judge_and_argument_judge_fields(tmp_path: Path) -> None:
    transcript = load(
        tmp_path,
        """
        id: j
        turns:
          - user: hi
            expect:
              judge: {rubric: Be polite., model: "openai:gpt-4o", retries: 0, timeout: 5}
              tool_calls_args:
                - tool: book
                  judge: {rubric: Within business hours.}
        """,
    )
    judge, args_judge = transcript.turns[0].expect.build()  # type: ignore[attr-defined]
    assert isinstance(judge, JudgeEvaluator)
    assert (judge.rubric, judge.model, judge.retries, judge.timeout) == ("Be polite.", "openai:gpt-4o", 0, 5)
    assert (type(args_judge).__name__, args_judge.tool, args_judge.model) == (
        "ToolCallArgsJudgeEvaluator",
        "book",
        None,
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id: x\nturns: [\n", "t.yaml:3: invalid YAML at line 3:"),
        ("- just\n- a list\n", "t.yaml:1: a transcript must be a YAML mapping with `id` and `turns`, got list"),
        ("turns:\n  - user: hi\n", "t.yaml:1: id: missing required field 'id'"),
        ("id: x\nturns:\n  - expect: {}\n", "t.yaml:3: turns[0].user: missing required field 'user'"),
        (
            "id: x\nturns: []\n",
            "t.yaml:2: turns: must define at least one turn (an empty transcript would test nothing)",
        ),
        (
            "id: x\nthresold: 0.5\nturns:\n  - user: hi\n",
            "t.yaml:2: thresold: unknown field 'thresold'. Did you mean 'threshold'? "
            "Valid fields: ['id', 'runs', 'tags', 'threshold', 'turns']",
        ),
        (
            "id: x\nturns:\n  - user: hi\n  - user: there\n    expect:\n      judgee: {rubric: r}\n",
            "t.yaml:6: turns[1].expect.judgee: unknown field 'judgee'. Did you mean 'judge'? Valid fields: ['evaluators', ",
        ),
        (
            "id: x\nturns:\n  - user: hi\n  - user: there\n    expect:\n      judge: be nice\n",
            "t.yaml:6: turns[1].expect.judge: must be a JudgeConfig or a dict or None, got 'be nice'",
        ),
        (
            "id: x\nthreshold: 1.5\nturns:\n  - user: hi\n",
            "t.yaml:2: threshold: must be a number between 0 and 1, got 1.5",
        ),
        (
            "id: x\nruns: 0\nturns:\n  - user: hi\n",
            "t.yaml:2: runs: must be an integer >= 1, got 0",
        ),
        (
            "id: x\nturns:\n  - user: hi\n    expect:\n      reply_contains_any: confirmed\n",
            "t.yaml:5: turns[0].expect.reply_contains_any: must be a list of strings, got 'confirmed'",
        ),
        (
            "id: x\nturns:\n  - user: hi\n    expect:\n      reply_matches_any: ['ok', '(']\n",
            "t.yaml:5: turns[0].expect.reply_matches_any[1]: invalid regex pattern '(': missing ), unterminated subpattern",
        ),
        (
            "id: x\nturns:\n  - user: hi\n    expect:\n      tool_calls_args:\n        - tool: book\n",
            "t.yaml:6: turns[0].expect.tool_calls_args[0]: ToolCallArgsConfig(tool='book') needs 'args' (a deterministic check), 'judge' (an LLM-judged rubric) or both; got neither",
        ),
        (
            "id: x\nturns:\n  - user: hi\n    expect:\n      tool_calls_args:\n        - {tool: book, args: {}, mode: fuzzy}\n",
            "t.yaml:6: turns[0].expect.tool_calls_args[0].mode: must be one of ('exact', 'subset', 'superset', 'ignore'), got 'fuzzy'",
        ),
        (
            "id: x\nturns:\n  - user: hi\n    expect:\n      trajectory: {expected_trajectory: [a], order: sorted}\n",
            "t.yaml:5: turns[0].expect.trajectory.order: must be one of ('exact', 'in_order', 'any_order', 'strict', 'unordered', 'subset', 'superset'), got 'sorted'",
        ),
        (
            "id: x\nturns:\n  - user: hi\n    expect:\n      max_tool_calls: -1\n",
            "t.yaml:5: turns[0].expect.max_tool_calls: must be an integer >= 0, got -1",
        ),
        (
            "id: x\nturns:\n  - user: hi\n    expect:\n      spans:\n        - nme_equals: x\n",
            "t.yaml:6: turns[0].expect.spans[0]: unknown SpanQuery key 'nme_equals' (did you mean 'name_equals'?)",
        ),
        (
            "id: x\nturns:\n  - user: hi\n    expect:\n      spans:\n        - not_: {nme_equals: x}\n",
            "t.yaml:6: turns[0].expect.spans[0].not_: unknown SpanQuery key 'nme_equals' (did you mean 'name_equals'?)",
        ),
        (
            "id: x\nturns:\n  - user: hi\n    expect:\n      evaluators:\n        - ToolCorectness: {expected_tools: [a]}\n",
            "t.yaml:6: turns[0].expect.evaluators[0]: unknown evaluator 'ToolCorectness' (did you mean 'ToolCorrectness'?)",
        ),
        (
            "id: x\nturns:\n  - user: hi\n    expect:\n      evaluators:\n        - ToolCorrectness: {expected_tool: [a]}\n",
            "t.yaml:6: turns[0].expect.evaluators[0]: ToolCorrectness.expected_tool: unknown parameter "
            "(did you mean 'expected_tools'?)",
        ),
    ],
    ids=[
        "yaml-syntax",
        "not-a-mapping",
        "missing-id",
        "missing-user",
        "no-turns",
        "unknown-top-level-field",
        "unknown-expect-field",
        "wrong-type",
        "threshold-range",
        "runs-range",
        "str-for-list",
        "bad-regex",
        "args-config-needs-args-or-judge",
        "bad-mode",
        "bad-trajectory-order",
        "negative-budget",
        "unknown-span-query-key",
        "nested-span-query-key",
        "unknown-evaluator",
        "unknown-evaluator-parameter",
    ],  # fmt: skip
)
def test_validation_error(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(TranscriptError) as excinfo:
        load(tmp_path, text)
    message = str(excinfo.value)
    assert message.startswith(str(tmp_path / "t.yaml")), message
    assert expected in message, message


# --- hostile YAML: the transcript loader is bounded (tracegrade._yaml) ------------------------------------


@pytest.mark.parametrize("placement", sorted(transcript_bombs()))
def test_an_alias_bomb_is_refused_naming_the_file_and_the_line_of_the_alias(tmp_path: Path, placement: str) -> None:
    text = transcript_bombs(levels=6)[placement]  # 9**6 nodes: today's loader builds them (and validates them)
    with pytest.raises(TranscriptError) as excinfo:
        load(tmp_path, text)
    error = excinfo.value
    alias = error.message.split("alias ")[1].split()[0]
    assert error.line is not None and alias in text.splitlines()[error.line - 1]
    assert str(error) == (
        f"{tmp_path / 't.yaml'}:{error.line}: alias {alias} makes the document expand past "
        f"{_yaml.MAX_ALIAS_NODES} nodes through aliases (refused: a YAML alias bomb)"
    )


def test_an_alias_bomb_is_a_collection_error_with_the_message(project: pytest.Pytester) -> None:
    (project.path / "evals" / "bomb.yaml").write_text(transcript_bombs(levels=6)["user"])
    result = project.runpytest("--agent-eval-live")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*bomb.yaml:2: alias [*]l4 makes the document expand past 100000 nodes*alias bomb)"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "id: t\nturns: &a [{user: hi, expect: {spans: *a}}]\n",
            "t.yaml:2: alias *a refers to a collection that contains it",
        ),
        (
            "id: t\nturns:\n  - user: " + "[" * 5000 + "]" * 5000 + "\n",
            "t.yaml:3: collections nested deeper than 100 levels",
        ),
        (
            "id: t\nruns: " + "1" * 5000 + "\nturns: [{user: hi}]\n",
            "t.yaml:2: invalid YAML at line 2: cannot read '1111",
        ),
        (
            "id: !!python/object/apply:os.system [echo hi]\nturns: [{user: hi}]\n",
            "t.yaml:1: invalid YAML at line 1: could not determine a constructor for the tag "
            "'tag:yaml.org,2002:python/object/apply:os.system'",
        ),
    ],
    ids=["recursive-alias", "deep-nesting", "5000-digit-int", "python-tag"],
)
def test_hostile_shapes_scalars_and_tags_are_transcript_errors(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(TranscriptError) as excinfo:
        load(tmp_path, text)
    assert str(excinfo.value).startswith(str(tmp_path / expected.split(":")[0]) + ":" + expected.split(":")[1])
    assert expected.split(":", 2)[2] in str(excinfo.value), str(excinfo.value)


def test_anchors_within_the_bound_still_work(tmp_path: Path) -> None:
    transcript = load(
        tmp_path,
        "id: t\nturns:\n  - user: hi\n    expect: &e {tool_calls_include: [search]}\n  - user: again\n    expect: *e\n",
    )
    assert [t.expect.tool_calls_include for t in transcript.turns] == [["search"], ["search"]]  # type: ignore[attr-defined]


def test_a_misspelt_key_is_reported_before_the_missing_field_it_explains(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("id: x\nturn:\n  - user: hi\n")
    with pytest.raises(TranscriptError) as e:
        load_transcript(str(path))  # a str path too, as pytest-agent-eval's load_transcript takes
    assert str(e.value) == (
        f"{path}:2: turn: unknown field 'turn'. Did you mean 'turns'? "
        "Valid fields: ['id', 'runs', 'tags', 'threshold', 'turns'] (and 1 more error)"
        f"\nSchema reference: {SCHEMA_FILE}"  # pytest-agent-eval's second line, naming the shipped schema
    )
