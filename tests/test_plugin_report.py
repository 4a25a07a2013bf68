"""The terminal summary, the markdown report, and both under pytest-xdist."""

from __future__ import annotations

from pathlib import Path

import pytest

from _plugin_helpers import PYDANTIC_AGENT, assert_in_order, clean_agent_eval_env, src  # noqa: F401
from tracegrade.pytest_plugin import session as _session  # noqa: F401  # loaded once, outside the inner sessions
from tracegrade.reporting import CaseRecord, Report, write_markdown

# Plugins the xdist workers need not load (each worker is a fresh interpreter).
FAST_WORKERS = [
    "-p",
    "no:asyncio",
    "-p",
    "no:anyio",
    "-p",
    "no:logfire",
    "-p",
    "no:pytest_logfire",
    "-p",
    "no:hypothesispytest",
]

EVALS = src(
    """
    import pytest
    from agents import make_agent
    from tracegrade import Expect, Turn
    from tracegrade import ToolCallArgsConfig

    agent = make_agent(reply="Booked | ref BK-1")

    async def call(history):
        return (await agent.run(history[-1]["content"])).output

    @pytest.mark.agent_eval(runs=2, threshold=1.0)
    async def test_books(agent_eval):
        turn = Turn('search {"q": "table"}\\nbook {"time": "10am"}',
                    expect=Expect(tool_calls_include=["book"], reply_contains_any=["booked"]))
        (await agent_eval.run(agent=call, turns=[turn])).assert_threshold()

    @pytest.mark.agent_eval(runs=2, threshold=0.5)
    async def test_wrong_time(agent_eval):
        turn = Turn('book {"time": "9pm"}', expect=Expect(tool_calls_args=[ToolCallArgsConfig("book", {"time": "10am"})]))
        (await agent_eval.run(agent=call, turns=[turn])).assert_threshold()
    """
)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(agents=PYDANTIC_AGENT)
    pytester.syspathinsert()
    return pytester


def test_terminal_summary_shows_score_runs_and_each_failed_turn_with_its_trajectory(project: pytest.Pytester) -> None:
    project.makepyfile(test_evals=EVALS)
    result = project.runpytest("--agent-eval-live", "-p", "no:asyncio", "-p", "no:anyio")
    result.assert_outcomes(passed=1, failed=1)
    assert_in_order(
        result.stdout.str(),
        "= agent_eval =",
        "PASSED test_evals.py::test_books - score 1.00 (2/2 runs passed, threshold 1.00); "
        "checks: 4 passed, 0 failed, 0 not evaluated, 0 errors",
        "FAILED test_evals.py::test_wrong_time - score 0.00 (0/2 runs passed, threshold 0.50); "
        "checks: 0 passed, 2 failed, 0 not evaluated, 0 errors",
        '  run 1, turn 1: \'book {"time": "9pm"}\'',
        "    ToolCallArgsEvaluator [failed]: Tool 'book' argument mismatch (subset mode): expected {'time': '10am'}, "
        "observed [{'time': '9pm'}] (key 'time': expected '10am', got '9pm')",
        "    trajectory (spans): book(time='9pm')",
        "  run 2, turn 1:",
        "2 eval(s): 1 passed, 1 failed; checks: 4 passed, 2 failed, 0 not evaluated, 0 errors",
    )


def test_markdown_report_has_every_run_and_turn(project: pytest.Pytester) -> None:
    project.makepyfile(test_evals=EVALS)
    result = project.runpytest("--agent-eval-live", "--agent-eval-report", "out/eval.md", "-p", "no:asyncio")
    report = project.path / "out" / "eval.md"
    result.stdout.fnmatch_lines([f"agent_eval: report written to {report}"])
    text = report.read_text()
    assert_in_order(
        text,
        "# LLM Eval Report — ",
        "2 eval(s): 1 passed, 1 failed; checks: 4 passed, 2 failed, 0 not evaluated, 0 errors.",
        "| Case | Result | Score | Runs passed | Threshold | Checks passed | Failed | Not evaluated | Errors |",
        "| `test_evals.py::test_books` | PASSED | 1.00 | 2/2 | 1.00 | 4 | 0 | 0 | 0 |",
        "| `test_evals.py::test_wrong_time` | FAILED | 0.00 | 0/2 | 0.50 | 0 | 2 | 0 | 0 |",
        "### `test_evals.py::test_books`",
        "#### Run 1: passed",
        "##### Turn 1: passed",
        "- Reply: `Booked | ref BK-1`",
        "- Tool calls (spans): `search(q='table')`, `book(time='10am')`",
        "| Evaluator | Outcome | Score | Reason |",
        "#### Run 2: passed",
        "### `test_evals.py::test_wrong_time`",
        "| ToolCallArgsEvaluator | failed |",
    )
    # pytest-agent-eval's outline: the title, `## Summary` (the table), `## Details` (a `###` per case)
    headings = [line for line in text.splitlines() if line.startswith("#") and not line.startswith("####")]
    assert headings[1:] == [
        "## Summary",
        "## Details",
        "### `test_evals.py::test_books`",
        "### `test_evals.py::test_wrong_time`",
    ], headings


