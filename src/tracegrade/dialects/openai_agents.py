"""The OpenAI Agents SDK as Logfire records it (`logfire.instrument_openai_agents()`, scope `logfire.openai_agents`).

Spans are told apart by `logfire.msg_template`: `Agent run: {name!r}` is an agent run (`name`),
`Function: {name}` a tool call (`name`, `input` = arguments, `output` = result; status ERROR when it
raised; no call id), `Chat completion with {gen_ai.request.model!r}` / `Responses API with ...` a
model request (`gen_ai.usage.*`; the calls it requested in `output`: OpenAI chat messages with
`tool_calls`, or Responses `function_call` items; results in `input` as `tool` messages /
`function_call_output` items). Handoffs, guardrails and the trace/task/turn spans are not steps.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..trajectory import AgentRun, ModelRequest, ToolCall
from ._common import first_int, first_str
from ._dispatch import Gate
from ._messages import Requested, tool_calls_in
from .genai import new_tool_call, set_failure

if TYPE_CHECKING:
    from ..tree import SpanNode

__all__ = [
    "agent_run", "classify", "model_request", "name", "recognizes", "requested_calls", "tool_call", "tool_results",
]  # fmt: skip

name = "openai_agents"
SCOPE = "logfire.openai_agents"
GATE = Gate(scopes=frozenset({SCOPE}))
_TEMPLATE = "logfire.msg_template"
_AGENT, _TOOL = "Agent run: {name!r}", "Function: {name}"
_REQUESTS = ("Chat completion with", "Responses API with")


def recognizes(node: SpanNode) -> bool:
    return node.scope_name == SCOPE


def classify(node: SpanNode) -> AgentRun | ToolCall | ModelRequest | bool:
    """The Logfire message template selects the one reader to ask (same answers as the readable spec)."""
    if node.scope_name != SCOPE:
        return False
    template = node.attributes.get(_TEMPLATE)
    if template == _AGENT:
        return agent_run(node) or True
    if template == _TOOL:
        return tool_call(node) or True
    if isinstance(template, str) and template.startswith(_REQUESTS):
        return model_request(node) or True
    return True


def agent_run(node: SpanNode) -> AgentRun | None:
    if node.attributes.get(_TEMPLATE) != _AGENT:
        return None
    return AgentRun(name=first_str(node.attributes, "name"), span=node, dialect=name)


def tool_call(node: SpanNode) -> ToolCall | None:
    attrs = node.attributes
    if attrs.get(_TEMPLATE) != _TOOL or (tool := first_str(attrs, "name")) is None:
        return None
    raw = attrs.get("input")
    call = new_tool_call(tool, None if raw == "null" else raw, node, name)  # "null": content not recorded
    if (result := attrs.get("output")) is not None:
        call.result = result
    set_failure(call, node)
    return call


def model_request(node: SpanNode) -> ModelRequest | None:
    attrs = node.attributes
    template = attrs.get(_TEMPLATE)
    if not isinstance(template, str) or not template.startswith(_REQUESTS):
        return None
    return ModelRequest(
        model=first_str(attrs, "gen_ai.request.model", "gen_ai.response.model"),
        input_tokens=first_int(attrs, "gen_ai.usage.input_tokens"),
        output_tokens=first_int(attrs, "gen_ai.usage.output_tokens"),
        response_model=first_str(attrs, "gen_ai.response.model"),
        provider=first_str(attrs, "gen_ai.system"),
        span=node,
        dialect=name,
    )


def _items(raw: Any) -> Iterator[dict[str, Any]]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return
    if isinstance(raw, dict):
        raw = raw.get("output", [raw])
    for item in raw if isinstance(raw, list) else ():
        if isinstance(item, dict):
            yield item


def requested_calls(attrs: Mapping[str, Any]) -> list[Requested]:
    out = []
    for item in _items(attrs.get("output")):
        if item.get("type") == "function_call":  # Responses API
            out.append(Requested.of(item.get("name"), item.get("arguments"), item.get("call_id")))
        out.extend(tool_calls_in(item.get("tool_calls")))  # chat completions
    return out


def tool_results(attrs: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in _items(attrs.get("input")):
        if item.get("role") == "tool" and isinstance(item.get("tool_call_id"), str):
            out[item["tool_call_id"]] = item.get("content")
        elif item.get("type") == "function_call_output" and isinstance(item.get("call_id"), str):
            out[item["call_id"]] = item.get("output")
    return out
