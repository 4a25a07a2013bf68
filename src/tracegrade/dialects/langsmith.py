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

Outside LangChain: the outermost `chain` run of a `@traceable` function or a `trace()` block
(`langsmith.metadata.ls_method` = `traceable` / `trace`; its parent is no LangSmith run) is a hand-written agent's
run, named by its run name, its output (`{"output": ...}` for a value that is not a dict) the final output; a
`@traceable(run_type="tool")` run records its keyword arguments as inputs and `{"output": <result>}`, and a call
id only when given one as `tool_call_id` metadata. `wrap_openai`'s `llm` runs record the request's keyword
arguments (`messages`: OpenAI chat messages, `role: tool` ones with the results) and the OpenAI response
(`choices[].message.tool_calls`: `{id, function: {name, arguments}}`). LangSmith's OpenAI Agents SDK processor
(`ls_integration` = `openai-agents-sdk`) makes a `chain` run of each agent span (named after the agent, with the
`output_type` metadata its descendants inherit: the agent's run is the `chain` run that has it and whose parent
does not; the trace, task and turn spans are no runs), `tool` runs of function spans (no call id), and `llm` runs
of generation / response spans, whose inputs are `{"input": [...]}` (chat messages or Responses items,
`function_call_output` ones with the results) and outputs the assistant message, or Responses items
(`function_call`: `call_id`, `name`, `arguments`). Token usage is `gen_ai.usage.*`, else the
`langsmith.metadata.usage_metadata` JSON (kept when outputs are hidden); `gen_ai.system` = `langchain` is the
client's word for an unknown provider.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..trajectory import AgentRun, ModelRequest, ToolCall
from ._common import first_int, first_str, json_value
from ._dispatch import NO_STEP, Gate, NoStep
from ._messages import Requested, tool_calls_in, tool_results_in
from .genai import new_tool_call, set_failure

if TYPE_CHECKING:
    from ..tree import SpanNode

__all__ = [
    "agent_run", "claims", "classify", "model_request", "name", "recognizes", "requested_calls", "tool_call", "tool_results",
]  # fmt: skip

name = "langsmith"
KIND = "langsmith.span.kind"
GATE = Gate(keys=frozenset({KIND}))
INPUTS, OUTPUTS = "gen_ai.prompt", "gen_ai.completion"
INTEGRATION, GRAPH_NODE = "langsmith.metadata.ls_integration", "langsmith.metadata.langgraph_node"
RUN_NAME = "langsmith.trace.name"
METHOD, OUTPUT_TYPE = "langsmith.metadata.ls_method", "langsmith.metadata.output_type"
USAGE = "langsmith.metadata.usage_metadata"
AGENTS_SDK = "openai-agents-sdk"
_DECORATED = ("traceable", "trace")
_UNKNOWN_PROVIDER = "langchain"
HIDDEN = "{}"
"""What the client records for a run's inputs or outputs it was told to hide (and for an empty object)."""

ARGS_MAY_BE_WRAPPED = True
"""A tool span records LangChain's tool input, which may hold injected arguments or wrap a string input:
`dialects.extract` prefers the model's requested arguments where they differ."""


def recognizes(node: SpanNode) -> bool:
    return KIND in node.attributes


def classify(node: SpanNode) -> AgentRun | ToolCall | ModelRequest | NoStep | bool:
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
    if kind == "prompt":
        return NO_STEP
    return True


def claims(node: SpanNode) -> bool:
    """A `prompt` run (a prompt template rendered; LangSmith may give it a model operation): no step, for this
    dialect or another."""
    return node.attributes.get(KIND) == "prompt"


def agent_run(node: SpanNode) -> AgentRun | None:
    if node.attributes.get(KIND) != "chain":
        return None
    return _agent_run(node)


def _agent_run(node: SpanNode) -> AgentRun | None:
    """`agent_run` of a `chain` span: a LangGraph graph's run (not one of its nodes), an OpenAI Agents SDK agent's
    run, or the outermost run of a `@traceable` function / `trace()` block."""
    attrs = node.attributes
    integration = attrs.get(INTEGRATION)
    if integration == "langgraph":
        if GRAPH_NODE in attrs:
            return None
    elif integration == AGENTS_SDK:
        parent = node.parent
        if OUTPUT_TYPE not in attrs or (parent is not None and OUTPUT_TYPE in parent.attributes):
            return None  # not an agent span: the trace, its task and turns, or a span inside the agent's
    elif integration is not None or attrs.get(METHOD) not in _DECORATED:
        return None
    elif (parent := node.parent) is not None and KIND in parent.attributes:
        return None  # a decorated function inside another run
    run_name = first_str(attrs, RUN_NAME) or node.name or None
    if integration is None:
        return AgentRun(name=run_name, final_output=_output(attrs.get(OUTPUTS)), span=node, dialect=name)
    return AgentRun(name=run_name, span=node, dialect=name)


