"""ToolCallEvaluator and ToolCallArgsEvaluator (shared/reference/000), read from the turn's tool calls.

`ctx.tool_calls` are the calls seen in spans (or, for an uninstrumented agent, the calls it
returned). The argument check shares `tracegrade.matching.diff_arguments` with ArgumentCorrectness.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..matching import ArgsMode, diff_arguments
from ..models import EvalResult, TurnContext
from ..trajectory import NOT_RECORDED, ToolCall
from .agentic import not_recorded_reason
from .base import BaseEvaluator

__all__ = ["ToolCallArgsEvaluator", "ToolCallEvaluator"]


def _calls(ctx: TurnContext) -> list[ToolCall]:
    return [c if isinstance(c, ToolCall) else ToolCall(str(c)) for c in ctx.tool_calls]


@dataclass(repr=False)
class ToolCallEvaluator(BaseEvaluator):
    """Required tools were called (in order, with `ordered=True`) and forbidden ones were not."""

    must_include: list[str] = field(default_factory=list)
    must_exclude: list[str] = field(default_factory=list)
    ordered: bool = False
    evaluation_name: str | None = field(default=None)

    def evaluate(self, ctx: TurnContext) -> EvalResult:
        names = [c.name for c in _calls(ctx)]
        problems: list[str] = []
        if missing := [t for t in self.must_include if t not in names]:
            problems.append(f"missing required tool(s) {missing!r}")
        elif self.ordered and not _in_order(self.must_include, names):
            problems.append(f"required tools {self.must_include!r} were not called in that order")
        if forbidden := [t for t in self.must_exclude if t in names]:
            problems.append(f"forbidden tool(s) called {forbidden!r}")
        source = f" [tool calls from {ctx.tool_calls_source}]" if ctx.tool_calls_source != "spans" else ""
        if problems:
            return EvalResult(False, f"{'; '.join(problems)} (called: {names!r}){source}")
        return EvalResult(True, f"tool calls OK (called: {names!r}){source}")


def _in_order(required: list[str], names: list[str]) -> bool:
    it = iter(names)
    return all(any(n == want for n in it) for want in required)


@dataclass(repr=False)
class ToolCallArgsEvaluator(BaseEvaluator):
    """Some call of `tool` had these arguments (`subset`: top-level keys; `exact`: equality)."""

    tool: str
    args: dict[str, Any]
    mode: ArgsMode = "subset"
    evaluation_name: str | None = field(default=None)

    def __post_init__(self) -> None:
        if self.mode not in ("subset", "exact"):
            raise ValueError(f"ToolCallArgsEvaluator.mode must be 'subset' or 'exact', got {self.mode!r}")

    def evaluate(self, ctx: TurnContext) -> EvalResult:
        calls = [c for c in _calls(ctx) if c.name == self.tool]
        if not calls:
            names = [c.name for c in _calls(ctx)]
            return EvalResult(False, f"tool {self.tool!r} was never called (called: {names!r})")
        with_args = [c for c in calls if isinstance(c.args, dict)]
        if not with_args:
            unrecorded = [c for c in calls if c.args is NOT_RECORDED]
            if unrecorded:
                return EvalResult.not_evaluated(not_recorded_reason(unrecorded[0]))
            return EvalResult(
                False, f"tool {self.tool!r} was called but no dict arguments were captured: {calls[0].args!r}"
            )
        observed = []
        for call in with_args:
            diffs = diff_arguments(call.args, self.args, self.mode)
            if not diffs:
                return EvalResult(True, f"{call.describe()} matches {self.args!r} ({self.mode})")
            observed.append(call.args)
        return EvalResult(
            False,
            f"arguments of {self.tool!r} do not match ({self.mode}): expected {self.args!r}, observed {observed!r}",
        )
