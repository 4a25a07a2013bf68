"""Vercel AI SDK telemetry (`experimental_telemetry`, scope `ai`), as JavaScript agents export it.

`ai.operationId` names the role: `ai.toolCall` is a tool call (`ai.toolCall.name` / `.id` / `.args` /
`.result`; status ERROR when the tool threw), `ai.generateText.doGenerate` / `ai.streamText.doStream` /
`ai.generateObject.doGenerate` a model request (`ai.usage.*` tokens; the calls it requested in
`ai.response.toolCalls`), and the enclosing `ai.generateText` / `ai.streamText` an agent run named by
`ai.telemetry.functionId`. Content switched off (`recordInputs` / `recordOutputs: false`) leaves no
`.args`, `.result` or `ai.response.toolCalls`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..trajectory import AgentRun, ModelRequest, ToolCall
from ._common import first_int, first_str
from ._dispatch import Gate
from ._messages import Requested
from .genai import new_tool_call, set_failure

if TYPE_CHECKING:
    from ..tree import SpanNode

__all__ = ["agent_run", "classify", "model_request", "name", "recognizes", "requested_calls", "tool_call"]

name = "vercel_ai"

OPERATION = "ai.operationId"
GATE = Gate(keys=frozenset({OPERATION}))
_RUNS = ("ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject")
_REQUESTS = tuple(f"{run}.do{'Stream' if 'stream' in run else 'Generate'}" for run in _RUNS)


def recognizes(node: SpanNode) -> bool:
    return OPERATION in node.attributes


def classify(node: SpanNode) -> AgentRun | ToolCall | ModelRequest | bool:
    """`ai.operationId` selects the one reader to ask (same answers as `recognizes` and the three readers)."""
    attrs = node.attributes
    if OPERATION not in attrs:
        return False
    op = attrs[OPERATION]
    if type(op) is not str:
        return True
    if op in _RUNS:
        return agent_run(node) or True
    if op == "ai.toolCall":
        return tool_call(node) or True
    if op in _REQUESTS:
        return model_request(node) or True
    return True


def agent_run(node: SpanNode) -> AgentRun | None:
    attrs = node.attributes
    if attrs.get(OPERATION) not in _RUNS:
        return None
    return AgentRun(
        name=first_str(attrs, "ai.telemetry.functionId"),
        final_output=attrs.get("ai.response.text"),
        input_tokens=first_int(attrs, "ai.usage.inputTokens", "ai.usage.promptTokens"),
        output_tokens=first_int(attrs, "ai.usage.outputTokens", "ai.usage.completionTokens"),
        span=node,
        dialect=name,
    )


def tool_call(node: SpanNode) -> ToolCall | None:
    attrs = node.attributes
    if attrs.get(OPERATION) != "ai.toolCall" or (tool := first_str(attrs, "ai.toolCall.name")) is None:
        return None
    call = new_tool_call(tool, attrs.get("ai.toolCall.args"), node, name)
    if (call_id := first_str(attrs, "ai.toolCall.id")) is not None:
        call.call_id = call_id
    if (result := attrs.get("ai.toolCall.result")) is not None:
        call.result = result
    set_failure(call, node)
    return call


def model_request(node: SpanNode) -> ModelRequest | None:
    attrs = node.attributes
    if attrs.get(OPERATION) not in _REQUESTS:
        return None
    return ModelRequest(
        model=first_str(attrs, "ai.model.id", "gen_ai.request.model"),
        input_tokens=first_int(attrs, "ai.usage.inputTokens", "ai.usage.promptTokens", "gen_ai.usage.input_tokens"),
        output_tokens=first_int(
            attrs, "ai.usage.outputTokens", "ai.usage.completionTokens", "gen_ai.usage.output_tokens"
        ),
        response_model=first_str(attrs, "ai.response.model", "gen_ai.response.model"),
        provider=first_str(attrs, "ai.model.provider", "gen_ai.system"),
        cache_read_tokens=first_int(attrs, "ai.usage.cachedInputTokens"),
        span=node,
        dialect=name,
    )


def requested_calls(attrs: Mapping[str, Any]) -> list[Requested]:
    """`ai.response.toolCalls`: `[{"toolCallId", "toolName", "input" | "args"}]` (JSON)."""
    raw = attrs.get("ai.response.toolCalls")
    try:
        calls = json.loads(raw) if isinstance(raw, str) else []
    except ValueError:
        return []
    out = []
    for c in calls if isinstance(calls, list) else ():
        if isinstance(c, dict):
            out.append(Requested.of(c.get("toolName"), c.get("input", c.get("args")), c.get("toolCallId")))
    return out
