"""Langfuse Python SDK spans (v3 and later, built on OpenTelemetry; scope `langfuse-sdk`).

`langfuse.observation.type` names the role: `tool` is a tool call (an `@observe(as_type="tool")` function, named
after the span), `generation` a model request (the OpenAI drop-in `langfuse.openai`'s `OpenAI-generation`, or
`as_type="generation"`), `agent` an agent run named by its span; `span`, `chain`, `retriever`, `embedding`,
`evaluator`, `guardrail` and `event` observations are not steps. Content is JSON in
`langfuse.observation.input` / `.output`: a decorated function's input is `{"args": [...], "kwargs": {...}}`,
whose arguments are the kwargs (with positional args and no kwargs the arguments are not recorded by name:
`args` is `NOT_RECORDED`, `args_text` the wrapper, and `dialects.extract` takes the model's requested
arguments when a generation recorded them); a generation's input is the
request's messages (with `tools`: `{"tools", "messages"}`), its output the OpenAI assistant message whose
`tool_calls` are the requested calls. Tokens come from `langfuse.observation.usage_details` (Langfuse's
`input` / `output` keys or the provider's usage object), cost from `.cost_details` (`total`, in USD). A
failed observation has status ERROR, or level `ERROR` with its `status_message`. A `mask=` function on the
client replaces content with whatever it returns; `[REDACTED]` and the other known markers mean not recorded.

Langfuse's LangChain integration (`langfuse.langchain.CallbackHandler`) makes one observation per LangChain
run: a tool's input is its arguments, its output the serialized `ToolMessage` (whose `content` is the result),
its call id the `langfuse.observation.metadata.tool_call_id` metadata (JSON text, like every metadata value);
a generation's output is LangChain's assistant message, whose `tool_calls` are `{name, args, id}`. In a
LangGraph trace (`langfuse.trace.metadata.ls_integration` = `"langgraph"`, on every span of the trace, even
with metadata masked) the graph's run is the outermost span of the trace, an agent run named by its span;
the graph's nodes are no runs, although Langfuse types a node whose name contains "agent" (the prebuilt
agent's `agent` node) as `agent`.

Langfuse's Haystack integration (`langfuse-haystack`'s `LangfuseConnector`) records Haystack's tags as metadata
(`langfuse.observation.metadata.haystack.*`, JSON text): an Agent's tool observation is named `tool - {tool}`,
its tool in `haystack.tool.name` (or, with metadata masked, in that name, under the `agent step N` chain of
the step); `haystack.tool.error` = `true` marks a failed invocation, whose output is `{"error": "..."}`. The
agent observation's output is the Agent's result, whose `last_message` holds the final answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..trajectory import NOT_RECORDED, AgentRun, Cost, ModelRequest, ToolCall, parse_args
from ._common import first_int, first_str
from ._dispatch import Gate
from ._messages import Requested, tool_calls_in, tool_results_in
from .genai import REDACTED, new_tool_call, set_failure

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from ..tree import SpanNode

__all__ = ["agent_run", "classify", "model_request", "name", "recognizes", "requested_calls", "tool_call",
           "tool_results"]  # fmt: skip

name = "langfuse"
SCOPE = "langfuse-sdk"
TYPE = "langfuse.observation.type"
INPUT, OUTPUT = "langfuse.observation.input", "langfuse.observation.output"
MODEL = "langfuse.observation.model.name"
USAGE, COST = "langfuse.observation.usage_details", "langfuse.observation.cost_details"
LEVEL, STATUS_MESSAGE = "langfuse.observation.level", "langfuse.observation.status_message"
TOOL_CALL_ID = "langfuse.observation.metadata.tool_call_id"
INTEGRATION = "langfuse.trace.metadata.ls_integration"
LANGGRAPH = '"langgraph"'  # metadata values are JSON text
HAYSTACK_TOOL = "langfuse.observation.metadata.haystack.tool.name"
HAYSTACK_ERROR = "langfuse.observation.metadata.haystack.tool.error"
_HAYSTACK_TOOL_PREFIX, _HAYSTACK_STEP_PREFIX = "tool - ", "agent step "
GATE = Gate(keys=frozenset({TYPE}))

ARGS_MAY_BE_WRAPPED = True
"""A decorated tool called with positional arguments records them unnamed (`{"args": [...], "kwargs": {}}`):
`dialects.extract` takes the model's requested arguments."""

