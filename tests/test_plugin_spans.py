"""End to end through pytest: tool calls and arguments are graded from the spans each run and
turn produced, with real instrumented Pydantic AI agents."""

from __future__ import annotations

import pytest

from _plugin_helpers import PYDANTIC_AGENT, assert_in_order, clean_agent_eval_env, src  # noqa: F401


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(agents=PYDANTIC_AGENT)
    pytester.syspathinsert()
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--agent-eval-live", "-p", "no:asyncio", "-p", "no:anyio", "-rA", *args)


@pytest.mark.parametrize(("threshold", "outcome"), [(0.6, "passed"), (0.8, "failed")])
def test_two_of_three_runs_passing_meets_0_6_but_not_0_8(
    pytester: pytest.Pytester, threshold: float, outcome: str
) -> None:
    pytester.makepyfile(
        test_it=src(
            f"""
            import itertools
            import pytest
            from tracegrade import Turn, Expect

            calls = itertools.count()

            async def agent(history):
                return "bad" if next(calls) == 2 else "good"

            @pytest.mark.agent_eval(threshold={threshold}, runs=3)
            async def test_flaky(agent_eval):
                result = await agent_eval.run(agent=agent, turns=[Turn("hi", expect=Expect(reply_contains_any=["good"]))])
                assert result.passed_run_count == 2 and abs(result.score - 2 / 3) < 1e-9
                result.assert_threshold()
            """
        )
    )
    result = run(pytester)
    result.assert_outcomes(**{outcome: 1})
    verdict = outcome.upper()
    assert f"{verdict} test_it.py::test_flaky - score 0.67 (2/3 runs passed, threshold {threshold:.2f})" in (
        result.stdout.str()
    )
    if outcome == "failed":
        assert "LLM eval failed: score=0.67 < threshold=0.80 (2/3 runs passed)" in result.stdout.str()


def test_concurrent_runs_and_their_turns_each_see_only_their_own_spans(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_it=src(
            """
            import asyncio
            import itertools
            import pytest
            from agents import make_agent
            from tracegrade import Turn, Expect

            agent = make_agent()
            counter = itertools.count()
            started, all_started = [], asyncio.Event()

            async def callable_(history):
                n = next(counter)
                if history[-1]["content"] == "first":
                    started.append(n)
                    if len(started) == 3:
                        all_started.set()
                    await asyncio.wait_for(all_started.wait(), 5)  # deadlocks unless the runs are concurrent
                    prompt = f'search {{"q": "q{n}"}}'
                else:
                    prompt = f'fetch {{"id": {n}}}\\nfetch {{"id": {n + 100}}}'
                result = await agent.run(prompt)
                return result.output

            @pytest.mark.agent_eval(runs=3, threshold=1.0)
            async def test_isolated(agent_eval):
                result = await agent_eval.run(
                    agent=callable_,
                    turns=[
                        Turn("first", expect=Expect(tool_calls_include=["search"], tool_calls_exclude=["fetch"], max_tool_calls=1)),
                        Turn("second", expect=Expect(tool_calls_include=["fetch"], tool_calls_exclude=["search"], trajectory=["fetch", "fetch"])),
                    ],
                )
                result.assert_threshold()
                queries = set()
                for run in result.runs:
                    first, second = run.turn_results
                    assert [c.name for c in first.tool_calls] == ["search"]
                    assert first.tool_calls_source == "spans"
                    queries.add(first.tool_calls[0].args["q"])
                    ids = [c.args["id"] for c in second.tool_calls]
                    assert len(ids) == 2 and ids[1] == ids[0] + 100
                    assert first.trajectory.tree is not second.trajectory.tree
                    assert len(run.capture.trajectory.tool_calls) == 3  # the run's capture holds both turns
                assert len(queries) == 3  # three distinct trajectories
            """
        )
    )
    run(project).assert_outcomes(passed=1)


def test_tool_checks_pass_from_spans_when_the_callable_returns_only_a_string(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_it=src(
            """
            import pytest
            from agents import make_agent
            from tracegrade import Expect, ToolCallArgsEvaluator, Turn
            from tracegrade.evaluators import TrajectoryMatch
            from tracegrade import ToolCallArgsConfig

            agent = make_agent(reply="Found it: item 7")

            async def callable_(history):
                return (await agent.run(history[-1]["content"])).output   # a str: no tool calls returned

            @pytest.mark.agent_eval(runs=2)
            async def test_from_spans(agent_eval):
                result = await agent_eval.run(
                    agent=callable_,
                    turns=[
                        Turn(
                            'search {"q": "lamp"}\\nfetch {"id": 7}',
                            expect=Expect(
                                reply_contains_all=["item 7"],
                                tool_calls_include=["search", "fetch"],
                                tool_calls_ordered=True,
                                tool_calls_args=[ToolCallArgsConfig("search", {"q": "lamp"}),
                                                 ToolCallArgsConfig("fetch", {"id": 7}, mode="exact")],
                                evaluators=[ToolCallArgsEvaluator(tool="fetch", args={"id": 7}),
                                            TrajectoryMatch(["search", "fetch"], order="exact")],
                                trajectory={"expected_trajectory": ["search", "fetch"], "order": "exact"},
                                max_tool_calls=2,
                                max_model_requests=3,
                                spans=[{"name_contains": "fetch", "has_attribute_keys": ["gen_ai.tool.name"]}],
                            ),
                        )
                    ],
                )
                result.assert_threshold()
                assert result.tool_calls_sources == ["spans"]
                assert all(len(t.eval_results) == 10 for r in result.runs for t in r.turn_results)
            """
        )
    )
    run(project).assert_outcomes(passed=1)


