"""LlamaIndex's own OpenTelemetry integration (`llama-index-observability-otel`, scope
`llamaindex.opentelemetry.tracer`).

Each span of LlamaIndex's instrumentation dispatcher becomes a span named after the instrumented method
(`FunctionAgent.run`, `OpenAI.achat`, `FunctionTool.acall`, ...) and each instrumentation event an event on
it named after the event class, the event's fields flattened into attributes (nested lists as JSON text).

- A model request is a span with an `LLMChatStartEvent` (or `LLMCompletionStartEvent`). Its `LLMChatEndEvent`
  records the response: `response.message.blocks` (JSON) holds `tool_call` blocks (`tool_call_id`,
  `tool_name`, `tool_kwargs`), `response.raw.usage.*` the tokens. A streamed request's span ends before the
  stream is read, so its end event is dropped: the calls it requested are then read from the next request's
  input (the assistant message that follows this request's own input messages). Tool results are the input
  messages with role `tool` (`additional_kwargs.tool_call_id`, text blocks).
- An agent run is a `<Agent>.run` span (FunctionAgent, ReActAgent, CodeActAgent, AgentWorkflow); the agent's
  name is not recorded.
- Tool spans (`FunctionTool.acall`, ...) record the tool's name, arguments and call id only inside Python
  reprs (`llamaindex.step.input_summary`), which are not read: the calls come from the model's messages
  (`executed=None`). A tool span with status ERROR marks a call failed when it ran between a request that
  asked for exactly one call and the next request; otherwise which call failed is noted as not recorded.

The integration has no content switch: the events always carry the messages.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..trajectory import AgentRun, ModelRequest, ToolCall
from ._common import first_int, first_str
from ._dispatch import Gate
from ._messages import Requested
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


def _json(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return None
    return raw


def _messages(attrs: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    found = _json(attrs.get("messages")) if attrs is not None else None
    return [m for m in found if isinstance(m, dict)] if isinstance(found, list) else []


def _calls_in(message_blocks: Any) -> list[Requested]:
    """The `tool_call` blocks of a message's `blocks` (`tool_kwargs` JSON text or a dict)."""
    blocks = _json(message_blocks)
    out = []
    for block in blocks if isinstance(blocks, list) else ():
        if isinstance(block, dict) and block.get("block_type") == "tool_call":
            out.append(Requested.of(block.get("tool_name"), block.get("tool_kwargs"), block.get("tool_call_id")))
    return out


def requested_calls_of(node: SpanNode) -> list[Requested]:
    """The calls a request's response asked for: its end event's `response.message.blocks`, else (streamed:
    the end event is dropped) the assistant message after this request's input in the next request's input."""
    end = _event(node, END_EVENTS)
    if end is not None:
        return _calls_in(end.get("response.message.blocks"))
    asked = len(_messages(_event(node, START_EVENTS)))
    following = _next_request(node)
    if following is None or not asked:
        return []
    later = _messages(_event(following, START_EVENTS))
    if len(later) > asked and later[asked].get("role") == "assistant":
        return _calls_in(later[asked].get("blocks"))
    return []


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


def _next_request(node: SpanNode) -> SpanNode | None:
    """The model-request span of this integration that starts next in the same trace."""
    best: SpanNode | None = None
    for n in _walk(_root(node)):
        if (
            n.start_ns > node.start_ns
            and (best is None or n.start_ns < best.start_ns)
            and n.scope_name == SCOPE
            and _event(n, START_EVENTS) is not None
        ):
            best = n
    return best


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
    """Mark the requested calls whose tool span failed (see the module docstring); returns notes on the
    failures that cannot be tied to one call."""
    mine = [r for r in requests if r.dialect == name and r.span is not None]
    asked: dict[int, list[ToolCall]] = {}
    for call in calls:
        if call.dialect == name and call.executed is None and call.span is not None:
            asked.setdefault(id(call.span), []).append(call)
    notes: list[str] = []
    tools_of: dict[int, list[SpanNode]] = {}
    for i, req in enumerate(mine):
        span = req.span
        assert span is not None
        own = asked.get(id(span))
        if not own:
            continue
        root = _root(span)
        tools = tools_of.get(id(root))
        if tools is None:
            tools = tools_of[id(root)] = _tool_spans(root)
        nxt = mine[i + 1].span if i + 1 < len(mine) else None
        until = nxt.start_ns if nxt is not None and _root(nxt) is root else None
        failed = [
            t for t in tools
            if t.status == "error" and t.start_ns >= span.start_ns and (until is None or t.start_ns < until)
        ]  # fmt: skip
        if not failed:
            continue
        if len(own) == 1 and len(failed) == 1:
            set_failure(own[0], failed[0])
        else:
            names = ", ".join(repr(str(c)) for c in own)
            notes.append(
                f"{len(failed)} tool span(s) {failed[0].name!r} failed after model request {span.name!r}, which asked "
                f"for {names}: which call failed is not recorded (LlamaIndex's tool spans name no tool or call id)"
            )
    return notes
