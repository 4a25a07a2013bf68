"""Logfire's LLM client instrumentations: `logfire.instrument_openai()` and `logfire.instrument_anthropic()`
(scopes `logfire.openai`, `logfire.anthropic`), one CLIENT span per request (`Chat Completion with
{request_data[model]!r}`, `Message with ...`, `Responses API with ...`) with `gen_ai.operation.name`.

Two span formats (`version=`, both when asked): 2 (the default) records messages as OTel GenAI JSON
(`gen_ai.input.messages` / `gen_ai.output.messages`) and only the model in `request_data`; 1 (legacy) records
the whole request as JSON in `request_data` (`messages`: OpenAI chat messages, results in `tool` messages; or
Anthropic messages, results in `tool_result` blocks) and the response in `response_data`
(`{"message": {..., "tool_calls": [...]}, "usage": ...}`, OpenAI's shape also for Anthropic, whose call
`arguments` are Logfire's `{"input": {...}}` around the model's input); for the Responses API, version 1
records the input items and then the response's output items as one list of OTel-style events in `events`
(`gen_ai.*.message` dicts: the output ones all `role` `assistant`, calls in OpenAI's `tool_calls`, results as
`gen_ai.tool.message` with the call `id`), so a response's calls are the trailing assistant events of a span
that recorded a response.

Streaming: the request span ends when the stream is returned, recording no response; when the stream has been
read, Logfire logs the response as a zero-length span `streaming response from {request_data[model]!r} took
{duration:.2f}s` (`logfire.span_type` = `log`) in the caller's context (beside the request span, not inside
it), holding the request again with the response and usage. That log is the model request; a request span
that ended without error and without a response is a streamed request's opening, no step for any dialect
(`claims`; a stream never read leaves no log, and its request is not counted). Version 1 logs only the streamed text of an Anthropic response
(`{"combined_chunk_content", "chunk_count"}`): the calls it made are recorded in the next request's
`request_data`, and are read from there (the last assistant message of a streamed request's input holds the
previous response's calls) — once each as long as a run's Anthropic requests are all streamed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..trajectory import ModelRequest
from ._common import cost_of, first_int, first_str, json_value
from ._dispatch import NO_STEP, Gate, NoStep
from ._messages import Requested, otel_requests, otel_results, tool_calls_in, tool_results_in

if TYPE_CHECKING:
    from ..tree import SpanNode

__all__ = [
    "agent_run", "claims", "classify", "model_request", "name", "recognizes", "requested_calls_of", "stream_opening",
    "tool_call", "tool_results_of",
]  # fmt: skip

name = "logfire"
ANTHROPIC_SCOPE = "logfire.anthropic"
SCOPES = frozenset({"logfire.openai", ANTHROPIC_SCOPE})
GATE = Gate(scopes=SCOPES)
STREAM_LOG = "streaming response from "
"""How the message template of the log holding a streamed response begins."""
_MODEL_OPERATIONS = ("chat", "text_completion")
_RESPONSE_KEYS = ("response_data", "gen_ai.output.messages", "gen_ai.response.id", "gen_ai.usage.input_tokens",
                  "gen_ai.usage.output_tokens")  # fmt: skip
_INPUT, _OUTPUT = "gen_ai.input.messages", "gen_ai.output.messages"


def recognizes(node: SpanNode) -> bool:
    return node.scope_name in SCOPES


def classify(node: SpanNode) -> ModelRequest | NoStep | bool:
    """False outside Logfire's client scopes, else the model request, `NO_STEP` for a streamed request's opening
    (its response is in Logfire's log of it: no other dialect reads a request from it), or True (same answers as
    the spec)."""
    if node.scope_name not in SCOPES:
        return False
    if node.attributes.get("gen_ai.operation.name") not in _MODEL_OPERATIONS:
        return True
    if stream_opening(node):
        return NO_STEP
    return _model_request(node)


def claims(node: SpanNode) -> bool:
    """A streamed request's opening (see `stream_opening`): no step, for this dialect or another."""
    return node.attributes.get("gen_ai.operation.name") in _MODEL_OPERATIONS and stream_opening(node)


def agent_run(node: SpanNode) -> None:
    return None


def tool_call(node: SpanNode) -> None:
    return None


def model_request(node: SpanNode) -> ModelRequest | None:
    """A chat or completion request's span that recorded its response (or failed), or the log of a streamed one."""
    attrs = node.attributes
    if attrs.get("gen_ai.operation.name") not in _MODEL_OPERATIONS:
        return None
    if stream_opening(node):
        return None  # its response is in the log
    return _model_request(node)


