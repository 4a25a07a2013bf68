"""A graded run's spans as plain data for the HTML report's waterfall, and the expected-vs-observed
trajectory diff.

`trace_view(traj)` → `{"spans": [...], "calls": [...]}`: spans in tree order (parents before
children, siblings by start time) with their kind (`agent`, `model`, `tool`, `span`), offset and
duration in microseconds from the trace's first span, status, failed/retried and parallel marks,
tokens, and attributes as text (clipped, redacted). `calls` are the tool calls with their arguments.
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from ..matching import diff_arguments
from ..trajectory import NOT_RECORDED, ToolCall, Trajectory
from ..tree import SpanNode
from .redact import Redactor

__all__ = ["describe_call", "expected_steps", "step_text", "trace_view", "trajectory_diff"]

MAX_SPANS = 2_000
"""Spans kept per run (a note says how many were left out)."""
MAX_VALUE = 2_000
"""Characters kept of an attribute value."""


def _text(value: Any, limit: int = MAX_VALUE) -> str:
    text = value if isinstance(value, str) else repr(value) if not isinstance(value, int | float | bool) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_call(name: str, args: Any) -> str:
    """`name(k='v', ...)`, as `ToolCall.describe` writes it."""
    if args is NOT_RECORDED:
        return f"{name}(<args not recorded>)"
    if isinstance(args, Mapping):
        return f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})"
    return f"{name}({args!r})"


def _walk(roots: Sequence[SpanNode]) -> list[tuple[SpanNode, SpanNode | None]]:
    """(node, parent shown) in depth-first order, iteratively; each node once."""
    out: list[tuple[SpanNode, SpanNode | None]] = []
    seen: set[int] = set()
    stack: list[tuple[SpanNode, SpanNode | None]] = [(r, None) for r in sorted(roots, key=_key, reverse=True)]
    while stack:
        node, parent = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        out.append((node, parent))
        stack.extend((c, node) for c in sorted(node.children, key=_key, reverse=True))
    return out


def _key(node: SpanNode) -> tuple[int, int]:
    return (node.start_ns, node.span_id)


def trace_view(traj: Trajectory, redactor: Redactor | None = None) -> dict[str, Any]:
    """The run's spans and tool calls as JSON-safe data (see the module docstring)."""
    redactor = redactor or Redactor()
    calls = traj.listed(traj.calls(include_failed=True, include_deferred=True))
    kinds: dict[int, tuple[str, str]] = {}
    for run in traj.agent_runs:
        if run.span is not None:
            kinds[id(run.span)] = ("agent", run.name or "")
    tokens: dict[int, list[int | None]] = {}
    for req in traj.model_requests:
        if req.span is not None:
            kinds[id(req.span)] = ("model", req.model or "")
            tokens[id(req.span)] = [req.input_tokens, req.output_tokens]
    by_span: dict[int, ToolCall] = {}
    for call in calls:
        if call.span is not None:
            kinds[id(call.span)] = ("tool", call.label)
            by_span[id(call.span)] = call
    tree = traj.tree
    nodes = _walk(tree.roots) if tree is not None else []
    kept = nodes[:MAX_SPANS]
    index = {id(n): i for i, (n, _) in enumerate(kept)}
    t0 = min((n.start_ns for n, _ in kept), default=0)
    spans: list[dict[str, Any]] = []
    for node, parent in kept:
        kind, label = kinds.get(id(node), ("span", ""))
        span_call = by_span.get(id(node))
        end = node.end_ns
        spans.append({
            "name": node.name, "kind": kind, "label": label,
            "parent": index.get(id(parent), -1) if parent is not None else -1,
            "start": (node.start_ns - t0) // 1000, "dur": None if end is None else max(0, end - node.start_ns) // 1000,
            "status": node.status, "failed": bool(node.status == "error" or (span_call is not None and span_call.failed)),
            "retry": span_call.retry_cause if span_call is not None and span_call.retry_cause else None,
            "tokens": tokens.get(id(node)), "parallel": False,
            "attrs": {k: _text(v) for k, v in redactor.attributes(dict(node.attributes)).items()},
        })  # fmt: skip
    _mark_parallel(spans)
    view_calls = [
        {"name": c.label, "args": None if c.args is NOT_RECORDED else redactor.value(c.args), "state": c.state,
         "span": index.get(id(c.span), -1) if c.span is not None else -1}
        for c in calls
    ]  # fmt: skip
    view: dict[str, Any] = {"spans": spans, "calls": view_calls}
    if len(nodes) > MAX_SPANS:
        view["note"] = f"{len(nodes) - MAX_SPANS} more span(s) not shown (the report keeps {MAX_SPANS} per run)"
    return view


