"""The evaluators' options (matching modes, step arguments, argument modes, scoping, health checks)
from every surface: pytest `Expect`, YAML transcripts and `tracegrade grade` specs, on real Pydantic
AI runs; errors name the place."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from _agents import scripted_agent
from tracegrade import Expect, ToolCallArgsConfig, Turn, grade
from tracegrade.evaluators import TrajectoryMatch
from tracegrade.evaluators.health import MaxDuration, MaxTokens, NoErrorSpans, NoToolLoops
from tracegrade.pytest_plugin import EvalSession
from tracegrade.pytest_plugin.yaml_collect import TranscriptError, load_transcript
from tracegrade.spec import SpecError, load_spec

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "dialects" / "genai.json"
STEPS: list[Any] = [
    ("search", {"q": "x", "page": 1}),
    [("fetch", {"id": 7, "opts": {"deep": True, "lang": "en"}}), ("log", {"msg": "hi"})],  # one response
    ("fetch", {"id": 8, "opts": {"deep": False}}),
]


def call_agent() -> Any:
    agent = scripted_agent(STEPS, name="shop")

    async def call(history: list[dict[str, Any]]) -> str:
        return (await agent.run(history[-1]["content"])).output

    return call


def outcomes(expect: Expect, config: dict[str, Any] | None = None) -> list[tuple[str, str, str]]:
    result = EvalSession(config=config).run_sync(call_agent(), [Turn("go", expect=expect)])
    [turn] = result.runs[0].turn_results
    return [(r.name, r.outcome, r.reasoning) for r in turn.eval_results]


def test_expect_takes_every_mode() -> None:
    expect = Expect(
        trajectory=TrajectoryMatch(
            [{"tool": "search", "args": {"q": "x"}}, {"tool": "audit", "optional": True}, "log", "fetch", "fetch"],
            order="strict",
            agent="shop",
        ),
        tool_calls_args=[
            ToolCallArgsConfig("fetch", {"id": 7, "opts": {"deep": True}}, recursive=True, occurrence="first"),
            ToolCallArgsConfig("fetch", {"id": 8, "opts": {"deep": False}, "extra": 1}, mode="superset", occurrence="last"),
            ToolCallArgsConfig("search", {"q": "x", "page": 2}, mode="exact", ignore_keys=["page"]),
            ToolCallArgsConfig("fetch", {"id": 0}, key_modes={"id": lambda v: v > 7}),
            ToolCallArgsConfig("fetch", {"id": 7}, occurrence=1),
        ],
        evaluators=[NoToolLoops(max_repeats=1), MaxTokens(max_total=100_000), MaxDuration(seconds=30, tool="fetch"),
                    NoErrorSpans()],
    )  # fmt: skip
    got = outcomes(expect)
    assert [o for _, o, _ in got] == ["passed"] * 8 + ["failed", "passed"], got  # evaluators, args, trajectory
    assert got[-1][0] == "TrajectoryMatch" and got[8][2].startswith(
        "Tool 'fetch' argument mismatch (subset mode, call 1): expected {'id': 7}, observed {'id': 8, "
    )


def test_expect_steps_fail_with_expected_vs_actual_and_wrong_modes_name_the_field() -> None:
    expect = Expect(trajectory={"expected_trajectory": [{"tool": "search", "args": {"q": "y"}}], "order": "superset"})
    [(name, outcome, reason)] = outcomes(expect)
    assert (name, outcome) == ("TrajectoryMatch", "failed") and "expected: [\"search(q='y')\"]" in reason
    with pytest.raises(ValueError, match=r"ToolCallArgsConfig\.mode: must be one of"):
        Expect(tool_calls_args=[ToolCallArgsConfig("fetch", {"id": 7}, mode="fuzzy")])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"ToolCallArgsConfig\.occurrence: must be"):
        Expect(tool_calls_args=[ToolCallArgsConfig("fetch", {"id": 7}, occurrence=-1)])


TRANSCRIPT = """\
id: vocabulary
turns:
  - user: go
    expect:
      trajectory:
        expected_trajectory:
          - {tool: search, args: {q: x}}
          - {tool: audit, optional: true}
          - log
          - fetch
          - fetch
        order: strict
        agent: shop
        subtree: {name_contains: invoke_agent}
      tool_calls_args:
        - {tool: fetch, args: {id: 7, opts: {deep: true}}, recursive: true, occurrence: first}
        - {tool: fetch, args: {id: 8, opts: {deep: false}, extra: 1}, mode: superset, occurrence: last}
        - {tool: search, args: {q: x, page: 2}, mode: exact, ignore_keys: [page]}
        - {tool: fetch, args: {opts: {}}, key_modes: {opts: ignore}}
      evaluators:
        - NoToolLoops: {max_repeats: 1}
        - MaxTokens: {max_total: 100000}
        - MaxDuration: {seconds: 30, tool: fetch, percentile: 90}
        - NoErrorSpans
        - TrajectoryMatch: {expected_trajectory: [fetch, search], order: subset}
