"""Agent callables for common frameworks, with pytest-agent-eval's names and signatures.

Each adapter runs the framework's agent on the conversation so far and returns an `AdapterReply`:
the reply text, the tool calls the framework reports and its messages. Tool calls still come from
spans when the turn recorded any (instrument the framework to get them); the returned ones are used
only when no tool span was seen, and the messages fill arguments the spans lack (matched by tool
call id). An `AdapterReply` unpacks as `(reply, tool_calls)`, the pair pytest-agent-eval's adapters
return. The frameworks are imported only when an adapter needs them; an adapter given an object that
is not its framework's, or missing its framework, says what to install (`INSTALL`).
"""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..trajectory import ToolCall
from .transcript import AgentReply

__all__ = [
    "INSTALL",
    "AdapterReply",
    "LangChainAdapter",
    "OpenAIAdapter",
    "PydanticAIAdapter",
    "SmolagentsAdapter",
    "coerce_args",
]

History = list[dict[str, Any]]

INSTALL: dict[str, str] = {
    "PydanticAIAdapter": "pip install pydantic-ai-slim",  # a dependency of tracegrade: missing only if removed
    "OpenAIAdapter": "pip install 'tracegrade[openai]'",
    "LangChainAdapter": "pip install 'tracegrade[langchain]'",
    "SmolagentsAdapter": "pip install 'tracegrade[smolagents]'",
}
"""What to install for each adapter's framework (the extras are pytest-agent-eval's names)."""


def _install_hint(adapter: str) -> str:
    return f"make sure its framework is installed: {INSTALL[adapter]}"


def _require(module: str, adapter: str) -> None:
    """Import `module` or raise an `ImportError` naming the adapter and what to install."""
    try:
        importlib.import_module(module)
    except ImportError as e:
        message = f"{adapter} needs {module!r}, which cannot be imported ({e}); {INSTALL[adapter]}"
        raise ImportError(message, name=module) from e


class AdapterReply(AgentReply):
    """An `AgentReply` that also unpacks as `(reply, tool_calls)`."""

    def __iter__(self) -> Iterator[Any]:
        return iter((self.reply, list(self.tool_calls)))


def coerce_args(raw: Any) -> dict[str, Any] | None:
    """A framework's tool-call arguments as a dict: a dict as is, JSON object text decoded; None
    (arguments not known) for anything else."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            return None
        return parsed if isinstance(parsed, dict) else None
    return None


def _call(name: str, raw_args: Any, call_id: Any) -> ToolCall:
    args = coerce_args(raw_args)
    fields = {"call_id": str(call_id)} if call_id else {}
    return ToolCall(name, args, **fields) if args is not None else ToolCall(name, **fields)


def _requested(calls: Sequence[tuple[str, Any, Any]]) -> list[dict[str, Any]]:
    """`(name, raw args, call id)` → one assistant message in the OTel JSON form argument recovery reads."""
    parts = [
        {"type": "tool_call", "id": str(call_id), "name": name, "arguments": raw}
        for name, raw, call_id in calls
        if call_id and raw is not None
    ]
    return [{"role": "assistant", "parts": parts}] if parts else []


def _text(content: Any) -> str:
    """Message content as text: a string as is; a list of content blocks → their text, joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b if isinstance(b, str) else b.get("text", "") if isinstance(b, Mapping) else "" for b in content]
        return "".join(t for t in texts if isinstance(t, str))
    return str(content)


def _last_user(history: History) -> str:
    return str(history[-1].get("content", "")) if history else ""


# --- pydantic-ai -----------------------------------------------------------------------------------

_PART_KINDS = frozenset({"tool-call", "builtin-tool-call"})


def _is_tool_call_part(part: Any) -> bool:
    """A tool call (also a provider-side one), not a provider's search of its own tool catalogue."""
    return getattr(part, "part_kind", None) in _PART_KINDS and "Search" not in type(part).__name__


