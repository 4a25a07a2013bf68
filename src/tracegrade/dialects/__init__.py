"""Instrumentation conventions ("dialects") and the one pass that turns a tree into a `Trajectory`.

A dialect is any object (usually a module) with a `name` and four functions of a `SpanNode`:
`recognizes`, `agent_run`, `tool_call`, `model_request` (the last three return None when the span
is not of that kind). Each span is classified by the first dialect that recognizes it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Protocol

from ..trajectory import AgentRun, ModelRequest, ToolCall, Trajectory
from . import pydantic_ai
from ._common import is_pending

if TYPE_CHECKING:
    from ..tree import SpanNode, SpanTree

__all__ = ["DIALECTS", "Dialect", "extract", "get_dialect", "register_dialect"]


class Dialect(Protocol):
    name: str

    def recognizes(self, node: SpanNode) -> bool: ...
    def agent_run(self, node: SpanNode) -> AgentRun | None: ...
    def tool_call(self, node: SpanNode) -> ToolCall | None: ...
    def model_request(self, node: SpanNode) -> ModelRequest | None: ...


DIALECTS: list[Dialect] = [pydantic_ai]
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


def extract(tree: SpanTree, *, dialect: str | Dialect | None = None) -> Trajectory:
    """Classify every span once and collect tool calls, model requests and agent runs."""
    dialects = [get_dialect(dialect)] if dialect is not None else DIALECTS
    calls: list[ToolCall] = []
    requests: list[ModelRequest] = []
    runs: list[AgentRun] = []
    recognized = 0
    stack: list[tuple[SpanNode, AgentRun | None]] = [(r, None) for r in reversed(tree.roots)]
    while stack:
        node, run = stack.pop()
        if node.children:
            stack.extend([(child, run) for child in reversed(node.children)])
        if is_pending(node.attributes):
            continue
        d = next((d for d in dialects if d.recognizes(node)), None)
        if d is None:
            continue
        if (agent := d.agent_run(node)) is not None:
            agent = dataclasses.replace(agent, parent=run)
            runs.append(agent)
            recognized += 1
            if node.children:  # children were pushed with the enclosing run: re-push with this one
                del stack[len(stack) - len(node.children) :]
                stack.extend([(child, agent) for child in reversed(node.children)])
        elif (call := d.tool_call(node)) is not None:
            if run is not None:
                call.agent = run.name
            calls.append(call)
            recognized += 1
        elif (req := d.model_request(node)) is not None:
            if run is not None:
                req.agent = run.name
            requests.append(req)
            recognized += 1
    calls.sort(key=_call_order)
    requests.sort(key=_request_order)
    runs.sort(key=_run_order)
    return Trajectory(calls, requests, runs, tree=tree, recognized_spans=recognized)


def _call_order(call: ToolCall) -> tuple[int, int]:
    span = call.span
    return (span.start_ns, span.span_id) if span is not None else (0, 0)


def _request_order(req: ModelRequest) -> tuple[int, int]:
    span = req.span
    return (span.start_ns, span.span_id) if span is not None else (0, 0)


def _run_order(run: AgentRun) -> tuple[int, int]:
    span = run.span
    return (span.start_ns, span.span_id) if span is not None else (0, 0)
