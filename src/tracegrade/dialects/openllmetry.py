"""OpenLLMetry / Traceloop spans (shared/reference/conventions.md §4).

`traceloop.span.kind` (lowercase): `tool` is a tool call, `agent` an agent run, `workflow` / `task` are not
steps. Decorated tools record `traceloop.entity.input` = `{"args": [...], "kwargs": {...}}`: the arguments
are the kwargs; with positional args and no kwargs they are not recorded by name (`args` is `NOT_RECORDED`,
`args_text` the wrapper; none is guessed, and the model's requested arguments are taken when recorded). LangChain tools record `{"input_str": ..., "inputs": {...}, ...}`: the arguments
are `inputs`; the MCP instrumentation's client tool span (`{tool}.tool`) `{"tool_name": ..., "arguments":
{...}}` and its result `{"result": ..., "is_error": true}`. LLM spans (`openai.chat`, ...) are told by `llm.request.type` (legacy) or
`gen_ai.operation.name`. `gen_ai.agent.name` is propagated to every span inside an `@agent`, so it never
makes an agent span; spans without `traceloop.span.kind` (other instrumentations running inside a Traceloop
workflow, which get `traceloop.workflow.name`) are read with the GenAI conventions.

The LlamaIndex instrumentation has no `tool` spans: it writes `tool.name` and `tool.arguments` (JSON, recorded
even with content off) onto the `task` span of the step that calls the tool (`BaseWorkflowAgent.task` for
a workflow agent's `call_tool`), and that span is the tool call. With content on its `traceloop.entity.output`
is the step's `{"tool_id", "tool_output": {"raw_output", "is_error", ...}, ...}`: the call id, the result, and
whether the tool raised (`is_error`; the tool's own span is never ended then, so no span has error status).

OpenLLMetry-JS's LangChain instrumentation (`JS_LANGCHAIN_SCOPE`) names a tool span `execute_tool {class}` after the
LangChain tool's class (`DynamicStructuredTool`), never the tool, in `traceloop.entity.name` too (kind `task`): the
tool's name, the model's call id and the result are read from the `ToolMessage`
its `traceloop.entity.output` holds (LangChain's serialized `{"lc": 1, "id": [..., "ToolMessage"], "kwargs": {...}}`,
content on), the arguments from `traceloop.entity.input` = `{"args": ["<the tool's input, JSON text>"]}`. Without
that output (content off, or a tool that raised) the span records an execution but not which tool ran
(`ToolCall.name_missing`: checks whose selection of calls includes it are not evaluated).

The OpenAI Agents instrumentation records a handoff as a `traceloop.span.kind=handoff` span with
`gen_ai.handoff.from_agent` and, when the SDK knows it as the span starts, `gen_ai.handoff.to_agent`
(openai-agents 0.24 does not: the span is named `<from> → unknown.handoff` and the target is recorded nowhere).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..trajectory import NOT_RECORDED, AgentRun, Handoff, ModelRequest, ToolCall, parse_args
from . import genai
from ._common import first_int, first_str
from ._dispatch import Gate
from ._evidence import content_setting
from .genai import (
    MODEL_OPERATIONS,
    NO_CALL_ID,
    OPERATION,
    new_tool_call,
    set_failure,
)

if TYPE_CHECKING:
    from ..tree import SpanNode

__all__ = ["agent_run", "classify", "handoff", "model_request", "name", "recognizes", "tool_call"]

name = "openllmetry"
MESSAGE_SHAPES = ("openllmetry", "otel")
"""Where this convention records a model's requested tool calls and the results it was given
(`_messages.requested` / `_messages.results`)."""

KIND = "traceloop.span.kind"
ENTITY_INPUT = "traceloop.entity.input"
ENTITY_OUTPUT = "traceloop.entity.output"
TOOL_NAME = "tool.name"
JS_LANGCHAIN_SCOPE = genai.TRACELOOP_JS_LANGCHAIN_SCOPE
HANDOFF_FROM, HANDOFF_TO = "gen_ai.handoff.from_agent", "gen_ai.handoff.to_agent"
_LLM_REQUEST_TYPES = ("chat", "completion")
_LLM_NAME_SUFFIXES = (".chat", ".completion", ".response")
GATE = Gate(keys=frozenset({KIND, "llm.request.type", "traceloop.workflow.name"}), suffixes=_LLM_NAME_SUFFIXES)


def recognizes(node: SpanNode) -> bool:
    attrs = node.attributes
    return (
        KIND in attrs
        or "llm.request.type" in attrs
        or "traceloop.workflow.name" in attrs
        or (node.name.endswith(_LLM_NAME_SUFFIXES) and "gen_ai.request.model" in attrs)
    )


def classify(node: SpanNode) -> AgentRun | ToolCall | ModelRequest | Handoff | bool:
    """`traceloop.span.kind` selects the readers to ask (same answers as `recognizes` and the readers)."""
    if not recognizes(node):
        return False
    kind = node.attributes.get(KIND)
    if kind is None:  # another instrumentation's span inside a Traceloop workflow: the GenAI readers
        return genai.agent_run(node) or genai.tool_call(node) or model_request(node) or True
    if kind == "agent":
        return agent_run(node) or model_request(node) or True
    if kind == "tool" or (kind == "task" and (TOOL_NAME in node.attributes or _js_langchain_tool(node))):
        return tool_call(node) or model_request(node) or True
    if kind == "handoff":
        return model_request(node) or handoff(node) or True
    return model_request(node) or True


def agent_run(node: SpanNode) -> AgentRun | None:
    attrs = node.attributes
    kind = attrs.get(KIND)
    if kind is None:
        return genai.agent_run(node)
    if kind != "agent":
        return None
    return AgentRun(
        name=first_str(attrs, "traceloop.entity.name", "gen_ai.agent.name") or node.name.removesuffix(".agent"),
        run_id=first_str(attrs, "gen_ai.agent.id"),
        final_output=_decode(attrs.get(ENTITY_OUTPUT)),
        input_tokens=first_int(attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
        output_tokens=first_int(attrs, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
        span=node,
        dialect=name,
    )


def handoff(node: SpanNode) -> Handoff | None:
    """A `handoff` span: the source agent from `gen_ai.handoff.from_agent` (else `gen_ai.agent.name`), the target
    from `gen_ai.handoff.to_agent`, None when not recorded (never taken from the span name's `unknown`)."""
    attrs = node.attributes
    if attrs.get(KIND) != "handoff":
        return None
    return Handoff(
        source=first_str(attrs, HANDOFF_FROM, "gen_ai.agent.name"),
        target=first_str(attrs, HANDOFF_TO),
        status="error" if node.status == "error" else "ok",
        span=node,
        dialect=name,
    )


def tool_call(node: SpanNode) -> ToolCall | None:
    attrs = node.attributes
    kind = attrs.get(KIND)
    if kind is None:
        return genai.tool_call(node)
    if kind == "task":
        return _js_tool_call(node) if _js_langchain_tool(node) else _step_tool_call(node)
    if kind != "tool":
        return None
    tool = first_str(attrs, "traceloop.entity.name", "gen_ai.tool.name") or node.name.removesuffix(".tool")
    raw = attrs.get(ENTITY_INPUT)
    if raw is None:
        raw = attrs.get("gen_ai.tool.call.arguments")
    call = new_tool_call(tool, raw, node, name)
    if raw is not None:
        call._args = _unwrap_input(call.args)
    if (call_id := first_str(attrs, "gen_ai.tool.call.id")) is not None and call_id != NO_CALL_ID:
        call.call_id = call_id
    result = attrs.get(ENTITY_OUTPUT)
    if result is None:
        result = attrs.get("gen_ai.tool.call.result")
    if result is not None:
        call.result = _unwrap_output(_decode(result))
    set_failure(call, node)
    return call


def _step_tool_call(node: SpanNode) -> ToolCall | None:
    """The LlamaIndex `task` span that records `tool.name`: the step that called the tool."""
    attrs = node.attributes
    tool = attrs.get(TOOL_NAME)
    if not isinstance(tool, str):
        return None
    call = new_tool_call(tool, attrs.get("tool.arguments"), node, name)
    output = _decode(attrs.get(ENTITY_OUTPUT))
    if isinstance(output, dict):
        if isinstance(call_id := output.get("tool_id"), str) and call_id:
            call.call_id = call_id
        tool_output = output.get("tool_output")
        if isinstance(tool_output, dict):
            call.result = tool_output.get("raw_output", tool_output)
            if tool_output.get("is_error") is True:
                call.status = "error"
                call.error = str(call.result)
    set_failure(call, node)
    return call


def _js_langchain_tool(node: SpanNode) -> bool:
    """An OpenLLMetry-JS LangChain tool span (named after the tool's class, not the tool)."""
    return node.scope_name == JS_LANGCHAIN_SCOPE and node.attributes.get(OPERATION) == "execute_tool"


def _js_tool_call(node: SpanNode) -> ToolCall:
    """The call an OpenLLMetry-JS LangChain tool span records, named by the `ToolMessage` of its output; without
    one, an execution whose tool is not recorded (`ToolCall.name_missing`)."""
    attrs = node.attributes
    output = _decode(attrs.get(ENTITY_OUTPUT))
    ident = output.get("id") if isinstance(output, dict) else None
    message = output.get("kwargs") if isinstance(output, dict) else None
    tool = None
    if isinstance(ident, list) and ident and ident[-1] == "ToolMessage" and isinstance(message, dict):
        tool = message.get("name")
    raw = _decode(attrs.get(ENTITY_INPUT))
    if isinstance(raw, dict) and raw.keys() == {"args"} and isinstance(raw["args"], list) and len(raw["args"]) == 1:
        raw = raw["args"][0]
    args = raw if raw is None or isinstance(raw, str) else attrs.get(ENTITY_INPUT)
    if isinstance(tool, str) and tool and isinstance(message, dict):
        call = new_tool_call(tool, args, node, name)
        if isinstance(call_id := message.get("tool_call_id"), str) and call_id:
            call.call_id = call_id
        call.result = message.get("content")
    else:
        call = new_tool_call("", args, node, name)
        call.name_missing = _js_name_missing(node)
    set_failure(call, node)
    return call


def _js_name_missing(node: SpanNode) -> str:
    """Why an OpenLLMetry-JS LangChain tool span does not name its tool."""
    where = f"the span is named after the tool's class and only the ToolMessage of its {ENTITY_OUTPUT} names the tool"
    if ENTITY_INPUT not in node.attributes and ENTITY_OUTPUT not in node.attributes:
        return f"no content was recorded; to record it: {content_setting(node, name)}"
    if node.status == "error":
        return f"{where}, and a tool that raised has no such output"
    return f"{where}, and this span records none"


def model_request(node: SpanNode) -> ModelRequest | None:
    attrs = node.attributes
    if not (
        attrs.get("llm.request.type") in _LLM_REQUEST_TYPES
        or attrs.get(OPERATION) in MODEL_OPERATIONS
        or (node.name.endswith(_LLM_NAME_SUFFIXES) and "gen_ai.request.model" in attrs and KIND not in attrs)
    ):
        return None
    return ModelRequest(
        model=first_str(attrs, "gen_ai.request.model", "gen_ai.response.model", "llm.request.model"),
        input_tokens=first_int(
            attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.usage.prompt_tokens"
        ),
        output_tokens=first_int(
            attrs,
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.completion_tokens",
            "llm.usage.completion_tokens",
        ),
        response_model=first_str(attrs, "gen_ai.response.model", "llm.response.model"),
        provider=first_str(attrs, "gen_ai.provider.name", "gen_ai.system"),
        cache_read_tokens=first_int(
            attrs, "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens"
        ),
        span=node,
        dialect=name,
    )


def _decode(value: Any) -> Any:
    return parse_args(value) if isinstance(value, str) else value


def _unwrap_input(value: Any) -> Any:
    """The arguments in a decorator `{"args", "kwargs"}`, LangChain `{"input_str", "inputs"}` or MCP client
    `{"tool_name", "arguments"}` wrapper."""
    if not isinstance(value, dict):
        return value
    if value.keys() == {"args", "kwargs"}:
        args, kwargs = value["args"], value["kwargs"]
        if isinstance(kwargs, dict):
            return kwargs if kwargs or not args else NOT_RECORDED  # positional only: names not recorded
    elif "input_str" in value and isinstance(value.get("inputs"), dict):
        return value["inputs"]
    elif value.keys() == {"tool_name", "arguments"} and isinstance(value["arguments"], dict):
        return value["arguments"]
    return value


def _unwrap_output(value: Any) -> Any:
    """LangChain tools record `{"output": ..., "kwargs": ...}`, the MCP client `{"result": ...[, "is_error"]}`."""
    if isinstance(value, dict):
        if value.keys() == {"output", "kwargs"}:
            return value["output"]
        if value.keys() in ({"result"}, {"result", "is_error"}):
            return value["result"]
    return value
