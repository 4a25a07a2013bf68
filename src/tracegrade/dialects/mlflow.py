"""MLflow Tracing (`mlflow` / `mlflow-tracing`): `@mlflow.trace`, `mlflow.start_span` and the autolog
integrations (`mlflow.openai.autolog()`, `mlflow.langchain.autolog()`, ...), as MLflow exports them over OTLP.

Every attribute value MLflow writes is JSON text (a string is quoted: `mlflow.spanType` = `"TOOL"`).
Recognized by `mlflow.spanType`: `TOOL` is a tool call (named after the span; `mlflow.spanInputs` the keyword
arguments; the `tool_call_id` attribute LangChain's callback records, the model's call id; `mlflow.spanOutputs`
the result, a LangChain `ToolMessage`'s content; `null` inputs or outputs, as a masking span processor may leave
them, are not recorded; status ERROR and the `exception` event when it raised), `CHAT_MODEL` and `LLM` a model
request (`mlflow.llm.model`, else the `model` invocation parameter; tokens from
`mlflow.chat.tokenUsage`; `mlflow.llm.provider`), `AGENT` an agent run named after the span (its output the final
output), and a `CHAIN` span of a LangGraph graph that is not one of a graph's nodes (its `metadata` attribute has
`ls_integration` = `langgraph` and no `langgraph_node`) an agent run named after the graph, the last AI message
of its output the final output. Other span types are not steps.

A model request's `mlflow.spanOutputs` is the OpenAI chat completion (LangChain's messages are recorded in the
same shape): `choices[].message.tool_calls` hold the requested calls; its `mlflow.spanInputs` `messages` hold the
`role: tool` messages with the results. A streamed OpenAI request's output is the chunks reduced to text only
(no tool calls). MLflow has no setting that leaves inputs and outputs out; `mlflow.tracing.configure(
span_processors=[...])` runs the user's functions over each span before export, which may mask them.
With `MLFLOW_ENABLE_OTEL_GENAI_SEMCONV=true` MLflow writes `gen_ai.*` attributes instead (read by `genai`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..trajectory import AgentRun, ModelRequest, ToolCall
from ._common import to_int
from ._dispatch import Gate
from ._messages import Requested, tool_calls_in
from .genai import new_tool_call, set_failure

if TYPE_CHECKING:
    from ..tree import SpanNode

__all__ = [
    "agent_run", "classify", "model_request", "name", "recognizes", "requested_calls", "tool_call", "tool_results",
]  # fmt: skip

name = "mlflow"
SPAN_TYPE = "mlflow.spanType"
GATE = Gate(keys=frozenset({SPAN_TYPE}))
INPUTS, OUTPUTS = "mlflow.spanInputs", "mlflow.spanOutputs"
MODEL, PROVIDER, USAGE = "mlflow.llm.model", "mlflow.llm.provider", "mlflow.chat.tokenUsage"
METADATA, CALL_ID = "metadata", "tool_call_id"
_TOOL, _AGENT, _CHAIN = '"TOOL"', '"AGENT"', '"CHAIN"'
_MODEL_TYPES = frozenset({'"CHAT_MODEL"', '"LLM"'})
_NULL = "null"
"""Inputs or outputs a span processor set to None: not recorded."""

ARGS_MAY_BE_WRAPPED = True
"""A LangChain tool span records LangChain's tool input (injected arguments, `{"input": ...}` for a string input):
`dialects.extract` prefers the model's requested arguments where they differ."""


def recognizes(node: SpanNode) -> bool:
    return SPAN_TYPE in node.attributes


def classify(node: SpanNode) -> AgentRun | ToolCall | ModelRequest | bool:
    """The span type selects the one reader to ask (same answers as the readable spec)."""
    attrs = node.attributes
    if SPAN_TYPE not in attrs:
        return False
    kind = attrs[SPAN_TYPE]
    if kind == _TOOL:
        return _tool_call(node) or True
    if kind in _MODEL_TYPES:
        return _model_request(node)
    if kind in (_AGENT, _CHAIN):
        return _agent_run(node) or True
    return True


def _decoded(raw: Any) -> Any:
    """An attribute as MLflow wrote it: JSON text decoded (text that is not JSON as is)."""
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _text(attrs: Mapping[str, Any], key: str) -> str | None:
    value = _decoded(attrs.get(key))
    return value if isinstance(value, str) and value else None


def agent_run(node: SpanNode) -> AgentRun | None:
    if node.attributes.get(SPAN_TYPE) not in (_AGENT, _CHAIN):
        return None
    return _agent_run(node)


