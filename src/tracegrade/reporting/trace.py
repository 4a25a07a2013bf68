"""A graded run's spans as plain data for the HTML report's waterfall, and the expected-vs-observed
trajectory diff.

`trace_view(traj)` → `{"spans": [...], "calls": [...]}`: spans in tree order (parents before
children, siblings by start time) with their kind (`agent`, `model`, `tool`, `span`), offset and
duration in microseconds from the trace's first span, status, failed/retried and parallel marks,
tokens, and attributes as text (clipped, redacted). `calls` are the tool calls with their arguments.
"""

from __future__ import annotations

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
    an `informational(...)` one's too), as `{"tool", "args", "optional"}` steps; each step also has
    `"include_failed": True` when the evaluator counts failed attempts (`trajectory_diff` aligns them then)."""
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
            if getattr(ev, "include_failed", False) is True:
                for step in out:
                    step["include_failed"] = True
            return out
    return None


_COUNTED = frozenset({"executed", "requested"})
"""Call states a trajectory check counts (`Trajectory.calls()`); failed attempts only with `include_failed`."""


def trajectory_diff(expected: Sequence[Mapping[str, Any]], calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Expected steps aligned with the observed calls as the check counts them, row by row, in call order:
    `match`, `args` (same tool, arguments differ: `detail` says how), `missing` (a required step not
    called), `optional` (an optional step not called: not a miss), `extra` (called, not expected),
    `moved` (called, but out of order: a step missing at one place and extra at another) and `ignored`
    (a call the check does not count: a failed attempt unless the steps say `include_failed`, a deferred
    call). Rows of failed calls have `failed`. The alignment is a longest common subsequence by tool name
    that prefers required steps and calls whose arguments agree."""
    with_failed = any(s.get("include_failed") for s in expected)
    counted = [j for j, c in enumerate(calls) if c.get("state", "executed") in _COUNTED
               or (with_failed and c.get("state") == "failed")]  # fmt: skip
    pairs = _align(expected, [calls[j] for j in counted])
    rows: list[tuple[int, dict[str, Any]]] = []  # (where in the observed calls, row)
    i = k = 0
    for pi, pk in [*pairs, (len(expected), len(counted))]:
        at = counted[k] if k < len(counted) else len(calls)  # steps left out sit before the group's first call
        for step in expected[i:pi]:
            if step.get("optional"):
                rows.append((at, {"mark": "optional", "expected": step_text(step), "observed": None,
                                  "detail": "optional, not called"}))  # fmt: skip
            else:
                rows.append((at, {"mark": "missing", "expected": step_text(step), "observed": None}))
        for j in counted[k:pk]:
            rows.append((j, _call_row("extra", calls[j])))
        if pi < len(expected):
            rows.append((counted[pk], _pair(expected[pi], calls[counted[pk]])))
        i, k = pi + 1, pk + 1
    out: list[dict[str, Any]] = []
    left_out = iter(sorted(set(range(len(calls))) - set(counted)))
    nxt = next(left_out, None)
    for j, row in rows:
        while nxt is not None and nxt < j:
            out.append(_ignored(calls[nxt]))
            nxt = next(left_out, None)
        out.append(row)
    while nxt is not None:
        out.append(_ignored(calls[nxt]))
        nxt = next(left_out, None)
    _mark_moved(out)
    return out


def _align(expected: Sequence[Mapping[str, Any]], calls: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
    """(step, call) index pairs of a longest common subsequence by tool name; among the longest, the one
    matching the most required steps, then the most calls whose arguments agree with their step's."""
    n, m = len(expected), len(calls)
    zero = (0, 0, 0)
    best = [[zero] * (m + 1) for _ in range(n + 1)]

    def gain(i: int, j: int) -> tuple[int, int, int] | None:
        step, call = expected[i], calls[j]
        if str(step["tool"]) != str(call["name"]):
            return None
        return (1, 0 if step.get("optional") else 1, 0 if _pair(step, call)["mark"] == "args" else 1)

    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            here = max(best[i + 1][j], best[i][j + 1])
            if (g := gain(i, j)) is not None:
                diag = best[i + 1][j + 1]
                here = max(here, (diag[0] + g[0], diag[1] + g[1], diag[2] + g[2]))
            best[i][j] = here
    pairs = []
    i = j = 0
    while i < n and j < m:
        g = gain(i, j)
        diag = best[i + 1][j + 1]
        if g is not None and best[i][j] == (diag[0] + g[0], diag[1] + g[1], diag[2] + g[2]):
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif best[i][j] == best[i][j + 1]:  # ties: a call left over before a step left out
            j += 1
        else:
            i += 1
    return pairs


def _call_row(mark: str, call: Mapping[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"mark": mark, "expected": None, "observed": describe_call(call["name"], _args(call))}
    if call.get("state") == "failed":
        row["failed"] = True
    return row


def _ignored(call: Mapping[str, Any]) -> dict[str, Any]:
    row = _call_row("ignored", call)
    state = call.get("state")
    row["detail"] = ("not counted: the check leaves failed attempts out (include_failed)" if state == "failed"
                     else f"not counted: {str(state).replace('_', ' ')}")  # fmt: skip
    return row


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
    """A tool both missing (a required step) and extra (by name) was called out of order: mark the pair `moved`."""
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
