"""Run health checks read from spans: MaxDuration, NoErrorSpans, MaxTokens, NoToolLoops."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import timedelta
from fnmatch import fnmatchcase
from typing import Any, ClassVar

from ..results import EvalResult, TurnContext
from ..trajectory import NO_SPANS_REASON, NOT_RECORDED, ToolCall, Trajectory
from ..tree import SpanNode
from .base import ScopedEvaluator

__all__ = ["MaxDuration", "MaxTokens", "NoErrorSpans", "NoToolLoops"]


def _seconds(value: float | timedelta) -> float:
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def _percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in (0, 100])."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


@dataclass(repr=False)
class MaxDuration(ScopedEvaluator):
    """The run (or each call of `tool`, or their `percentile`) took at most `seconds` (a number or a
    `timedelta`, as pydantic-evals' `MaxDuration` takes it).

    Whole run: the top-level agent runs' spans (the whole tree's extent when there is none).
    `tool="*"` checks every tool call, executions whose tool is not recorded included; a named `tool` is not
    evaluated when such an execution is among the calls it would time.
    """

    seconds: float | timedelta
    tool: str | None = None
    percentile: float | None = None
    include_failed: bool = True
    evaluation_name: str | None = field(default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        seconds = self.seconds
        if type(seconds) is bool or not isinstance(seconds, int | float | timedelta) or not _seconds(seconds) >= 0:
            raise self._invalid("seconds", f"must be a number of seconds >= 0 or a timedelta, got {seconds!r}")
        if self.percentile is not None and not 0 < self.percentile <= 100:
            raise self._invalid("percentile", f"must be in (0, 100], got {self.percentile!r}")
        if self.percentile is not None and self.tool is None:
            raise self._invalid("percentile", "applies to tool calls: set tool= (a name, or '*' for every tool)")

    def limit(self) -> float:
        """`seconds` as a number of seconds."""
        return _seconds(self.seconds)

    def check(self, traj: Trajectory, ctx: TurnContext) -> EvalResult:
        limit = self.limit()
        if self.tool is None:
            spans = [r.span for r in traj.agent_runs if r.span is not None and (r.parent is None or self.agent)]
            if spans:
                took = max(s.duration_ns for s in spans) / 1e9
            else:
                tree = traj.tree
                assert tree is not None
                took = (max(n.end_ns or n.start_ns for n in tree) - min(n.start_ns for n in tree)) / 1e9
            return EvalResult(took <= limit, f"run took {took:.3f}s, limit {limit:g}s")
        calls = [c for c in traj.calls(include_failed=self.include_failed) if self.tool in ("*", c.name)]
        if traj.unnamed_calls:  # executions whose tool is not recorded: timed under "*", unknown for a named tool
            if self.tool != "*" and (why := traj.unnamed_reason(include_failed=self.include_failed)) is not None:
                return EvalResult.not_evaluated(why)
            calls = traj.listed(calls, include_failed=self.include_failed)
        if not calls:
            return EvalResult.not_evaluated(f"no call of tool {self.tool!r} to time")
        timed = [(c.span.duration_ns / 1e9, c) for c in calls if c.span is not None]
        if self.percentile is not None:
            value = _percentile([t for t, _ in timed], self.percentile)
            return EvalResult(value <= limit, f"p{self.percentile:g} of {len(timed)} {self.tool} call(s) "
                                              f"took {value:.3f}s, limit {limit:g}s")  # fmt: skip
        slow = [f"{c.describe()} took {t:.3f}s" for t, c in timed if t > limit]
        if slow:
            return EvalResult(False, f"{len(slow)} call(s) over {limit:g}s: " + "; ".join(slow[:5]))
        return EvalResult(True, f"{len(timed)} call(s), slowest {max(t for t, _ in timed):.3f}s, limit {limit:g}s")


@dataclass(repr=False)
class NoErrorSpans(ScopedEvaluator):
    """No span ended with status ERROR, except those whose name matches `allowed_names` (globs).

    Deferred calls (ERROR spans before Pydantic AI instrumentation v5) are never errors;
    `allow_retries=True` also accepts tool attempts that asked for a retry.
    """

    allowed_names: list[str] = field(default_factory=list)
    allow_retries: bool = False
    evaluation_name: str | None = field(default=None)

    def evaluate(self, ctx: TurnContext) -> EvalResult:
        if ctx.span_tree is None or len(ctx.span_tree) == 0:
            return EvalResult.not_evaluated(NO_SPANS_REASON)
        return super().evaluate(ctx)

    def check(self, traj: Trajectory, ctx: TurnContext) -> EvalResult:
        tree = ctx.span_tree
        assert tree is not None  # evaluate() checked
        excused = {id(c.span) for c in traj.all_calls if c.deferred or (self.allow_retries and c.retry_cause)}
        nodes: list[SpanNode] = list(tree)
        if self.subtree is not None or self.agent is not None:
            scoped = {id(c.span) for c in traj.all_calls} | {id(r.span) for r in traj.model_requests}
            scoped |= {id(r.span) for r in traj.agent_runs}
            nodes = [n for n in nodes if id(n) in scoped]
        errors = [
            n for n in nodes
            if n.status == "error" and id(n) not in excused
            and not any(fnmatchcase(n.name, pattern) for pattern in self.allowed_names)
        ]  # fmt: skip
        if errors:
            shown = "; ".join(f"{n.name!r}" + (f": {n.status_message}" if n.status_message else "") for n in errors[:5])
            more = f" (+{len(errors) - 5} more)" if len(errors) > 5 else ""
            return EvalResult(False, f"{len(errors)} error span(s): {shown}{more}")
        return EvalResult(True, f"no error spans among {len(nodes)}")


@dataclass(repr=False)
class MaxTokens(ScopedEvaluator):
    """Token budgets summed over model requests (not agent-level aggregates, which would count twice).

    A budget whose count some request did not record is `not_evaluated` (a partial sum would understate
    the use), unless the recorded counts alone already exceed it: then it fails."""

    needs: ClassVar[tuple[str, ...]] = ("model_requests",)

    max_input: int | None = None
    max_output: int | None = None
    max_total: int | None = None
    evaluation_name: str | None = field(default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_input is None and self.max_output is None and self.max_total is None:
            raise self._invalid("", "needs at least one of max_input, max_output, max_total")

    def check(self, traj: Trajectory, ctx: TurnContext) -> EvalResult:
        reqs = traj.model_requests
        if not reqs or all(r.input_tokens is None and r.output_tokens is None for r in reqs):
            return EvalResult.not_evaluated(f"no token usage recorded on {len(reqs)} model request(s)")
        used = {
            "input": sum(r.input_tokens or 0 for r in reqs),
            "output": sum(r.output_tokens or 0 for r in reqs),
            "total": sum(r.total_tokens or 0 for r in reqs),
        }
        unrecorded = {
            "input": sum(r.input_tokens is None for r in reqs),
            "output": sum(r.output_tokens is None for r in reqs),
            "total": sum(r.input_tokens is None or r.output_tokens is None for r in reqs),
        }
        budgets = {"input": self.max_input, "output": self.max_output, "total": self.max_total}
        over = [f"{k} {used[k]} > {b}" for k, b in budgets.items() if b is not None and used[k] > b]
        summary = ", ".join(f"{k}={used[k]}" for k in used) + f" over {len(reqs)} model request(s)"
        partial = [k for k, b in budgets.items() if b is not None and unrecorded[k]]
        if partial and not over:
            missing = "; ".join(f"{unrecorded[k]} of {len(reqs)} record no {k} token count" for k in partial)
            return EvalResult.not_evaluated(
                f"{missing}: the sum would understate the use ({summary}, as recorded)"
            )
        if partial:
            summary += " (at least: some counts are not recorded)"
        return EvalResult(not over, ("over budget: " + "; ".join(over) + "; " if over else "") + summary)


@dataclass(repr=False)
class NoToolLoops(ScopedEvaluator):
    """No tool is called with the same arguments more than `max_repeats` times in a row
    (or, with `window=N`, within any N consecutive calls)."""

    needs: ClassVar[tuple[str, ...]] = ("tool_calls",)

    max_repeats: int = 2
    window: int | None = None
    include_failed: bool = True
    evaluation_name: str | None = field(default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_repeats < 1:
            raise self._invalid("max_repeats", f"must be an integer >= 1, got {self.max_repeats!r}")
        if self.window is not None and self.window <= self.max_repeats:
            raise self._invalid("window", f"must be larger than max_repeats ({self.max_repeats}), got {self.window!r}")

    def check(self, traj: Trajectory, ctx: TurnContext) -> EvalResult:
        calls = traj.calls(include_failed=self.include_failed)
        keys = [_key(c) for c in calls]
        loops = self._window_loops(keys) if self.window else self._consecutive_loops(keys)
        if not loops:
            return EvalResult(True, f"no tool repeated more than {self.max_repeats} time(s) among {len(calls)} call(s)")
        unknown = [k for k in loops if k[1] is NOT_RECORDED]
        if len(unknown) == len(loops):
            names = sorted({k[0] for k in unknown})
            return EvalResult.not_evaluated(
                f"tool(s) {names} repeat more than {self.max_repeats} time(s) but their arguments were not recorded, "
                "so a loop (same arguments) cannot be told from legitimate repeats"
            )
        shown = "; ".join(f"{name}({args}) x{n}" for (name, args), n in loops.items() if args is not NOT_RECORDED)
        where = f"within {self.window} consecutive calls" if self.window else "in a row"
        return EvalResult(False, f"repeated {where} more than {self.max_repeats} time(s): {shown}")

    def _consecutive_loops(self, keys: list[tuple[str, Any]]) -> dict[tuple[str, Any], int]:
        loops: dict[tuple[str, Any], int] = {}
        run = 1
        for i in range(1, len(keys) + 1):
            if i < len(keys) and keys[i] == keys[i - 1]:
                run += 1
                continue
            if run > self.max_repeats:
                loops[keys[i - 1]] = max(loops.get(keys[i - 1], 0), run)
            run = 1
        return loops

    def _window_loops(self, keys: list[tuple[str, Any]]) -> dict[tuple[str, Any], int]:
        loops: dict[tuple[str, Any], int] = {}
        assert self.window is not None
        for start in range(max(1, len(keys) - self.window + 1)):
            chunk = keys[start : start + self.window]
            for key in set(chunk):
                n = chunk.count(key)
                if n > self.max_repeats:
                    loops[key] = max(loops.get(key, 0), n)
        return loops


def _key(call: ToolCall) -> tuple[str, Any]:
    args = call.args
    if args is NOT_RECORDED:
        return (call.name, NOT_RECORDED)
    return (call.name, json.dumps(args, sort_keys=True, default=str))
