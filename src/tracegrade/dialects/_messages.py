"""Tool calls a model *requested* and the tool results it was *given*, read from a model-request span.

Three recorded shapes (shared/reference/conventions.md §1.7, §3, §4):
- OTel GenAI messages (`gen_ai.output.messages` / `gen_ai.input.messages`, JSON): parts
  `{"type": "tool_call", "id", "name", "arguments"}` and `{"type": "tool_call_response", "id",
  "result" | "response"}`;
- OpenInference's flattened messages: `llm.output_messages.N.message.tool_calls.M.tool_call.{id,
  function.name, function.arguments}`, results as `llm.input_messages.N.message.{role=tool,
  tool_call_id, content}`;
- OpenLLMetry's flattened prompt/completion: `gen_ai.completion.N.tool_calls.M.{id, name,
  arguments}`, results as `gen_ai.prompt.N.{role=tool, tool_call_id, content}`;
- OpenLIT's summary of a response's tool calls on the model span, written whatever its content setting:
  `gen_ai.tool.name`, `gen_ai.tool.call.id` and `gen_ai.tool.args` (or `gen_ai.tool.call.arguments`), each
  the response's values joined with `", "` (no results).

Each reader returns plain tuples; the dialects decide which shape their spans carry. The same shapes give the
text of the user messages a model request's input holds (`user_text`, `logs_user_text`; OTel GenAI `text` parts,
OpenAI's `content`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

__all__ = [
    "REDACTED",
    "Requested",
    "Transcript",
    "event_name",
    "flattened_requests",
    "flattened_results",
    "json_list",
    "last_user_text",
    "logs_output_recorded",
    "logs_requested",
    "logs_results",
    "logs_user_text",
    "otel_requests",
    "otel_results",
    "output_tool_names",
    "requested",
    "requested_reader",
    "results",
    "results_reader",
    "summary_requests",
    "tool_calls_in",
    "tool_results_in",
    "user_text",
]


REDACTED = frozenset({"[REDACTED]", "__REDACTED__", "<redacted>"})
"""Values instrumentations write in place of content they were told not to record."""
_WITHHELD_TEXT = REDACTED | {"<elided>"}
"""Message texts that stand for content not recorded (`REDACTED`; Google ADK's `<elided>` in its message events)."""


class Requested(NamedTuple):
    """One tool call in a model's response: `arguments` as recorded (JSON text, a value, or None)."""

    name: str | None
    arguments: Any
    call_id: str | None

    @classmethod
    def of(cls, name: Any, arguments: Any, call_id: Any) -> Requested:
        """From recorded values: a name or call id that is not a non-empty string is not recorded."""
        return cls(
            name if isinstance(name, str) and name else None,
            arguments,
            call_id if isinstance(call_id, str) and call_id else None,
        )


class Transcript(NamedTuple):
    """A conversation a span recorded whole (e.g. a task's output): the calls its model responses requested, in
    order, the results its tool messages gave (`{call_id: result}`), the agent it names (None if none), and the
    call ids whose result the conversation marks as a failure (the result then being the error)."""

    requested: list[Requested]
    results: dict[str, Any]
    agent: str | None
    failed: frozenset[str] = frozenset()


def tool_calls_in(calls: Any) -> list[Requested]:
    """The calls in an assistant message's `tool_calls` list: OpenAI's `{"id", "function": {"name", "arguments"}}`
    (or a custom tool's `{"id", "custom": {"name", "input"}}`), LangChain's `{"name", "args", "id"}`. An entry of
    another shape is a call whose name was not recorded (merging notes it); one that is not an object is no call."""
    out = []
    for tc in calls if isinstance(calls, list) else ():
        if not isinstance(tc, dict):
            continue
        if isinstance(fn := tc.get("function"), dict):
            out.append(Requested.of(fn.get("name"), fn.get("arguments"), tc.get("id")))
        elif isinstance(custom := tc.get("custom"), dict):
            out.append(Requested.of(custom.get("name"), custom.get("input"), tc.get("id")))
        elif "args" in tc:
            out.append(Requested.of(tc.get("name"), tc["args"], tc.get("id")))
        else:
            out.append(Requested.of(None, None, tc.get("id")))
    return out


def tool_results_in(messages: Iterable[Any]) -> dict[str, Any]:
    """`{call_id: result}` of the tool results in a list of chat messages or items: OpenAI `tool` messages
    (`tool_call_id`, `content`; LangChain's `ToolMessage`, `type` `tool`, alike), Responses API `function_call_output`
    items (`call_id`, `output`), and Anthropic `tool_result` content blocks (`tool_use_id`, `content`)."""
    out: dict[str, Any] = {}
    for message in messages:
        if not isinstance(message, dict):
            continue
        if message.get("type") == "function_call_output":
            if isinstance(call_id := message.get("call_id"), str):
                out[call_id] = message.get("output")
        elif message.get("role") == "tool" or message.get("type") == "tool":
            if isinstance(call_id := message.get("tool_call_id"), str):
                out[call_id] = message.get("content")
        elif isinstance(blocks := message.get("content"), list):
            for block in blocks:
                is_result = isinstance(block, dict) and block.get("type") == "tool_result"
                if is_result and isinstance(call_id := block.get("tool_use_id"), str):
                    out[call_id] = block.get("content")
    return out


def json_list(raw: Any) -> list[Any]:
    """A recorded list of messages: JSON text or a sequence; anything else is no messages."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return []
    return list(raw) if isinstance(raw, list | tuple) else []


def _parts(raw: Any) -> Iterator[dict[str, Any]]:
    for message in json_list(raw):
        if isinstance(message, dict) and isinstance(parts := message.get("parts"), list | tuple):
            for part in parts:
                if isinstance(part, dict):
                    yield part


def otel_requests(raw: Any) -> list[Requested]:
    """Tool calls in OTel GenAI output messages (`gen_ai.output.messages`)."""
    if type(raw) is str and '"tool_call"' not in raw and "\\u" not in raw:
        return []  # JSON text holding no string "tool_call" (not even \u-escaped): no tool-call part
    out = []
    for part in _parts(raw):
        if part.get("type") == "tool_call":
            name, call_id = part.get("name"), part.get("id")
            out.append(Requested.of(name, part.get("arguments"), call_id))
    return out


def otel_results(raw: Any) -> dict[str, Any]:
    """`{call_id: result}` from the `tool_call_response` parts of OTel GenAI input messages."""
    if type(raw) is str and '"tool_call_response"' not in raw and "\\u" not in raw:
        return {}  # JSON text holding no string "tool_call_response": no tool result
    out: dict[str, Any] = {}
    for part in _parts(raw):
        if part.get("type") == "tool_call_response" and isinstance(call_id := part.get("id"), str):
            out[call_id] = part["result"] if "result" in part else part.get("response")
    return out


SUMMARY_IDS = "gen_ai.tool.call.id"
_SUMMARY_NAMES = "gen_ai.tool.name"
_SUMMARY_ARGS = ("gen_ai.tool.args", "gen_ai.tool.call.arguments")
_SEPARATOR = ", "
_DECODER = json.JSONDecoder()


def summary_requests(attrs: Mapping[str, Any]) -> list[Requested]:
    """Tool calls from OpenLIT's joined summary on a model span (`gen_ai.tool.name` = `"a, b"`,
    `gen_ai.tool.call.id` = `"call_1, call_2"`, `gen_ai.tool.args` = `'{"x": 1}, {"y": 2}'`): names and ids
    are paired in order; the arguments are a run of JSON values, and are kept only when they decode into
    exactly one value per name (otherwise they are not recorded). No summary, or ids and names of different
    counts: no calls."""
    names, ids = attrs.get(_SUMMARY_NAMES), attrs.get(SUMMARY_IDS)
    if not isinstance(names, str) or not isinstance(ids, str) or not names or not ids:
        return []
    name_list, id_list = names.split(_SEPARATOR), ids.split(_SEPARATOR)
    if len(name_list) != len(id_list):
        return []
    raw = next((v for key in _SUMMARY_ARGS if isinstance(v := attrs.get(key), str) and v), None)
    args = _joined_json(raw, len(name_list)) if raw is not None else None
    pairs = enumerate(zip(name_list, id_list, strict=True))
    return [Requested.of(n, args[i] if args is not None else None, c) for i, (n, c) in pairs]


def _joined_json(raw: str, count: int) -> list[str] | None:
    """The JSON texts of `raw`, `count` JSON values joined with `", "`; None when it is not that."""
    out: list[str] = []
    pos = 0
    while pos < len(raw):
        try:
            _, end = _DECODER.raw_decode(raw, pos)
        except ValueError:
            return None
        out.append(raw[pos:end])
        if end == len(raw):
            break
        if not raw.startswith(_SEPARATOR, end):
            return None
        pos = end + len(_SEPARATOR)
    return out if len(out) == count else None


_OI_OUT = re.compile(
    r"llm\.output_messages\.(\d+)\.message\.tool_calls\.(\d+)\.tool_call\.(id|function\.name|function\.arguments)$"
)
_OLLM_OUT = re.compile(r"gen_ai\.completion\.(\d+)\.tool_calls\.(\d+)\.(id|name|arguments)$")
_FIELDS = {
    "id": "id",
    "function.name": "name",
    "function.arguments": "arguments",
    "name": "name",
    "arguments": "arguments",
}


def flattened_requests(attrs: Mapping[str, Any], style: str) -> list[Requested]:
    """Tool calls from flattened output-message attributes; `style` is `"openinference"` or `"openllmetry"`."""
    prefix, pattern = (
        ("llm.output_messages.", _OI_OUT) if style == "openinference" else ("gen_ai.completion.", _OLLM_OUT)
    )
    found: dict[tuple[int, int], dict[str, Any]] = {}
    for key, value in attrs.items():
        if key.startswith(prefix) and (m := pattern.match(key)):
            found.setdefault((int(m[1]), int(m[2])), {})[_FIELDS[m[3]]] = value
    out = []
    for _, fields in sorted(found.items()):
        name, call_id = fields.get("name"), fields.get("id")
        out.append(Requested.of(name, fields.get("arguments"), call_id))
    return out


_OI_IN = re.compile(r"llm\.input_messages\.(\d+)\.message\.(role|tool_call_id|content)$")
_OLLM_IN = re.compile(r"gen_ai\.prompt\.(\d+)\.(role|tool_call_id|content)$")


def _flattened_messages(attrs: Mapping[str, Any], style: str) -> list[dict[str, Any]]:
    """The flattened input messages (`role`, `tool_call_id`, `content`), in index order."""
    prefix, pattern = ("llm.input_messages.", _OI_IN) if style == "openinference" else ("gen_ai.prompt.", _OLLM_IN)
    messages: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if key.startswith(prefix) and (m := pattern.match(key)):
            messages.setdefault(int(m[1]), {})[m[2]] = value
    return [messages[i] for i in sorted(messages)]


def flattened_results(attrs: Mapping[str, Any], style: str) -> dict[str, Any]:
    """`{call_id: result}` from flattened input messages with role `tool`."""
    return {
        str(m["tool_call_id"]): m.get("content")
        for m in _flattened_messages(attrs, style)
        if m.get("role") == "tool" and isinstance(m.get("tool_call_id"), str)
    }


def requested(attrs: Mapping[str, Any], shapes: tuple[str, ...]) -> list[Requested]:
    """The tool calls a model-request span records, from the first of `shapes` that has any."""
    for shape in shapes:
        if shape == "otel":
            found = otel_requests(attrs.get("gen_ai.output.messages"))
        else:
            found = flattened_requests(attrs, shape)
        if found:
            return found
    return []


def requested_reader(shapes: tuple[str, ...]) -> Callable[[Mapping[str, Any]], list[Requested]]:
    """`requested(attrs, shapes)` as a function of the attributes."""
    if shapes == ("otel",):
        return _otel_requested
    return lambda attrs: requested(attrs, shapes)


def results_reader(shapes: tuple[str, ...]) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """`results(attrs, shapes)` as a function of the attributes."""
    return lambda attrs: results(attrs, shapes)


def _otel_requested(attrs: Mapping[str, Any]) -> list[Requested]:
    """`requested(attrs, ("otel",))`: nothing to decode when the output messages are not recorded."""
    raw = attrs.get(OUTPUT_MESSAGES)
    return [] if raw is None else otel_requests(raw)


OUTPUT_MESSAGES = "gen_ai.output.messages"


def results(attrs: Mapping[str, Any], shapes: tuple[str, ...]) -> dict[str, Any]:
    """`{call_id: result}` of the tool results a model-request span's input messages hold."""
    for shape in shapes:
        found = otel_results(attrs.get("gen_ai.input.messages")) if shape == "otel" else flattened_results(attrs, shape)
        if found:
            return found
    return {}


