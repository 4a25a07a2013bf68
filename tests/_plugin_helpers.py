"""Shared by the pytester-driven plugin tests: a clean environment and small agent snippets."""

from __future__ import annotations

import textwrap

import pytest

from tracegrade.pytest_plugin.config import ENV_VARS

# pydantic-ai is imported here, once, so the inner pytest sessions (which drop modules they import
# themselves) do not re-import it for every test.
import pydantic_ai  # isort: skip
import pydantic_ai.models.function  # noqa: F401  # isort: skip


@pytest.fixture(autouse=True)
def clean_agent_eval_env(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """No EVAL_LIVE / AGENT_EVAL_* from the outer environment leaks into a test; inner pytest
    sessions get an ini file that keeps pytest-asyncio quiet."""
    for var in [*ENV_VARS.values(), "EVAL_LIVE"]:
        monkeypatch.delenv(var, raising=False)
    if "pytester" in request.fixturenames:
        pytester: pytest.Pytester = request.getfixturevalue("pytester")
        pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


def assert_in_order(text: str, *parts: str) -> None:
    """Each part occurs in `text`, after the previous one (plain substrings, no globbing)."""
    pos = 0
    for part in parts:
        found = text.find(part, pos)
        assert found >= 0, f"{part!r} not found after position {pos} in:\n{text}"
        pos = found + len(part)


def src(code: str) -> str:
    return textwrap.dedent(code).lstrip("\n")


# An instrumented Pydantic AI agent (written into the inner test projects): each line of the user
# message is `tool {json args}`; its FunctionModel calls them one per response, then replies.
PYDANTIC_AGENT = src(
    """
    import json
    from pydantic_ai import Agent, InstrumentationSettings
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel


    def _parts(messages, kind):
        return [p for m in messages for p in getattr(m, "parts", []) if p.part_kind == kind]


    def make_agent(include_content=True, reply="done"):
        def script(messages, info: AgentInfo):
            last = max(i for i, m in enumerate(messages) if _parts([m], "user-prompt"))
            prompt = _parts([messages[last]], "user-prompt")[-1].content
            steps = [line.split(" ", 1) for line in prompt.splitlines() if line.strip()]
            made = len(_parts(messages[last:], "tool-call"))
            if made < len(steps):
                name, args = steps[made][0], json.loads(steps[made][1]) if len(steps[made]) > 1 else {}
                call_id = f"c{len(_parts(messages, 'tool-call'))}"
                return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=call_id)])
            return ModelResponse(parts=[TextPart(reply)])

        agent = Agent(FunctionModel(script), name="shop")
        agent.instrument = InstrumentationSettings(include_content=include_content)

        @agent.tool_plain
        def search(q: str) -> str:
            return f"results for {q}"

        @agent.tool_plain
        def fetch(id: int) -> str:
            return f"item {id}"

        @agent.tool_plain
        def book(time: str, date: str = "today") -> str:
            return f"booked {date} {time}"

        return agent
    """
)
