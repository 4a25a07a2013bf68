"""Span-based trajectory evaluators (shared/reference/003): deterministic, no LLM calls.

ToolCorrectness, TrajectoryMatch, ArgumentCorrectness, MaxToolCalls, MaxModelRequests. All read
the context's `Trajectory` (extracted once per run and shared), never the agent's return value.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from ..matching import (
    ArgsMode,
    KeyRule,
    Step,
    align_any_order,
    align_exact,
    align_in_order,
    check_args_options,
    check_occurrence,
    diff_arguments,
    lcs_length,
    occurrence_index,
    step_matches,
)
from ..results import EvalResult, TurnContext
from ..trajectory import NOT_RECORDED, ToolCall, Trajectory, args_cut_reason
from ..tree import SpanQuery, validate_query
from .base import BaseEvaluator, scoped_trajectory

__all__ = [
    "ArgumentCorrectness",
    "MaxModelRequests",
    "MaxToolCalls",
    "ToolCorrectness",
    "TrajectoryMatch",
    "TrajectoryOrder",
    "not_recorded_reason",
]

TrajectoryOrder = Literal["exact", "in_order", "any_order", "strict", "unordered", "subset", "superset"]
ORDERS = ("exact", "in_order", "any_order", "strict", "unordered", "subset", "superset")


def _f1(precision: float, recall: float) -> float:
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def _check_threshold(threshold: float) -> None:
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be between 0 and 1, got {threshold!r}")


def not_recorded_reason(call: ToolCall) -> str:
    """Why a call's arguments cannot be checked, and how to get them."""
    who = f" by agent {call.agent!r}" if call.agent else ""
    if call.dropped_attributes:
        return (
            f"Arguments of tool {call.name!r}{who} are missing from its span, which dropped "
            f"{call.dropped_attributes} attribute(s) to the SDK's span limits; raise OTEL_ATTRIBUTE_COUNT_LIMIT"
        )
    return (
        f"Arguments of tool {call.name!r}{who} were not recorded in its span (instrumented with "
        "include_content=False?); use tracegrade.instrument_content() in the test process, or give the "
        "run's messages to the capture (cap.add_messages(result.all_messages())) to recover them by call id"
    )


class _Scoped(BaseEvaluator):
    """Scoping shared by the trajectory evaluators: `agent` and `subtree` narrow what is graded."""

    agent: str | None
    subtree: SpanQuery | None
    needs: ClassVar[tuple[str, ...]] = ()
    """What the check reads (`Trajectory.missing` keys): absent from the telemetry → not evaluated."""

    def __post_init__(self) -> None:
        if self.subtree is not None:
            validate_query(self.subtree, "subtree")

    def _trajectory(self, ctx: TurnContext) -> Trajectory | EvalResult:
        return scoped_trajectory(ctx, self.agent, self.subtree, self.needs)