_TEXT_ITEMS = ("text", "input_text")


def _user_message_text(message: Any) -> str | None:
    """The text of a user message: its OTel GenAI `text` parts, or OpenAI's `content` (a string, or its `text` /
    `input_text` items), joined by a newline; None for another role or a message without text (tool results, or
    a marker of content not recorded)."""
    if not isinstance(message, dict) or message.get("role") != "user":
        return None
    parts, content = message.get("parts"), message.get("content")
    if isinstance(parts, list):
        texts = [p["content"] for p in parts if isinstance(p, dict) and p.get("type") == "text" and "content" in p]
    elif isinstance(content, list):
        texts = [p["text"] for p in content if isinstance(p, dict) and p.get("type") in _TEXT_ITEMS and "text" in p]
    else:
        texts = [content] if content is not None else []
    texts = [t for t in texts if isinstance(t, str) and t not in _WITHHELD_TEXT]
    return "\n".join(texts) if texts else None


def last_user_text(messages: Iterable[Any]) -> str | None:
    """The text of the last user message (with text) in `messages`."""
    found = None
    for message in messages:
        if (text := _user_message_text(message)) is not None:
            found = text
    return found


def user_text(attrs: Mapping[str, Any], shapes: tuple[str, ...]) -> str | None:
    """The text of the last user message a model-request span's input messages hold, from the first of `shapes`
    that records one (OTel GenAI `gen_ai.input.messages`, or the flattened input messages)."""
    for shape in shapes:
        if shape == "otel":
            raw = attrs.get("gen_ai.input.messages")
            found = None if raw is None else last_user_text(json_list(raw))
        else:
            found = last_user_text(_flattened_messages(attrs, shape))
        if found is not None:
            return found
    return None


