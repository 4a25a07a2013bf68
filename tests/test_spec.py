"""Grading specs: pydantic-evals' evaluator-spec syntax, with errors that name the item."""

from __future__ import annotations

from pathlib import Path

import pytest

from _agents import run_captured
from faults._yaml_bombs import spec_bombs
from tracegrade import _yaml, grade
from tracegrade.evaluators import HasMatchingSpan, MaxToolCalls, ToolCorrectness, TrajectoryMatch
from tracegrade.spec import SpecError, build_evaluators, load_spec


def test_three_item_forms() -> None:
    evs = build_evaluators(
        [
            {"MaxToolCalls": 5},
            {"ToolCorrectness": {"expected_tools": ["search", "answer"], "allow_extra": True}},
            {"HasMatchingSpan": {"query": {"name_contains": "search"}}},
        ]
    )
    assert evs == [
        MaxToolCalls(5),
        ToolCorrectness(["search", "answer"], allow_extra=True),
        HasMatchingSpan({"name_contains": "search"}),
    ]


def test_spec_file_grades_like_the_python_api(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "evaluators:\n"
        "  - ToolCorrectness: {expected_tools: [search, answer]}\n"
        "  - TrajectoryMatch: {expected_trajectory: [search, answer], order: exact}\n"
        "  - MaxToolCalls: 1\n"
    )
    cap = run_captured([("search", {"q": "x"}), ("answer", {})])
    from_spec = grade(cap, load_spec(spec))
    from_python = grade(cap, [ToolCorrectness(["search", "answer"]), TrajectoryMatch(["search", "answer"], order="exact"),
                              MaxToolCalls(1)])  # fmt: skip
    assert [(r.outcome, r.reasoning) for r in from_spec] == [(r.outcome, r.reasoning) for r in from_python]
    assert [r.passed for r in from_spec] == [True, True, False]


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (
            [{"ToolCorectness": {}}],
            "evaluators[0]: unknown evaluator 'ToolCorectness' (did you mean 'ToolCorrectness'?)",
        ),
        (
            [{"MaxToolCalls": 1}, {"ToolCorrectness": {"expected_tool": ["a"]}}],
            "evaluators[1]: ToolCorrectness.expected_tool: unknown parameter (did you mean 'expected_tools'?)",
        ),
        (
            [{"TrajectoryMatch": {"expected_trajectory": ["a"], "order": "bogus"}}],
            "evaluators[0]: TrajectoryMatch.order: must be one of ('exact', 'in_order', 'any_order'",
        ),
        ([{"MaxToolCalls": "five"}], "evaluators[0]: MaxToolCalls.max_calls: must be an integer, got 'five'"),
        (["ToolCorrectness"], "evaluators[0]: ToolCorrectness: missing required parameter(s) ['expected_tools']"),
        ([{"HasMatchingSpan": {"query": {"name_equal": "x"}}}], "did you mean 'name_equals'?"),
        ([["MaxToolCalls"]], "evaluators[0]: expected `Name`"),
        ({"MaxToolCalls": 1}, "evaluators: expected a list"),
    ],  # fmt: skip
)
def test_errors_name_the_item_and_the_closest_name(items: object, message: str) -> None:
    with pytest.raises(SpecError) as e:
        build_evaluators(items)
    assert message in str(e.value)


def test_spec_file_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("evaluator:\n  - MaxToolCalls: 1\n")
    with pytest.raises(SpecError, match=r"bad\.yaml: expected a mapping with a top-level `evaluators:` list"):
        load_spec(bad)
    bad.write_text("evaluators: [MaxToolCalls: 1]\nextra: 1\n")
    with pytest.raises(SpecError, match=r"bad\.yaml: unknown top-level key 'extra'"):
        load_spec(bad)
    bad.write_text("evaluators: [\n")
    with pytest.raises(SpecError, match=r"bad\.yaml:2: invalid YAML: while parsing a flow node"):
        load_spec(bad)


# --- hostile YAML: the spec loader is bounded (tracegrade._yaml) ------------------------------------------


@pytest.mark.parametrize("placement", sorted(spec_bombs()))
def test_an_alias_bomb_is_refused_naming_the_file_and_the_line_of_the_alias(tmp_path: Path, placement: str) -> None:
    spec = tmp_path / "bomb.yaml"
    text = spec_bombs(levels=6)[placement]  # 9**6 nodes: today's loader builds them (and then validates them)
    spec.write_text(text)
    with pytest.raises(SpecError) as e:
        load_spec(spec)
    message = str(e.value)
    assert message.startswith(f"{spec}:"), message
    line = int(message[len(f"{spec}:") :].split(":")[0])
    alias = message.split("alias ")[1].split()[0]
    assert alias in text.splitlines()[line - 1]  # the line holds the alias that is blamed
    assert f"expand past {_yaml.MAX_ALIAS_NODES} nodes through aliases (refused: a YAML alias bomb)" in message


def test_anchors_and_merge_keys_within_the_bound_still_work(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "evaluators:\n"
        "  - ToolCorrectness: &tools {expected_tools: &names [search, answer]}\n"
        "  - TrajectoryMatch: {expected_trajectory: *names, order: exact}\n"
        "  - ToolCorrectness: {<<: *tools, allow_extra: true}\n"
    )
    assert load_spec(spec) == [
        ToolCorrectness(["search", "answer"]),
        TrajectoryMatch(["search", "answer"], order="exact"),
        ToolCorrectness(["search", "answer"], allow_extra=True),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("evaluators:\n  - &a [MaxToolCalls, *a]\n", r"x\.yaml:2: alias \*a refers to a collection that contains it"),
        ("evaluators:\n  - " + "[" * 5000 + "]" * 5000 + "\n", r"x\.yaml:2: collections nested deeper than 100 levels"),
        ("evaluators:\n  - MaxToolCalls: " + "9" * 5000 + "\n", r"x\.yaml:2: invalid YAML: cannot read '9999.*digits"),
        ("evaluators:\n  - MaxToolCalls: 2001-13-01\n", r"x\.yaml:2: invalid YAML: cannot read '2001-13-01' \(month"),
        (
            "evaluators:\n  - !!python/object/apply:os.system [echo hi]\n",
            r"x\.yaml:2: invalid YAML: could not determine a constructor for the tag 'tag:yaml.org,2002:python/object",
        ),
    ],
    ids=["recursive-alias", "deep-nesting", "5000-digit-int", "bad-date", "python-tag"],
)
def test_hostile_scalars_tags_and_shapes_are_spec_errors_with_a_line(tmp_path: Path, text: str, message: str) -> None:
    spec = tmp_path / "x.yaml"
    spec.write_text(text)
    with pytest.raises(SpecError, match=message):
        load_spec(spec)


def test_a_spec_with_an_empty_evaluators_list_is_an_error_not_a_pass(tmp_path: Path) -> None:
    from tracegrade.cli import main
    from tracegrade.errors import SpecError

    spec = tmp_path / "empty.yaml"
    spec.write_text("evaluators: []\n")
    with pytest.raises(SpecError, match=r"empty\.yaml: the `evaluators:` list is empty: nothing would be checked"):
        load_spec(spec)
    trace = Path(__file__).resolve().parent.parent / "fixtures" / "dialects" / "genai.json"
    assert main(["grade", str(trace), "--spec", str(spec)]) == 2
