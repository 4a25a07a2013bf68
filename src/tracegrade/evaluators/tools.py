"""ToolCallEvaluator and ToolCallArgsEvaluator (shared/reference/000), read from the turn's tool calls.

`ctx.tool_calls` are the calls seen in spans (or, for an uninstrumented agent, the calls it
returned). The argument check shares `tracegrade.matching.diff_arguments` with ArgumentCorrectness.
`evaluate` is async, as the reference protocol says.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..matching import ArgsMode, KeyRule, check_args_options, check_occurrence, diff_arguments, occurrence_index
from ..results import EvalResult, TurnContext
from ..trajectory import NO_SPANS_REASON, NOT_RECORDED, ToolCall, args_cut_reason
from .base import BaseEvaluator, CheckedParameters, missing_tool_evidence, not_recorded_reason

__all__ = [
    "RECOVERED",
    "ArgsCheck",
    "ArgsMatchOptions",
    "ToolCallArgsEvaluator",
    "ToolCallEvaluator",
    "calls_of",
    "check_arguments",
    "check_tool_names",
    "cut_reason",
    "source_note",
    "unusable_args",
]


def _calls(ctx: TurnContext) -> list[ToolCall]:
    return [c if isinstance(c, ToolCall) else ToolCall(str(c)) for c in ctx.tool_calls]


def source_note(ctx: TurnContext) -> str:
    """A suffix telling the reader the tool calls did not come from spans."""
    if ctx.tool_calls_source == "returned":
        return " [tool calls as returned by the agent: no tool span was recorded]"
    if ctx.tool_calls_source == "none" and not ctx.tool_calls:
        return f" [{NO_SPANS_REASON}, and the agent returned no tool calls]"
    return ""


def cut_reason(calls: Sequence[ToolCall], tool: str, *, args: bool = True) -> str | None:
    """Why the calls of `tool` cannot be told for sure: a call whose name, cut short by a value-length
    limit, may be `tool`'s; or (with `args`) a call of `tool` whose arguments were cut short."""
    for c in calls:
        if c.name_truncated is not None and tool.startswith(c.name):
            return c.name_truncated
        if args and c.name == tool and (reason := args_cut_reason(c)) is not None:
            return reason
    return None


def calls_of(ctx: TurnContext, tool: str) -> list[ToolCall] | EvalResult:
    """The turn's calls of `tool` that carry dict arguments, or the deterministic failure:
    never called (failed), arguments not recorded or cut short (not_evaluated), arguments not a
    dict (failed)."""
    if (unknown := missing_tool_evidence(ctx)) is not None:
        return EvalResult.not_evaluated(unknown)
    calls = _calls(ctx)
    matching = [c for c in calls if c.name == tool]
    if not matching and (cut := cut_reason(calls, tool)) is not None:
        return EvalResult.not_evaluated(cut)
    if not matching:
        names = [c.name for c in calls]
        return EvalResult(False, f"Tool {tool!r} was never called (tools called: {names!r}){source_note(ctx)}")
    with_args = [c for c in matching if isinstance(c.args, dict)]
    return with_args or unusable_args(
        tool, matching, returned=ctx.tool_calls_source == "returned", surface=ctx.config.get("surface")
    )


def unusable_args(
    tool: str, matching: list[ToolCall], returned: bool = False, surface: str | None = None
) -> EvalResult:
    """Why none of `matching` (calls of `tool`) has dict arguments to check (`returned`: the calls
    are the ones the agent returned, not spans; `surface`: where the check runs, for the advice)."""
    if (cut := cut_reason(matching, tool)) is not None:
        return EvalResult.not_evaluated(cut)
    if any(c.args is NOT_RECORDED for c in matching):
        if returned:
            return EvalResult(
                False,
                f"tool {tool!r} was called but no dict arguments were captured: the agent returned it as a "
                "plain name; return ToolCall(name, args) (or instrument the agent) to check its arguments",
            )
        unrecorded = next(c for c in matching if c.args is NOT_RECORDED)
        return EvalResult.not_evaluated(
            f"tool {tool!r} was called but no dict arguments were captured. {not_recorded_reason(unrecorded, surface)}"
        )
    call = matching[0]
    if call.args_text is not None and call.args is call.args_text:  # recorded text that is not JSON
        try:
            json.loads(call.args_text)
        except ValueError as e:
            return EvalResult(False, f"tool {tool!r} was called, but its arguments could not be parsed as JSON "
                                     f"({e}): {call.args_text!r}")  # fmt: skip
    if call.args_text is not None:
        return EvalResult(False, f"tool {tool!r} was called, but its arguments are not a JSON object: {call.args!r}")
    return EvalResult(False, f"tool {tool!r} was called but no dict arguments were captured: {call.args!r}")