@dataclass(repr=False)
class ToolCorrectness(_Scoped):
    """The agent called exactly this multiset of tools (extras allowed with `allow_extra`)."""

    needs: ClassVar[tuple[str, ...]] = ("tool_calls",)

    expected_tools: list[str]
    allow_extra: bool = False
    include_failed: bool = False
    evaluation_name: str | None = field(default=None)
    agent: str | None = None
    subtree: SpanQuery | None = None

    def evaluate(self, ctx: TurnContext) -> EvalResult:
        traj = self._trajectory(ctx)
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
class TrajectoryMatch(_Scoped):
    """Compare the ordered tool calls to `expected_trajectory`.

    Modes: `exact` / `strict` (the same sequence), `in_order` (F1 of the longest common subsequence),
    `any_order` (F1 of the multiset overlap), `unordered` (the same multiset), `subset` (no call
    outside the expected steps), `superset` (every expected step called). Steps are tool names or
    `{"tool": name, "args": {...}, "optional": True}` (arguments compared with `args_mode`).
    Calls requested by one model response may match in any order (`parallel="unordered"`).
    Passes when the score reaches `threshold` (default 1.0).
    """

    needs: ClassVar[tuple[str, ...]] = ("tool_calls",)

    expected_trajectory: list[str | dict[str, Any]]
    order: TrajectoryOrder = "in_order"
    include_failed: bool = False
    evaluation_name: str | None = field(default=None)
    threshold: float = 1.0
    parallel: Literal["unordered", "ordered"] = "unordered"
    args_mode: ArgsMode = "subset"
    agent: str | None = None
    subtree: SpanQuery | None = None

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, got {self.order!r}")
        if self.parallel not in ("unordered", "ordered"):
            raise ValueError(f"parallel must be 'unordered' or 'ordered', got {self.parallel!r}")
        if not isinstance(self.expected_trajectory, list | tuple):
            raise ValueError(f"expected_trajectory must be a list, got {type(self.expected_trajectory).__name__}")
        _check_threshold(self.threshold)
        check_args_options(self.args_mode, None, "TrajectoryMatch.args_mode")
        super().__post_init__()
        self._steps = [Step.parse(s, f"expected_trajectory[{i}]") for i, s in enumerate(self.expected_trajectory)]
        self._plain = all(s.args is None and not s.optional for s in self._steps)

    def evaluate(self, ctx: TurnContext) -> EvalResult:
        traj = self._trajectory(ctx)
        if isinstance(traj, EvalResult):
            return EvalResult.not_evaluated(traj.reasoning, score=0.0)
        calls = traj.calls(include_failed=self.include_failed)
        needs_args = {s.tool for s in self._steps if s.args is not None}
        if unrecorded := [c for c in calls if c.name in needs_args and c.args is NOT_RECORDED]:
            return EvalResult.not_evaluated(not_recorded_reason(unrecorded[0]), score=0.0)
        score, reason = self._score(calls)
        if score < 1.0 and self.parallel == "unordered" and self.order in ("exact", "strict", "in_order"):
            regrouped = self._regroup(traj, calls)
            if regrouped is not None:
                score2, reason2 = self._score(regrouped)
                if score2 > score:
                    score, reason = score2, reason2 + " (parallel calls matched in any order)"
        if self.threshold < 1.0:
            reason += f"; threshold={self.threshold:g}"
        return EvalResult(score >= self.threshold, reason, score)

    def _score(self, calls: list[ToolCall]) -> tuple[float, str]:
        actual = [c.name for c in calls]
        if self._plain and self.order in ("exact", "in_order", "any_order"):
            return score_trajectory(actual, [s.tool for s in self._steps], self.order)  # the reference formulas
        steps, mode = self._steps, self.args_mode

        def match(i: int, j: int) -> bool:
            return step_matches(steps[j], calls[i].name, calls[i].args, mode)

        with_args = any(s.args is not None for s in steps)
        actual_shown = [c.describe() for c in calls] if with_args else actual
        shown = f"(expected: {[s.describe() for s in steps]!r}, actual: {actual_shown!r})"
        required = sum(not s.optional for s in steps)
        if self.order in ("exact", "strict", "in_order"):
            overlap, optional = align_in_order(len(calls), steps, match)
            label, extra = "LCS", len(calls) - overlap
        else:
            overlap, optional, extra = align_any_order(len(calls), steps, match)
            label = "multiset overlap"
        if not calls and required == 0:
            return 1.0, f"both actual and expected trajectories are empty {shown}"
        denominator = required + optional
        precision = overlap / len(calls) if calls else 0.0
        recall = overlap / denominator if denominator else 0.0
        pr = (f"{label}={overlap}, precision={overlap}/{len(calls)}={precision:.3f}, "
              f"recall={overlap}/{denominator}={recall:.3f}")  # fmt: skip
        if self.order in ("exact", "strict"):
            ok = align_exact(len(calls), steps, match)
            verb = "matches" if ok else "does not match"
            return (1.0 if ok else 0.0), f"actual trajectory {verb} the expected sequence; {pr} {shown}"
        if self.order in ("in_order", "any_order"):
            f1 = _f1(precision, recall)
            return f1, f"{pr}, F1={f1:.3f} {shown}"
        missing = required - (overlap - optional)  # required steps no call matched
        checks = {"unordered": missing == 0 and extra == 0, "subset": extra == 0, "superset": missing == 0}
        ok = checks[self.order]
        why = {"unordered": f"{missing} missing, {extra} unexpected", "subset": f"{extra} call(s) outside the expected",
               "superset": f"{missing} expected step(s) not called"}[self.order]  # fmt: skip
        return (1.0 if ok else 0.0), f"{self.order}: {'pass' if ok else 'fail'} ({why}); {pr} {shown}"

    def _regroup(self, traj: Trajectory, calls: list[ToolCall]) -> list[ToolCall] | None:
        """Reorder each group of parallel calls (one model response) to follow the expected order."""
        steps = traj.steps(calls)
        position: dict[str, int] = {}
        for j, s in enumerate(self._steps):
            position.setdefault(s.tool, j)
        out: list[ToolCall] = []
        i = 0
        changed = False
        while i < len(calls):
            k = i + 1
            while k < len(calls) and steps[k] == steps[i] and calls[k].run is calls[i].run:
                k += 1
            group = calls[i:k]
            ordered = sorted(group, key=lambda c: position.get(c.name, len(self._steps)))
            changed = changed or ordered != group or any(a is not b for a, b in zip(ordered, group, strict=True))
            out.extend(ordered)
            i = k
        return out if changed else None


