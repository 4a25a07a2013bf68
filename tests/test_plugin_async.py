"""Marked `async def` tests run as written: by the plugin when no async plugin claims them, by
pytest-asyncio (strict and auto mode) or anyio when they do."""

from __future__ import annotations

import pytest

from _plugin_helpers import assert_in_order, clean_agent_eval_env, src  # noqa: F401

CONFIGS = {
    "no-async-plugin": ["-p", "no:asyncio", "-p", "no:anyio"],
    "asyncio-strict": ["-o", "asyncio_mode=strict", "-o", "asyncio_default_fixture_loop_scope=function"],
    "asyncio-auto": ["-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function"],
}

REFERENCE_EXAMPLE = src(
    """
    import pytest
    from tracegrade import (
        AgentReply, Turn, Expect,
        ContainsEvaluator, ToolCallEvaluator, JudgeEvaluator,
    )

    async def booking_agent(history):
        # Your real agent implementation here: return an AgentReply
        return AgentReply("Booking confirmed! Reference: BK-1234 for tomorrow at 10am.", ["create_booking"])

    @pytest.mark.agent_eval(threshold=0.8, runs=3)
    async def test_full_booking_flow(agent_eval):
        result = await agent_eval.run(
            agent=booking_agent,
            turns=[
                Turn(
                    user="I need to book a table for 2 tomorrow at 10am.",
                    expect=Expect(
                        evaluators=[
                            ContainsEvaluator(any_of=["confirmed", "booked"]),
                            ToolCallEvaluator(must_include=["create_booking"]),
                            JudgeEvaluator(
                                rubric=(
                                    "The reply must confirm the booking and include "
                                    "a reference number and time."
                                )
                            ),
                        ]
                    ),
                ),
                Turn(
                    user="Can you send me a confirmation email?",
                    expect=Expect(
                        reply_contains_any=["email", "sent", "confirmation"],
                    ),
                ),
            ],
        )
        result.assert_threshold()
    """
)

PASSING = src(
    """
    import asyncio
    import pytest
    from tracegrade import Turn, Expect

    async def agent(history):
        await asyncio.sleep(0)
        return "Booking confirmed"

    @pytest.mark.agent_eval(runs=2)
    async def test_marked(agent_eval):
        result = await agent_eval.run(agent=agent, turns=[Turn("book", expect=Expect(reply_contains_any=["confirmed"]))])
        result.assert_threshold()
        assert result.score == 1.0 and len(result.runs) == 2
    """
)


@pytest.mark.parametrize("config", list(CONFIGS))
def test_marked_coroutine_test_runs_in_every_configuration(pytester: pytest.Pytester, config: str) -> None:
    pytester.makepyfile(test_it=PASSING)
    result = pytester.runpytest("--agent-eval-live", *CONFIGS[config])
    result.assert_outcomes(passed=1)
    assert "never awaited" not in result.stdout.str()
    assert "not natively supported" not in result.stdout.str()


@pytest.mark.parametrize("config", list(CONFIGS))
def test_reference_example_runs_exactly_as_written(pytester: pytest.Pytester, config: str) -> None:
    """The page's example, unchanged but for the import (`tracegrade` for `pytest_agent_eval`). Its
    judge gets pydantic-ai's offline `test` model; the second turn's reply lacks every expected word,
    so the test fails on the score, after really running all three runs."""
    pytester.makepyprojecttoml('[tool.agent_eval]\nmodel = "test"\n')
    pytester.makepyfile(test_reference=REFERENCE_EXAMPLE)
    result = pytester.runpytest("--agent-eval-live", *CONFIGS[config])
    result.assert_outcomes(failed=1)
    assert_in_order(
        result.stdout.str(),
        "LLM eval failed: score=0.00 < threshold=0.80 (0/3 runs passed)",
        "FAILED test_reference.py::test_full_booking_flow - score 0.00 (0/3 runs passed, threshold 0.80)",
        "ContainsEvaluator [failed]: Reply did not contain any of ['email', 'sent', 'confirmation']",
    )
    assert "not natively supported" not in result.stdout.str()


def test_pytest_asyncio_marked_test_is_left_to_pytest_asyncio(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_it=src(
            """
            import asyncio
            import pytest
            from tracegrade import Turn

            @pytest.mark.asyncio
            @pytest.mark.agent_eval(runs=1)
            async def test_in_pytest_asyncio_loop(agent_eval):
                loop = asyncio.get_running_loop()
                async def agent(history):
                    assert asyncio.get_running_loop() is loop  # the same loop: not a second asyncio.run
                    return "ok"
                (await agent_eval.run(agent=agent, turns=[Turn("hi")])).assert_threshold()
            """
        )
    )
    result = pytester.runpytest("--agent-eval-live", *CONFIGS["asyncio-strict"])
    result.assert_outcomes(passed=1)


def test_anyio_marked_test_is_left_to_anyio(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_it=src(
            """
            import anyio
            import pytest
            from tracegrade import Turn

            @pytest.mark.anyio
            @pytest.mark.agent_eval(runs=2)
            async def test_in_anyio(agent_eval, anyio_backend):
                assert anyio.get_current_task() is not None  # inside anyio's runner
                async def agent(history):
                    return "ok"
                (await agent_eval.run(agent=agent, turns=[Turn("hi")])).assert_threshold()
            """
        )
    )
    result = pytester.runpytest("--agent-eval-live", "-p", "no:asyncio")
    result.assert_outcomes(passed=1)


def test_unmarked_coroutine_tests_are_not_run_by_the_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_it="async def test_plain():\n    pass\n")
    result = pytester.runpytest("-p", "no:asyncio", "-p", "no:anyio")
    result.assert_outcomes(failed=1)  # pytest's own "async def functions are not natively supported"
