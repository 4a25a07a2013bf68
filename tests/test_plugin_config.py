"""Live gating, `[tool.agent_eval]` settings, their precedence and the errors they raise."""

from __future__ import annotations

from pathlib import Path

import pytest

from _plugin_helpers import clean_agent_eval_env, src  # noqa: F401
from tracegrade.pytest_plugin.config import ENV_VARS, AgentEvalSettings, ConfigError, marker_options, resolve_settings

MARKED = src(
    """
    import pytest

    @pytest.mark.agent_eval
    def test_one(agent_eval):
        pass

    @pytest.mark.agent_eval(runs=2)
    async def test_two(agent_eval):
        pass

    def test_ordinary():
        pass
    """
)

SHOW = src(
    """
    import pytest

    @pytest.mark.agent_eval{marker}
    def test_show(agent_eval):
        print(f"\\nSETTINGS threshold={{agent_eval.threshold}} runs={{agent_eval.runs}} model={{agent_eval.config['model']}}")
    """
)


# --- live gating -------------------------------------------------------------------------------------


def test_marked_tests_are_skipped_by_default_with_a_one_line_summary(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_it=MARKED)
    result = pytester.runpytest("-p", "no:asyncio", "-p", "no:anyio")
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(
        ["2 eval test(s) skipped — live mode is off. Pass --agent-eval-live or set EVAL_LIVE=1."]
    )


def test_the_agent_eval_fixture_without_the_marker_is_gated_like_marked_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_it="""
        def test_unmarked(agent_eval):
            print("RAN")
        """
    )
    result = pytester.runpytest("-p", "no:asyncio", "-p", "no:anyio", "-s")
    result.assert_outcomes(skipped=1)
    assert "RAN" not in result.stdout.str()
    result.stdout.fnmatch_lines(["1 eval test(s) skipped — live mode is off.*"])
    live = pytester.runpytest("-p", "no:asyncio", "-p", "no:anyio", "-s", "--agent-eval-live")
    live.assert_outcomes(passed=1)
    live.stdout.fnmatch_lines(["*RAN*"])


