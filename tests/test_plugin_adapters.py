"""Framework adapters: each runs the framework's agent and returns reply, tool calls and messages.

Pydantic AI is driven for real (FunctionModel agents, instrumented or not). OpenAI, LangChain and
smolagents are not installed here: their agents are duck-typed objects with exactly the attributes
and call signatures the adapters use (`client.chat.completions.create(model=, messages=)` →
`choices[0].message.{content, tool_calls[].{id, function.{name, arguments}}}`; `await
runnable.ainvoke({"messages": ...})` → a message with `content` / `tool_calls` dicts or
`{"messages": [...]}`; `agent.run(task, reset=)` and `agent.memory.steps[].tool_calls[].{name,
arguments, id}`)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from _agents import scripted_agent
from tracegrade.evaluators import ToolCallArgsEvaluator
from tracegrade.pytest_plugin.adapters import (
    AdapterReply,
    LangChainAdapter,
    OpenAIAdapter,
    PydanticAIAdapter,
    SmolagentsAdapter,
    coerce_args,
)
from tracegrade.pytest_plugin.session import EvalSession
from tracegrade.pytest_plugin.transcript import Expect, Turn

HISTORY = [{"role": "user", "content": "book me"}]


def _expect_args(tool: str, args: dict[str, Any]) -> Expect:
    return Expect(evaluators=[ToolCallArgsEvaluator(tool=tool, args=args, mode="exact")])


# --- pydantic-ai ---------------------------------------------------------------------------------------


def test_pydantic_ai_adapter_returns_reply_tool_calls_and_messages() -> None:
    agent = scripted_agent([("book_slot", {"time": "10am"})], reply="Booked.")
    agent.instrument = False
    out = asyncio.run(PydanticAIAdapter(agent)(HISTORY))
    assert isinstance(out, AdapterReply)
    reply, calls = out  # unpacks like pytest-agent-eval's (reply, tool_calls)
    assert reply == "Booked." and calls == ["book_slot"]
    assert (calls[0].args, calls[0].call_id) == ({"time": "10am"}, "call_0_0")
    assert any(getattr(p, "tool_name", None) == "book_slot" for m in out.messages for p in m.parts)


def test_uninstrumented_pydantic_ai_agent_is_graded_on_the_calls_the_adapter_returns() -> None:
    agent = scripted_agent([("book_slot", {"time": "10am"})])
    agent.instrument = False
    result = EvalSession(threshold=1.0).run_sync(
        PydanticAIAdapter(agent), [Turn("book", expect=_expect_args("book_slot", {"time": "10am"}))]
    )
    turn = result.runs[0].turn_results[0]
    assert result.passed and turn.tool_calls_source == "returned"


def test_spans_give_the_calls_and_the_adapters_messages_fill_their_missing_arguments() -> None:
    agent = scripted_agent([("book_slot", {"time": "10am"})], include_content=False)
    result = EvalSession(threshold=1.0).run_sync(
        PydanticAIAdapter(agent), [Turn("book", expect=_expect_args("book_slot", {"time": "10am"}))]
    )
    turn = result.runs[0].turn_results[0]
    assert turn.tool_calls_source == "spans"
    assert turn.tool_calls[0].args == {"time": "10am"} and turn.tool_calls[0].args_source == "messages"
    assert result.passed, result.describe_failures()


def test_pydantic_ai_adapter_keeps_the_system_prompt_and_history_on_later_turns() -> None:
    seen: list[list[str]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append([f"{p.part_kind}:{getattr(p, 'content', '')}" for m in messages for p in m.parts])
        return ModelResponse(parts=[TextPart("ok")])

    adapter = PydanticAIAdapter(Agent(FunctionModel(model), system_prompt="You are a pirate."))
    history = [
        {"role": "user", "content": "turn 1"},
        {"role": "assistant", "content": "prev reply"},
        {"role": "user", "content": "turn 2"},
    ]
    asyncio.run(adapter(history))
    assert seen == [["system-prompt:You are a pirate.", "user-prompt:turn 1", "text:prev reply", "user-prompt:turn 2"]]


# --- OpenAI (duck-typed AsyncOpenAI client) ------------------------------------------------------------


class _Completions:
    def __init__(self, message: Any) -> None:
        self.message = message
        self.calls: list[dict[str, Any]] = []

    async def create(self, *, model: str, messages: list[dict[str, Any]]) -> Any:
        self.calls.append({"model": model, "messages": messages})
        return SimpleNamespace(choices=[SimpleNamespace(message=self.message)])


def _openai_client(content: str | None, *calls: tuple[str, str, str]) -> Any:
    tool_calls = [
        SimpleNamespace(id=i, type="function", function=SimpleNamespace(name=n, arguments=a)) for i, n, a in calls
    ]
    message = SimpleNamespace(role="assistant", content=content, tool_calls=tool_calls or None)
    return SimpleNamespace(chat=SimpleNamespace(completions=_Completions(message)))


def test_openai_adapter_sends_the_conversation_and_decodes_tool_arguments() -> None:
    client = _openai_client("Booking it.", ("call_1", "book_slot", '{"time": "10am"}'), ("call_2", "ping", "not json"))
    history = [{"role": "user", "content": "book", "audio": "/x/book.wav"}]
    reply, calls = asyncio.run(OpenAIAdapter(client, model="gpt-x", system_prompt="Be brief.")(history))
    assert client.chat.completions.calls == [
        {
            "model": "gpt-x",
            "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "book"}],
        }
    ]
    assert reply == "Booking it." and calls == ["book_slot", "ping"]
    assert calls[0].args == {"time": "10am"} and calls[0].call_id == "call_1"
    assert not calls[1].args_recorded  # arguments that are not a JSON object are "not recorded", not {}


def test_openai_adapter_reply_without_content_is_empty_and_graded_on_returned_calls() -> None:
    client = _openai_client(None, ("call_1", "book_slot", '{"time": "10am"}'))
    result = EvalSession(threshold=1.0).run_sync(
        OpenAIAdapter(client, model="gpt-x"), [Turn("book", expect=_expect_args("book_slot", {"time": "10am"}))]
    )
    turn = result.runs[0].turn_results[0]
    assert result.passed and turn.reply == "" and turn.tool_calls_source == "returned"


# --- LangChain (duck-typed Runnable) -------------------------------------------------------------------


class _Runnable:
    def __init__(self, result: Any) -> None:
        self.result = result
        self.inputs: list[Any] = []

    async def ainvoke(self, payload: Any) -> Any:
        self.inputs.append(payload)
        return self.result


def _ai(content: Any, *calls: tuple[str, dict[str, Any], str]) -> Any:
    return SimpleNamespace(content=content, tool_calls=[{"name": n, "args": a, "id": i} for n, a, i in calls])


def test_langchain_adapter_reads_a_message_result() -> None:
    runnable = _Runnable(_ai("Booked!", ("book_slot", {"time": "10am"}, "call_1")))
    reply, calls = asyncio.run(LangChainAdapter(runnable)(HISTORY))
    assert runnable.inputs == [{"messages": HISTORY}]
    assert reply == "Booked!" and calls == ["book_slot"] and calls[0].args == {"time": "10am"}


def test_langchain_adapter_reads_every_tool_call_of_a_graph_state_and_the_last_reply() -> None:
    state = {
        "messages": [
            SimpleNamespace(content="book me", tool_calls=[]),
            _ai("", ("search", {"q": "slots"}, "c1")),
            SimpleNamespace(content="3 slots", tool_calls=None),  # a ToolMessage
            _ai([{"type": "text", "text": "Booked "}, {"type": "text", "text": "10am"}]),
        ]
    }
    out = asyncio.run(LangChainAdapter(_Runnable(state))(HISTORY))
    assert out.reply == "Booked 10am" and list(out.tool_calls) == ["search"]
    assert out.messages == [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "search", "arguments": {"q": "slots"}}],
        }
    ]


# --- smolagents (duck-typed agent) ---------------------------------------------------------------------


class _SmolAgent:
    """`run(task, reset=True)` appends one memory step per call listed for the task."""

    def __init__(self, script: dict[str, list[tuple[str, Any]]]) -> None:
        self.script = script
        self.memory = SimpleNamespace(steps=[])
        self.resets: list[bool] = []

    def run(self, task: str, reset: bool = True) -> Any:
        self.resets.append(reset)
        if reset:
            self.memory.steps = []
        for n, (name, args) in enumerate(self.script[task]):
            call = SimpleNamespace(name=name, arguments=args, id=f"{task}-{n}")
            self.memory.steps.append(SimpleNamespace(tool_calls=[call]))
        return 42 if task == "count" else f"did {task}"


def test_smolagents_adapter_returns_the_calls_of_this_turn_without_internal_tools() -> None:
    agent = _SmolAgent(
        {"book me": [("book_slot", {"time": "10am"}), ("final_answer", {"answer": "ok"})], "count": [("tally", "{}")]}
    )
    adapter = SmolagentsAdapter(agent)
    reply, calls = asyncio.run(adapter(HISTORY))
    assert reply == "did book me" and calls == ["book_slot"] and calls[0].args == {"time": "10am"}
    second = [*HISTORY, {"role": "assistant", "content": reply}, {"role": "user", "content": "count"}]
    reply, calls = asyncio.run(adapter(second))
    assert (reply, calls, calls[0].args) == ("42", ["tally"], {})
    assert agent.resets == [True, False]
    _, with_internal = asyncio.run(SmolagentsAdapter(agent, include_internal_tools=True)(HISTORY))
    assert with_internal == ["book_slot", "final_answer"]


# --- shared ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("adapter", "message"),
    [
        (PydanticAIAdapter, "PydanticAIAdapter expects a pydantic-ai Agent with an async .run() method, got int"),
        (LangChainAdapter, "LangChainAdapter expects a LangChain Runnable with an .ainvoke() method"),
        (SmolagentsAdapter, "SmolagentsAdapter expects a smolagents agent with .run() and .memory.steps, got int"),
    ],
)
def test_adapters_reject_objects_that_are_not_the_frameworks_agent(adapter: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        adapter(1)
    with pytest.raises(TypeError, match="OpenAIAdapter expects an AsyncOpenAI-compatible client"):
        OpenAIAdapter(1, model="m")


@pytest.mark.parametrize(
    ("adapter", "install"),
    [
        (PydanticAIAdapter, "pip install pydantic-ai-slim"),
        (LangChainAdapter, "pip install 'tracegrade[langchain]'"),
        (SmolagentsAdapter, "pip install 'tracegrade[smolagents]'"),
        (lambda obj: OpenAIAdapter(obj, model="m"), "pip install 'tracegrade[openai]'"),
    ],
)
def test_an_adapter_given_another_object_says_what_to_install(adapter: Any, install: str) -> None:
    with pytest.raises(TypeError) as excinfo:
        adapter(object())
    assert str(excinfo.value).endswith(f"; make sure its framework is installed: {install}")


def test_pydantic_ai_adapter_without_pydantic_ai_says_what_to_install() -> None:
    """A real failed import: pydantic_ai is blocked in a fresh interpreter before tracegrade loads."""
    code = textwrap.dedent(
        """\
        import sys
        sys.modules["pydantic_ai"] = None  # `import pydantic_ai...` now raises ImportError
        from tracegrade.adapters.pydantic_ai import PydanticAIAdapter

        class Agent:
            async def run(self, prompt, message_history=None): ...

        try:
            PydanticAIAdapter(Agent())
        except ImportError as e:
            print(type(e).__name__, e.name, "|", e)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.startswith("ImportError pydantic_ai.messages | PydanticAIAdapter needs 'pydantic_ai.messages'")
    assert out.stdout.rstrip().endswith("; pip install pydantic-ai-slim"), out.stdout


def test_coerce_args_keeps_objects_and_reports_anything_else_as_unknown() -> None:
    assert coerce_args({"a": 1}) == {"a": 1}
    assert coerce_args(json.dumps({"a": [1]})) == {"a": [1]}
    assert [coerce_args(v) for v in ("[1]", "nope", None, 3)] == [None, None, None, None]