"""


def test_yaml_transcripts_take_every_mode(tmp_path: Path) -> None:
    path = tmp_path / "vocabulary.yaml"
    path.write_text(TRANSCRIPT)
    [turn] = load_transcript(path).turns
    result = EvalSession().run_sync(call_agent(), [turn])
    got = [(r.name, r.outcome, r.reasoning) for r in result.runs[0].turn_results[0].eval_results]
    names = [n for n, _, _ in got]
    assert names[:5] == ["NoToolLoops", "MaxTokens", "MaxDuration", "NoErrorSpans", "TrajectoryMatch"]
    assert [o for _, o, _ in got] == ["passed"] * 4 + ["failed"] + ["passed"] * 5, got
    assert "log" in got[4][2]  # subset: 'log' was called but is not in the expected list


@pytest.mark.parametrize(
    ("patch", "replacement", "message"),
    [
        ("{tool: audit, optional: true}", "{tool: audit, optinal: true}",
         "bad.yaml:8: turns[0].expect.trajectory.expected_trajectory[1]: a step is a tool name or "
         "{tool, args?, optional?}; unknown key 'optinal' (did you mean 'optional'?)"),
        ("- log\n", "- 3\n", "bad.yaml:9: turns[0].expect.trajectory.expected_trajectory[2]: must be a string or a dict, "
                              "got 3"),
        ("order: strict", "order: strictly", "bad.yaml:12: turns[0].expect.trajectory.order: must be one of ('exact', "
         "'in_order', 'any_order', 'strict', 'unordered', 'subset', 'superset'), got 'strictly'"),
        ("subtree: {name_contains: invoke_agent}", "subtree: {name_contain: x}",
         "turns[0].expect.trajectory: subtree: unknown SpanQuery key 'name_contain' (did you mean 'name_contains'?)"),
        ("mode: superset", "mode: supreset", "bad.yaml:17: turns[0].expect.tool_calls_args[1].mode: must be one of "
         "('exact', 'subset', 'superset', 'ignore'), got 'supreset'"),
        ("key_modes: {opts: ignore}", "key_modes: {opts: ignored}",
         "bad.yaml:19: turns[0].expect.tool_calls_args[3].key_modes.opts: must be a mode in ('exact', 'subset', "
         "'superset', 'ignore') or a callable, got 'ignored'"),
        ("occurrence: first", "occurrence: -1", "bad.yaml:16: turns[0].expect.tool_calls_args[0].occurrence: must be "
         "'first', 'last', 'any' or a 0-based index >= 0, got -1"),
    ],
)  # fmt: skip
def test_yaml_vocabulary_errors_name_the_place(tmp_path: Path, patch: str, replacement: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    assert patch in TRANSCRIPT
    path.write_text(TRANSCRIPT.replace(patch, replacement))
    with pytest.raises(TranscriptError) as e:
        load_transcript(path)
    assert message in str(e.value)


SPEC = """\
evaluators:
  - TrajectoryMatch:
      expected_trajectory: [{tool: search, args: {q: "order #1234"}}, {tool: log, optional: true}, get_order]
      order: strict
  - TrajectoryMatch: {expected_trajectory: [search, search, get_order], order: exact, include_failed: true}
  - ArgumentCorrectness: {tool_name: search, expected_arguments: {q: "?"}, key_modes: {q: ignore}}
  - ArgumentCorrectness: {tool_name: search, expected_arguments: {q: order 1234}, occurrence: any, include_failed: true}
  - ToolCorrectness: {expected_tools: [search, get_order], agent: support}
  - MaxDuration: {seconds: 0.001, tool: search, percentile: 50}
  - MaxTokens: {max_total: 710}
  - NoToolLoops: {max_repeats: 1, window: 3}
  - NoErrorSpans: {}
"""


def test_grade_specs_take_every_mode(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    results = grade(FIXTURE, load_spec(spec))
    assert [r.outcome for r in results] == ["passed"] * 8 + ["failed"], [(r.name, r.reasoning) for r in results]
    spec.write_text(SPEC.replace("order: strict", "order: strictly"))
    with pytest.raises(SpecError, match=r"evaluators\[0\]: TrajectoryMatch\.order: must be one of"):
        load_spec(spec)


def test_the_yaml_example_in_the_docs_runs(tmp_path: Path) -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "vocabulary.md").read_text()
    [block] = re.findall(r"```yaml\n(.*?)```", doc, re.S)
    (tmp_path / "example.yaml").write_text(block)
    transcript = load_transcript(tmp_path / "example.yaml")
    result = EvalSession().run_sync(call_agent(), transcript.turns)
    got = [(r.name, r.outcome, r.reasoning) for r in result.runs[0].turn_results[0].eval_results]
    assert len(got) == 5 and all(o == "passed" for _, o, _ in got), got