def score_trajectory(actual: list[str], expected: list[str], order: TrajectoryOrder) -> tuple[float, str]:
    """The score and the reason that reproduces it (the reference page's formulas)."""
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
class ArgumentCorrectness(_Scoped):
    """A call of `tool_name` (picked by `occurrence`; `"any"`: some call) received `expected_arguments`.

    `match_mode`: `subset` (default), `exact`, `superset` or `ignore`; `recursive` applies subset
    matching to nested dicts; `key_modes` overrides the mode (or checks with a callable) per dotted
    key path; `ignore_keys` are glob patterns of key paths to leave out.
    """

    needs: ClassVar[tuple[str, ...]] = ("tool_calls",)

    tool_name: str
    expected_arguments: dict[str, Any]
    match_mode: ArgsMode = "subset"
    occurrence: Literal["first", "last", "any"] | int = "first"
    include_failed: bool = False
    evaluation_name: str | None = field(default=None)
    recursive: bool = False
    key_modes: dict[str, KeyRule] | None = None
    ignore_keys: list[str] = field(default_factory=list)
    agent: str | None = None
    subtree: SpanQuery | None = None

    def __post_init__(self) -> None:
        check_args_options(self.match_mode, self.key_modes, "ArgumentCorrectness.match_mode")
        check_occurrence(self.occurrence)
        if not isinstance(self.expected_arguments, dict):
            raise ValueError(f"expected_arguments must be a dict, got {type(self.expected_arguments).__name__}")
        super().__post_init__()

    def _diff(self, args: dict[str, Any]) -> list[str]:
        return diff_arguments(args, self.expected_arguments, self.match_mode, recursive=self.recursive,
                              key_modes=self.key_modes, ignore_keys=self.ignore_keys)  # fmt: skip

    def evaluate(self, ctx: TurnContext) -> EvalResult:
        traj = self._trajectory(ctx)
        if isinstance(traj, EvalResult):
            return traj
        calls = [c for c in traj.calls(include_failed=self.include_failed) if c.name == self.tool_name]
        if not calls:
            seen = sorted({c.name for c in traj.calls(include_failed=self.include_failed)})
            return EvalResult(False, f"No calls to tool {self.tool_name!r} were recorded (tools called: {seen!r}).")
        occ = self.occurrence
        if occ == "any":
            return self._any(calls)
        if (index := occurrence_index(occ, len(calls))) is None:
            return EvalResult(
                False,
                f"Tool {self.tool_name!r} was called {len(calls)} time(s); occurrence={occ!r} selects none of them.",
            )
        return self._check(calls[index])

    def _check(self, call: ToolCall) -> EvalResult:
        args = call.args
        if args is NOT_RECORDED:
            return EvalResult.not_evaluated(not_recorded_reason(call))
        if not isinstance(args, dict):
            if (cut := args_cut_reason(call)) is not None:
                return EvalResult.not_evaluated(cut)
            what = "could not be parsed as JSON" if isinstance(args, str) else "are not a JSON object"
            return EvalResult(False, f"Tool {self.tool_name!r} arguments {what}: {call.args_text or args!r}")
        if diffs := self._diff(args):
            return EvalResult(False, f"Tool {self.tool_name!r} argument mismatch: " + "; ".join(diffs))
        source = f" (arguments recovered from the run's {call.args_source})" if call.args_source == "messages" else ""
        return EvalResult(True, f"Tool {self.tool_name!r} called with {args!r}{source}")

    def _any(self, calls: list[ToolCall]) -> EvalResult:
        results = [self._check(c) for c in calls]
        if passed := [r for r in results if r.passed]:
            return passed[0]
        if all(r.outcome == "not_evaluated" for r in results):
            return results[0]
        if cut := [r for r, c in zip(results, calls, strict=True) if args_cut_reason(c) is not None]:
            return cut[0]  # the call cut short may be the one that matches
        observed = [c.args if c.args is not NOT_RECORDED else "<not recorded>" for c in calls]
        return EvalResult(False, f"no call of {self.tool_name!r} matches {self.expected_arguments!r} "
                                 f"({self.match_mode}); observed {observed!r}")  # fmt: skip


@dataclass(repr=False)
class MaxToolCalls(_Scoped):
    """At most `max_calls` locally executed tool calls (failed attempts count by default)."""

    needs: ClassVar[tuple[str, ...]] = ("tool_calls",)

    max_calls: int
    include_failed: bool = True
    evaluation_name: str | None = field(default=None)
    agent: str | None = None
    subtree: SpanQuery | None = None

    def evaluate(self, ctx: TurnContext) -> EvalResult:
        traj = self._trajectory(ctx)
        if isinstance(traj, EvalResult):
            return traj
        n = len(traj.calls(include_failed=self.include_failed))
        return EvalResult(n <= self.max_calls, f"{n} tool call(s), budget={self.max_calls}")


@dataclass(repr=False)
class MaxModelRequests(_Scoped):
    """At most `max_requests` model requests (`ctx.metrics['requests']` when present and unscoped, else spans)."""

    needs: ClassVar[tuple[str, ...]] = ("model_requests",)

    max_requests: int
    evaluation_name: str | None = field(default=None)
    agent: str | None = None
    subtree: SpanQuery | None = None

    def evaluate(self, ctx: TurnContext) -> EvalResult:
        metric = ctx.metrics.get("requests")
        unscoped = self.agent is None and self.subtree is None
        if unscoped and isinstance(metric, int | float) and not isinstance(metric, bool):
            n, source = int(metric), "ctx.metrics['requests']"
        else:
            traj = self._trajectory(ctx)
            if isinstance(traj, EvalResult):
                return traj
            n, source = len(traj.model_requests), "span tree"
        return EvalResult(n <= self.max_requests, f"{n} model request(s) (from {source}), budget={self.max_requests}")
