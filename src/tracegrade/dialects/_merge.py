"""Merge the tool calls models *requested* (model-request spans) with the calls tool spans *executed*.

For each model request, in start order, each requested call is matched to an executed call of the
same tool: by call id within the same agent run, else by call id alone when only one executed call
has it, else (tool spans without ids: OpenLLMetry, LangGraph) the first unmatched executed call of
that tool in the same run that started after the request. A match keeps its span; its arguments are
the model's when the span recorded none or something else (a framework's wrapper around them, or a
rendering that is not JSON), with `args_source="messages"`. A requested call that matches nothing
becomes a call of its own on the request's span: `executed=None` when the trace has no tool spans at
all (the calls then form the trajectory), `executed=False` otherwise (requested, never executed). Results for such calls come
from the tool messages of later requests, by call id. A requested call that a handoff span carried out
(same call id, or same tool name when the handoff span has no id; with neither, the OpenAI Agents SDK's
default name for a handoff to its target) is that handoff, not a tool call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..trajectory import NOT_RECORDED, Handoff, ModelRequest, ToolCall, cut_short, parse_args
from . import _messages

if TYPE_CHECKING:
    from ..tree import SpanNode

__all__ = ["Readers", "default_transfer_tool", "merge_requested", "transcript_calls"]


Readers = tuple[Callable[["SpanNode"], list[_messages.Requested]], Callable[["SpanNode"], dict[str, Any]]]
"""(requested calls of a model-request span, `{call_id: result}` of its input messages)."""


def merge_requested(
    calls: list[ToolCall],
    requests: list[ModelRequest],
    readers_of: Callable[[str | None], Readers],
    twins: Mapping[int, list[ModelRequest]] | None = None,
    handoffs: Sequence[Handoff] = (),
    wrapping: frozenset[str] = frozenset(),
    absorbed: Sequence[ModelRequest] = (),
    unnamed: list[ToolCall] | None = None,
) -> tuple[list[ToolCall], list[str]]:
    """The requested-only calls to add to `calls` (which it updates in place), and notes on what the
    telemetry left out (requested calls without a tool name). `twins` are other records of the same
    request (by the kept request's identity): read when the request's own span holds no calls.
    `wrapping` names the dialects whose tool spans may record a framework's wrapper around the arguments
    (their recorded arguments are compared with the model's; other dialects record the model's own).
    An executed call matched by name and order (its span records no call id) takes the model's call id.
    `absorbed` are the same requests recorded again by a provider's span inside them: their tool messages give
    the results the outer spans do not tie to a call id (LiteLLM's OpenInference span records none). An execution
    whose tool is not recorded (`unnamed`, updated in place) that a requested call names by call id is that call:
    it takes the requested name and is added, executed, with its own span."""
    handed_ids: set[str | None] = set()
    handed_tools: set[str | None] = set()
    if handoffs:
        handed_ids.update(h.call_id for h in handoffs if h.call_id)
        handed_tools.update(h.tool for h in handoffs if h.tool and not h.call_id)
        handed_tools.update(
            default_transfer_tool(h.target) for h in handoffs if h.target and not h.tool and not h.call_id
        )  # fmt: skip
    by_key: dict[tuple[int, str], list[ToolCall]] = {}
    by_id: dict[str, list[ToolCall]] = {}
    no_id: dict[tuple[int, str], list[ToolCall]] = {}
    indexed = False  # the executed calls are indexed when a request first names calls
    executed_any = bool(calls) or bool(unnamed)  # tool spans are recorded, named or not
    matched: set[int] = set()
    added: list[ToolCall] = []
    notes: list[str] = []
    dialect: object = _NONE
    for req in requests:
        span = req.span
        if span is None:
            continue
        if req.dialect is not dialect:  # requests of one dialect follow each other: its reader is looked up once
            dialect, read = req.dialect, readers_of(req.dialect)[0]
        found = read(span)
        if not found:
            if span._logs:
                found = _messages.logs_requested(span._logs)
            if not found and twins and (others := twins.get(id(req))):
                for twin in others:
                    if twin.span is not None and (found := readers_of(twin.dialect)[0](twin.span)):
                        break
            if not found:
                continue
        if not indexed:
            indexed = True
            for c in calls:
                if c.call_id:
                    by_key.setdefault((id(c.run), c.call_id), []).append(c)
                    by_id.setdefault(c.call_id, []).append(c)
                else:
                    no_id.setdefault((id(c.run), c.name), []).append(c)
        for r in _deduplicated(found):
            if (r.call_id is not None and r.call_id in handed_ids) or (r.name is not None and r.name in handed_tools):
                continue  # carried out as a handoff
            hit = _match(r, req, by_key, by_id, no_id, matched)
            if hit is not None:
                matched.add(id(hit))
                _adopt_arguments(hit, r.arguments, wrapping)
                if hit.call_id is None and r.call_id is not None:  # a tool span without one: the model's id
                    hit.call_id = r.call_id
                continue
            if r.name is None:
                notes.append(f"model request {span.name!r} requested a tool call whose name was not recorded")
                continue
            if unnamed and r.call_id is not None and (named := _named_by_id(unnamed, r.name, r.call_id)) is not None:
                _adopt_arguments(named, r.arguments, wrapping)
                added.append(named)
                continue
            call = ToolCall._from_span(r.name, None, span, req.dialect or "")
            call.executed = None if not executed_any else False
            if r.name in _messages.output_tool_names(span.attributes):
                call.output_function = True  # a structured-output "tool": the run's result, not a call
            call.call_id = r.call_id
            call.agent, call.run = req.agent, req.run
            if r.arguments is not None:
                _set_arguments(call, r.arguments)
            added.append(call)
    if any(call.call_id is not None for call in added):  # input messages repeat the whole history: read if needed
        results: dict[str, Any] = {}
        for req in (*absorbed, *requests):  # a request's own span wins over the provider's inside it
            if req.span is not None:
                results.update(readers_of(req.dialect)[1](req.span))
                results.update(_messages.logs_results(req.span.logs))
        for call in added:
            if call.call_id is not None and call.call_id in results and call.result is None:
                call.result = results[call.call_id]
    return added, notes


_NONE = object()


def _named_by_id(unnamed: list[ToolCall], tool: str, call_id: str) -> ToolCall | None:
    """The execution among `unnamed` with `call_id` (taken out of the list), as a call of `tool`; None if none."""
    for i, u in enumerate(unnamed):
        if u.call_id == call_id:
            del unnamed[i]
            named = str.__new__(ToolCall, tool)
            vars(named).update(vars(u))  # its span, arguments, status, result, run...
            del named.name_missing
            return named
    return None


def transcript_calls(found: Sequence[tuple[SpanNode, str, _messages.Transcript]]) -> tuple[list[ToolCall], list[str]]:
    """The calls of the conversations spans recorded whole (span, dialect, transcript), for a trace in which no
    tool span and no model-request span records any: each requested call on the span that recorded it, executed
    unknown (`executed=None`), with its result from the same transcript's tool messages (failed where the transcript
    marks it so, the result its error); a call id seen in an earlier transcript (the same conversation recorded
    again, e.g. by an enclosing span) is not a call again, and calls without ids are taken from the first transcript
    only. Returns the calls and notes (calls without names)."""
    calls: list[ToolCall] = []
    notes: list[str] = []
    seen: set[str] = set()
    for node, dialect, transcript in found:
        if not transcript.requested:
            continue
        first = not calls
        for r in transcript.requested:
            if (r.call_id in seen) if r.call_id is not None else not first:
                continue
            if r.call_id is not None:
                seen.add(r.call_id)
            if r.name is None:
                notes.append(f"span {node.name!r} recorded a conversation with a tool call whose name was not recorded")
                continue
            call = ToolCall._from_span(r.name, None, node, dialect)
            call.executed, call.call_id, call.agent = None, r.call_id, transcript.agent
            if r.arguments is not None:
                _set_arguments(call, r.arguments)
            if r.call_id is not None and r.call_id in transcript.results:
                call.result = transcript.results[r.call_id]
            if r.call_id is not None and r.call_id in transcript.failed:
                call.status, call.error = "error", str(call.result) if call.result is not None else "error"
            calls.append(call)
    return calls, notes


def default_transfer_tool(target: str) -> str:
    """The tool name the OpenAI Agents SDK gives a handoff to `target` unless told otherwise
    (`transfer_to_{agent}`, lowercased, every character but letters, digits and `_` made `_`): how a
    handoff span that records neither its tool nor a call id is matched to the model's request."""
    return _NOT_IN_NAMES.sub("_", f"transfer_to_{target}").lower()


_NOT_IN_NAMES = re.compile(r"[^a-zA-Z0-9_]")


def _deduplicated(found: list[_messages.Requested]) -> list[_messages.Requested]:
    """One entry per call id: a streamed response recorded chunk by chunk (Google ADK) repeats each call,
    its arguments only in some chunks; the entry with arguments wins, else the first."""
    out: list[_messages.Requested] = []
    index: dict[str, int] = {}
    for r in found:
        if r.call_id is None:
            out.append(r)
        elif (i := index.get(r.call_id)) is None:
            index[r.call_id] = len(out)
            out.append(r)
        elif out[i].arguments is None and r.arguments is not None:
            out[i] = r
    return out


def _match(
    r: _messages.Requested,
    req: ModelRequest,
    by_key: dict[tuple[int, str], list[ToolCall]],
    by_id: dict[str, list[ToolCall]],
    no_id: dict[tuple[int, str], list[ToolCall]],
    matched: set[int],
) -> ToolCall | None:
    if r.call_id:
        name = r.name
        for c in by_key.get((id(req.run), r.call_id), ()):
            if id(c) not in matched and (name is None or c.name == name):
                return c
        anywhere = [
            c for c in by_id.get(r.call_id, ()) if id(c) not in matched and (name is None or c.name == name)
        ]  # fmt: skip
        if len(anywhere) == 1:  # another run's id: only when unambiguous
            return anywhere[0]
    if r.name is not None and req.span is not None:
        start = req.span.start_ns
        for c in no_id.get((id(req.run), r.name), ()):
            if id(c) not in matched and c.span is not None and c.span.start_ns >= start:
                return c
        later = [  # the tool span may sit in another agent run (a graph's tool node): the earliest one after
            c for (_, name), cs in no_id.items() if name == r.name
            for c in cs if id(c) not in matched and c.span is not None and c.span.start_ns >= start
        ]  # fmt: skip
        if later:
            return min(later, key=lambda c: (c.span.start_ns, c.span.span_id) if c.span is not None else (0, 0))
    return None


def _adopt_arguments(call: ToolCall, raw: Any, wrapping: frozenset[str]) -> None:
    """The model's arguments for an executed call whose span recorded none (or none by name, e.g. a decorator's
    positional arguments), recorded a wrapper, or recorded text that is not JSON and not JSON cut short (a
    framework's rendering of them, e.g. OpenLIT's LangChain tool span writes the Python `str()` of the
    arguments dict)."""
    if raw is None:
        return
    text = call.args_text
    if (
        call.args is NOT_RECORDED
        or (call.dialect in wrapping and text != raw and call.args != parse_args(raw))
        or (text is not None and text != raw and call.args is text and not cut_short(text))
    ):
        _set_arguments(call, raw)


def _set_arguments(call: ToolCall, raw: Any) -> None:
    call._args = parse_args(raw)
    call.args_text = raw if isinstance(raw, str) else json.dumps(raw, default=str)
    call.args_source = "messages"