def _output(raw: Any) -> Any:
    """A decorated function's recorded output: the value of `{"output": ...}` (the client's wrapping of a result
    that is not a dict), else the recorded object; None when hidden or not recorded."""
    if not isinstance(raw, str) or raw == HIDDEN:
        return None
    try:
        doc = json.loads(raw)
    except ValueError:
        return raw
    return doc["output"] if isinstance(doc, dict) and doc.keys() == {"output"} else doc


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
    input_tokens = first_int(attrs, "gen_ai.usage.input_tokens")
    output_tokens = first_int(attrs, "gen_ai.usage.output_tokens")
    if (input_tokens is None or output_tokens is None) and isinstance(raw := attrs.get(USAGE), str):
        usage = _object(raw)
        input_tokens = first_int(usage, "input_tokens") if input_tokens is None else input_tokens
        output_tokens = first_int(usage, "output_tokens") if output_tokens is None else output_tokens
    provider = first_str(attrs, "langsmith.metadata.ls_provider", "gen_ai.system")
    return ModelRequest(
        model=first_str(attrs, "gen_ai.request.model", "langsmith.metadata.ls_model_name", "gen_ai.response.model"),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        response_model=first_str(attrs, "gen_ai.response.model"),
        provider=None if provider == _UNKNOWN_PROVIDER else provider,
        span=node,
        dialect=name,
    )


def _object(raw: str) -> dict[str, Any]:
    """A JSON object recorded as text; anything else is an empty one."""
    doc = json_value(raw)
    return doc if isinstance(doc, dict) else {}


def _message(value: Any) -> dict[str, Any] | None:
    """A LangChain message as recorded: serialized (`{"lc": 1, "kwargs": {...}}`) or as a plain dict."""
    if not isinstance(value, dict):
        return None
    kwargs = value.get("kwargs")
    return kwargs if value.get("lc") == 1 and isinstance(kwargs, dict) else value


def _recorded(raw: Any, markers: tuple[str, ...]) -> Any:
    """A run's recorded inputs or outputs as JSON, when the text holds one of `markers` at all (else None)."""
    if not isinstance(raw, str) or not any(marker in raw for marker in markers):
        return None
    return json_value(raw)


def _entries(items: Any) -> Iterator[dict[str, Any]]:
    """The messages or items of a recorded list (lists nested one per prompt, as LangChain records them), each a
    plain dict (a serialized LangChain message's `kwargs`)."""
    for item in items if isinstance(items, list) else ():
        for entry in item if isinstance(item, list) else (item,):
            if (message := _message(entry)) is not None:
                yield message


_REQUEST_MARKERS = ('"tool_calls"', '"function_call"')


def requested_calls(attrs: Mapping[str, Any]) -> list[Requested]:
    """The tool calls a model request generated (`gen_ai.completion`): LangChain's `generations`, an OpenAI chat
    completion's `choices`, an assistant message, or Responses output items."""
    doc = _recorded(attrs.get(OUTPUTS), _REQUEST_MARKERS)
    if not isinstance(doc, dict):
        return []
    if "generations" in doc:
        messages = [m for g in _entries(doc["generations"]) if (m := _message(g.get("message"))) is not None]
    elif "choices" in doc:
        messages = [m for c in doc["choices"] if isinstance(c, dict) and isinstance(m := c.get("message"), dict)]
    elif isinstance(doc.get("output"), list):
        messages = [item for item in doc["output"] if isinstance(item, dict)]
    else:
        messages = [doc]
    out = []
    for message in messages:
        if message.get("type") == "function_call":  # a Responses output item
            out.append(Requested.of(message.get("name"), message.get("arguments"), message.get("call_id")))
            continue
        out.extend(tool_calls_in(message.get("tool_calls")))  # OpenAI's shape or LangChain's
    return out


_RESULT_MARKERS = ('"tool_call_id"', '"function_call_output"')


def tool_results(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """`{call_id: content}` of the tool results a model request was given (`gen_ai.prompt`): LangChain's
    `ToolMessage`s or OpenAI `tool` messages under `messages`, or the same or Responses `function_call_output`
    items under `input`."""
    doc = _recorded(attrs.get(INPUTS), _RESULT_MARKERS)
    if not isinstance(doc, dict):
        return {}
    return tool_results_in(_entries(doc.get("messages", doc.get("input"))))
