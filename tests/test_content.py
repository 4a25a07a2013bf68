"""instrument_content(): content capture for agents without settings of their own, undone on exit."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from pydantic_ai import Agent, InstrumentationSettings
from pydantic_ai.models.test import TestModel

from tracegrade import NOT_RECORDED, capture, grade, instrument_content
from tracegrade.evaluators import ArgumentCorrectness


def _agent(name: str) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(TestModel(), name=name)

    @agent.tool_plain
    def lookup(order_id: str) -> str:
        return "shipped"

    return agent


def test_agents_without_settings_record_content_only_inside_the_block() -> None:
    tp = TracerProvider()
    agent = _agent("plain")
    before = Agent._instrument_default
    with instrument_content(tracer_provider=tp), capture(provider=tp) as cap:
        agent.run_sync("go")
    assert Agent._instrument_default is before
    [call] = cap.trajectory.tool_calls
    assert call.args == {"order_id": "a"}


def test_agents_with_their_own_settings_keep_them_and_the_reason_names_them() -> None:
    tp = TracerProvider()
    private = _agent("private")
    private.instrument = InstrumentationSettings(tracer_provider=tp, include_content=False)
    with instrument_content(tracer_provider=tp), capture(provider=tp) as cap:
        private.run_sync("go")
    [call] = cap.trajectory.tool_calls
    assert call.args is NOT_RECORDED
    [result] = grade(cap, [ArgumentCorrectness("lookup", {"order_id": "a"})])
    assert result.outcome == "not_evaluated" and "by agent 'private'" in result.reasoning