def _mark_parallel(spans: list[dict[str, Any]]) -> None:
    """Tool spans of one parent whose time ranges overlap ran in parallel."""
    groups: dict[int, list[dict[str, Any]]] = {}
    for s in spans:
        if s["kind"] == "tool" and s["dur"] is not None:
            groups.setdefault(s["parent"], []).append(s)
    for group in groups.values():
        group.sort(key=lambda s: s["start"])
        for a, b in itertools.pairwise(group):
            if b["start"] < a["start"] + a["dur"]:
                a["parallel"] = b["parallel"] = True


def expected_steps(evaluators: Sequence[Any]) -> list[dict[str, Any]] | None:
    """The expected trajectory of the first evaluator that declares one (`expected_trajectory`;
    an `informational(...)` one's too)."""
    for ev in evaluators:
        ev = getattr(ev, "evaluator", ev) if getattr(ev, "informational", False) is True else ev
        steps = getattr(ev, "expected_trajectory", None)
        if isinstance(steps, list):
            out = []
            for s in steps:
                if isinstance(s, str):
                    out.append({"tool": s, "args": None, "optional": False})
                elif isinstance(s, Mapping) and isinstance(s.get("tool"), str):
                    out.append({"tool": s["tool"], "args": s.get("args"), "optional": bool(s.get("optional", False))})
            return out
    return None


def trajectory_diff(expected: Sequence[Mapping[str, Any]], calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Expected steps aligned with the observed calls (successful or not), row by row:
    `match`, `args` (same tool, arguments differ: `detail` says how), `missing` (expected, not
    called), `extra` (called, not expected) and `moved` (called, but out of order: a step missing
    at one place and extra at another)."""
    names_e = [str(s["tool"]) for s in expected]
    names_o = [str(c["name"]) for c in calls]
    rows: list[dict[str, Any]] = []
    matcher = difflib.SequenceMatcher(None, names_e, names_o, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                rows.append(_pair(expected[i], calls[j]))
            continue
        rows += [{"mark": "missing", "expected": step_text(expected[i]), "observed": None} for i in range(i1, i2)]
        rows += [{"mark": "extra", "expected": None, "observed": describe_call(calls[j]["name"], _args(calls[j]))}
                 for j in range(j1, j2)]  # fmt: skip
    _mark_moved(rows)
    return rows


def _args(call: Mapping[str, Any]) -> Any:
    args = call.get("args")
    return NOT_RECORDED if args is None else args


def step_text(step: Mapping[str, Any]) -> str:
    text = str(step["tool"])
    if step.get("args") is not None:
        text = describe_call(text, step["args"])
    return f"{text}?" if step.get("optional") else text


def _pair(step: Mapping[str, Any], call: Mapping[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {
        "mark": "match",
        "expected": step_text(step),
        "observed": describe_call(call["name"], _args(call)),
    }
    want = step.get("args")
    if want is not None:
        got = call.get("args")
        if not isinstance(got, Mapping):
            row.update(mark="args", detail="arguments not recorded")
        elif diffs := diff_arguments(got, want, "subset"):
            row.update(mark="args", detail="; ".join(diffs))
    if call.get("state") == "failed":
        row["failed"] = True
    return row


def _mark_moved(rows: list[dict[str, Any]]) -> None:
    """A tool both missing and extra (by name) was called out of order: mark the pair `moved`."""
    extra: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["mark"] == "extra":
            extra.setdefault(str(r["observed"]).split("(", 1)[0], []).append(r)
    for r in rows:
        if r["mark"] == "missing":
            name = str(r["expected"]).split("(", 1)[0].rstrip("?")
            if extra.get(name):
                other = extra[name].pop(0)
                r["mark"] = other["mark"] = "moved"