def check_arguments(
    calls: Sequence[ToolCall],
    tool: str,
    expected: Mapping[str, Any],
    mode: str,
    diff: Callable[[dict[str, Any]], list[str]],
    occurrence: Literal["first", "last", "any"] | int = "any",
    *,
    returned: bool = False,
    source: str = "",
    surface: str | None = None,
    peer: Literal["pytest-agent-eval", "pydantic-evals"] = "pytest-agent-eval",
) -> EvalResult:
    """The argument check of `ToolCallArgsEvaluator` and `ArgumentCorrectness`: the call(s) of `tool`
    among `calls` that `occurrence` picks (`"any"`: some call) have arguments without `diff`erences
    from `expected`. Three distinct failures: never called; called but no dict arguments captured
    (not recorded in the span: not_evaluated); the arguments differ (expected vs observed shown).
    A name or arguments cut short by a length limit make the verdict not_evaluated where it could
    hide the call that decides. `source` is appended to "never called" (where the calls came from),
    which is worded as the `peer` evaluator words it."""
    matching = [c for c in calls if c.name == tool]
    if occurrence != "any" and (cut := cut_reason(calls, tool, args=False)) is not None:
        return EvalResult.not_evaluated(cut)  # which call is which is unknown
    pae = peer == "pytest-agent-eval"
    if not matching:
        if (cut := cut_reason(calls, tool)) is not None:
            return EvalResult.not_evaluated(cut)
        called = [c.name for c in calls]
        if pae:
            return EvalResult(False, f"Tool {tool!r} was never called (tools called: {called!r}){source}")
        return EvalResult(False, f"No calls to tool {tool!r} were recorded. Tools called: {called!r}{source}")
    expected = dict(expected)
    if occurrence == "any":
        with_args = [c for c in matching if isinstance(c.args, dict)]
        if not with_args:
            return unusable_args(tool, matching, returned, surface)
        for call in with_args:
            if not diff(call.args):
                return _matched(call, tool, expected, mode, pae, "")
        if (cut := cut_reason(calls, tool)) is not None:  # the call that matches may be that one
            return EvalResult.not_evaluated(cut)
        unrecorded = [c for c in matching if c.args is NOT_RECORDED]
        if unrecorded and not returned:  # the call that matches may be one whose arguments were not recorded
            n = len(with_args)
            return EvalResult.not_evaluated(
                f"no call of tool {tool!r} with recorded arguments matches {expected!r} ({mode}; {n} call"
                f"{'s' if n > 1 else ''} checked), and {len(unrecorded)} other call{'s' if len(unrecorded) > 1 else ''}"
                f" of it recorded no arguments. {not_recorded_reason(unrecorded[0], surface)}"
            )
        diffs = "; ".join(diff(with_args[0].args))
        first = f"first call: {diffs}" if len(with_args) > 1 else diffs
        if pae:
            return EvalResult(False, f"Tool {tool!r} argument mismatch ({mode} mode): expected {expected!r}, "
                                     f"observed {[c.args for c in with_args]!r} ({first})")  # fmt: skip
        observed: Any = with_args[0].args if len(with_args) == 1 else [c.args for c in with_args]
        many = f" (none of {len(with_args)} calls matches)" if len(with_args) > 1 else ""
        return EvalResult(False, f"Tool {tool!r} argument mismatch: {first}{many}. Expected {expected!r} ({mode}), "
                                 f"observed {observed!r}")  # fmt: skip
    if (index := occurrence_index(occurrence, len(matching))) is None:
        return EvalResult(False, f"Tool {tool!r} was called {len(matching)} time(s); occurrence={occurrence!r} "
                                 "does not select any of them (must be 'first', 'last', 'any' or a 0-based "
                                 "index; negative ints are not supported)")  # fmt: skip
    call = matching[index]
    if not isinstance(call.args, dict):
        return unusable_args(tool, [call], returned, surface)
    if diffs_ := diff(call.args):
        if pae:
            return EvalResult(False, f"Tool {tool!r} argument mismatch ({mode} mode, call {occurrence!r}): expected "
                                     f"{expected!r}, observed {call.args!r} ({'; '.join(diffs_)})")  # fmt: skip
        return EvalResult(False, f"Tool {tool!r} argument mismatch: {'; '.join(diffs_)}. Expected {expected!r} "
                                 f"({mode}), observed {call.args!r} (call {occurrence!r})")  # fmt: skip
    return _matched(call, tool, expected, mode, pae, f" (call {occurrence!r})")


def _matched(call: ToolCall, tool: str, expected: dict[str, Any], mode: str, pae: bool, which: str) -> EvalResult:
    if pae:  # pytest-agent-eval's words, then the call
        return EvalResult(True, f"Tool {tool!r} called with expected args ({mode}): {call.describe()}{which}"
                                f"{_recovered(call)}")  # fmt: skip
    return EvalResult(True, f"{call.describe()}{which} matches {expected!r} ({mode}){_recovered(call)}")


RECOVERED = " (arguments recovered from the run's messages)"
"""Ends the reason of an argument check decided by arguments the spans lacked (found in the run's messages)."""


def _recovered(call: ToolCall) -> str:
    return RECOVERED if call.args_source == "messages" else ""


