"""Values passed to and returned by evaluators: `TurnContext` and `EvalResult`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .trajectory import ToolCall, Trajectory
    from .tree import SpanTree

__all__ = ["OUTCOMES", "EvalResult", "Outcome", "TurnContext", "checks_phrase", "summary_text"]

Outcome = Literal["passed", "failed", "not_evaluated", "error"]
OUTCOMES: tuple[Outcome, ...] = ("passed", "failed", "not_evaluated", "error")


def checks_phrase(checks: Mapping[Outcome, int], not_evaluated_skipped: int = 0) -> str:
    """`checks: 4 passed, 1 failed, 1 not evaluated (skipped), 0 errors`."""
    ne = checks.get("not_evaluated", 0)
    if not_evaluated_skipped and not_evaluated_skipped == ne:
        ne_text = f"{ne} not evaluated (skipped)"
    elif not_evaluated_skipped:
        ne_text = f"{ne} not evaluated ({not_evaluated_skipped} skipped)"
    else:
        ne_text = f"{ne} not evaluated"
    return f"checks: {checks.get('passed', 0)} passed, {checks.get('failed', 0)} failed, {ne_text}, {checks.get('error', 0)} errors"


def summary_text(
    cases: int,
    passed: int,
    failed: int,
    checks: Mapping[Outcome, int],
    not_evaluated_skipped: int = 0,
    no_checks: int = 0,
    not_live: int = 0,
) -> str:
    """The one summary line of every surface (CLI, pytest, batch):
    `2 eval(s): 1 passed, 1 failed; checks: 4 passed, 2 failed, 0 not evaluated, 0 errors`
    (with `, N no checks` and `, N skipped (not live)` when there are any)."""
    head = f"{cases} eval(s): {passed} passed, {failed} failed"
    if no_checks:
        head += f", {no_checks} no checks"
    if not_live:
        head += f", {not_live} skipped (not live)"
    return f"{head}; {checks_phrase(checks, not_evaluated_skipped)}"


@dataclass(frozen=True, slots=True)
class EvalResult:
    """An evaluator's verdict.

    `passed` is True only when `outcome == "passed"`. `outcome` tells a real failure (`failed`)
    from a check that could not run on the data it got (`not_evaluated`: no spans, arguments not
    recorded) and from a broken check (`error`: the evaluator or a judge call raised). When not
    given, it follows `passed`. `score` is set by scoring evaluators, in [0, 1].
    """

    passed: bool
    reasoning: str = ""
    score: float | None = None
    outcome: Outcome = None  # type: ignore[assignment]  # derived from `passed` when omitted
    name: str = ""
    """The evaluator that produced it (set by `grade`)."""

    def __post_init__(self) -> None:
        if self.outcome is None:
            object.__setattr__(self, "outcome", "passed" if self.passed else "failed")
        elif self.outcome not in OUTCOMES:
            raise ValueError(f"EvalResult.outcome must be one of {OUTCOMES}, got {self.outcome!r}")
        elif self.passed != (self.outcome == "passed"):
            raise ValueError(f"EvalResult(passed={self.passed}) contradicts outcome={self.outcome!r}")
        if self.score is not None and not 0.0 <= self.score <= 1.0:
            raise ValueError(f"EvalResult.score must be in [0, 1], got {self.score}")

    @property
    def reason(self) -> str:
        """Alias of `reasoning`."""
        return self.reasoning

    @property
    def value(self) -> bool | float:
        """The score for scoring evaluators, else `passed`."""
        return self.score if self.score is not None else self.passed

    def counts_as_passed(self, not_evaluated: Literal["fail", "skip"] = "fail") -> bool:
        """Whether this result lets its run pass: `passed`, or `not_evaluated` under the `"skip"` policy."""
        return self.passed or (not_evaluated == "skip" and self.outcome == "not_evaluated")

    @classmethod
    def not_evaluated(cls, reasoning: str, score: float | None = None) -> EvalResult:
        return cls(False, reasoning, score, "not_evaluated")

    @classmethod
    def error(cls, reasoning: str) -> EvalResult:
        return cls(False, reasoning, None, "error")


@dataclass
class TurnContext:
    """What an evaluator sees of one turn (or one graded run).

    `tool_calls` are str-compatible `ToolCall`s with `.args`; by default the trajectory's successful
    calls. `tool_calls_source` says where they came from: `"spans"`, `"returned"` (the agent's own
    list, used only when no tool span was seen) or `"none"`.
    """

    user: str = ""
    reply: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    span_tree: SpanTree | None = None
    trajectory: Trajectory | None = None
    metrics: dict[str, float | int] = field(default_factory=dict)
    tool_calls_source: Literal["spans", "returned", "none"] = "none"
    config: dict[str, Any] = field(default_factory=dict)
    """Settings from `[tool.agent_eval]` (e.g. the default judge `model`)."""
    reply_missing: str | None = None
    """Why the reply is not known (`reply` is then `""`): it was to come from the spans, which recorded no final
    output; None when it is known (given, or recorded)."""
    user_missing: str | None = None
    """Why the user message is not known (`user` is then `""`): it was to come from the spans, which recorded none
    (`Trajectory.user_message`); None when it is known (given, or recorded)."""

    @classmethod
    def for_trajectory(cls, trajectory: Trajectory, **fields: Any) -> TurnContext:
        """A context over a trajectory; `user`/`reply` default to what the spans recorded (the turn's user message,
        `Trajectory.user_message`, and the final output); `user_missing` / `reply_missing` say why when they
        recorded none."""
        out, asked = trajectory.final_output, trajectory.user_message
        if not fields and cls is TurnContext:  # the common case, built positionally (faster than by keyword)
            reply, calls = _reply(out), trajectory.tool_calls
            source: Literal["spans", "none"] = "spans" if trajectory.recognized_spans else "none"
            missing = _reply_missing(trajectory) if out is None else None
            unasked = _user_missing(trajectory) if asked is None else None
            return cls(asked or "", reply, calls, [], trajectory.tree, trajectory, {}, source, {}, missing, unasked)
        if "reply" not in fields:
            fields["reply"] = _reply(out)
            if out is None:
                fields.setdefault("reply_missing", _reply_missing(trajectory))
        if "user" not in fields:
            fields["user"] = asked or ""
            if asked is None:
                fields.setdefault("user_missing", _user_missing(trajectory))
        fields.setdefault("tool_calls", trajectory.tool_calls)
        fields.setdefault("tool_calls_source", "spans" if trajectory.recognized_spans else "none")
        return cls(span_tree=trajectory.tree, trajectory=trajectory, **fields)


def _reply_missing(trajectory: Trajectory) -> str:
    """Why the spans hold no reply (the trajectory has no final output)."""
    runs = [r for r in trajectory.agent_runs if r.parent is None]
    if not runs:
        return "the agent's reply is not in the telemetry: no agent-run span was recorded to hold its final output"
    run, node = runs[-1], runs[-1].span
    who = f"agent run {run.name!r}" if run.name else "the agent run"
    where = f" ({node.name!r}, {node.scope_name})" if node is not None and node.scope_name else ""
    return (
        f"the agent's reply is not in the telemetry: {who}{where} recorded no final output (its instrumentation "
        "records none, or its content setting leaves it out); give the reply to the check instead"
    )


def _user_missing(trajectory: Trajectory) -> str:
    """Why the spans hold no user message (`Trajectory.user_message` is None)."""
    runs = [r for r in trajectory.agent_runs if r.parent is None]
    top = runs[-1] if runs else None
    who = "the run" if top is None else f"agent run {top.name!r}" if top.name else "the agent run"
    if not any(top is None or (r.run is not None and r.run.within(top)) for r in trajectory.model_requests):
        return f"the user message is not in the telemetry: no model request of {who} was recorded to hold its input"
    return (
        f"the user message is not in the telemetry: the first model request of {who} records no user message in its "
        "input (its content setting leaves the messages out, or its instrumentation records them in a form not read "
        "here: OTel GenAI `gen_ai.input.messages` or its log events, OpenInference `llm.input_messages`, OpenLLMetry "
        "`gen_ai.prompt`)"
    )


def _reply(out: Any) -> str:
    """A final output the spans recorded, as text ("" when none)."""
    return "" if out is None else out if isinstance(out, str) else str(out)