_INPUT_TOKENS = ("input", "prompt_tokens", "input_tokens")
_OUTPUT_TOKENS = ("output", "completion_tokens", "output_tokens")
_CACHE_READ = ("input_cached_tokens", "cache_read_input_tokens", "input_cache_read")


def recognizes(node: SpanNode) -> bool:
    return TYPE in node.attributes


def classify(node: SpanNode) -> AgentRun | ToolCall | ModelRequest | bool:
    """The observation type selects the one reader to ask (same answers as `recognizes` and the three readers)."""
    attrs = node.attributes
    if TYPE not in attrs:
        return False
    kind = attrs[TYPE]
    if kind == "tool":
        return tool_call(node) or True
    if kind == "generation":
        return model_request(node) or True
    if kind == "agent" or kind == "chain":
        return agent_run(node) or True
    return True


def agent_run(node: SpanNode) -> AgentRun | None:
    """An `agent` observation outside LangGraph; the outermost `agent` or `chain` observation of a LangGraph
    trace (the graph's run)."""
    attrs = node.attributes
    kind = attrs.get(TYPE)
    if kind != "agent" and kind != "chain":
        return None
    if attrs.get(INTEGRATION) == LANGGRAPH:
        parent = node.parent
        if parent is not None and parent.attributes.get(INTEGRATION) == LANGGRAPH:
            return None  # a node of the graph, or a graph inside one of its nodes
        return AgentRun(name=node.name, final_output=_graph_output(attrs.get(OUTPUT)), span=node, dialect=name)
    if kind != "agent":
        return None
    return AgentRun(name=node.name, final_output=_final_output(attrs.get(OUTPUT)), span=node, dialect=name)


def tool_call(node: SpanNode) -> ToolCall | None:
    attrs = node.attributes
    if attrs.get(TYPE) != "tool":
        return None
    raw = attrs.get(INPUT)
    call = new_tool_call(_tool_name(node), raw, node, name)
    if call.args_text is not None:
        call._args = _arguments(call.args)
    result = _content(attrs.get(OUTPUT))
    if attrs.get(HAYSTACK_ERROR) == "true":  # Haystack: the Agent caught the tool's error
        call.status = "error"
        error = result.get("error") if isinstance(result, dict) else None
        call.error = error if isinstance(error, str) and error else "error"
        return call
    if _is_tool_message(result):  # LangChain: the ToolMessage the tool returned
        call.result = result.get("content")
        if isinstance(call_id := result.get("tool_call_id"), str) and call_id:
            call.call_id = call_id
    elif result is not None:
        call.result = result
    if call.call_id is None and isinstance(call_id := _content(attrs.get(TOOL_CALL_ID)), str) and call_id:
        call.call_id = call_id
    set_failure(call, node)
    if call.status != "error" and attrs.get(LEVEL) == "ERROR":
        call.status = "error"
        call.error = first_str(attrs, STATUS_MESSAGE) or "error"
    return call


def model_request(node: SpanNode) -> ModelRequest | None:
    attrs = node.attributes
    if attrs.get(TYPE) != "generation":
        return None
    usage = _object(attrs.get(USAGE))
    details = usage.get("prompt_tokens_details")
    cached = first_int(details, "cached_tokens") if isinstance(details, dict) else None
    return ModelRequest(
        model=first_str(attrs, MODEL),
        input_tokens=first_int(usage, *_INPUT_TOKENS),
        output_tokens=first_int(usage, *_OUTPUT_TOKENS),
        cache_read_tokens=first_int(usage, *_CACHE_READ) if cached is None else cached,
        span=node,
        dialect=name,
        cost=_cost(attrs.get(COST)),
    )


def requested_calls(attrs: Mapping[str, Any]) -> list[Requested]:
    """The calls in a generation's output: the OpenAI assistant message's `tool_calls` (or legacy
    `function_call`), one message or a list of them; Responses API `function_call` items; LangChain's
    assistant message's `tool_calls` (`name`, `args`, `id`)."""
    out = []
    for item in _items(attrs.get(OUTPUT)):
        if item.get("type") == "function_call":  # Responses API
            out.append(Requested.of(item.get("name"), item.get("arguments"), item.get("call_id")))
        out.extend(tool_calls_in(item.get("tool_calls")))  # chat completions, LangChain
        if isinstance(fn := item.get("function_call"), dict):
            out.append(Requested.of(fn.get("name"), fn.get("arguments"), None))
    return out


