"""The LangSmith SDK's OpenTelemetry export (`langsmith[otel]`, `LANGSMITH_TRACING_MODE=otel` or `hybrid`):
one span per LangSmith run (LangChain / LangGraph callbacks, `@traceable`), scope `langsmith`.

Recognized by `langsmith.span.kind`, the run type: `tool` is a tool call (`gen_ai.tool.name`, else the run's
name; `gen_ai.tool.call.id`; status ERROR when it raised, the error text in the `exception` event), `llm` a
model request (`gen_ai.request.model`, `gen_ai.usage.*`, the provider from LangChain's `ls_provider`
metadata), and a `chain` run of a LangGraph graph that is not one of a graph's nodes
(`langsmith.metadata.ls_integration` = `langgraph` without `langsmith.metadata.langgraph_node`) an agent
run named by `langsmith.trace.name` (the graph's name). Other kinds are not steps, and a graph run inside
another graph's node carries that node's metadata: it is no run of its own (its calls are credited to the
outer graph).

Content is the run's inputs and outputs, whole, as JSON: `gen_ai.prompt` and `gen_ai.completion`. A tool's
inputs are its arguments (LangChain's tool input: with injected arguments, or `{"input": ...}` for a string
input, so the model's requested ones are preferred, `ARGS_MAY_BE_WRAPPED`); its output is
`{"output": <ToolMessage>}`. A model request's output is LangChain's `generations` whose messages (serialized
`AIMessage`s) hold the requested `tool_calls` (`name`, `args`, `id`); its input `messages` hold the
`ToolMessage`s (`tool_call_id`, `content`) with the results. `LANGSMITH_HIDE_INPUTS` / `_OUTPUTS` make every
run's inputs / outputs `{}`: an empty object is not recorded (a tool without arguments then takes the model's
requested `{}`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..trajectory import AgentRun, ModelRequest, ToolCall
from ._common import first_int, first_str
from ._dispatch import Gate
from ._messages import Requested
from .genai import new_tool_call, set_failure

if TYPE_CHECKING:
    from ..tree import SpanNode

__all__ = [
    "agent_run", "classify", "model_request", "name", "recognizes", "requested_calls", "tool_call", "tool_results",
]  # fmt: skip

name = "langsmith"
KIND = "langsmith.span.kind"
GATE = Gate(keys=frozenset({KIND}))
INPUTS, OUTPUTS = "gen_ai.prompt", "gen_ai.completion"
INTEGRATION, GRAPH_NODE = "langsmith.metadata.ls_integration", "langsmith.metadata.langgraph_node"
RUN_NAME = "langsmith.trace.name"
HIDDEN = "{}"
"""What the client records for a run's inputs or outputs it was told to hide (and for an empty object)."""

ARGS_MAY_BE_WRAPPED = True
"""A tool span records LangChain's tool input, which may hold injected arguments or wrap a string input:
`dialects.extract` prefers the model's requested arguments where they differ."""


def recognizes(node: SpanNode) -> bool:
    return KIND in node.attributes


def classify(node: SpanNode) -> AgentRun | ToolCall | ModelRequest | bool:
    """The run type selects the one reader to ask (same answers as the readable spec)."""
    attrs = node.attributes
    if KIND not in attrs:
        return False
    kind = attrs[KIND]
    if kind == "tool":
        return _tool_call(node) or True
    if kind == "llm":
        return _model_request(node)
    if kind == "chain":
        return _agent_run(node) or True
    return True


def agent_run(node: SpanNode) -> AgentRun | None:
    if node.attributes.get(KIND) != "chain":
        return None
    return _agent_run(node)


def _agent_run(node: SpanNode) -> AgentRun | None:
    """`agent_run` of a `chain` span: a LangGraph graph's run, not one of its nodes."""
    attrs = node.attributes
    if attrs.get(INTEGRATION) != "langgraph" or GRAPH_NODE in attrs:
        return None
    return AgentRun(name=first_str(attrs, RUN_NAME) or node.name or None, span=node, dialect=name)


def tool_call(node: SpanNode) -> ToolCall | None:
    if node.attributes.get(KIND) != "tool":
        return None
    return _tool_call(node)


