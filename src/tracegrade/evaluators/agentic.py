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
    TrajectoryOrder,
    check_args_options,
    check_occurrence,
    diff_arguments,
    score_steps,
)
from ..results import EvalResult, TurnContext
from ..trajectory import NOT_RECORDED, ToolCall, Trajectory
from .base import ScopedEvaluator, check_threshold, not_recorded_reason
from .tools import check_arguments

__all__ = [
    "ArgumentCorrectness",
    "MaxModelRequests",
    "MaxToolCalls",
    "ToolCorrectness",
    "TrajectoryMatch",
]


@dataclass(repr=False)
class ToolCorrectness(ScopedEvaluator):
    """The agent called exactly this multiset of tools (extras allowed with `allow_extra`)."""

    needs: ClassVar[tuple[str, ...]] = ("tool_calls",)

    expected_tools: list[str]
    allow_extra: bool = False
    include_failed: bool = False
    evaluation_name: str | None = field(default=None)

    def check(self, traj: Trajectory, ctx: TurnContext) -> EvalResult:
        names = [c.name for c in traj.calls(include_failed=self.include_failed)]
        if names != self.expected_tools:  # (the common case, equal lists, has nothing missing or extra)
            actual, expected = Counter(names), Counter(self.expected_tools)
            problems = [f"missing tools: {_counted(expected - actual)}"] if expected - actual else []
            if not self.allow_extra and (extra := actual - expected):
                problems.append(f"unexpected tools: {_counted(extra)}")
            if problems:  # pydantic-evals' words, then the calls
                return EvalResult(False, f"{'; '.join(problems)} (called: {names!r})")
        return EvalResult(True, f"called {names!r}, as expected")


def _counted(names: Counter[str]) -> str:
    return ", ".join(f"{name!r} (x{n})" for name, n in sorted(names.items()))