def tool_results(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """`{call_id: result}` from a generation's input messages: `tool` messages, Responses API
    `function_call_output` items."""
    return tool_results_in(_items(attrs.get(INPUT)))


def _content(raw: Any) -> Any:
    """A recorded input/output value: JSON decoded; a redaction marker is not recorded (None)."""
    if raw is None or (isinstance(raw, str) and raw in REDACTED):
        return None
    return parse_args(raw) if isinstance(raw, str) else raw


def _tool_name(node: SpanNode) -> str:
    """A tool observation's tool: Haystack's `haystack.tool.name` metadata, else the span name, less the
    `tool - ` prefix of a Haystack Agent's tool observation (inside an `agent step N` chain) whose metadata
    is masked."""
    tool = _content(node.attributes.get(HAYSTACK_TOOL))
    if isinstance(tool, str) and tool:
        return tool
    parent = node.parent
    if (
        node.name.startswith(_HAYSTACK_TOOL_PREFIX)
        and len(node.name) > len(_HAYSTACK_TOOL_PREFIX)
        and parent is not None
        and parent.attributes.get(TYPE) == "chain"
        and parent.name.startswith(_HAYSTACK_STEP_PREFIX)
        and parent.name[len(_HAYSTACK_STEP_PREFIX) :].isdigit()
    ):
        return node.name[len(_HAYSTACK_TOOL_PREFIX) :]
    return node.name


def _final_output(raw: Any) -> Any:
    """An agent observation's output; for a Haystack Agent's result (`messages`, `last_message`, ...) the
    text of its last message."""
    value = _content(raw)
    if isinstance(value, dict) and "messages" in value and isinstance(last := value.get("last_message"), dict):
        parts = last.get("content")
        if isinstance(parts, list):
            texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
            return "".join(texts) if texts else None
    return value


def _is_tool_message(value: Any) -> bool:
    """A serialized LangChain `ToolMessage`."""
    return isinstance(value, dict) and value.get("type") == "tool" and "content" in value and "tool_call_id" in value


def _graph_output(raw: Any) -> Any:
    """A LangGraph graph's final output: the content of the last message of its `messages` state."""
    value = _content(raw)
    if isinstance(value, dict) and isinstance(messages := value.get("messages"), list) and messages:
        last = messages[-1]
        return last.get("content") if isinstance(last, dict) else None
    return None


def _arguments(value: Any) -> Any:
    """The arguments of a decorated function's `{"args", "kwargs"}` input: the kwargs, or `NOT_RECORDED` when
    only positional arguments were passed (their names are not recorded; none is guessed)."""
    if isinstance(value, dict) and value.keys() == {"args", "kwargs"}:
        args, kwargs = value["args"], value["kwargs"]
        if isinstance(kwargs, dict) and (kwargs or not args):
            return kwargs
        if isinstance(kwargs, dict):
            return NOT_RECORDED
    return value


def _object(raw: Any) -> dict[str, Any]:
    value = parse_args(raw) if isinstance(raw, str) else raw
    return value if isinstance(value, dict) else {}


def _cost(raw: Any) -> Cost | None:
    """`cost_details` `total`, in USD as Langfuse records it (None without a numeric total)."""
    total = _object(raw).get("total")
    if not isinstance(total, int | float) or isinstance(total, bool):
        return None
    return Cost(float(total), "USD")


def _items(raw: Any) -> Iterator[dict[str, Any]]:
    """The messages (or Responses API items) of a recorded input/output: one message, a list, or the
    `messages` / `input` / `output` list of an object."""
    value = _content(raw)
    if isinstance(value, dict):
        for key in ("messages", "input", "output"):
            if isinstance(value.get(key), list):
                value = value[key]
                break
        else:
            value = [value]
    for item in value if isinstance(value, list) else ():
        if isinstance(item, dict):
            yield item