def logs_user_text(records: Any) -> str | None:
    """The text of the last user message in the log records (events) attached to a model-request span:
    `gen_ai.user.message` events (`{content}`) and the input messages of `gen_ai.client.inference.operation.details`."""
    found = None
    for record in records:
        name = event_name(record)
        if name == "gen_ai.user.message":
            body = _body(record)
            text = _user_message_text({**body, "role": "user"}) if isinstance(body, dict) else None
        elif name == "gen_ai.client.inference.operation.details":
            text = last_user_text(json_list(record.attributes.get("gen_ai.input.messages")))
        else:
            continue
        if text is not None:
            found = text
    return found


def output_tool_names(attrs: Mapping[str, Any]) -> frozenset[str]:
    """Names of the structured-output "tools" a Pydantic AI request declared (`model_request_parameters`)."""
    raw = attrs.get("model_request_parameters")
    if not isinstance(raw, str) or '"output_tools"' not in raw:
        return frozenset()
    try:
        tools = json.loads(raw).get("output_tools") or ()
    except (ValueError, AttributeError):
        return frozenset()
    return frozenset(t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str))


def event_name(record: Any) -> str:
    """A log record's event name: its `eventName` field, else its `event.name` attribute (the events
    convention before the field existed; Semantic Kernel's message events)."""
    name = record.event_name
    if name:
        return str(name)
    attr = record.attributes.get("event.name")
    return attr if isinstance(attr, str) else ""