def _agent_run(node: SpanNode) -> AgentRun | None:
    """`agent_run` of an `AGENT` or `CHAIN` span."""
    attrs = node.attributes
    outputs = _decoded(attrs.get(OUTPUTS))
    if attrs[SPAN_TYPE] == _AGENT:
        return AgentRun(name=node.name or None, final_output=outputs, span=node, dialect=name)
    raw = attrs.get(METADATA)
    if not isinstance(raw, str) or '"langgraph"' not in raw:
        return None
    metadata = _decoded(raw)
    if not isinstance(metadata, dict) or metadata.get("ls_integration") != "langgraph":
        return None
    if "langgraph_node" in metadata:
        return None  # one of a graph's nodes, or a graph run inside a node (its calls are the outer graph's)
    return AgentRun(name=node.name or None, final_output=_last_ai_text(outputs), span=node, dialect=name)


def _last_ai_text(outputs: Any) -> Any:
    """The content of the last AI message of a graph's `{"messages": [...]}` output, else None."""
    messages = outputs.get("messages") if isinstance(outputs, dict) else None
    if not isinstance(messages, list) or not messages:
        return None
    last = messages[-1]
    if isinstance(last, dict) and last.get("type") == "ai" and last.get("content"):
        return last["content"]
    return None


def tool_call(node: SpanNode) -> ToolCall | None:
    if node.attributes.get(SPAN_TYPE) != _TOOL:
        return None
    return _tool_call(node)


def _tool_call(node: SpanNode) -> ToolCall | None:
    """`tool_call` of a `TOOL` span (None for a span without a name)."""
    attrs = node.attributes
    if not node.name:
        return None
    raw = attrs.get(INPUTS)
    call = new_tool_call(node.name, None if raw == _NULL else raw, node, name)
    if (call_id := _text(attrs, CALL_ID)) is not None:
        call.call_id = call_id
    if OUTPUTS in attrs and attrs[OUTPUTS] != _NULL:
        result = _decoded(attrs[OUTPUTS])
        if isinstance(result, dict) and result.get("type") == "tool" and "content" in result:
            result = result["content"]  # a LangChain ToolMessage
        call.result = result
    set_failure(call, node)
    if call.status == "error" and not node.status_message:
        for event in node.events:
            if event.name == "exception" and isinstance(text := event.attributes.get("exception.message"), str):
                call.error = text
                break
    return call


def model_request(node: SpanNode) -> ModelRequest | None:
    if node.attributes.get(SPAN_TYPE) not in _MODEL_TYPES:
        return None
    return _model_request(node)


def _model_request(node: SpanNode) -> ModelRequest:
    attrs = node.attributes
    usage = _decoded(attrs.get(USAGE))
    if not isinstance(usage, dict):
        usage = {}
    return ModelRequest(
        model=_text(attrs, MODEL) or _text(attrs, "model"),
        input_tokens=to_int(usage.get("input_tokens")),
        output_tokens=to_int(usage.get("output_tokens")),
        cache_read_tokens=to_int(usage.get("cache_read_input_tokens")),
        provider=_text(attrs, PROVIDER),
        span=node,
        dialect=name,
    )


def _recorded(raw: Any, marker: str) -> Any:
    """A span's recorded inputs or outputs as JSON, when the text holds `marker` at all (else None)."""
    if not isinstance(raw, str) or marker not in raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _messages(items: Any) -> Iterator[dict[str, Any]]:
    """The messages of a recorded list (lists nested one per prompt, as LangChain records them)."""
    for item in items if isinstance(items, list) else ():
        for entry in item if isinstance(item, list) else (item,):
            if isinstance(entry, dict):
                yield entry


def requested_calls(attrs: Mapping[str, Any]) -> list[Requested]:
    """The tool calls a model request generated: `choices[].message.tool_calls` of `mlflow.spanOutputs`."""
    doc = _recorded(attrs.get(OUTPUTS), '"tool_calls"')
    choices = doc.get("choices") if isinstance(doc, dict) else None
    out = []
    for choice in choices if isinstance(choices, list) else ():
        message = choice.get("message") if isinstance(choice, dict) else None
        if isinstance(message, dict):
            out.extend(tool_calls_in(message.get("tool_calls")))
    return out


def tool_results(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """`{call_id: content}` of the `role: tool` messages in `mlflow.spanInputs` `messages`."""
    doc = _recorded(attrs.get(INPUTS), '"tool_call_id"')
    out: dict[str, Any] = {}
    if not isinstance(doc, dict):
        return out
    for message in _messages(doc.get("messages")):
        if message.get("role") == "tool" and isinstance(call_id := message.get("tool_call_id"), str):
            out[call_id] = message.get("content")
    return out
