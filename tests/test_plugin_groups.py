"""`[tool.agent_eval.groups]` quality gates: parsing, membership and thresholds, `must_pass`, the
summary lines, the exit-code override (in one process and under xdist) and the group markers."""

from __future__ import annotations

import pytest

from _plugin_helpers import clean_agent_eval_env, src  # noqa: F401
from tracegrade.errors import ConfigError
from tracegrade.pytest_plugin.groups import (
    EvalOutcome,
    GroupConfig,
    build_group_markdown_lines,
    evaluate_groups,
    format_group_summary_lines,
    parse_groups,
)


def _outcome(identity: str, outcome: str = "passed", tags: list[str] | None = None, markers: list[str] | None = None):
    return EvalOutcome(identity, f"tests/evals/{identity}.yaml::{identity}", outcome, tags or [], markers or [])  # type: ignore[arg-type]


# --- parsing -----------------------------------------------------------------------------------------


def test_groups_parse_with_pytest_agent_evals_defaults() -> None:
    groups = parse_groups(
        {"booking": {"threshold": 0.9, "tags": ["gate:booking"], "must_pass": ["confirm"]}, "smoke": {"tags": ["s"]}}
    )
    assert groups[0] == GroupConfig("booking", 0.9, ["gate:booking"], [], ["confirm"])
    assert (groups[1].threshold, groups[1].pytest_markers, groups[1].must_pass) == (1.0, [], [])


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([1], "[tool.agent_eval.groups] in pyproject.toml must be a table of group tables, got list"),
        ({"g": 0.9}, "[tool.agent_eval.groups.g] in pyproject.toml must be a table, got float (0.9)"),
        (
            {"g": {"must_pas": ["x"]}},
            "[tool.agent_eval.groups.g] in pyproject.toml: unknown key 'must_pas' (did you mean 'must_pass'?); "
            "valid keys: threshold, tags, pytest_markers, must_pass",
        ),
        ({"g": {"threshold": True}}, "threshold must be a number between 0 and 1, got True"),
        ({"g": {"threshold": "0.9"}}, "threshold must be a number between 0 and 1, got '0.9'"),
        ({"g": {"threshold": 1.5}}, "threshold must be a number between 0 and 1, got 1.5"),
        ({"g": {"pytest_markers": "smoke"}}, "pytest_markers must be a list of strings, got 'smoke'"),
        ({"g": {"must_pass": [""]}}, "must_pass must be a list of strings, got ['']"),
    ],
)
def test_invalid_groups_are_config_errors_naming_group_and_key(raw: object, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_groups(raw, "pyproject.toml")
    assert message in str(info.value)


# --- evaluation --------------------------------------------------------------------------------------


def test_threshold_is_over_the_members_that_ran() -> None:
    outcomes = [
        _outcome("a", tags=["t"]),
        _outcome("b", "failed", tags=["t"]),
        _outcome("c", "skipped", tags=["t"]),
        _outcome("by_marker", markers=["smoke"]),
        _outcome("outsider", "failed"),
    ]
    (result,) = evaluate_groups([GroupConfig("g", 0.66, ["t"], ["smoke"])], outcomes)
    assert (result.total, result.passed_count, result.skipped_count) == (3, 2, 1)
    assert result.failing == ["b"] and result.failed_nodeids == ["tests/evals/b.yaml::b"]
    assert result.passed
    (strict,) = evaluate_groups([GroupConfig("g", 0.9, ["t"], ["smoke"])], outcomes)
    assert not strict.passed


def test_a_group_whose_members_were_all_skipped_or_absent_does_not_pass() -> None:
    (skipped,) = evaluate_groups([GroupConfig("g", tags=["t"])], [_outcome("s", "skipped", tags=["t"])])
    assert skipped.skipped and skipped.matched and not skipped.passed
    (empty,) = evaluate_groups([GroupConfig("g", tags=["t"])], [_outcome("x")])
    assert not empty.matched and not empty.passed


def test_must_pass_is_an_assertion_over_every_test_that_ran() -> None:
    group = GroupConfig("g", 0.5, ["t"], must_pass=["critical", "param", "absent"])
    outcomes = [
        _outcome("a", tags=["t"]),
        _outcome("critical", "failed"),  # not a member: still fails the group
        _outcome("param[x]", tags=["t"]),
        _outcome("param[y]", "failed", tags=["t"]),
        _outcome("param_other", "failed", tags=["t"]),  # not named by "param"
        _outcome("absent", "skipped"),  # skipped: did not run
    ]
    (result,) = evaluate_groups([group], outcomes)
    assert result.must_pass_failed == ["critical", "param"]
    assert result.must_pass_missing == ["absent"]
    assert not result.passed


def test_summary_lines_use_pytest_agent_evals_wording() -> None:
    groups = [
        GroupConfig("booking", 0.5, ["t"], must_pass=["a", "gone"]),
        GroupConfig("ghost", tags=["nothing"]),
        GroupConfig("quiet", tags=["q"]),
        GroupConfig("critical", must_pass=["b"]),
    ]
    outcomes = [_outcome("a", tags=["t"]), _outcome("b", "failed", tags=["t"]), _outcome("s", "skipped", tags=["q"])]
    assert format_group_summary_lines(evaluate_groups(groups, outcomes)) == [
        "booking: 1/2 passed (50%) >= 50% required -- PASSED",
        "  failures: b",
        "  must_pass: a ok",
        "  WARNING: must_pass entry 'gone' did not run",
        "WARNING: group 'ghost' matched no tests",
        "quiet: SKIPPED (1 matched, all skipped)",
        "WARNING: group 'critical' matched no tests",
        "  must_pass: b FAILED",
    ]


def test_markdown_section_has_a_row_per_group_and_notes() -> None:
    group = GroupConfig("g", 0.5, ["t"], must_pass=["absent"])
    lines = build_group_markdown_lines(
        evaluate_groups([group], [_outcome("a", tags=["t"]), _outcome("b", "failed", tags=["t"])])
    )
    assert lines[:2] == ["## Groups", ""]
    assert "| g | 1 | 2 | 0.50 | 0.50 | ✅ PASS |" in lines
    assert "- `g` failures: b" in lines and "- `g` must_pass did not run: absent" in lines


# --- in a pytest session -------------------------------------------------------------------------------

CONFTEST = src(
    """
    import pytest

    @pytest.fixture
    def llm_eval_agent():
        async def agent(history):
            return "confirmed" if "good" in history[-1]["content"] else "nope"
        return agent
    """
)


def _case(name: str, user: str, tags: str = "[gate:booking]") -> str:
    return (
        f"id: {name}\nthreshold: 1.0\ntags: {tags}\nturns:\n"
        f"  - user: {user}\n    expect:\n      reply_contains_any: [confirmed]\n"
    )


def _project(pytester: pytest.Pytester, threshold: float, extra: str = "") -> None:
    pytester.makepyprojecttoml(
        f'[tool.agent_eval.groups.booking]\nthreshold = {threshold}\ntags = ["gate:booking"]\n{extra}'
    )
    pytester.makeconftest(CONFTEST)
    pytester.makefile(
        ".yaml", **{"tests/evals/good": _case("good_case", "good"), "tests/evals/bad": _case("bad_case", "bad")}
    )


def test_a_failure_absorbed_by_a_group_that_met_its_threshold_exits_0(pytester: pytest.Pytester) -> None:
    _project(pytester, 0.5)
    result = pytester.runpytest("--agent-eval-live")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "*= group summary =*",
            "booking: 1/2 passed (50%) >= 50% required -- PASSED",
            "  failures: bad_case",
            "exit code overridden to 0: all group thresholds met",
        ]
    )