def _body(record: Any) -> Any:
    """A log record's body; a string body holding a JSON object (Semantic Kernel's message events) is that object."""
    body = record.body
    if isinstance(body, str) and body.startswith("{"):
        try:
            parsed = json.loads(body)
        except ValueError:
            return body
        return parsed if isinstance(parsed, dict) else body
    return body


def _tool_calls(body: Any) -> list[Any]:
    if not isinstance(body, dict):
        return []
    message = body.get("message")
    calls = body.get("tool_calls") or (message.get("tool_calls") if isinstance(message, dict) else None)
    return list(calls) if isinstance(calls, list | tuple) else []


def logs_requested(records: Any) -> list[Requested]:
    """Tool calls a model requested, from the log records (events) attached to its span: the GenAI
    instrumentations' `gen_ai.choice` (`message.tool_calls` or `tool_calls`, OpenAI's shape; the body a map or
    JSON text) and `gen_ai.client.inference.operation.details` (`gen_ai.output.messages`)."""
    out: list[Requested] = []
    for record in records:
        name = event_name(record)
        if name == "gen_ai.choice":
            out.extend(tool_calls_in(_tool_calls(_body(record))))
        elif name == "gen_ai.client.inference.operation.details":
            out.extend(otel_requests(record.attributes.get("gen_ai.output.messages")))
    return out


def logs_results(records: Any) -> dict[str, Any]:
    """`{call_id: result}` from `gen_ai.tool.message` events (`{content, id}`, or OpenAI's tool message
    `{content, tool_call_id}` as JSON text) and the input messages of `gen_ai.client.inference.operation.details`
    events."""
    out: dict[str, Any] = {}
    for record in records:
        name = event_name(record)
        if name == "gen_ai.tool.message":
            body = _body(record)
            if not isinstance(body, dict):
                continue
            call_id = body.get("id") if isinstance(body.get("id"), str) else body.get("tool_call_id")
            if isinstance(call_id, str) and call_id:
                out[call_id] = body.get("content")
        elif name == "gen_ai.client.inference.operation.details":
            out.update(otel_results(record.attributes.get("gen_ai.input.messages")))
    return out


def logs_output_recorded(records: Any) -> bool:
    """The log records hold the model's output (its choice or the operation's output messages)."""
    return any(event_name(r) in ("gen_ai.choice", "gen_ai.client.inference.operation.details") for r in records)
