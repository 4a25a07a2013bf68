"""Instrumentation conventions ("dialects") and the one pass that turns a tree into a `Trajectory`.

A dialect is any object (usually a module) with a `name` and four functions of a `SpanNode`:
`recognizes`, `agent_run`, `tool_call`, `model_request` (the last three return None when the span
is not of that kind). Each span is classified by the first dialect that recognizes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Protocol

from .._gc import paused_gc
from ..spans import Span
from ..trajectory import AgentRun, ModelRequest, ToolCall, Trajectory
from . import genai, openinference, openllmetry, pydantic_ai
from ._merge import merge_requested

if TYPE_CHECKING:
    from ..tree import SpanNode, SpanTree

__all__ = ["DIALECTS", "Dialect", "extract", "get_dialect", "register_dialect"]


class Dialect(Protocol):
    name: str

    def recognizes(self, node: SpanNode) -> bool: ...
    def agent_run(self, node: SpanNode) -> AgentRun | None: ...
    def tool_call(self, node: SpanNode) -> ToolCall | None: ...
    def model_request(self, node: SpanNode) -> ModelRequest | None: ...


DIALECTS: list[Dialect] = [pydantic_ai, openinference, openllmetry, genai]
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


def extract(tree: SpanTree, *, dialect: str | Dialect | None = None) -> Trajectory:
    """Classify every span once and collect tool calls, model requests and agent runs."""
    with paused_gc():
        return _extract(tree, dialect)


def _extract(tree: SpanTree, dialect: str | Dialect | None) -> Trajectory:
    classifiers = [_classifier(get_dialect(dialect))] if dialect is not None else [_classifier(d) for d in DIALECTS]
    calls: list[ToolCall] = []
    requests: list[ModelRequest] = []
    runs: list[AgentRun] = []
    still_open: list[str] = []
    stack: list[tuple[SpanNode, AgentRun | None]] = [(r, None) for r in reversed(tree.roots)]
    while stack:
        node, run = stack.pop()
        if node.end_ns is None:
            still_open.append(f"span {node.name!r} had not ended (trace still open)")
        if node.children:
            stack.extend([(child, run) for child in reversed(node.children)])
        if node.attributes.get("logfire.span_type") == "pending_span":
            continue  # logfire's zero-length duplicate of a span that is recorded in full
        step: object = False
        for classify in classifiers:
            if (step := classify(node)) is not False:
                break
        kind = type(step)
        if kind is ToolCall:
            call: ToolCall = step  # type: ignore[assignment]
            if run is not None:
                call.agent = run.name
                call.run = run
            src = node.source
            if not isinstance(src, Span) and src.dropped_attributes:
                call.dropped_attributes = src.dropped_attributes
            calls.append(call)
        elif kind is ModelRequest:
            req: ModelRequest = step  # type: ignore[assignment]
            if run is not None:
                req.agent = run.name
                req.run = run
            requests.append(req)
        elif isinstance(step, AgentRun):
            agent = dataclasses.replace(step, parent=run)
            runs.append(agent)
            if node.children:  # children were pushed with the enclosing run: re-push with this one
                del stack[len(stack) - len(node.children) :]
                stack.extend([(child, agent) for child in reversed(node.children)])
    recognized = len(calls) + len(requests) + len(runs)
    requests.sort(key=_BY_START)
    added, notes = merge_requested(calls, requests, _message_shapes)
    calls.extend(added)
    calls.sort(key=_BY_START)
    runs.sort(key=_BY_START)
    traj = Trajectory(calls, requests, runs, tree=tree, recognized_spans=recognized)
    traj.incomplete = still_open + notes
    return traj


_BY_START = attrgetter("span.start_ns", "span.span_id")


def _message_shapes(dialect: str | None) -> tuple[str, ...]:
    """The message shapes (`_messages`) the named dialect's model-request spans carry."""
    for d in DIALECTS:
        if d.name == dialect:
            return getattr(d, "MESSAGE_SHAPES", ("otel",))  # type: ignore[no-any-return]
    return ("otel",)