@dataclass(repr=False)
class ToolCallEvaluator(BaseEvaluator):
    """Required tools were called (in order, with `ordered=True`) and forbidden ones were not."""

    must_include: list[str] = field(default_factory=list)
    must_exclude: list[str] = field(default_factory=list)
    ordered: bool = False
    evaluation_name: str | None = field(default=None)

    async def evaluate(self, ctx: TurnContext) -> EvalResult:
        if (unknown := missing_tool_evidence(ctx)) is not None:
            return EvalResult.not_evaluated(unknown)
        calls = _calls(ctx)
        for tool in (*self.must_include, *self.must_exclude):
            if (cut := cut_reason(calls, tool, args=False)) is not None:
                return EvalResult.not_evaluated(cut)
        names = [c.name for c in calls]
        source = source_note(ctx)
        failed = check_tool_names(names, self.must_include, forbidden=self.must_exclude, ordered=self.ordered,
                                  source=source)  # fmt: skip
        return failed or EvalResult(True, f"All tool call checks passed (called: {names!r}){source}")


def check_tool_names(
    names: Sequence[str],
    required: Sequence[str],
    *,
    forbidden: Sequence[str] = (),
    ordered: bool = False,
    source: str = "",
) -> EvalResult | None:
    """The failure, if any, of `ToolCallEvaluator`'s check in pytest-agent-eval's words, given the names
    of the calls in order: a `required` tool not called, with `ordered` the required tools not called in
    that order, a `forbidden` tool called. `source` is appended (where the calls came from)."""
    problems = [f"Expected tool {t!r} not in {list(names)!r}" for t in required if t not in names]
    if ordered and not problems and not _in_order(required, names):
        problems.append(f"Tools {list(required)!r} not called in order in {list(names)!r}")
    problems += [f"Forbidden tool {t!r} was called" for t in forbidden if t in names]
    return EvalResult(False, "; ".join(problems) + source) if problems else None


def _in_order(required: Sequence[str], names: Sequence[str]) -> bool:
    it = iter(names)
    return all(any(n == want for n in it) for want in required)


@dataclass(repr=False)
class ArgsCheck(CheckedParameters):
    """Which tool's arguments are checked against what: `tool`, expected `args`, compared by `mode`
    (`subset`: the expected keys; `exact`: equality; `superset`; `ignore`)."""

    tool: str
    args: dict[str, Any]
    mode: ArgsMode = "subset"


@dataclass(repr=False)
class ArgsMatchOptions(CheckedParameters):
    """How a tool's arguments are compared beyond `mode`, and which call: `recursive` (subset matching
    of nested dicts), `key_modes` (a mode or a callable per dotted key path), `ignore_keys` (glob
    patterns of key paths left out) and `occurrence` (`"any"`: some call; `"first"`, `"last"` or a
    0-based index: that call). Declared once for `ToolCallArgsEvaluator` and `ToolCallArgsConfig`."""

    recursive: bool = False
    key_modes: dict[str, KeyRule] | None = None
    ignore_keys: list[str] = field(default_factory=list)
    occurrence: Literal["first", "last", "any"] | int = "any"

    def __post_init__(self) -> None:
        super().__post_init__()
        mode = getattr(self, "mode", "subset")  # `ArgsCheck.mode`, in the classes that take these options
        check_args_options(mode, self.key_modes, f"{type(self).__name__}.mode")
        check_occurrence(self.occurrence, type(self).__name__)

    def diff(self, args: dict[str, Any], expected: Mapping[str, Any], mode: ArgsMode) -> list[str]:
        """How `args` differ from `expected` under `mode` and these options (empty: they match)."""
        return diff_arguments(args, expected, mode, recursive=self.recursive, key_modes=self.key_modes,
                              ignore_keys=self.ignore_keys)  # fmt: skip


@dataclass(repr=False)
class _NamedArgsCheck(ArgsCheck, BaseEvaluator):
    evaluation_name: str | None = field(default=None)


@dataclass(repr=False)
class ToolCallArgsEvaluator(ArgsMatchOptions, _NamedArgsCheck):
    """Some call of `tool` had these arguments (`subset`: the expected keys; `exact`: equality).

    Three distinct failures: the tool was never called; it was called but no dict arguments were
    captured (not recorded in its span: outcome `not_evaluated`); the arguments differ (expected
    vs observed shown). Beyond the reference page: every mode of the shared matcher (`superset`,
    `ignore`) and the `ArgsMatchOptions` (`recursive`, `key_modes`, `ignore_keys`, `occurrence`).
    Positional order: `tool`, `args`, `mode`, `evaluation_name`, then the options.
    """

    def _diff(self, args: dict[str, Any]) -> list[str]:
        return self.diff(args, self.args, self.mode)

    async def evaluate(self, ctx: TurnContext) -> EvalResult:
        if (unknown := missing_tool_evidence(ctx)) is not None:
            return EvalResult.not_evaluated(unknown)
        return check_arguments(_calls(ctx), self.tool, self.args, self.mode, self._diff, self.occurrence,
                               returned=ctx.tool_calls_source == "returned", source=source_note(ctx),
                               surface=ctx.config.get("surface"))  # fmt: skip
