"""Span-based trajectory evaluators (shared/reference/003): deterministic, no LLM calls.

ToolCorrectness, TrajectoryMatch, ArgumentCorrectness, MaxToolCalls, MaxModelRequests. All read
the context's `Trajectory` (extracted once per run and shared), never the agent's return value.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from ..matching import ArgsMode, diff_arguments, lcs_length
from ..models import EvalResult, TurnContext
from ..trajectory import NOT_RECORDED, ToolCall
from .base import BaseEvaluator, require_trajectory

__all__ = [
    "ArgumentCorrectness",
    "MaxModelRequests",
    "MaxToolCalls",
    "ToolCorrectness",
    "TrajectoryMatch",
    "TrajectoryOrder",
    "not_recorded_reason",
]

TrajectoryOrder = Literal["exact", "in_order", "any_order"]


def _f1(precision: float, recall: float) -> float:
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def _check_threshold(threshold: float) -> None:
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be between 0 and 1, got {threshold!r}")


def not_recorded_reason(call: ToolCall) -> str:
    """Why a call's arguments cannot be checked, and how to get them."""
    who = f" by agent {call.agent!r}" if call.agent else ""
    return (
        f"Arguments of tool {call.name!r}{who} were not recorded in its span (instrumented with "
        "include_content=False?); use tracegrade.instrument_content() in the test process, or give the "
        "run's messages to the capture (cap.add_messages(result.all_messages())) to recover them by call id"
    )


@dataclass(repr=False)
class ToolCorrectness(BaseEvaluator):
    """The agent called exactly this multiset of tools (extras allowed with `allow_extra`)."""

    expected_tools: list[str]
    allow_extra: bool = False
    include_failed: bool = False
    evaluation_name: str | None = field(default=None)

    def evaluate(self, ctx: TurnContext) -> EvalResult:
        traj = require_trajectory(ctx)
        if isinstance(traj, EvalResult):
            return traj
        names = [c.name for c in traj.calls(include_failed=self.include_failed)]
        actual, expected = Counter(names), Counter(self.expected_tools)
        missing, extra = expected - actual, actual - expected
        problems: list[str] = []
        if missing:
            problems.append("missing tools: " + ", ".join(f"{n!r} (x{k})" for n, k in sorted(missing.items())))
        if extra and not self.allow_extra:
            problems.append("unexpected tools: " + ", ".join(f"{n!r} (x{k})" for n, k in sorted(extra.items())))
        if problems:
            return EvalResult(False, "; ".join(problems) + f" (actual: {names!r})")
        return EvalResult(True, f"called {names!r}, as expected")


@dataclass(repr=False)
class TrajectoryMatch(BaseEvaluator):
    """Compare the ordered tool names to `expected_trajectory`; F1 score for the inexact modes.

    Passes when the score reaches `threshold` (default 1.0).
    """

    expected_trajectory: list[str]
    order: TrajectoryOrder = "in_order"
    include_failed: bool = False
    evaluation_name: str | None = field(default=None)
    threshold: float = 1.0

    def __post_init__(self) -> None:
        if self.order not in ("exact", "in_order", "any_order"):
            raise ValueError(f"order must be 'exact', 'in_order' or 'any_order', got {self.order!r}")
        _check_threshold(self.threshold)

    def evaluate(self, ctx: TurnContext) -> EvalResult:
        traj = require_trajectory(ctx)
        if isinstance(traj, EvalResult):
            return EvalResult.not_evaluated(traj.reasoning, score=0.0)
        actual = [c.name for c in traj.calls(include_failed=self.include_failed)]
        expected = list(self.expected_trajectory)
        score, reason = score_trajectory(actual, expected, self.order)
        return self._result(score, reason)

    def _result(self, score: float, reason: str) -> EvalResult:
        passed = score >= self.threshold
        if self.threshold < 1.0:
            reason += f"; threshold={self.threshold:g}"
        return EvalResult(passed, reason, score)