def test_spans_win_over_tool_calls_the_callable_returns(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_it=src(
            """
            import pytest
            from agents import make_agent
            from tracegrade import AgentReply, Turn, Expect

            agent = make_agent()

            async def callable_(history):
                out = (await agent.run('search {"q": "x"}')).output
                return AgentReply(out, ["delete_everything"])   # a claim the spans contradict

            @pytest.mark.agent_eval(runs=1)
            async def test_spans_are_the_truth(agent_eval):
                result = await agent_eval.run(
                    agent=callable_, turns=[Turn("go", expect=Expect(tool_calls_include=["search"], tool_calls_exclude=["delete_everything"]))]
                )
                result.assert_threshold()
                assert result.tool_calls_sources == ["spans"]
            """
        )
    )
    run(project).assert_outcomes(passed=1)


def test_returned_tool_calls_are_used_when_no_tool_span_was_seen(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_it=src(
            """
            import pytest
            from tracegrade import AgentReply, Expect, ToolCall, Turn
            from tracegrade import ToolCallArgsConfig

            async def uninstrumented(history):
                return AgentReply("Booked for 10am", [ToolCall("book", {"time": "10am"}), "notify"])

            def as_tuple(history):   # a sync callable returning (reply, tool_calls)
                return "Booked", ["book"]

            @pytest.mark.agent_eval(runs=1)
            async def test_returned(agent_eval):
                expect = Expect(tool_calls_include=["book", "notify"], tool_calls_ordered=True,
                                tool_calls_args=[ToolCallArgsConfig("book", {"time": "10am"})], trajectory=["book", "notify"])
                result = await agent_eval.run(agent=uninstrumented, turns=[Turn("book it", expect=expect)])
                result.assert_threshold()
                assert result.tool_calls_sources == ["returned"]

            @pytest.mark.agent_eval(runs=1)
            async def test_plain_names_cannot_be_argument_checked(agent_eval):
                expect = Expect(tool_calls_args=[ToolCallArgsConfig("book", {"time": "10am"})])
                result = await agent_eval.run(agent=as_tuple, turns=[Turn("book it", expect=expect)])
                result.assert_threshold()
            """
        )
    )
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=1)
    assert_in_order(
        result.stdout.str(),
        "FAILED test_it.py::test_plain_names_cannot_be_argument_checked",
        "ToolCallArgsEvaluator [failed]: tool 'book' was called but no dict arguments were captured: "
        "the agent returned it as a plain name",
        "trajectory (returned): book",
    )


def test_include_content_false_gives_the_not_recorded_message(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_it=src(
            """
            import pytest
            from agents import make_agent
            from tracegrade import Expect, Turn
            from tracegrade import ToolCallArgsConfig

            agent = make_agent(include_content=False)

            async def callable_(history):
                return (await agent.run(history[-1]["content"])).output

            @pytest.mark.agent_eval(runs=1)
            async def test_hidden_args(agent_eval):
                expect = Expect(tool_calls_include=["book"], tool_calls_args=[ToolCallArgsConfig("book", {"time": "10am"})])
                result = await agent_eval.run(agent=callable_, turns=[Turn('book {"time": "10am"}', expect=expect)])
                [turn] = result.runs[0].turn_results
                names, args = turn.eval_results
                assert names.passed and args.outcome == "not_evaluated"
                result.assert_threshold()
            """
        )
    )
    result = run(project)
    result.assert_outcomes(failed=1)
    assert_in_order(
        result.stdout.str(),
        "run 1, turn 1:",
        "ToolCallArgsEvaluator [not_evaluated]: tool 'book' was called but no dict arguments were captured. "
        "Arguments of tool 'book' by agent 'shop' were not recorded by pydantic-ai; to record them: "
        "InstrumentationSettings(include_content=True) on the agent",
        "or return the run's messages from the agent callable",
        "trajectory (spans): book(<args not recorded>)",
    )
    assert "add_messages" not in result.stdout.str()  # pytest users have no capture object: advice that fits


def test_arguments_hidden_from_spans_are_recovered_from_a_returned_run_result(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_it=src(
            """
            import pytest
            from agents import make_agent
            from tracegrade import Expect, Turn
            from tracegrade import ToolCallArgsConfig

            agent = make_agent(include_content=False)

            def callable_(history):   # sync, returns the pydantic-ai run result itself
                return agent.run_sync(history[-1]["content"])

            @pytest.mark.agent_eval(runs=2)
            async def test_recovered(agent_eval):
                expect = Expect(tool_calls_args=[ToolCallArgsConfig("book", {"time": "10am"})])
                result = await agent_eval.run(agent=callable_, turns=[Turn('book {"time": "10am"}', expect=expect)])
                result.assert_threshold()
                assert result.runs[0].turn_results[0].reply == "done"
            """
        )
    )
    run(project).assert_outcomes(passed=1)
