"""instrument_content(): content capture for agents without settings of their own, undone on exit.

Agents with settings of their own (the `instrument` attribute, an `Instrumentation` capability) keep
them, and the argument checks' "not recorded" reason names the agent. Also: nesting, exceptions,
restoring the exact previous default, the decorator form (sync and async), and building the settings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from pydantic_ai import Agent, InstrumentationSettings
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.models.test import TestModel

from tracegrade import NOT_RECORDED, capture, grade
from tracegrade.content import content_instrumentation_active, instrument_content
from tracegrade.evaluators import ArgumentCorrectness, ToolCallArgsEvaluator, ToolCorrectness


@pytest.fixture(autouse=True)
def default_restored() -> Iterator[None]:
    before = Agent._instrument_default
    yield
    assert Agent._instrument_default is before
    assert not content_instrumentation_active()


def _agent(name: str, **kwargs: object) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(TestModel(), name=name, **kwargs)  # type: ignore[call-overload]

    @agent.tool_plain
    def lookup(order_id: str) -> str:
        return "shipped"

    return agent


def test_agents_without_settings_record_content_only_inside_the_block() -> None:
    tp = TracerProvider()
    agent = _agent("plain")
    with instrument_content(tracer_provider=tp), capture(provider=tp) as cap:
        agent.run_sync("go")
    [call] = cap.trajectory.tool_calls
    assert call.args == {"order_id": "a"} and call.args_source == "span"
    with capture(provider=tp) as after:
        agent.run_sync("go")
    assert after.spans == []  # the default is off again: the agent is not instrumented any more


def test_agents_with_their_own_settings_keep_them_and_the_reason_names_them() -> None:
    tp = TracerProvider()
    private = _agent("private")
    private.instrument = InstrumentationSettings(tracer_provider=tp, include_content=False)
    with instrument_content(tracer_provider=tp), capture(provider=tp) as cap:
        private.run_sync("go")
    [call] = cap.trajectory.tool_calls
    assert call.args is NOT_RECORDED
    names, args, tool_args = grade(
        cap,
        [
            ToolCorrectness(["lookup"]),
            ArgumentCorrectness("lookup", {"order_id": "a"}),
            ToolCallArgsEvaluator("lookup", {"order_id": "a"}),
        ],
    )
    assert names.passed  # names still grade from spans
    assert args.outcome == "not_evaluated" and "by agent 'private'" in args.reasoning
    assert tool_args.outcome == "not_evaluated" and "by agent 'private'" in tool_args.reasoning


def test_an_instrumentation_capability_keeps_its_settings() -> None:
    tp = TracerProvider()
    settings = InstrumentationSettings(tracer_provider=tp, include_content=False)
    capable = _agent("capable", capabilities=[Instrumentation(settings=settings)])
    plain = _agent("plain")
    with instrument_content(tracer_provider=tp), capture(provider=tp) as cap:
        capable.run_sync("go")
        plain.run_sync("go")
    assert {c.agent: c.args for c in cap.trajectory.tool_calls} == {"capable": NOT_RECORDED, "plain": {"order_id": "a"}}
    assert len(cap.trajectory.agent_runs) == 2  # one instrumentation each: no duplicate spans


def test_the_previous_default_is_restored_exactly_after_nesting_and_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    tp = TracerProvider()
    own = InstrumentationSettings(tracer_provider=tp, include_content=False, version=5)
    monkeypatch.setattr(Agent, "_instrument_default", own)
    with instrument_content() as outer:
        assert Agent._instrument_default is outer and outer.include_content
        # the previous default's other settings are kept (a copy, with content on)
        assert outer is not own and outer.tracer is own.tracer and outer.version == 5
        with pytest.raises(RuntimeError), instrument_content(tracer_provider=tp) as inner:
            assert Agent._instrument_default is inner
            raise RuntimeError("boom")
        assert Agent._instrument_default is outer
        assert content_instrumentation_active()
    assert Agent._instrument_default is own and own.include_content is False


def test_given_settings_are_installed_as_they_are() -> None:
    settings = InstrumentationSettings(tracer_provider=TracerProvider())
    with instrument_content(settings) as installed:
        assert installed is settings and Agent._instrument_default is settings


def test_bad_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="include_content=True"):
        instrument_content(InstrumentationSettings(include_content=False))
    with pytest.raises(ValueError, match="always records content"):
        instrument_content(include_content=False)
    with pytest.raises(TypeError, match="not both"):
        instrument_content(InstrumentationSettings(), version=5)


def test_decorator_form_sync_and_async() -> None:
    tp = TracerProvider()
    agent = _agent("decorated")

    @instrument_content(tracer_provider=tp)
    def sync_run() -> object:
        assert content_instrumentation_active()
        with capture(provider=tp) as cap:
            agent.run_sync("go")
        return cap.trajectory.tool_calls[0].args

    @instrument_content(tracer_provider=tp)
    async def async_run() -> object:
        async with capture(provider=tp) as cap:
            await agent.run("go")
        return cap.trajectory.tool_calls[0].args

    assert sync_run() == {"order_id": "a"}
    assert sync_run() == {"order_id": "a"}  # the same decorator instance, re-entered
    assert asyncio.run(async_run()) == {"order_id": "a"}
    assert not content_instrumentation_active()