def test_the_markdown_report_has_the_groups_section(pytester: pytest.Pytester) -> None:
    _project(pytester, 0.5)
    pytester.runpytest("--agent-eval-live", "--agent-eval-report", "report.md")
    text = (pytester.path / "report.md").read_text()
    assert text.startswith("# LLM Eval Report — ")
    lines = text.splitlines()
    assert lines.index("## Summary") < lines.index("## Groups") < lines.index("## Details"), text  # as pytest-agent-eval
    section = text[text.index("## Groups") : text.index("## Details")]
    assert "| Group | Passed | Total | Rate | Threshold | Status |" in section
    assert "| booking | 1 | 2 |" in section, section


def test_the_exit_code_stays_1_when_a_group_misses_its_threshold(pytester: pytest.Pytester) -> None:
    _project(pytester, 0.9)
    result = pytester.runpytest("--agent-eval-live")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["booking: 1/2 passed (50%) >= 90% required -- FAILED"])
    assert "exit code overridden" not in result.stdout.str()


@pytest.mark.parametrize(
    "spoiler",
    ["must_pass", "selectorless_must_pass", "plain_test", "ungrouped_transcript", "collection_error"],
)
def test_the_exit_code_stays_1_when_a_failure_is_not_absorbed(pytester: pytest.Pytester, spoiler: str) -> None:
    _project(pytester, 0.5, 'must_pass = ["bad_case"]\n' if spoiler == "must_pass" else "")
    if spoiler == "selectorless_must_pass":
        with (pytester.path / "pyproject.toml").open("a") as f:
            f.write('\n[tool.agent_eval.groups.critical]\nmust_pass = ["bad_case"]\n')
    elif spoiler == "plain_test":
        pytester.makepyfile(test_plain="def test_broken(): assert False")
    elif spoiler == "ungrouped_transcript":
        pytester.makefile(".yaml", **{"tests/evals/lone": _case("lone_case", "bad", tags="[]")})
    elif spoiler == "collection_error":
        pytester.makefile(".yaml", **{"tests/evals/broken": "id: broken\nturns: []\n"})
    extra = ["--continue-on-collection-errors"] if spoiler == "collection_error" else []
    result = pytester.runpytest("--agent-eval-live", *extra)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "exit code overridden" not in result.stdout.str()
    if "must_pass" in spoiler:
        result.stdout.fnmatch_lines(["  must_pass: bad_case FAILED"])