@dataclass(repr=False)
class TrajectoryMatch(ScopedEvaluator):
    """Compare the ordered tool calls to `expected_trajectory`.

    Modes: `exact` / `strict` (the same sequence), `in_order` (F1 of the longest common subsequence),
    `any_order` (F1 of the multiset overlap), `unordered` (the same multiset), `subset` (no call
    outside the expected steps), `superset` (every expected step called). Steps are tool names or
    `{"tool": name, "args": {...}, "optional": True}` (arguments compared with `args_mode`).
    Calls requested by one model response may match in any order (`parallel="unordered"`); when the model
    requests are not recorded one by one, an order that matches only if some calls were requested together is
    `not_evaluated`.
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

    def __post_init__(self) -> None:
        super().__post_init__()
        check_threshold(self, self.threshold)
        check_args_options(self.args_mode, None, "TrajectoryMatch.args_mode")
        try:
            self._steps = [Step.parse(s, f"expected_trajectory[{i}]") for i, s in enumerate(self.expected_trajectory)]
        except ValueError as e:
            param, _, problem = str(e).partition(": ")
            raise self._invalid(param, problem) from None
        self._needs_args = frozenset(s.tool for s in self._steps if s.args is not None)

    def unevaluated(self, result: EvalResult) -> EvalResult:
        return EvalResult.not_evaluated(result.reasoning, score=0.0)

    def check(self, traj: Trajectory, ctx: TurnContext) -> EvalResult:
        calls = traj.calls(include_failed=self.include_failed)
        needs_args = self._needs_args
        if needs_args and (unrecorded := [c for c in calls if c.name in needs_args and c.args is NOT_RECORDED]):
            return EvalResult.not_evaluated(not_recorded_reason(unrecorded[0], ctx.config.get("surface")), score=0.0)
        score, reason = self._score(calls)
        if score < 1.0 and self.parallel == "unordered" and self.order in ("exact", "strict", "in_order"):
            unknown = traj.missing.get("model_requests")  # no request, or several on one span: no step is known
            steps = [0] * len(calls) if unknown else traj.steps(calls)
            regrouped = self._regroup(calls, steps, guess=False)
            if regrouped is not None:
                score2, reason2 = self._score(regrouped)
                if score2 > score:
                    score, reason = score2, reason2 + " (parallel calls matched in any order)"
            # a guess differs only where no recorded response precedes a call (step 0)
            guessed = self._regroup(calls, steps, guess=True) if score < self.threshold and 0 in steps else None
            if guessed is not None and self._score(guessed)[0] >= self.threshold:  # passes only if those were parallel
                why = unknown or "no model-request span of their agent run started before them"
                return EvalResult.not_evaluated(
                    f"{reason}; the expected order differs only among calls that one model response may have "
                    "requested together (parallel calls, matched in any order), and which response requested "
                    f"each is not recorded ({why}); record each model request, or set parallel='ordered'",
                    score=score,
                )  # fmt: skip
        if self.threshold < 1.0:
            reason += f"; threshold={self.threshold:g}"
        return EvalResult(score >= self.threshold, reason, score)

    def _score(self, calls: list[ToolCall]) -> tuple[float, str]:
        return score_steps(calls, self._steps, self.order, self.args_mode)

    def _regroup(self, calls: list[ToolCall], steps: list[int], *, guess: bool) -> list[ToolCall] | None:
        """Reorder each group of parallel calls (one model response) to follow the expected order; None when
        nothing moves. Calls no recorded model response precedes in their run (step 0) are grouped only with
        `guess` (as if one response had requested them all)."""
        position: dict[str, int] = {}
        for j, s in enumerate(self._steps):
            position.setdefault(s.tool, j)
        out: list[ToolCall] = []
        i = 0
        changed = False
        while i < len(calls):
            k = i + 1
            if guess or steps[i] != 0:
                while k < len(calls) and steps[k] == steps[i] and calls[k].run is calls[i].run:
                    k += 1
            group = calls[i:k]
            ordered = sorted(group, key=lambda c: position.get(c.name, len(self._steps)))
            changed = changed or ordered != group or any(a is not b for a, b in zip(ordered, group, strict=True))
            out.extend(ordered)
            i = k
        return out if changed else None


@dataclass(repr=False)
class ArgumentCorrectness(ScopedEvaluator):
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

    _occurrence_checked: ClassVar[bool] = True
    """An invalid `occurrence` (negative, or neither "first", "last", "any" nor an int) is an error at
    construction; False (the pydantic-evals bridge) makes it a failing verdict, as pydantic-evals does."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_args_options(self.match_mode, self.key_modes, "ArgumentCorrectness.match_mode")
        if self._occurrence_checked:
            check_occurrence(self.occurrence, "ArgumentCorrectness")

    def _diff(self, args: dict[str, Any]) -> list[str]:
        return diff_arguments(args, self.expected_arguments, self.match_mode, recursive=self.recursive,
                              key_modes=self.key_modes, ignore_keys=self.ignore_keys)  # fmt: skip

    def check(self, traj: Trajectory, ctx: TurnContext) -> EvalResult:
        calls = traj.calls(include_failed=self.include_failed)
        return check_arguments(calls, self.tool_name, self.expected_arguments, self.match_mode, self._diff,
                               self.occurrence, surface=ctx.config.get("surface"), peer="pydantic-evals")  # fmt: skip


@dataclass(repr=False)
class MaxToolCalls(ScopedEvaluator):
    """At most `max_calls` locally executed tool calls (failed attempts count by default)."""

    needs: ClassVar[tuple[str, ...]] = ("tool_calls",)

    max_calls: int
    include_failed: bool = True
    evaluation_name: str | None = field(default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_calls < 0:
            raise self._invalid("max_calls", f"must be an integer >= 0, got {self.max_calls!r}")

    def check(self, traj: Trajectory, ctx: TurnContext) -> EvalResult:
        n = len(traj.calls(include_failed=self.include_failed))
        return EvalResult(n <= self.max_calls, f"{n} tool call(s), budget={self.max_calls}")


@dataclass(repr=False)
class MaxModelRequests(ScopedEvaluator):
    """At most `max_requests` model requests (`ctx.metrics['requests']` when present and unscoped, else spans)."""

    needs: ClassVar[tuple[str, ...]] = ("model_requests",)

    max_requests: int
    evaluation_name: str | None = field(default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_requests < 0:
            raise self._invalid("max_requests", f"must be an integer >= 0, got {self.max_requests!r}")

    def evaluate(self, ctx: TurnContext) -> EvalResult:
        metric = ctx.metrics.get("requests")
        unscoped = self.agent is None and self.subtree is None
        if unscoped and isinstance(metric, int | float) and not isinstance(metric, bool):
            return self._verdict(int(metric), "ctx.metrics['requests']")
        return super().evaluate(ctx)

    def check(self, traj: Trajectory, ctx: TurnContext) -> EvalResult:
        return self._verdict(len(traj.model_requests), "span tree")

    def _verdict(self, n: int, source: str) -> EvalResult:
        return EvalResult(n <= self.max_requests, f"{n} model request(s) (from {source}), budget={self.max_requests}")
