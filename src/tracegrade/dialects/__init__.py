"""Instrumentation conventions ("dialects") and the one pass that turns a tree into a `Trajectory`.

A dialect is any object (usually a module) with a `name` and four functions of a `SpanNode`:
`recognizes`, `agent_run`, `tool_call`, `model_request` (the last three return None when the span
is not of that kind). Each span is classified by the first dialect that recognizes it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Protocol

from .._gc import paused_gc
from ..spans import Span
from ..trajectory import AgentRun, ModelRequest, ToolCall, Trajectory
from . import _messages, genai, openai_agents, openinference, openllmetry, pydantic_ai, vercel_ai
from ._evidence import missing_evidence
from ._merge import Readers, merge_requested

if TYPE_CHECKING:
    from ..tree import SpanNode, SpanTree

__all__ = ["DIALECTS", "Dialect", "extract", "get_dialect", "register_dialect"]


class Dialect(Protocol):
    name: str

    def recognizes(self, node: SpanNode) -> bool: ...
    def agent_run(self, node: SpanNode) -> AgentRun | None: ...
    def tool_call(self, node: SpanNode) -> ToolCall | None: ...
    def model_request(self, node: SpanNode) -> ModelRequest | None: ...


DIALECTS: list[Dialect] = [pydantic_ai, openinference, openllmetry, vercel_ai, openai_agents, genai]
"""Auto-detection order: most specific first."""


def register_dialect(dialect: Dialect, *, first: bool = False) -> None:
    """Add a dialect to auto-detection (`first=True` gives it priority)."""
    if any(d.name == dialect.name for d in DIALECTS):
        raise ValueError(f"a dialect named {dialect.name!r} is already registered")
    DIALECTS.insert(0 if first else len(DIALECTS), dialect)


def get_dialect(dialect: str | Dialect) -> Dialect:
    if not isinstance(dialect, str):
        return dialect
    for d in DIALECTS:
        if d.name == dialect:
            return d
    names = ", ".join(repr(d.name) for d in DIALECTS)
    raise ValueError(f"unknown dialect {dialect!r}; known dialects: {names}")


def _classifier(d: Dialect) -> Callable[[SpanNode], object]:
    classify = getattr(d, "classify", None)
    if classify is not None:
        return classify  # type: ignore[no-any-return]

    def composed(node: SpanNode) -> object:
        if not d.recognizes(node):
            return False
        return d.agent_run(node) or d.tool_call(node) or d.model_request(node) or True

    return composed


def extract(
    tree: SpanTree, *, dialect: str | Dialect | None = None, explain: dict[int, str] | None = None
) -> Trajectory:
    """Classify every span once and collect tool calls, model requests and agent runs.

    A span is read by the first dialect that finds a step in it; one that recognizes the span but finds
    no step lets the others look. `explain`, when given, receives for each span (by `id(node)`) what it
    was read as, by which dialect, or why it was ignored.
    """
    with paused_gc():
        return _extract(tree, dialect, explain)


def _extract(tree: SpanTree, dialect: str | Dialect | None, explain: dict[int, str] | None) -> Trajectory:
    chosen = [get_dialect(dialect)] if dialect is not None else DIALECTS
    classifiers = [(d.name, _classifier(d)) for d in chosen]
    calls: list[ToolCall] = []
    requests: list[ModelRequest] = []
    runs: list[AgentRun] = []
    still_open: list[str] = []
    hosts_tools = ""  # a model-request span with tool executions beneath it (not one request)
    # (span, its agent run, the nearest enclosing tool call or model request)
    stack: list[tuple[SpanNode, AgentRun | None, ToolCall | ModelRequest | None]] = [
        (r, None, None) for r in reversed(tree.roots)
    ]
    while stack:
        node, run, outer = stack.pop()
        if node.end_ns is None:
            still_open.append(f"span {node.name!r} had not ended (trace still open)")
        if node.attributes.get("logfire.span_type") == "pending_span":
            if node.children:
                stack.extend([(child, run, outer) for child in reversed(node.children)])
            if explain is not None:
                explain[id(node)] = "ignored: Logfire's pending-span duplicate of a span recorded in full"
            continue
        step: object = False
        by = ""
        for name, classify in classifiers:
            found = classify(node)
            if found is False:
                continue
            by = by or name
            if found is not True:
                step, by = found, name
                break
            step = True  # recognized, but not a step: another dialect may still find one
        kind = type(step)
        inner = outer
        if explain is not None:
            explain[id(node)] = _explained(step, by, outer)
        if kind is ToolCall:
            call: ToolCall = step  # type: ignore[assignment]
            if type(outer) is ModelRequest and outer.span is not None and not hosts_tools:
                hosts_tools = f"{outer.span.name!r} ({outer.span.scope_name or 'unknown scope'})"
            if type(outer) is ToolCall and _same_call(outer, call):
                _absorb_call(outer, call)  # the same call recorded again inside (another instrumentation, MCP)
            else:
                if run is not None:
                    call.agent = run.name
                    call.run = run
                src = node.source
                if not isinstance(src, Span) and src.dropped_attributes:
                    call.dropped_attributes = src.dropped_attributes
                calls.append(call)
                inner = call
        elif kind is ModelRequest:
            req: ModelRequest = step  # type: ignore[assignment]
            if type(outer) is ModelRequest:
                _absorb_request(outer, req)  # a provider's span inside a framework's span for one request
            else:
                if run is not None:
                    req.agent = run.name
                    req.run = run
                requests.append(req)
                inner = req
        elif isinstance(step, AgentRun):
            run = dataclasses.replace(step, parent=run)
            runs.append(run)
        if node.children:
            stack.extend([(child, run, inner) for child in reversed(node.children)])
    recognized = len(calls) + len(requests) + len(runs)
    requests.sort(key=_BY_START)
    requests, twins = _one_per_response(requests)
    added, notes = merge_requested(calls, requests, functools.cache(_message_readers), twins)
    if explain is not None:
        _explain_merge(explain, twins, added)
    calls.extend(added)
    calls.sort(key=_BY_START)
    runs.sort(key=_BY_START)
    traj = Trajectory(calls, requests, runs, tree=tree, recognized_spans=recognized)
    traj.incomplete = still_open + notes
    traj.missing = missing_evidence(calls, requests, runs)
    if hosts_tools:
        traj.missing.setdefault("model_requests", (
            f"the model-request span {hosts_tools} has tool executions beneath it: this instrumentation records "
            "several model calls on one span, so the number of requests is not recorded"
        ))  # fmt: skip
    return traj


def _explained(step: object, by: str, outer: ToolCall | ModelRequest | None) -> str:
    """What a span was read as (`extract(..., explain=...)`)."""
    if step is False:
        return "not recognized by any dialect"
    if step is True:
        return f"{by}: recognized, not a step"
    if isinstance(step, ToolCall):
        if type(outer) is ToolCall and _same_call(outer, step):
            return f"{by}: tool call {step.name!r}, the same call as the enclosing tool span (merged into it)"
        return f"{by}: tool call {step.name!r}" + (f" (call id {step.call_id})" if step.call_id else "")
    if isinstance(step, ModelRequest):
        if type(outer) is ModelRequest:
            return f"{by}: model request, the same request as the enclosing one (merged into it)"
        return f"{by}: model request" + (f" ({step.model})" if step.model else "")
    if isinstance(step, AgentRun):
        return f"{by}: agent run" + (f" {step.name!r}" if step.name else "")
    return f"{by}: {type(step).__name__}"


def _explain_merge(explain: dict[int, str], twins: dict[int, list[ModelRequest]], added: list[ToolCall]) -> None:
    counted_once = {id(twin.span) for group in twins.values() for twin in group}
    for key, text in list(explain.items()):
        if key in counted_once:
            explain[key] = text + " — recorded twice (same response id or time as another request): counted once"
    for call in added:
        if call.span is not None:
            state = "never executed" if call.executed is False else "no tool span: counted from the request"
            explain[id(call.span)] = explain.get(id(call.span), "") + f"; requested {call.name!r} ({state})"


def _one_per_response(requests: list[ModelRequest]) -> tuple[list[ModelRequest], dict[int, list[ModelRequest]]]:
    """Model requests with the same response id are one request recorded twice, in separate traces
    (e.g. the Anthropic SDK's own span beside an instrumentor's): the first is kept and completed from
    the others, which are returned by kept request (by identity) for reading its messages."""
    kept: list[ModelRequest] = []
    first: dict[str, ModelRequest] = {}
    twins: dict[int, list[ModelRequest]] = {}
    for req in requests:
        rid = _response_id(req.span) if req.span is not None else None
        if rid is None or (seen := first.get(rid)) is None:
            kept.append(req)
            if rid is not None:
                first[rid] = req
        else:
            _absorb_request(seen, req)
            twins.setdefault(id(seen), []).append(req)
    return _pair_by_time(kept, twins), twins


def _pair_by_time(requests: list[ModelRequest], twins: dict[int, list[ModelRequest]]) -> list[ModelRequest]:
    """A request whose span lies within the time of another instrumentation's request span for the same
    model, without being its descendant, is that request recorded twice (an SDK's own span beside an
    instrumentor's, in another trace); each request absorbs at most one twin per instrumentation.
    One sweep in start order over the requests still open at each start (few: requests rarely overlap)."""
    scopes = {req.span.scope_name for req in requests if req.span is not None}
    if len(scopes) < 2:
        return requests  # one instrumentation: nothing recorded twice
    kept: list[ModelRequest] = []
    open_: list[ModelRequest] = []  # kept requests whose span has not ended at the current start
    taken: set[tuple[int, str]] = set()
    for req in requests:  # in start order: a containing span comes first
        span = req.span
        if span is None or span.end_ns is None:
            kept.append(req)
            continue
        start, scope = span.start_ns, span.scope_name
        open_ = [k for k in open_ if k.span is not None and (k.span.end_ns or 0) >= start]
        host = next(
            (k for k in reversed(open_)
             if k.span is not None and k.span.scope_name != scope and span.end_ns <= (k.span.end_ns or 0)
             and (k.model is None or req.model is None or k.model == req.model) and (id(k), scope) not in taken),
            None,
        )  # fmt: skip
        if host is None:
            kept.append(req)
            open_.append(req)
        else:
            taken.add((id(host), scope))
            _absorb_request(host, req)
            twins.setdefault(id(host), []).append(req)
    return kept


def _response_id(span: SpanNode) -> str | None:
    """The provider's id of the response a model-request span recorded (`gen_ai.response.id`, or the
    `id` leading OpenInference's `output.value`)."""
    attrs = span.attributes
    rid = attrs.get("gen_ai.response.id")
    if isinstance(rid, str) and rid:
        return rid
    out = attrs.get("output.value")
    if isinstance(out, str) and out.startswith('{"id":"'):
        end = out.find('"', 7)
        return out[7:end] if end > 7 else None
    return None


def _same_call(outer: ToolCall, call: ToolCall) -> bool:
    """A tool span inside a tool span of the same tool, with no call id telling them apart."""
    return outer.name == call.name and (outer.call_id is None or call.call_id is None or outer.call_id == call.call_id)


def _absorb_call(outer: ToolCall, call: ToolCall) -> None:
    """Fill what the outer span of one call lacks from an inner span of the same call."""
    if outer.call_id is None and call.call_id is not None:
        outer.call_id = call.call_id
    if not outer.args_recorded and call.args_recorded:
        outer._args, outer.args_text, outer.args_source = call._args, call.args_text, call.args_source
    if outer.result is None and call.result is not None:
        outer.result = call.result
    if call.status == "error" and outer.status != "error":
        outer.status, outer.error = "error", call.error


def _absorb_request(outer: ModelRequest, req: ModelRequest) -> None:
    """Fill what the outer span of one model request lacks (tokens, model) from an inner span."""
    for field in ("model", "input_tokens", "output_tokens", "response_model", "provider", "cache_read_tokens"):
        if getattr(outer, field) is None and (value := getattr(req, field)) is not None:
            setattr(outer, field, value)


_BY_START = attrgetter("span.start_ns", "span.span_id")


def _message_readers(dialect: str | None) -> Readers:
    """How the named dialect's model-request spans record requested calls and tool results: its own
    `requested_calls(attrs)` / `tool_results(attrs)` when it has them, else its `MESSAGE_SHAPES`."""
    d = next((d for d in DIALECTS if d.name == dialect), None)
    shapes: tuple[str, ...] = getattr(d, "MESSAGE_SHAPES", ("otel",))
    requested = getattr(d, "requested_calls", None) or (lambda attrs: _messages.requested(attrs, shapes))
    results = getattr(d, "tool_results", None) or (lambda attrs: _messages.results(attrs, shapes))
    return requested, results