def test_report_path_from_pyproject_counts_skipped_tests(project: pytest.Pytester) -> None:
    project.makepyprojecttoml('[tool.agent_eval]\nreport_path = "eval.md"\n')
    project.makepyfile(test_evals=EVALS)
    project.runpytest("-p", "no:asyncio").assert_outcomes(skipped=2)
    assert (
        "0 eval(s): 0 passed, 0 failed, 2 skipped (not live); checks: 0 passed"
        in (project.path / "eval.md").read_text()
    )


def test_xdist_workers_results_land_in_one_report_and_one_summary(pytester: pytest.Pytester) -> None:
    for name in "abcd":
        pytester.makepyfile(
            **{
                f"test_{name}": src(
                    f"""
                    import pytest
                    from tracegrade import AgentReply, Turn, Expect

                    def agent(history):
                        return AgentReply("reply {name}", ["tool_{name}"])

                    @pytest.mark.agent_eval(runs=2)
                    def test_{name}(agent_eval):
                        expect = Expect(tool_calls_include=["tool_{name}"], reply_contains_any=["{"x" if name == "d" else name}"])
                        agent_eval.run_sync(agent=agent, turns=[Turn("go", expect=expect)]).assert_threshold()

                    @pytest.mark.agent_eval
                    def test_{name}_skipped_later(agent_eval):
                        pytest.skip("not today")
                    """
                )
            }
        )
    result = pytester.runpytest("-n", "2", "--agent-eval-live", "--agent-eval-report", "eval.md", *FAST_WORKERS)
    result.assert_outcomes(passed=3, failed=1, skipped=4)
    out = result.stdout.str()
    for name in "abc":
        assert f"PASSED test_{name}.py::test_{name} - score 1.00 (2/2 runs passed" in out
    assert "FAILED test_d.py::test_d - score 0.00 (0/2 runs passed" in out
    text = (pytester.path / "eval.md").read_text()
    assert "4 eval(s): 3 passed, 1 failed; checks: 14 passed, 2 failed, 0 not evaluated, 0 errors." in text
    assert "4 eval(s): 3 passed, 1 failed; checks: 14 passed, 2 failed, 0 not evaluated, 0 errors" in out
    assert [line.split("`")[1] for line in text.splitlines() if line.startswith("| `")] == [
        f"test_{n}.py::test_{n}" for n in "abcd"
    ]


def test_xdist_counts_not_live_skips_from_every_worker(pytester: pytest.Pytester) -> None:
    for name in "ab":
        pytester.makepyfile(
            **{f"test_{name}": "import pytest\n\n@pytest.mark.agent_eval\ndef test_it(agent_eval):\n    pass\n"}
        )
    result = pytester.runpytest("-n", "2", *FAST_WORKERS)
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["2 eval test(s) skipped — live mode is off. Pass --agent-eval-live or set EVAL_LIVE=1."])


def test_markdown_escapes_table_cells(tmp_path: Path) -> None:
    record = {
        "id": "t.py::x", "tags": [], "passed": False, "score": 0.0, "threshold": 1.0, "runs_passed": 0,
        "runs_total": 1, "checks": {"passed": 0, "failed": 0, "not_evaluated": 0, "error": 1}, "not_evaluated": "fail",
        "runs": [{"index": 0, "passed": False, "attempts": 2, "error": "boom | bang", "turns": []}],
    }  # fmt: skip
    text = write_markdown(Report([CaseRecord.from_dict(record)]))
    assert "### Run 1: failed, 2 attempts" in text and "Error: `boom | bang`" in text


