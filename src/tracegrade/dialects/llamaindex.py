"""LlamaIndex's own OpenTelemetry integration (`llama-index-observability-otel`, scope
`llamaindex.opentelemetry.tracer`).

Each span of LlamaIndex's instrumentation dispatcher becomes a span named after the instrumented method
(`FunctionAgent.run`, `OpenAI.achat`, `FunctionTool.acall`, ...) and each instrumentation event an event on
it named after the event class, the event's fields flattened into attributes (nested lists as JSON text).

- A model request is a span with an `LLMChatStartEvent` (or `LLMCompletionStartEvent`). Its `LLMChatEndEvent`
  records the response: `response.message.blocks` (JSON) holds `tool_call` blocks (`tool_call_id`,
  `tool_name`, `tool_kwargs`; else `response.message.additional_kwargs.tool_calls`, OpenAI's shape),
  `response.raw.usage.*` the tokens. A streamed request's span ends before the stream is read, so its end
  event is dropped: the calls it requested are then read from the continuation of its conversation (the
  assistant message that follows this request's input in a later request whose input begins with it). Tool
  results are the input messages with role `tool` (`additional_kwargs.tool_call_id`, text blocks).
- An agent run is a `<Agent>.run` span (FunctionAgent, ReActAgent, CodeActAgent, AgentWorkflow); the agent's
  name is not recorded.
- Tool spans (`FunctionTool.acall`, ...) record the tool's name, arguments and call id only inside Python
  reprs (`llamaindex.step.input_summary`), which are not read: the calls come from the model's messages
  (`executed=None`). A tool span with status ERROR marks a call failed when it is the only tool span between
  the request that asked for exactly that one call and the next request; otherwise which call failed is noted
  as not recorded (`Trajectory.incomplete`).

The integration has no content switch: the events always carry the messages.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..trajectory import AgentRun, ModelRequest, ToolCall
from ._common import first_int, first_str, json_value
from ._dispatch import Gate
from ._messages import Requested, tool_calls_in
from .genai import set_failure

if TYPE_CHECKING:
    from ..tree import SpanNode

__all__ = [
    "agent_run",
    "classify",
    "model_request",
    "name",
    "recognizes",
    "requested_calls_of",
    "settle_calls",
    "tool_call",
    "tool_results_of",
]

name = "llamaindex"

SCOPE = "llamaindex.opentelemetry.tracer"
GATE = Gate(scopes=frozenset({SCOPE}))
START_EVENTS = frozenset({"LLMChatStartEvent", "LLMCompletionStartEvent"})
END_EVENTS = frozenset({"LLMChatEndEvent", "LLMCompletionEndEvent"})
_RUN = re.compile(r"(?:\w*Agent|AgentWorkflow)\.run$")
_TOOL = re.compile(r"\w*Tool\.a?call$")


def recognizes(node: SpanNode) -> bool:
    return node.scope_name == SCOPE


def classify(node: SpanNode) -> AgentRun | ModelRequest | bool:
    """A recognized span is a model request (start event), an agent run (`<Agent>.run`) or no step."""
    if node.scope_name != SCOPE:
        return False
    return agent_run(node) or model_request(node) or True


def agent_run(node: SpanNode) -> AgentRun | None:
    if node.scope_name != SCOPE or not _RUN.match(node.name):
        return None
    return AgentRun(name=None, span=node, dialect=name)


def tool_call(node: SpanNode) -> ToolCall | None:
    """Never: the tool spans record the call only in Python reprs (see the module docstring)."""
    return None


def model_request(node: SpanNode) -> ModelRequest | None:
    if node.scope_name != SCOPE:
        return None
    start = end = None
    for event in node.events:
        if event.name in START_EVENTS:
            start = event.attributes
        elif event.name in END_EVENTS:
            end = event.attributes
    if start is None:
        return None
    end = end or {}
    return ModelRequest(
        model=first_str(start, "model_dict.model_name", "model_dict.model"),
        input_tokens=first_int(end, "response.raw.usage.prompt_tokens", "response.additional_kwargs.prompt_tokens"),
        output_tokens=first_int(
            end, "response.raw.usage.completion_tokens", "response.additional_kwargs.completion_tokens"
        ),
        response_model=first_str(end, "response.raw.model"),
        span=node,
        dialect=name,
    )


def _event(node: SpanNode, names: frozenset[str]) -> Mapping[str, Any] | None:
    for event in node.events:
        if event.name in names:
            return event.attributes
    return None


def _messages(attrs: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    found = json_value(attrs.get("messages")) if attrs is not None else None
    return [m for m in found if isinstance(m, dict)] if isinstance(found, list) else []


def _calls_in(blocks: Any, tool_calls: Any) -> list[Requested]:
    """The calls an assistant message holds: its `tool_call` blocks (`tool_kwargs` JSON text or a dict), else
    its `additional_kwargs.tool_calls` (OpenAI's shape: `id`, `function.name`, `function.arguments`)."""
    out = []
    blocks = json_value(blocks)
    for block in blocks if isinstance(blocks, list) else ():
        if isinstance(block, dict) and block.get("block_type") == "tool_call":
            out.append(Requested.of(block.get("tool_name"), block.get("tool_kwargs"), block.get("tool_call_id")))
    if out:
        return out
    return tool_calls_in(json_value(tool_calls))


def requested_calls_of(node: SpanNode) -> list[Requested]:
    """The calls a request's response asked for: its end event's response message, else (streamed: the end
    event is dropped) the assistant message that follows this request's input in the continuation of the
    conversation (the next request whose input begins with this request's input)."""
    end = _event(node, END_EVENTS)
    if end is not None:
        return _calls_in(end.get("response.message.blocks"), end.get("response.message.additional_kwargs.tool_calls"))
    own = _messages(_event(node, START_EVENTS))
    if not own:
        return []
    later = _continuation(node, own)
    if later is None or later[len(own)].get("role") != "assistant":
        return []
    reply = later[len(own)]
    kwargs = reply.get("additional_kwargs")
    return _calls_in(reply.get("blocks"), kwargs.get("tool_calls") if isinstance(kwargs, dict) else None)


def tool_results_of(node: SpanNode) -> dict[str, Any]:
    """`{call_id: result}` from the input messages with role `tool` (text blocks joined)."""
    out: dict[str, Any] = {}
    for message in _messages(_event(node, START_EVENTS)):
        kwargs = message.get("additional_kwargs")
        call_id = kwargs.get("tool_call_id") if isinstance(kwargs, dict) else None
        if message.get("role") != "tool" or not isinstance(call_id, str):
            continue
        blocks = message.get("blocks")
        texts = [b.get("text") for b in blocks if isinstance(b, dict)] if isinstance(blocks, list) else []
        out[call_id] = "".join(t for t in texts if isinstance(t, str))
    return out


def _root(node: SpanNode) -> SpanNode:
    while node.parent is not None:
        node = node.parent
    return node


def _walk(node: SpanNode) -> Iterator[SpanNode]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _continuation(node: SpanNode, own: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The input messages of the first request after `node` whose input extends `own` (the same conversation,
    one reply further or more): searched among the spans after `node`'s, nearest ancestors' children first."""
    child, parent = node, node.parent
    while parent is not None:
        after = False
        for sibling in parent.children:
            if sibling is child:
                after = True
            elif after:
                for n in _walk(sibling):
                    if n.start_ns > node.start_ns and n.scope_name == SCOPE:
                        later = _messages(_event(n, START_EVENTS))
                        if len(later) > len(own) and later[: len(own)] == own:
                            return later
        child, parent = parent, parent.parent
    return None


def _tool_spans(root: SpanNode) -> list[SpanNode]:
    """The outermost tool spans of a trace, in start order."""
    out = []
    stack = [root]
    while stack:
        n = stack.pop()
        if n.scope_name == SCOPE and _TOOL.match(n.name):
            out.append(n)
            continue
        stack.extend(n.children)
    return sorted(out, key=lambda n: n.start_ns)


def settle_calls(calls: Sequence[ToolCall], requests: Sequence[ModelRequest]) -> list[str]:
    """Mark the requested calls whose tool span failed: a failed tool span is tied to a call only when it is
    the one tool span between the request that asked for exactly that one call and the next request of the
    same trace; any other failed tool span is named in the returned notes, its call left as it was."""
    mine = [r for r in requests if r.dialect == name and r.span is not None]
    asked: dict[int, list[ToolCall]] = {}
    for call in calls:
        if call.dialect == name and call.executed is None and call.span is not None:
            asked.setdefault(id(call.span), []).append(call)
    notes: list[str] = []
    tools_of: dict[int, list[SpanNode]] = {}
    for i, req in enumerate(mine):
        span = req.span
        own = asked.get(id(span))
        if span is None or not own:
            continue
        root = _root(span)
        tools = tools_of.get(id(root))
        if tools is None:
            tools = tools_of[id(root)] = _tool_spans(root)
        nxt = mine[i + 1].span if i + 1 < len(mine) else None
        until = nxt.start_ns if nxt is not None and _root(nxt) is root else None
        ran = [t for t in tools if t.start_ns >= span.start_ns and (until is None or t.start_ns < until)]
        failed = [t for t in ran if t.status == "error"]
        if not failed:
            continue
        if len(own) == 1 and len(ran) == 1:
            set_failure(own[0], failed[0])
        else:
            names = ", ".join(repr(str(c)) for c in own)
            notes.append(
                f"{len(failed)} of {len(ran)} tool span(s) {failed[0].name!r} after model request {span.name!r} "
                f"(which asked for {names}) failed: which call failed is not recorded (LlamaIndex's tool spans "
                "name no tool or call id)"
            )
    return notes
