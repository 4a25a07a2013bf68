"""Real Pydantic AI agents for tests: a FunctionModel that calls a scripted list of tools."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from pydantic_ai import Agent, InstrumentationSettings, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tracegrade import Capture, capture

Step = tuple[str, dict[str, Any]]
Response = Step | list[Step]  # a list: parallel calls issued by one model response


def scripted_agent(
    steps: Sequence[Response],
    *,
    tools: Sequence[str] | None = None,
    fail: Sequence[int] = (),
    reply: str = "done",
    include_content: bool = True,
    tracer_provider: TracerProvider | None = None,
    name: str = "agent",
    sleep: dict[str, float] | None = None,
) -> Agent[None, str]:
    """An agent whose model calls `steps` one per response; attempts whose index is in `fail` raise
    ModelRetry (the model then repeats that step)."""
    attempts: list[int] = []

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = sum(isinstance(m, ModelResponse) for m in messages)
        index = done - sum(1 for a in attempts if a in fail)
        if index < len(steps):
            step = steps[index]
            group = step if isinstance(step, list) else [step]
            parts = [ToolCallPart(t, a, tool_call_id=f"call_{done}_{k}") for k, (t, a) in enumerate(group)]
            return ModelResponse(parts=parts)
        return ModelResponse(parts=[TextPart(reply)])

    agent: Agent[None, str] = Agent(FunctionModel(script), name=name)
    agent.instrument = InstrumentationSettings(tracer_provider=tracer_provider, include_content=include_content)
    names = [t for step in steps for t, _ in (step if isinstance(step, list) else [step])]
    for tool in sorted(set(tools or names)):
        _add_tool(agent, tool, attempts, fail, (sleep or {}).get(tool, 0.0))
    return agent


def _add_tool(agent: Agent[None, str], tool: str, attempts: list[int], fail: Sequence[int], delay: float) -> None:
    async def run(**kwargs: Any) -> str:
        if delay:
            await asyncio.sleep(delay)
        attempt = len(attempts)
        attempts.append(attempt)
        if attempt in fail:
            raise ModelRetry(f"{tool} failed, try again")
        return f"{tool} ok"

    run.__name__ = tool
    agent.tool_plain(name=tool)(run)


def run_captured(steps: Sequence[Response], **kwargs: Any) -> Capture:
    agent = scripted_agent(steps, **kwargs)
    with capture() as cap:
        agent.run_sync("go")
    return cap