FOUR_OUTCOMES = src(
    """
    import pytest
    from agents import make_agent
    from tracegrade import Expect, Turn
    from tracegrade import ToolCallArgsConfig

    plain = make_agent(reply="Booked")
    hidden = make_agent(include_content=False, reply="Booked")

    def call(agent):
        async def run(history):
            return (await agent.run(history[-1]["content"])).output
        return run

    class Broken:
        def evaluate(self, ctx):
            raise RuntimeError("evaluator bug")

    @pytest.mark.agent_eval
    async def test_mixed(agent_eval):
        expect = Expect(reply_contains_any=["booked"], tool_calls_include=["fetch"],
                        tool_calls_args=[ToolCallArgsConfig("book", {"time": "10am"})], evaluators=[Broken()])
        (await agent_eval.run(agent=call(hidden), turns=[Turn('book {"time": "10am"}', expect=expect)])).assert_threshold()

    @pytest.mark.agent_eval
    async def test_nothing_to_evaluate(agent_eval):
        expect = Expect(tool_calls_args=[ToolCallArgsConfig("book", {"time": "10am"})])
        (await agent_eval.run(agent=call(hidden), turns=[Turn('book {"time": "10am"}', expect=expect)])).assert_threshold()

    @pytest.mark.agent_eval
    async def test_args_recorded(agent_eval):
        expect = Expect(tool_calls_args=[ToolCallArgsConfig("book", {"time": "10am"})])
        (await agent_eval.run(agent=call(plain), turns=[Turn('book {"time": "10am"}', expect=expect)])).assert_threshold()
    """
)


@pytest.mark.parametrize("policy", ["fail", "skip"])
def test_four_outcomes_are_counted_apart_and_not_evaluated_follows_the_setting(
    project: pytest.Pytester, policy: str
) -> None:
    project.makepyprojecttoml(f'[tool.agent_eval]\nnot_evaluated = "{policy}"\nreport_path = "eval.md"\n')
    project.makepyfile(test_evals=FOUR_OUTCOMES)
    result = project.runpytest("--agent-eval-live", "-p", "no:asyncio", "-p", "no:anyio", "-rs")
    skipped = " (skipped)" if policy == "skip" else ""
    if policy == "fail":
        result.assert_outcomes(passed=1, failed=2)
    else:  # the test with nothing evaluable is skipped, not passed; the mixed one still fails (error, failure)
        result.assert_outcomes(passed=1, failed=1, skipped=1)
        result.stdout.fnmatch_lines(["*no check could be evaluated (not_evaluated = 'skip'): run 1, turn 1: *"])
    out = result.stdout.str()
    assert_in_order(
        out,
        "FAILED test_evals.py::test_mixed - score 0.00 (0/1 runs passed, threshold 0.80); "
        f"checks: 1 passed, 1 failed, 1 not evaluated{skipped}, 1 errors",
        "Broken [error]: Broken raised RuntimeError: evaluator bug",
        "ToolCallEvaluator [failed]: Expected tool 'fetch' not in ['book']",
        "ToolCallArgsEvaluator [not_evaluated]: tool 'book' was called but no dict arguments were captured",
        "3 eval(s): ",
        f"checks: 2 passed, 1 failed, 2 not evaluated{skipped}, 1 errors",
    )
    text = (project.path / "eval.md").read_text()
    assert "| `test_evals.py::test_mixed` |" in text
    assert f" | 1 | 1 | 1{skipped} | 1 |" in text
    assert f"| `test_evals.py::test_nothing_to_evaluate` | {'FAILED' if policy == 'fail' else 'NO CHECKS'} |" in text


INFORMATIONAL = src(
    """
    import itertools
    import pytest
    from agents import make_agent
    from tracegrade import Expect, Turn
    from tracegrade.evaluators import TrajectoryMatch
    from tracegrade.grading import informational

    agent = make_agent()
    runs = itertools.count()

    async def call(history):  # every other run fetches the wrong item, in the wrong order
        prompt = 'search {"q": "<script>x</script>"}\\nfetch {"id": 1}' if next(runs) % 2 == 0 else 'fetch {"id": 2}\\nsearch {"q": "y"}'
        return (await agent.run(prompt)).output

    @pytest.mark.agent_eval(runs=3, threshold=1.0)
    async def test_info(agent_eval):
        expected = ["search", {"tool": "fetch", "args": {"id": 1}}]
        expect = Expect(evaluators=[informational(TrajectoryMatch(expected_trajectory=expected))], max_tool_calls=5)
        result = await agent_eval.run(agent=call, turns=[Turn("go", expect=expect)])
        assert result.passed and result.describe_failures() == []
        result.assert_threshold()
    """
)


