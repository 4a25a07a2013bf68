"""ToolCallEvaluator and ToolCallArgsEvaluator (shared/reference/000), read from the turn's tool calls.

`ctx.tool_calls` are the calls seen in spans (or, for an uninstrumented agent, the calls it
returned). The argument check shares `tracegrade.matching.diff_arguments` with ArgumentCorrectness.
`evaluate` is async, as the reference protocol says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..matching import ArgsMode, diff_arguments
from ..models import EvalResult, TurnContext
from ..trajectory import NOT_RECORDED, ToolCall
from .agentic import not_recorded_reason
from .base import NO_SPANS_REASON, BaseEvaluator

__all__ = ["ToolCallArgsEvaluator", "ToolCallEvaluator", "calls_of", "source_note"]


def _calls(ctx: TurnContext) -> list[ToolCall]:
    return [c if isinstance(c, ToolCall) else ToolCall(str(c)) for c in ctx.tool_calls]


def source_note(ctx: TurnContext) -> str:
    """A suffix telling the reader the tool calls did not come from spans."""
    if ctx.tool_calls_source == "returned":
        return " [tool calls as returned by the agent: no tool span was recorded]"
    if ctx.tool_calls_source == "none" and not ctx.tool_calls:
        return f" [{NO_SPANS_REASON}, and the agent returned no tool calls]"
    return ""


def calls_of(ctx: TurnContext, tool: str) -> list[ToolCall] | EvalResult:
    """The turn's calls of `tool` that carry dict arguments, or the deterministic failure:
    never called (failed), arguments not recorded (not_evaluated), arguments not a dict (failed)."""
    calls = _calls(ctx)
    matching = [c for c in calls if c.name == tool]
    if not matching:
        names = [c.name for c in calls]
        return EvalResult(False, f"tool {tool!r} was never called (called: {names!r}){source_note(ctx)}")
    with_args = [c for c in matching if isinstance(c.args, dict)]
    if with_args:
        return with_args
    if any(c.args is NOT_RECORDED for c in matching):
        if ctx.tool_calls_source == "returned":
            return EvalResult(
                False,
                f"tool {tool!r} was called but no dict arguments were captured: the agent returned it as a "
                "plain name; return ToolCall(name, args) (or instrument the agent) to check its arguments",
            )
        unrecorded = next(c for c in matching if c.args is NOT_RECORDED)
        return EvalResult.not_evaluated(
            f"tool {tool!r} was called but no dict arguments were captured. {not_recorded_reason(unrecorded)}"
        )
    shown = matching[0].args_text or matching[0].args
    return EvalResult(False, f"tool {tool!r} was called but no dict arguments were captured: {shown!r}")


@dataclass(repr=False)
class ToolCallEvaluator(BaseEvaluator):
    """Required tools were called (in order, with `ordered=True`) and forbidden ones were not."""

    must_include: list[str] = field(default_factory=list)
    must_exclude: list[str] = field(default_factory=list)
    ordered: bool = False
    evaluation_name: str | None = field(default=None)

    def __post_init__(self) -> None:
        for where in ("must_include", "must_exclude"):
            value = getattr(self, where)
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"ToolCallEvaluator({where}=...) must be a list of tool names, got {value!r}")

    async def evaluate(self, ctx: TurnContext) -> EvalResult:
        names = [c.name for c in _calls(ctx)]
        problems: list[str] = []
        if missing := [t for t in self.must_include if t not in names]:
            problems.append(f"missing required tool(s) {missing!r}")
        elif self.ordered and not _in_order(self.must_include, names):
            problems.append(f"required tools {self.must_include!r} were not called in that order")
        if forbidden := [t for t in self.must_exclude if t in names]:
            problems.append(f"forbidden tool(s) called {forbidden!r}")
        source = source_note(ctx)
        if problems:
            return EvalResult(False, f"{'; '.join(problems)} (called: {names!r}){source}")
        return EvalResult(True, f"tool calls OK (called: {names!r}){source}")


def _in_order(required: list[str], names: list[str]) -> bool:
    it = iter(names)
    return all(any(n == want for n in it) for want in required)


@dataclass(repr=False)
class ToolCallArgsEvaluator(BaseEvaluator):
    """Some call of `tool` had these arguments (`subset`: top-level keys; `exact`: equality).

    Three distinct failures: the tool was never called; it was called but no dict arguments were
    captured (not recorded in its span: outcome `not_evaluated`); the arguments differ (expected
    vs observed shown).
    """

    tool: str
    args: dict[str, Any]
    mode: ArgsMode = "subset"
    evaluation_name: str | None = field(default=None)

    def __post_init__(self) -> None:
        if self.mode not in ("subset", "exact"):
            raise ValueError(f"ToolCallArgsEvaluator.mode must be 'subset' or 'exact', got {self.mode!r}")
        if not isinstance(self.args, dict):
            raise ValueError(f"ToolCallArgsEvaluator.args must be a dict, got {type(self.args).__name__}")

    async def evaluate(self, ctx: TurnContext) -> EvalResult:
        calls = calls_of(ctx, self.tool)
        if isinstance(calls, EvalResult):
            return calls
        for call in calls:
            if not diff_arguments(call.args, self.args, self.mode):
                return EvalResult(True, f"{call.describe()} matches {self.args!r} ({self.mode})")
        observed: Any = calls[0].args if len(calls) == 1 else [c.args for c in calls]
        diffs = "; ".join(diff_arguments(calls[0].args, self.args, self.mode))
        many = f" in any of {len(calls)} calls; first call: {diffs}" if len(calls) > 1 else f": {diffs}"
        return EvalResult(
            False,
            f"arguments of {self.tool!r} do not match ({self.mode}){many}. "
            f"Expected {self.args!r}, observed {observed!r}",
        )