@pytest.mark.parametrize(
    ("how", "args", "env", "toml"),
    [
        ("cli", ["--agent-eval-live"], {}, ""),
        ("env", [], {"EVAL_LIVE": "1"}, ""),
        ("env-alias", [], {"AGENT_EVAL_LIVE": "true"}, ""),
        ("pyproject", [], {}, "live = true"),
    ],
)
def test_each_layer_can_turn_live_mode_on(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
    args: list[str],
    env: dict[str, str],
    toml: str,
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    pytester.makepyprojecttoml(f"[tool.agent_eval]\n{toml}\n")
    pytester.makepyfile(test_it=MARKED)
    result = pytester.runpytest("-p", "no:asyncio", "-p", "no:anyio", *args)
    result.assert_outcomes(passed=3)
    assert "skipped (not live)" not in result.stdout.str()


def test_eval_live_0_does_not_turn_live_mode_on(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVAL_LIVE", "0")
    pytester.makepyfile(test_it=MARKED)
    pytester.runpytest("-p", "no:asyncio", "-p", "no:anyio").assert_outcomes(passed=1, skipped=2)


# --- precedence: CLI > env > pyproject > defaults; marker > all of them for threshold/runs ------------


@pytest.mark.parametrize(
    ("toml", "env", "args", "marker", "expected"),
    [
        ("", {}, [], "", "threshold=0.8 runs=1 model=None"),
        ('threshold = 0.5\nruns = 4\nmodel = "test"', {}, [], "", "threshold=0.5 runs=4 model=test"),
        (
            'threshold = 0.5\nruns = 4\nmodel = "test"',
            {"AGENT_EVAL_THRESHOLD": "0.25", "AGENT_EVAL_RUNS": "6", "AGENT_EVAL_MODEL": "env-model"},
            [],
            "",
            "threshold=0.25 runs=6 model=env-model",
        ),
        (
            'model = "test"',
            {"AGENT_EVAL_MODEL": "env-model"},
            ["--agent-eval-model", "cli-model"],
            "",
            "model=cli-model",
        ),
        ("threshold = 0.5\nruns = 4", {"AGENT_EVAL_RUNS": "6"}, [], "(threshold=0.9, runs=2)", "threshold=0.9 runs=2"),
    ],
    ids=["defaults", "pyproject", "env-over-pyproject", "cli-over-env", "marker-over-config"],
)
def test_settings_precedence(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    toml: str,
    env: dict[str, str],
    args: list[str],
    marker: str,
    expected: str,
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    pytester.makepyprojecttoml(f"[tool.agent_eval]\n{toml}\n")
    pytester.makepyfile(test_it=SHOW.format(marker=marker))
    result = pytester.runpytest("--agent-eval-live", "-s", *args)
    result.assert_outcomes(passed=1)
    line = next(x for x in result.stdout.lines if x.startswith("SETTINGS"))
    for part in expected.split():
        assert part in line.split(), (part, line)


# --- invalid values: a UsageError naming the key --------------------------------------------------------


@pytest.mark.parametrize(
    ("toml", "env", "message"),
    [
        ("threshold = 1.5", {}, "invalid agent_eval setting 'threshold' = 1.5 ([tool.agent_eval] in "),
        ('runs = "many"', {}, "invalid agent_eval setting 'runs' = 'many'"),
        ("", {"AGENT_EVAL_RUNS": "0"}, "invalid agent_eval setting 'runs' = '0' (AGENT_EVAL_RUNS (environment))"),
        ("", {"EVAL_LIVE": "maybe"}, "EVAL_LIVE='maybe' (environment): expected 1/0, true/false, yes/no or on/off"),
        ("timeout = -1", {}, "invalid agent_eval setting 'timeout' = -1"),
    ],
)
def test_invalid_settings_are_a_usage_error_naming_the_key(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, toml: str, env: dict[str, str], message: str
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    pytester.makepyprojecttoml(f"[tool.agent_eval]\n{toml}\n")
    pytester.makepyfile(test_it=MARKED)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ("(threshold=2)", "threshold must be a number between 0 and 1, got 2"),
        ("(runs=0)", "runs must be an integer >= 1, got 0"),
        ("(thresold=0.5)", "unknown argument 'thresold' (did you mean 'threshold'?)"),
        ("(0.5)", "takes keyword arguments only"),
    ],
)
def test_invalid_marker_arguments_are_a_usage_error(pytester: pytest.Pytester, marker: str, message: str) -> None:
    pytester.makepyfile(test_it=SHOW.format(marker=marker))
    result = pytester.runpytest("--agent-eval-live")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "test_it.py::test_show: @pytest.mark.agent_eval" in result.stderr.str()
    assert message in result.stderr.str()


def test_marker_tags_are_selectable_with_k(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_it=src(
            """
            import pytest

            @pytest.mark.agent_eval(tags=["gate:booking", "smoke"])
            def test_a(agent_eval):
                pass

            @pytest.mark.agent_eval
            def test_b(agent_eval):
                pass
            """
        )
    )
    pytester.runpytest("--agent-eval-live", "-k", "smoke").assert_outcomes(passed=1, deselected=1)


# --- the resolver on its own -------------------------------------------------------------------------


def test_resolver_reports_where_each_value_came_from(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.agent_eval]\nthreshold = 0.5\nmodel = "a"\n')
    settings, sources = resolve_settings(
        pyproject, {"AGENT_EVAL_MODEL": "b", "AGENT_EVAL_YAML_DIRS": "x:y"}, {"report_path": "r.md", "live": None}
    )
    assert (settings.threshold, settings.model, settings.report_path, settings.yaml_dirs) == (
        0.5,
        "b",
        "r.md",
        ["x", "y"],
    )
    assert sources == {
        "threshold": f"[tool.agent_eval] in {pyproject}",
        "model": "AGENT_EVAL_MODEL (environment)",
        "yaml_dirs": "AGENT_EVAL_YAML_DIRS (environment)",
        "report_path": "command line",
    }


def test_resolver_defaults_without_a_pyproject() -> None:
    settings, sources = resolve_settings(None, {}, {})
    assert settings == AgentEvalSettings() and sources == {}
    assert (settings.threshold, settings.runs, settings.retries, settings.timeout) == (0.8, 1, 2, 30.0)
    assert (settings.yaml_dirs, settings.groups) == (["tests/evals"], ())


def test_transcripts_under_tests_evals_are_collected_without_configuration(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"tests/evals/greet": "id: greet\nturns:\n  - user: hi\n"})
    pytester.makefile(".yaml", **{"other/ignored": "id: ignored\nturns:\n  - user: hi\n"})
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["tests/evals/greet.yaml::greet", "1 test collected*"])
    assert "ignored" not in result.stdout.str()


def test_groups_are_parsed_from_pyproject_and_not_from_the_environment(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[tool.agent_eval]\nmodel = "a"\n[tool.agent_eval.groups.booking]\nthreshold = 0.9\ntags = ["gate:a"]\n'
    )
    settings, sources = resolve_settings(pyproject, {"AGENT_EVAL_GROUPS": "x"}, {})
    assert [(g.name, g.threshold, g.tags) for g in settings.groups] == [("booking", 0.9, ["gate:a"])]
    assert sources["groups"] == f"[tool.agent_eval] in {pyproject}"
    assert "groups" not in ENV_VARS


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            'must_pas = ["x"]',
            "unknown key 'must_pas' (did you mean 'must_pass'?); valid keys: threshold, tags, pytest_markers, must_pass",
        ),
        ("threshold = 1.5", "threshold must be a number between 0 and 1, got 1.5"),
        ('tags = "gate"', "tags must be a list of strings, got 'gate'"),
    ],
)
def test_an_invalid_group_is_a_usage_error_naming_the_key(pytester: pytest.Pytester, table: str, message: str) -> None:
    pytester.makepyprojecttoml(f"[tool.agent_eval.groups.g]\n{table}\n")
    pytester.makepyfile("def test_ok(): pass")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    where = f"[tool.agent_eval.groups.g] in {pytester.path / 'pyproject.toml'}"
    assert f"ERROR: {where}: {message}" in result.stderr.lines