def _model_request(node: SpanNode) -> ModelRequest:
    attrs = node.attributes
    return ModelRequest(
        model=first_str(attrs, "gen_ai.request.model", "gen_ai.response.model"),
        input_tokens=first_int(attrs, "gen_ai.usage.input_tokens"),
        output_tokens=first_int(attrs, "gen_ai.usage.output_tokens"),
        response_model=first_str(attrs, "gen_ai.response.model"),
        provider=first_str(attrs, "gen_ai.provider.name", "gen_ai.system"),
        cache_read_tokens=first_int(attrs, "gen_ai.usage.cache_read.input_tokens"),
        span=node,
        dialect=name,
        cost=cost_of(attrs),
    )


def stream_opening(node: SpanNode) -> bool:
    """A Logfire client span that opened a streamed request: not the streamed response's log, ended without
    error and without recording a response (no model request; the `genai` dialect does not read one either)."""
    if node.scope_name not in SCOPES:
        return False
    attrs = node.attributes
    template = attrs.get("logfire.msg_template")
    if isinstance(template, str) and template.startswith(STREAM_LOG):
        return False
    return node.status != "error" and not any(k in attrs for k in _RESPONSE_KEYS)


def _messages(attrs: Mapping[str, Any]) -> list[Any]:
    """The request's messages in version 1's `request_data`."""
    data = json_value(attrs.get("request_data"))
    messages = data.get("messages") if isinstance(data, dict) else None
    return messages if isinstance(messages, list) else []


def _unwrapped(arguments: Any) -> Any:
    """An Anthropic call's input from Logfire's `{"input": {...}}` (as recorded when it is not that)."""
    parsed = json_value(arguments)
    if isinstance(parsed, dict) and list(parsed) == ["input"]:
        return parsed["input"]
    return arguments


def requested_calls_of(node: SpanNode) -> list[Requested]:
    """The calls the response requested: its GenAI output messages, else version 1's output `events` (Responses
    API) or `response_data` (Anthropic's arguments unwrapped); for a streamed Anthropic response that recorded
    only its text, the `tool_use` blocks of the last assistant message in the request (the previous response's
    calls)."""
    attrs = node.attributes
    if (raw := attrs.get(_OUTPUT)) is not None:
        return otel_requests(raw)
    if (events := attrs.get("events")) is not None:
        return _output_events(events) if "gen_ai.response.id" in attrs else []
    data = json_value(attrs.get("response_data"))
    if not isinstance(data, dict):
        return []
    anthropic = node.scope_name == ANTHROPIC_SCOPE
    message = data.get("message")
    if isinstance(message, dict):
        calls = tool_calls_in(message.get("tool_calls"))
        return [r._replace(arguments=_unwrapped(r.arguments)) for r in calls] if anthropic else calls
    if anthropic and "combined_chunk_content" in data:
        last = next(
            (m for m in reversed(_messages(attrs)) if isinstance(m, dict) and m.get("role") == "assistant"), None
        )
        if last is not None:
            return [Requested.of(b.get("name"), b.get("input"), b.get("id")) for b in _blocks(last, "tool_use")]
    return []


def _output_events(raw: Any) -> list[Requested]:
    """The calls of the trailing `assistant` events of a Responses span's version 1 `events` (its output)."""
    events = json_value(raw)
    if not isinstance(events, list):
        return []
    start = len(events)
    while start and isinstance(events[start - 1], dict) and events[start - 1].get("role") == "assistant":
        start -= 1
    return [r for event in events[start:] for r in tool_calls_in(event.get("tool_calls"))]


def _blocks(message: Mapping[str, Any], kind: str) -> Iterator[dict[str, Any]]:
    content = message.get("content")
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == kind:
            yield block


def tool_results_of(node: SpanNode) -> dict[str, Any]:
    """`{call_id: result}` from the request's GenAI input messages, else version 1's `events` (`tool` events) and
    `request_data` messages (OpenAI `tool` messages, Anthropic `tool_result` blocks)."""
    attrs = node.attributes
    if (raw := attrs.get(_INPUT)) is not None:
        return otel_results(raw)
    out: dict[str, Any] = {}
    events = json_value(attrs.get("events"))
    for event in events if isinstance(events, list) else ():
        if isinstance(event, dict) and event.get("role") == "tool" and isinstance(cid := event.get("id"), str):
            out[cid] = event.get("content")
    out.update(tool_results_in(_messages(attrs)))
    return out