def _tool_call(node: SpanNode) -> ToolCall | None:
    """`tool_call` of a `tool` span."""
    attrs = node.attributes
    tool = first_str(attrs, "gen_ai.tool.name", RUN_NAME) or node.name or None
    if tool is None:
        return None
    raw = attrs.get(INPUTS)
    call = new_tool_call(tool, None if raw == HIDDEN else raw, node, name)
    if isinstance(call_id := attrs.get("gen_ai.tool.call.id"), str) and call_id:
        call.call_id = call_id
    if (result := _tool_result(attrs.get(OUTPUTS))) is not None:
        call.result = result
    set_failure(call, node)
    if call.status == "error" and not node.status_message and (error := _exception(node)) is not None:
        call.error = error
    return call


def _tool_result(raw: Any) -> Any:
    """The content of the `ToolMessage` in a tool run's outputs, else the recorded output."""
    if not isinstance(raw, str) or raw == HIDDEN:
        return None
    try:
        doc = json.loads(raw)
    except ValueError:
        return raw
    output = doc.get("output", doc) if isinstance(doc, dict) else doc
    message = _message(output)
    if message is not None and message.get("type") == "tool" and "content" in message:
        return message["content"]
    return output


def _exception(node: SpanNode) -> str | None:
    """The run's error as the client records it (`exception.message`: the error's repr, then its traceback)."""
    for event in node.events:
        if event.name == "exception" and isinstance(text := event.attributes.get("exception.message"), str):
            return text.partition("Traceback (most recent call last)")[0].strip() or None
    return None


def model_request(node: SpanNode) -> ModelRequest | None:
    if node.attributes.get(KIND) != "llm":
        return None
    return _model_request(node)


def _model_request(node: SpanNode) -> ModelRequest:
    attrs = node.attributes
    return ModelRequest(
        model=first_str(attrs, "gen_ai.request.model", "langsmith.metadata.ls_model_name", "gen_ai.response.model"),
        input_tokens=first_int(attrs, "gen_ai.usage.input_tokens"),
        output_tokens=first_int(attrs, "gen_ai.usage.output_tokens"),
        response_model=first_str(attrs, "gen_ai.response.model"),
        provider=first_str(attrs, "langsmith.metadata.ls_provider", "gen_ai.system"),
        span=node,
        dialect=name,
    )


def _message(value: Any) -> dict[str, Any] | None:
    """A LangChain message as recorded: serialized (`{"lc": 1, "kwargs": {...}}`) or as a plain dict."""
    if not isinstance(value, dict):
        return None
    kwargs = value.get("kwargs")
    return kwargs if value.get("lc") == 1 and isinstance(kwargs, dict) else value


def _messages(raw: Any, key: str, marker: str) -> Iterator[dict[str, Any]]:
    """The messages under `key` of a run's recorded inputs or outputs (lists nested one per prompt), when the
    JSON text holds `marker` at all."""
    if not isinstance(raw, str) or marker not in raw:
        return
    try:
        doc = json.loads(raw)
    except ValueError:
        return
    items = doc.get(key) if isinstance(doc, dict) else None
    for item in items if isinstance(items, list) else ():
        for entry in item if isinstance(item, list) else (item,):
            if key == "generations" and isinstance(entry, dict):
                entry = entry.get("message")
            if (message := _message(entry)) is not None:
                yield message


def requested_calls(attrs: Mapping[str, Any]) -> list[Requested]:
    """The tool calls of the messages a model request generated (`gen_ai.completion`)."""
    out = []
    for message in _messages(attrs.get(OUTPUTS), "generations", '"tool_calls"'):
        for tc in message.get("tool_calls") or ():
            if isinstance(tc, dict):
                out.append(Requested.of(tc.get("name"), tc.get("args"), tc.get("id")))
    return out


def tool_results(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """`{call_id: content}` of the tool messages a model request was given (`gen_ai.prompt`)."""
    out: dict[str, Any] = {}
    for message in _messages(attrs.get(INPUTS), "messages", '"tool_call_id"'):
        if message.get("type") == "tool" and isinstance(call_id := message.get("tool_call_id"), str):
            out[call_id] = message.get("content")
    return out