def test_marker_options_fill_in_the_settings() -> None:
    settings = AgentEvalSettings(threshold=0.7, runs=5)
    assert marker_options((), {}, settings).threshold == 0.7
    opts = marker_options((), {"runs": 2, "tags": ["a"]}, settings)
    assert (opts.threshold, opts.runs, opts.tags) == (0.7, 2, ["a"])
    with pytest.raises(ConfigError, match="tags must be a list of strings"):
        marker_options((), {"tags": "a"}, settings)


# --- bug: `timeout` / `retries` limited the agent; they are the judges' (pytest-agent-eval's meaning) ---


def test_timeout_and_retries_in_pyproject_limit_the_judges_and_agent_keys_limit_the_agent(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyprojecttoml("[tool.agent_eval]\ntimeout = 0.05\nretries = 0\n")
    pytester.makepyfile(
        test_limits=src(
            """
            import asyncio
            import pytest
            from pydantic_ai.models.function import FunctionModel
            from tracegrade import Expect, Turn

            CALLS = []

            async def slow_judge(messages, info):
                await asyncio.sleep(1)

            async def slow_agent(history):
                await asyncio.sleep(0.2)  # beyond `timeout`: not the agent's limit
                return "Booked"

            async def crashing_agent(history):
                CALLS.append(1)
                raise RuntimeError("db down")

            @pytest.mark.agent_eval
            async def test_slow_agent(agent_eval):
                turns = [Turn("hi", expect=Expect(reply_contains_any=["booked"]))]
                (await agent_eval.run(agent=slow_agent, turns=turns)).assert_threshold()

            @pytest.mark.agent_eval
            async def test_slow_judge(agent_eval):
                turns = [Turn("hi", expect=Expect(judge={"rubric": "Confirms.", "model": FunctionModel(slow_judge)}))]
                (await agent_eval.run(agent=slow_agent, turns=turns)).assert_threshold()

            @pytest.mark.agent_eval
            async def test_crash(agent_eval):
                try:
                    await agent_eval.run(agent=crashing_agent, turns=[Turn("hi")])
                finally:
                    print(f"\\nCALLS {len(CALLS)}")
            """
        )
    )
    result = pytester.runpytest("--agent-eval-live", "-s", "-p", "no:asyncio", "-p", "no:anyio")
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    assert "JudgeEvaluator [error]: Judge failed after 1 attempt: timed out after 0.05s" in out
    assert "FAILED test_limits.py::test_slow_judge" in out and "CALLS 1" in out
    pytester.makepyprojecttoml("[tool.agent_eval]\nagent_timeout = 0.05\nagent_retries = 1\n")
    result = pytester.runpytest("--agent-eval-live", "-s", "-p", "no:asyncio", "-p", "no:anyio", "-k", "slow_agent")
    result.assert_outcomes(failed=1)
    assert "the agent did not answer turn 1 within 0.05s (agent_timeout) (after 2 attempts)" in result.stdout.str()


# --- bug: a typo in the marker or [tool.agent_eval] stopped the session even when no eval runs ---


def test_a_typo_in_the_marker_or_the_settings_is_a_warning_without_live_and_an_error_with_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyprojecttoml("[tool.agent_eval]\nrunz = 2\n")
    pytester.makepyfile(test_it=SHOW.format(marker="(treshold=0.5)"), test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest("-W", "default::pytest.PytestConfigWarning")
    result.assert_outcomes(passed=1, skipped=1, warnings=2)
    out = result.stdout.str()
    assert "unknown key 'runz' (did you mean 'runs'?); ignored: live mode is off" in out
    assert "@pytest.mark.agent_eval: unknown argument 'treshold' (did you mean 'threshold'?); ignored: live mode is off" in out
    live = pytester.runpytest("--agent-eval-live")
    assert live.ret == pytest.ExitCode.USAGE_ERROR
    assert f"[tool.agent_eval] in {pytester.path / 'pyproject.toml'}: unknown key 'runz' (did you mean 'runs'?)" in (
        live.stderr.str()
    )
    pytester.makepyprojecttoml("[tool.agent_eval]\nruns = 2\n")
    live = pytester.runpytest("--agent-eval-live")
    assert live.ret == pytest.ExitCode.USAGE_ERROR
    assert "test_it.py::test_show: @pytest.mark.agent_eval: unknown argument 'treshold'" in live.stderr.str()


def test_the_resolver_collects_unknown_keys_when_asked_and_raises_otherwise(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.agent_eval]\nthresold = 0.5\nruns = 3\n")
    with pytest.raises(ConfigError, match=r"unknown key 'thresold' \(did you mean 'threshold'\?\)"):
        resolve_settings(pyproject, {}, {})
    unknown: list[str] = []
    settings, _ = resolve_settings(pyproject, {}, {}, unknown_keys=unknown)
    assert (settings.runs, settings.threshold) == (3, 0.8)
    assert unknown == [f"[tool.agent_eval] in {pyproject}: unknown key 'thresold' (did you mean 'threshold'?)"]
