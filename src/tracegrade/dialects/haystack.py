"""Haystack's own tracing (`haystack.tracing` with the `OpenTelemetryTracer` of `opentelemetry-haystack`, or
its `OpenTelemetryConnector`; scope `haystack` by default). `mlflow.haystack.autolog()` exports the same spans
(scope `mlflow.haystack.autolog`, content tags always on, `mlflow.spanType` `null`).

Recognized by span name, whatever the tracer's scope: an Agent's run is `haystack.agent.run` (the Agent has
no name), each loop iteration a `haystack.agent.step`, its model call `haystack.agent.step.llm` and each tool
invocation `haystack.agent.step.tool`.

- A tool span names its tool in `haystack.tool.name` and marks a failed invocation with `haystack.tool.error`
  = true (the span status stays unset); its arguments (`haystack.agent.step.tool.input`, JSON) and result
  (`haystack.agent.step.tool.output`; `{"error": "..."}` for a failed one) are content tags. No call id.
- A model span records nothing but content tags: `haystack.agent.step.llm.output` is the chat generator's
  output as JSON, `{"replies": [ChatMessage]}`, each reply's `meta` holding `model` and OpenAI-style `usage`
  (`prompt_tokens`, `completion_tokens`), its `content` the requested calls (`tool_call`: `tool_name`,
  `arguments`, `id`): the tool spans, which record no call id, take the model's by name and order. The input
  (`haystack.agent.step.llm.input`) is a Python repr of the messages: not read, so results come from the tool
  spans only. Without content the span still marks one request, with no model and no tokens.

Content tags are recorded only with HAYSTACK_CONTENT_TRACING_ENABLED=true (read when `haystack.tracing` is
first imported; `haystack.tracing.tracer.is_content_tracing_enabled` afterwards).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..trajectory import AgentRun, ModelRequest, ToolCall
from ._common import to_int
from ._dispatch import Gate
from ._messages import Requested
from .genai import new_tool_call

if TYPE_CHECKING:
    from ..tree import SpanNode

__all__ = [
    "agent_run", "classify", "model_request", "name", "recognizes", "requested_calls", "tool_call", "tool_results",
]  # fmt: skip

name = "haystack"

RUN, STEP, LLM, TOOL = (
    "haystack.agent.run",
    "haystack.agent.step",
    "haystack.agent.step.llm",
    "haystack.agent.step.tool",
)
GATE = Gate(names=frozenset({RUN, STEP, LLM, TOOL}))
TOOL_NAME, TOOL_ERROR = "haystack.tool.name", "haystack.tool.error"
TOOL_INPUT, TOOL_OUTPUT = "haystack.agent.step.tool.input", "haystack.agent.step.tool.output"
LLM_OUTPUT = "haystack.agent.step.llm.output"


def recognizes(node: SpanNode) -> bool:
    return node.name in GATE.names


def classify(node: SpanNode) -> AgentRun | ToolCall | ModelRequest | bool:
    """The span name selects the one reader to ask (same answers as the readable spec)."""
    span_name = node.name
    if span_name == TOOL:
        return _tool_call(node) or True
    if span_name == LLM:
        return _model_request(node)
    if span_name == RUN:
        return _agent_run(node)
    return span_name == STEP


def agent_run(node: SpanNode) -> AgentRun | None:
    return _agent_run(node) if node.name == RUN else None


def _agent_run(node: SpanNode) -> AgentRun:
    return AgentRun(name=None, span=node, dialect=name)


def tool_call(node: SpanNode) -> ToolCall | None:
    return _tool_call(node) if node.name == TOOL else None


def _tool_call(node: SpanNode) -> ToolCall | None:
    """`tool_call` of a `haystack.agent.step.tool` span: None when it names no tool."""
    attrs = node.attributes
    tool = attrs.get(TOOL_NAME)
    if not isinstance(tool, str) or not tool:
        return None
    call = new_tool_call(tool, attrs.get(TOOL_INPUT), node, name)
    output = attrs.get(TOOL_OUTPUT)
    failed = attrs.get(TOOL_ERROR) is True or node.status == "error"
    if failed:
        call.status = "error"
        call.error = _error_text(output) or node.status_message or "error"
    elif output is not None:
        call.result = output
    return call


def _error_text(output: Any) -> str | None:
    """The error a failed tool span's output records (`{"error": "..."}`), else None."""
    if not isinstance(output, str):
        return None
    try:
        doc = json.loads(output)
    except ValueError:
        return output or None
    error = doc.get("error") if isinstance(doc, dict) else None
    return str(error) if error else None


def model_request(node: SpanNode) -> ModelRequest | None:
    return _model_request(node) if node.name == LLM else None


def _model_request(node: SpanNode) -> ModelRequest:
    """`model_request` of a `haystack.agent.step.llm` span: model and tokens from its replies' `meta`, when
    content tracing recorded them (the tokens summed over the replies)."""
    model = None
    input_tokens = output_tokens = None
    for meta in _reply_metas(node.attributes.get(LLM_OUTPUT)):
        if model is None and isinstance(m := meta.get("model"), str) and m:
            model = m
        usage = meta.get("usage")
        if not isinstance(usage, dict):
            continue
        if (p := to_int(usage.get("prompt_tokens"))) is not None:
            input_tokens = (input_tokens or 0) + p
        if (c := to_int(usage.get("completion_tokens"))) is not None:
            output_tokens = (output_tokens or 0) + c
    return ModelRequest(model=model, input_tokens=input_tokens, output_tokens=output_tokens, span=node, dialect=name)


def requested_calls(attrs: Mapping[str, Any]) -> list[Requested]:
    """The calls a model span's recorded replies ask for: their `tool_call` content parts."""
    out = []
    for reply in _replies(attrs.get(LLM_OUTPUT)):
        content = reply.get("content")
        for part in content if isinstance(content, list) else ():
            call = part.get("tool_call") if isinstance(part, dict) else None
            if isinstance(call, dict):
                out.append(Requested.of(call.get("tool_name"), call.get("arguments"), call.get("id")))
    return out


def tool_results(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """None are read: a model span's input messages are recorded only as a Python repr."""
    return {}


def _reply_metas(raw: Any) -> list[dict[str, Any]]:
    """The `meta` of each reply in a recorded chat generator output."""
    return [r["meta"] for r in _replies(raw) if isinstance(r.get("meta"), dict)]


def _replies(raw: Any) -> list[dict[str, Any]]:
    """The replies (serialized ChatMessages) of a recorded chat generator output, `{"replies": [...]}` as JSON."""
    if not isinstance(raw, str):
        return []
    try:
        doc = json.loads(raw)
    except ValueError:
        return []
    replies = doc.get("replies") if isinstance(doc, dict) else None
    return [r for r in replies if isinstance(r, dict)] if isinstance(replies, list) else []