def test_a_group_whose_tests_were_skipped_for_live_mode_reports_skipped(pytester: pytest.Pytester) -> None:
    _project(pytester, 0.5)
    result = pytester.runpytest()
    assert result.ret == 0
    result.stdout.fnmatch_lines(["booking: SKIPPED (2 matched, all skipped)"])


def test_the_rate_is_over_the_selected_tests_and_says_so(pytester: pytest.Pytester) -> None:
    _project(pytester, 1.0, 'must_pass = ["bad_case"]\n')
    result = pytester.runpytest("--agent-eval-live", "-k", "good")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "booking: 1/1 passed (100%) >= 100% required -- PASSED",
            "  WARNING: must_pass entry 'bad_case' did not run",
            "note: 1 test(s) deselected — group pass rates reflect the selected subset",
        ]
    )


def test_xdist_workers_outcomes_reach_the_gate(pytester: pytest.Pytester) -> None:
    _project(pytester, 0.5)
    result = pytester.runpytest("--agent-eval-live", "-n", "2", "-p", "xdist")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["booking: 1/2 passed (50%) >= 50% required -- PASSED", "exit code overridden*"])


def test_group_markers_are_registered_and_select_python_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.agent_eval.groups.smoke]\nthreshold = 0.5\npytest_markers = ["smoke"]\n')
    pytester.makepyfile(
        test_it="""
        import pytest

        @pytest.mark.smoke
        def test_ok(): pass

        @pytest.mark.smoke
        def test_flaky(): assert False
        """
    )
    result = pytester.runpytest("-W", "error::pytest.PytestUnknownMarkWarning", "--strict-markers")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["smoke: 1/2 passed (50%) >= 50% required -- PASSED"])
    markers = pytester.runpytest("--markers")
    markers.stdout.fnmatch_lines(
        ["@pytest.mark.smoke: selects tests for the [[]tool.agent_eval.groups.smoke] quality gate"]
    )


def test_python_tests_join_groups_by_marker_tags(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.agent_eval.groups.g]\ntags = ["gate:x"]\nmust_pass = ["test_case"]\n')
    pytester.makepyfile(
        test_it="""
        import pytest

        @pytest.mark.agent_eval(tags=["gate:x"])
        @pytest.mark.parametrize("n", [1, 2])
        def test_case(agent_eval, n):
            assert n == 1
        """
    )
    result = pytester.runpytest("--agent-eval-live", "-p", "no:asyncio", "-p", "no:anyio")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "g: 1/2 passed (50%) >= 100% required -- FAILED",
            "  failures: test_case[[]2]",
            "  must_pass: test_case FAILED",
        ]
    )