def _to_model_messages(history: History, system_prompts: Sequence[str]) -> list[Any]:
    """OpenAI-style `{"role", "content"}` dicts → pydantic-ai `ModelMessage`s; the agent's static
    system prompts are put first (pydantic-ai adds them only when the history is empty)."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, SystemPromptPart, TextPart, UserPromptPart

    messages: list[Any] = []
    for msg in history:
        role, content = msg.get("role"), _text(msg.get("content"))
        if role == "assistant":
            messages.append(ModelResponse(parts=[TextPart(content=content)]))
        elif role == "system":
            messages.append(ModelRequest(parts=[SystemPromptPart(content=content)]))
        else:
            messages.append(ModelRequest(parts=[UserPromptPart(content=content)]))
    first = messages[0] if messages else None
    if (
        system_prompts
        and isinstance(first, ModelRequest)
        and not any(p.part_kind == "system-prompt" for p in first.parts)
    ):
        first.parts = [*(SystemPromptPart(content=p) for p in system_prompts), *first.parts]
    return messages


class PydanticAIAdapter:
    """`PydanticAIAdapter(agent)`: runs a pydantic-ai `Agent` on the last user message with the
    earlier turns as `message_history`; the messages are `result.all_messages()`."""

    def __init__(self, agent: Any) -> None:
        if not callable(getattr(agent, "run", None)):
            raise TypeError(
                f"PydanticAIAdapter expects a pydantic-ai Agent with an async .run() method, got {type(agent).__name__}; "
                + _install_hint("PydanticAIAdapter")
            )
        _require("pydantic_ai.messages", "PydanticAIAdapter")  # the history is converted to its messages
        self._agent = agent

    async def __call__(self, history: History) -> AdapterReply:
        # static `system_prompt=` strings (pydantic-ai keeps them on a private attribute; dynamic
        # system prompts cannot be recovered, `instructions=` are re-applied by pydantic-ai itself)
        prompts = getattr(self._agent, "_system_prompts", ())
        prompts = tuple(p for p in prompts if isinstance(p, str)) if isinstance(prompts, tuple | list) else ()
        message_history = _to_model_messages(history[:-1], prompts)
        result = await self._agent.run(_last_user(history), message_history=message_history or None)
        messages = list(result.all_messages())  # the history given holds no tool calls: all are this run's
        calls = [
            _call(part.tool_name, part.args_as_dict(), getattr(part, "tool_call_id", None))
            for msg in messages
            for part in getattr(msg, "parts", ())
            if _is_tool_call_part(part)
        ]
        return AdapterReply(_text(result.output), calls, messages)


# --- OpenAI ----------------------------------------------------------------------------------------


class OpenAIAdapter:
    """`OpenAIAdapter(client, model, system_prompt=None)`: one `client.chat.completions.create(model=...,
    messages=...)` call per turn with an `AsyncOpenAI` (or compatible) client."""

    def __init__(self, client: Any, model: str, system_prompt: str | None = None) -> None:
        if not hasattr(client, "chat"):
            raise TypeError(
                "OpenAIAdapter expects an AsyncOpenAI-compatible client with .chat.completions, "
                f"got {type(client).__name__}; " + _install_hint("OpenAIAdapter")
            )
        self._client, self._model, self._system_prompt = client, model, system_prompt

    async def __call__(self, history: History) -> AdapterReply:
        messages: list[dict[str, Any]] = []
        if self._system_prompt:
            messages.append({"role": "system", "content": self._system_prompt})
        # the chat API has no `audio` key on user messages: pass the conversation's text
        messages.extend({k: v for k, v in m.items() if k != "audio"} for m in history)
        response = await self._client.chat.completions.create(model=self._model, messages=messages)
        message = response.choices[0].message
        raw = [(tc.function.name, tc.function.arguments, getattr(tc, "id", None)) for tc in message.tool_calls or ()]
        return AdapterReply(_text(message.content), [_call(*c) for c in raw], _requested(raw))


# --- LangChain -------------------------------------------------------------------------------------


class LangChainAdapter:
    """`LangChainAdapter(runnable)`: `await runnable.ainvoke({"messages": history})`; the result is a
    message (e.g. `AIMessage`) or a graph state `{"messages": [...]}` whose last message is the reply
    (the tool calls are those of every message in it)."""

    def __init__(self, runnable: Any) -> None:
        if not callable(getattr(runnable, "ainvoke", None)):
            raise TypeError(
                "LangChainAdapter expects a LangChain Runnable with an .ainvoke() method "
                f"(a compiled graph or chain), got {type(runnable).__name__}; " + _install_hint("LangChainAdapter")
            )
        self._runnable = runnable

    async def __call__(self, history: History) -> AdapterReply:
        result = await self._runnable.ainvoke({"messages": history})
        if isinstance(result, Mapping) and isinstance(result.get("messages"), list) and result["messages"]:
            produced = list(result["messages"])
        elif hasattr(result, "content"):
            produced = [result]
        else:
            return AdapterReply(_text(result), [], [])
        raw = [
            (tc["name"], tc.get("args"), tc.get("id"))
            for msg in produced
            for tc in getattr(msg, "tool_calls", None) or ()
            if isinstance(tc, Mapping) and isinstance(tc.get("name"), str)
        ]
        return AdapterReply(_text(produced[-1].content), [_call(*c) for c in raw], _requested(raw))


# --- smolagents ------------------------------------------------------------------------------------

_SMOLAGENTS_INTERNAL = frozenset({"python_interpreter", "final_answer"})


class SmolagentsAdapter:
    """`SmolagentsAdapter(agent, include_internal_tools=False)`: runs a smolagents agent
    (`ToolCallingAgent`, `CodeAgent`, ...) on the last user message in a worker thread, resetting its
    memory on the first turn; tool calls are those of the memory steps the run added
    (`python_interpreter` / `final_answer` only with `include_internal_tools`)."""

    def __init__(self, agent: Any, *, include_internal_tools: bool = False) -> None:
        if not callable(getattr(agent, "run", None)) or not hasattr(agent, "memory"):
            raise TypeError(
                f"SmolagentsAdapter expects a smolagents agent with .run() and .memory.steps, got {type(agent).__name__}; "
                + _install_hint("SmolagentsAdapter")
            )
        self._agent = agent
        self._include_internal = include_internal_tools

    async def __call__(self, history: History) -> AdapterReply:
        reset = len(history) <= 1
        before = len(self._agent.memory.steps)
        output = await asyncio.to_thread(self._agent.run, _last_user(history), reset=reset)
        steps = self._agent.memory.steps if reset else self._agent.memory.steps[before:]
        raw = [
            (tc.name, getattr(tc, "arguments", None), getattr(tc, "id", None))
            for step in steps
            for tc in getattr(step, "tool_calls", None) or ()
            if self._include_internal or tc.name not in _SMOLAGENTS_INTERNAL
        ]
        return AdapterReply(_text(output), [_call(*c) for c in raw], _requested(raw))