def test_a_failing_informational_check_never_fails_the_test_and_is_reported_with_its_statistics(
    project: pytest.Pytester,
) -> None:
    import xml.etree.ElementTree as ET

    from tracegrade.reporting import read_json

    project.makepyfile(test_evals=INFORMATIONAL)
    result = project.runpytest(
        "--agent-eval-live", "-p", "no:asyncio", "-p", "no:anyio", "--agent-eval-report", "eval.md",
        "--agent-eval-json", "eval.json", "--agent-eval-junit", "eval.xml",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    stat = "TrajectoryMatch 2/3 = 0.67 (95% CI 0.21-0.94)"
    assert_in_order(
        result.stdout.str(),
        "PASSED test_evals.py::test_info - score 1.00 (3/3 runs passed, threshold 1.00); "
        "checks: 5 passed, 1 failed, 0 not evaluated, 0 errors",
        f"  pass@1 1.00, pass@3 1.00, pass^3 1.00; flaky: {stat}",
        f"  informational: {stat}",
        "1 eval(s): 1 passed, 0 failed; checks: 5 passed, 1 failed, 0 not evaluated, 0 errors",
    )
    md = (project.path / "eval.md").read_text()
    assert "| TrajectoryMatch | 2/3 | 0.67 | 0.21-0.94 | 0 | yes | yes |" in md
    assert "| MaxToolCalls | 3/3 | 1.00 | 0.44-1.00 | 0 |  |  |" in md
    (case,) = read_json((project.path / "eval.json").read_text()).cases
    assert case.passed and case.runs_passed == 3
    checks = [(c.name, c.informational) for c in case.runs[0].checks]
    assert checks == [("TrajectoryMatch", True), ("MaxToolCalls", False)]
    stats = case.stats
    assert stats is not None and [(c.name, c.passed, c.runs, c.informational) for c in stats.checks] == [
        ("TrajectoryMatch", 2, 3, True), ("MaxToolCalls", 3, 3, False)
    ]  # fmt: skip
    root = ET.parse(project.path / "eval.xml").getroot()
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["check.TrajectoryMatch.informational"] == "true" and props["check.TrajectoryMatch.runs"] == "2/3"
    assert props["check.TrajectoryMatch.flaky"] == "true" and props["check.TrajectoryMatch.ci95"] == "0.2077-0.9385"
    assert (root.get("failures"), len(list(root.iter("failure")))) == ("0", 0)
    (out,) = [e.text for e in root.iter("system-out") if e.text and e.text.startswith("informational check")]
    assert out.startswith("informational check failed: ")


# --- bug: terminal escape codes in recorded tool names and argument keys were printed raw ---


def test_control_characters_in_recorded_text_are_escaped_in_the_failure_and_the_summary(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_esc=src(
            r'''
            import pytest
            from opentelemetry.sdk.trace import TracerProvider
            from tracegrade import Expect, ToolCall, Turn

            provider = TracerProvider()
            tracer = provider.get_tracer("app")

            async def returned(history):
                return "bad \x1b[31mred\x1b[0m \u202eevil", [ToolCall("t\x1b[2JEVIL", {"k\x1b[0m": "v"})]

            async def spans(history):
                with tracer.start_as_current_span(
                    "invoke_agent shop", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"}
                ), tracer.start_as_current_span(
                    "execute_tool s\x1b[1;31mPWNED",
                    attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "s\x1b[1;31mPWNED",
                                "gen_ai.tool.call.arguments": '{"q\\u001b[0m": "x\\n2"}'},
                ):
                    pass
                return "done"

            @pytest.mark.agent_eval(threshold=1.0)
            async def test_returned(agent_eval):
                turn = Turn("u\x00", expect=Expect(reply_contains_any=["zzz"], tool_calls_include=["x"]))
                (await agent_eval.run(agent=returned, turns=[turn])).assert_threshold()

            @pytest.mark.agent_eval(threshold=1.0)
            async def test_spans(agent_eval):
                agent_eval.provider = provider
                turn = Turn("find", expect=Expect(tool_calls_include=["lookup"]))
                (await agent_eval.run(agent=spans, turns=[turn])).assert_threshold()
            '''
        )
    )
    result = pytester.runpytest("--agent-eval-live", "-p", "no:asyncio", "-p", "no:anyio")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert not {ch for ch in out if not ch.isprintable() and ch != "\n"}, [ch for ch in out if ord(ch) < 32 and ch != "\n"]
    failure, summary = out.split("= agent_eval =")
    for text in (failure, summary):  # the assertion message, then the terminal summary
        assert "trajectory (returned): t\\x1b[2JEVIL(k\\x1b[0m='v')" in text
        assert "trajectory (spans): s\\x1b[1;31mPWNED(q\\x1b[0m='x\\n2')" in text