def score_trajectory(actual: list[str], expected: list[str], order: TrajectoryOrder) -> tuple[float, str]:
    """The score and the reason that reproduces it."""
    if order == "exact":
        if actual == expected:
            return 1.0, f"actual trajectory matches expected: {actual!r}"
        return 0.0, f"actual trajectory {actual!r} does not equal expected {expected!r}"
    if not actual and not expected:
        return 1.0, "both actual and expected trajectories are empty"
    if order == "any_order":
        overlap, label = sum((Counter(expected) & Counter(actual)).values()), "multiset overlap"
    else:
        overlap, label = lcs_length(actual, expected), "LCS"
    precision = overlap / len(actual) if actual else 0.0
    recall = overlap / len(expected) if expected else 0.0
    f1 = _f1(precision, recall)
    return f1, (
        f"{label}={overlap}, precision={overlap}/{len(actual)}={precision:.3f}, "
        f"recall={overlap}/{len(expected)}={recall:.3f}, F1={f1:.3f} "
        f"(expected: {expected!r}, actual: {actual!r})"
    )


@dataclass(repr=False)
class ArgumentCorrectness(BaseEvaluator):
    """One call of `tool_name` (picked by `occurrence`) received `expected_arguments`."""

    tool_name: str
    expected_arguments: dict[str, Any]
    match_mode: ArgsMode = "subset"
    occurrence: Literal["first", "last"] | int = "first"
    include_failed: bool = False
    evaluation_name: str | None = field(default=None)

    def __post_init__(self) -> None:
        if self.match_mode not in ("exact", "subset"):
            raise ValueError(f"match_mode must be 'exact' or 'subset', got {self.match_mode!r}")
        occ = self.occurrence
        if not (occ in ("first", "last") or (isinstance(occ, int) and not isinstance(occ, bool) and occ >= 0)):
            raise ValueError(f"occurrence must be 'first', 'last' or a 0-based index >= 0, got {occ!r}")
        if not isinstance(self.expected_arguments, dict):
            raise ValueError(f"expected_arguments must be a dict, got {type(self.expected_arguments).__name__}")

    def evaluate(self, ctx: TurnContext) -> EvalResult:
        traj = require_trajectory(ctx)
        if isinstance(traj, EvalResult):
            return traj
        calls = [c for c in traj.calls(include_failed=self.include_failed) if c.name == self.tool_name]
        if not calls:
            seen = sorted({c.name for c in traj.calls(include_failed=self.include_failed)})
            return EvalResult(False, f"No calls to tool {self.tool_name!r} were recorded (tools called: {seen!r}).")
        occ = self.occurrence
        index = 0 if occ == "first" else len(calls) - 1 if occ == "last" else int(occ)
        if index >= len(calls):
            return EvalResult(
                False,
                f"Tool {self.tool_name!r} was called {len(calls)} time(s); occurrence={occ!r} selects none of them.",
            )
        call = calls[index]
        args = call.args
        if args is NOT_RECORDED:
            return EvalResult.not_evaluated(not_recorded_reason(call))
        if not isinstance(args, dict):
            what = "could not be parsed as JSON" if isinstance(args, str) else "are not a JSON object"
            return EvalResult(False, f"Tool {self.tool_name!r} arguments {what}: {call.args_text or args!r}")
        diffs = diff_arguments(args, self.expected_arguments, self.match_mode)
        if diffs:
            return EvalResult(False, f"Tool {self.tool_name!r} argument mismatch: " + "; ".join(diffs))
        return EvalResult(True, f"Tool {self.tool_name!r} called with {args!r}")


@dataclass(repr=False)
class MaxToolCalls(BaseEvaluator):
    """At most `max_calls` locally executed tool calls (failed attempts count by default)."""

    max_calls: int
    include_failed: bool = True
    evaluation_name: str | None = field(default=None)

    def evaluate(self, ctx: TurnContext) -> EvalResult:
        traj = require_trajectory(ctx)
        if isinstance(traj, EvalResult):
            return traj
        n = len(traj.calls(include_failed=self.include_failed))
        return EvalResult(n <= self.max_calls, f"{n} tool call(s), budget={self.max_calls}")


@dataclass(repr=False)
class MaxModelRequests(BaseEvaluator):
    """At most `max_requests` model requests (`ctx.metrics['requests']` when present, else spans)."""

    max_requests: int
    evaluation_name: str | None = field(default=None)

    def evaluate(self, ctx: TurnContext) -> EvalResult:
        metric = ctx.metrics.get("requests")
        if isinstance(metric, int | float) and not isinstance(metric, bool):
            n, source = int(metric), "ctx.metrics['requests']"
        else:
            traj = require_trajectory(ctx)
            if isinstance(traj, EvalResult):
                return traj
            n, source = len(traj.model_requests), "span tree"
        return EvalResult(
            n <= self.max_requests, f"{n} model request(s) (from {source}), budget={self.max_requests}"
        )
