"""`EvalSession.run(agent, turns)`: run a transcript N times concurrently and grade every turn
from the spans it produced.

Each run executes inside its own `capture()`, each turn inside a nested one, so a turn's
`ctx.span_tree` / `ctx.trajectory` / `ctx.tool_calls` hold exactly the spans of that turn (runs are
asyncio tasks, so concurrent runs never see each other's spans). Tool calls returned by the
agent callable are used only when the turn produced no tool span.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import pytest

from .._text import printable
from ..capture import Capture, capture
from ..errors import ExpectError
from ..grading import informational_names, run_evaluator
from ..results import OUTCOMES, EvalResult, Outcome, TurnContext
from ..trajectory import ToolCall, Trajectory
from .config import DEFAULT_RUNS, DEFAULT_THRESHOLD
from .transcript import JUDGE_RETRIES, JUDGE_TIMEOUT, AgentReply, Turn

if TYPE_CHECKING:
    from pydantic_ai.models import Model

__all__ = [
    "AgentCallable",
    "EvalSession",
    "RunResult",
    "TranscriptResult",
    "TurnResult",
    "describe_call",
    "live_skip_hint",
    "normalize_reply",
    "user_message",
]

AgentCallable = Callable[[list[dict[str, Any]]], Any]
"""`(history) -> AgentReply | str | (reply, tool_calls)`, async or sync (sync ones run in a thread)."""

ToolCallsSource = Literal["spans", "returned", "none"]

MAX_LISTED_FAILURES = 20
"""Failed checks `assert_threshold()` lists one by one; the rest are counted ("and N more")."""


def live_skip_hint(skipped: int) -> str:
    """The end-of-session line when live mode is off (pytest-agent-eval's wording, which users grep for)."""
    return f"{skipped} eval test(s) skipped — live mode is off. Pass --agent-eval-live or set EVAL_LIVE=1."


NotEvaluatedPolicy = Literal["fail", "skip"]


@dataclass
class TurnResult:
    """One turn of one run: what the agent did and every evaluator's verdict."""

    turn_index: int
    passed: bool
    eval_results: list[EvalResult]
    user: str = ""
    reply: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_calls_source: ToolCallsSource = "none"
    """Where `tool_calls` came from: `"spans"`, `"returned"` (no tool span was seen) or `"none"`."""
    error: str | None = None
    """The agent raised, timed out or returned something unusable."""
    trajectory: Trajectory | None = field(default=None, repr=False, compare=False)

    not_evaluated: NotEvaluatedPolicy = "fail"
    """How this turn counted its `not_evaluated` checks (the session's `not_evaluated` setting)."""
    informational: frozenset[str] = frozenset()
    """Names of the checks marked `informational(...)`: reported, never failing the turn."""
    expected: list[dict[str, Any]] | None = None
    """The expected trajectory a check of the turn declared (`{"tool", "args", "optional"}` steps),
    for the report's expected-vs-observed diff."""

    @property
    def failures(self) -> list[EvalResult]:
        """The checks that made the turn fail (with `not_evaluated="skip"`, not the unevaluated ones;
        never the informational ones)."""
        return [
            r
            for r in self.eval_results
            if not r.counts_as_passed(self.not_evaluated) and r.name not in self.informational
        ]


@dataclass
class RunResult:
    """One execution of the whole transcript."""

    run_index: int
    passed: bool
    turn_results: list[TurnResult]
    attempts: int = 1
    error: str | None = None
    capture: Capture | None = field(default=None, repr=False, compare=False)
    """The run's spans (all turns, and the judges' calls if they are instrumented)."""


@dataclass
class TranscriptResult:
    """All runs of a transcript: `score` is the fraction of runs that passed, `passed` is
    `score >= threshold`."""

    passed: bool
    score: float
    threshold: float
    runs: list[RunResult]
    not_evaluated: NotEvaluatedPolicy = "fail"
    """How `not_evaluated` checks counted (see `AgentEvalSettings.not_evaluated`)."""

    @property
    def passed_run_count(self) -> int:
        return sum(r.passed for r in self.runs)

    @property
    def outcome_counts(self) -> dict[Outcome, int]:
        """How many checks of every run and turn ended in each outcome (all four keys present)."""
        counts: dict[Outcome, int] = dict.fromkeys(OUTCOMES, 0)
        for run in self.runs:
            for turn in run.turn_results:
                for res in turn.eval_results:
                    counts[res.outcome] += 1
        return counts

    @property
    def evaluated(self) -> bool:
        """Whether any check could run on the data (False when every check is `not_evaluated`)."""
        counts = self.outcome_counts
        return sum(counts.values()) > counts["not_evaluated"]

    @property
    def tool_calls_sources(self) -> list[str]:
        """The distinct sources of the turns' tool calls (`spans`, `returned`, `none`)."""
        return sorted({t.tool_calls_source for r in self.runs for t in r.turn_results})

    def describe_failures(self, limit: int | None = None, *, skip: bool = True) -> list[str]:
        """One line per failed check (at most `limit`; all by default), with the turn's observed
        trajectory, recorded text escaped (`printable`); `skip=False` lists every check that did not
        pass, skipped `not_evaluated` ones too."""
        lines: list[str] = []
        for run in self.runs:
            for turn in run.turn_results:
                for res in turn.failures if skip else [r for r in turn.eval_results if not r.passed]:
                    calls = ", ".join(describe_call(c, turn.tool_calls_source) for c in turn.tool_calls)
                    calls = calls or "no tool calls"
                    lines.append(
                        printable(
                            f"run {run.run_index + 1}, turn {turn.turn_index + 1}: {res.name or 'check'} "
                            f"[{res.outcome}]: {res.reasoning} | trajectory ({turn.tool_calls_source}): {calls}"
                        )
                    )
                    if limit is not None and len(lines) >= limit:
                        return lines
        return lines

    def assert_threshold(self) -> None:
        """Raise `AssertionError` when `score < threshold`, listing the failed checks.

        With `not_evaluated = "skip"`, a transcript where no check could be evaluated skips the
        test (`pytest.skip`) instead of passing it on no evidence.
        """
        if self.not_evaluated == "skip" and not self.evaluated:
            lines = self.describe_failures(skip=False)
            pytest.skip("agent_eval: no check could be evaluated (not_evaluated = 'skip'): " + "; ".join(lines))
        if self.passed:
            return
        head = (
            f"LLM eval failed: score={self.score:.2f} < threshold={self.threshold:.2f} "
            f"({self.passed_run_count}/{len(self.runs)} runs passed)"
        )
        lines = self.describe_failures()
        shown = ["  " + line for line in lines[:MAX_LISTED_FAILURES]]
        if len(lines) > MAX_LISTED_FAILURES:
            shown.append(f"  ... and {len(lines) - MAX_LISTED_FAILURES} more failed check(s)")
        raise AssertionError("\n".join([head, *shown]))


def user_message(turn: Turn) -> dict[str, Any]:
    """The turn's history message: `{"role": "user", "content": ...}`, with `"audio"` (the file's path
    as a string) when the turn has one, as pytest-agent-eval passes it to voice agents."""
    message: dict[str, Any] = {"role": "user", "content": turn.user}
    if turn.audio is not None:
        message["audio"] = os.fspath(turn.audio)
    return message


def describe_call(call: ToolCall, source: str) -> str:
    """`name(args)`; a name the agent returned without arguments is shown as the bare name."""
    return call.name if source == "returned" and not call.args_recorded else call.describe()


def _tool_call(item: Any) -> ToolCall:
    if isinstance(item, ToolCall):
        return item
    if isinstance(item, str):
        return ToolCall(item)
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
        return ToolCall(item[0], item[1])
    if isinstance(item, Mapping) and isinstance(item.get("name"), str):
        return ToolCall(item["name"], item["args"]) if "args" in item else ToolCall(item["name"])
    raise TypeError(f"a returned tool call must be a str, ToolCall(name, args) or (name, args), got {item!r}")


def normalize_reply(output: Any) -> tuple[str, list[ToolCall], list[Any]]:
    """An agent callable's return value → (reply, returned tool calls, model messages)."""
    if isinstance(output, AgentReply):
        return _text(output.reply), [_tool_call(c) for c in output.tool_calls], list(output.messages)
    if isinstance(output, str):
        return output, [], []
    if isinstance(output, tuple | list) and len(output) == 2:
        reply, calls = output
        if isinstance(calls, str):
            raise TypeError(f"the tool calls of a (reply, tool_calls) pair must be a list, got {calls!r}")
        return _text(reply), [_tool_call(c) for c in calls or ()], []
    if hasattr(output, "output") and callable(getattr(output, "all_messages", None)):  # a pydantic-ai run result
        return _text(output.output), [], list(output.all_messages())
    raise TypeError(
        "the agent callable must return an AgentReply, a str or a (reply, tool_calls) pair, "
        f"got {type(output).__name__}: {output!r}"
    )


def _text(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else str(value)


async def _call(agent: AgentCallable, history: list[dict[str, Any]]) -> Any:
    if inspect.iscoroutinefunction(agent) or inspect.iscoroutinefunction(type(agent).__call__):
        return await agent(history)
    result = await asyncio.to_thread(agent, history)  # sync agents may block (run_sync): keep runs concurrent
    return await result if inspect.isawaitable(result) else result


def _raised_at(error: BaseException) -> str:
    """` (at file.py:12 in func)`: where the agent's exception was raised (its innermost frame)."""
    tb = error.__traceback__
    if tb is None:
        return ""
    frame = traceback.extract_tb(tb)[-1]
    return f" (at {os.path.basename(frame.filename)}:{frame.lineno} in {frame.name})"


class _AgentFailed(Exception):
    def __init__(self, message: str, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class EvalSession:
    """What the `agent_eval` fixture returns; usable on its own outside pytest too.

    The positional parameters are pytest-agent-eval's: `threshold`, `runs`, `config_model` (the
    judges' model when they name none), `judge_model` (preferred over `config_model`),
    `judge_retries` / `judge_timeout` (of the judges of `Expect.judge` and `tool_calls_args` that
    set none); each given one overrides the same setting of `config` (`model`, `judge_model`,
    `retries`, `timeout`), whose defaults are 2 retries and 30 seconds; `_item` (a pytest item, or any
    object) receives each result as `_item._eval_result`, as pytest-agent-eval's report plugins read it.

    `config` is the `[tool.agent_eval]` settings (a mapping or `AgentEvalSettings`): the judges'
    `model` / `judge_model` (given to evaluators as `ctx.config`), `retries` / `timeout` (of the judges
    of `Expect.judge` and `tool_calls_args` that set none: `judge_retries` / `judge_timeout`),
    `agent_timeout` (seconds the agent may take per turn; None: no limit), `agent_retries` (times a
    run is retried from its first turn when the agent raises or times out; 0 by default) and
    `not_evaluated` (`"fail"` or `"skip"`). `on_result` is called with each `TranscriptResult` (the plugin's report uses it).
    `provider` records from a private SDK `TracerProvider` (agents instrumented with
    `InstrumentationSettings(tracer_provider=...)`); it can also be set on the fixture's session.
    """

    def __init__(
        self,
        threshold: float = DEFAULT_THRESHOLD,
        runs: int = DEFAULT_RUNS,
        config_model: str | Model | None = None,
        judge_model: str | Model | None = None,
        judge_retries: int | None = None,
        judge_timeout: float | None = None,
        _item: Any = None,
        *,
        config: Any = None,
        on_result: Callable[[TranscriptResult], None] | None = None,
        provider: Any = None,
    ) -> None:
        settings = config.model_dump() if hasattr(config, "model_dump") else dict(config or {})
        given = {"model": config_model, "judge_model": judge_model, "retries": judge_retries, "timeout": judge_timeout}
        settings.update({key: value for key, value in given.items() if value is not None})
        self.threshold = threshold
        self.runs = runs
        self.config: dict[str, Any] = {**settings, "surface": "pytest"}  # `surface`: advice that fits (reasons)
        self.judge_retries: int = _count(settings.get("retries", JUDGE_RETRIES), "retries")
        """Retries of the judges of `Expect.judge` / `tool_calls_args` that set none."""
        self.judge_timeout: float = _seconds(settings.get("timeout", JUDGE_TIMEOUT), "timeout")
        """Seconds per call of the same judges when they set none."""
        agent_timeout = settings.get("agent_timeout")
        self.agent_timeout: float | None = None if agent_timeout is None else _seconds(agent_timeout, "agent_timeout")
        """Seconds the agent may take to answer one turn (None: no limit)."""
        self.agent_retries: int = _count(settings.get("agent_retries", 0), "agent_retries")
        """Times a run is retried from its first turn when the agent raises or times out."""
        policy = settings.get("not_evaluated", "fail")
        if policy not in ("fail", "skip"):
            raise ValueError(f"not_evaluated must be 'fail' or 'skip', got {policy!r}")
        self.not_evaluated: NotEvaluatedPolicy = policy
        self.provider = provider
        """An SDK `TracerProvider` to record from instead of the global one (see `capture(provider=...)`)."""
        self.results: list[TranscriptResult] = []
        self._on_result = on_result
        self._item = _item

    async def run(
        self,
        agent: AgentCallable,
        turns: Sequence[Turn],
        *,
        threshold: float | None = None,
        runs: int | None = None,
    ) -> TranscriptResult:
        """Run `turns` against `agent` `runs` times concurrently; grade each turn from its spans."""
        threshold = self.threshold if threshold is None else threshold
        runs = self.runs if runs is None else runs
        if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
            raise ValueError(f"runs must be an integer >= 1, got {runs!r}")
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 <= threshold <= 1:
            raise ValueError(f"threshold must be a number between 0 and 1, got {threshold!r}")
        turns = list(turns)
        if not turns:
            raise ValueError("agent_eval.run() needs at least one Turn")
        checks = [self._evaluators(turn, i) for i, turn in enumerate(turns)]
        results = list(await asyncio.gather(*(self._run_once(agent, turns, checks, i) for i in range(runs))))
        score = sum(r.passed for r in results) / len(results)
        result = TranscriptResult(score >= threshold - 1e-9, score, float(threshold), results, self.not_evaluated)
        self.results.append(result)
        if self._item is not None:  # pytest-agent-eval's hook for report plugins: the item's last result
            self._item._eval_result = result
        if self._on_result is not None:
            self._on_result(result)
        return result

    def run_sync(self, agent: AgentCallable, turns: Sequence[Turn], **kwargs: Any) -> TranscriptResult:
        """`run` for synchronous tests (not from inside a running event loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(agent, turns, **kwargs))
        raise RuntimeError("agent_eval.run_sync() was called inside an event loop: use `await agent_eval.run(...)`")

    def _evaluators(self, turn: Any, index: int) -> list[Any]:
        """The evaluators of `turns[index]`, built from its fields as they are now; a bad value
        raises here, before any agent is called, with the turn's path."""
        where = f"turns[{index}]"
        if not isinstance(turn, Turn):
            raise TypeError(f"{where} must be a Turn, got {type(turn).__name__}")
        try:
            turn.check()
        except (ValueError, TypeError) as e:
            raise type(e)(f"{where}: {e}") from None
        try:
            return turn.expect.build(judge_retries=self.judge_retries, judge_timeout=self.judge_timeout)
        except ExpectError as e:
            raise ExpectError(f"{where}.expect.{e.field}", e.message) from None

    async def _run_once(
        self, agent: AgentCallable, turns: list[Turn], checks: list[list[Any]], index: int
    ) -> RunResult:
        attempts = 0
        while True:
            attempts += 1
            with capture(provider=self.provider) as run_cap:
                turn_results, failure = await self._attempt(agent, turns, checks)
            if failure is None or not failure.retryable or attempts > self.agent_retries:
                break
        error = None if failure is None else str(failure) + (f" (after {attempts} attempts)" if attempts > 1 else "")
        passed = failure is None and all(t.passed for t in turn_results)
        return RunResult(index, passed, turn_results, attempts, error, run_cap)

    async def _attempt(
        self, agent: AgentCallable, turns: list[Turn], checks: list[list[Any]]
    ) -> tuple[list[TurnResult], _AgentFailed | None]:
        from ..reporting.trace import expected_steps  # the report's module: loaded only when grading

        history: list[dict[str, Any]] = []
        results: list[TurnResult] = []
        for index, turn in enumerate(turns):
            history.append(user_message(turn))
            failure: _AgentFailed | None = None
            async with capture(provider=self.provider, receiver=_session_receiver()) as cap:
                try:
                    if self.agent_timeout is None:
                        output = await _call(agent, list(history))
                    else:
                        output = await asyncio.wait_for(_call(agent, list(history)), self.agent_timeout)
                except Exception as e:
                    if isinstance(e, TimeoutError) and self.agent_timeout is not None:
                        limit = f"{self.agent_timeout:g}s (agent_timeout)"
                        failure = _AgentFailed(f"the agent did not answer turn {index + 1} within {limit}", True)
                    else:
                        failure = _AgentFailed(f"the agent raised {type(e).__name__}: {e}{_raised_at(e)}", True)
            if failure is None:
                try:
                    reply, returned, messages = normalize_reply(output)
                except TypeError as e:
                    failure = _AgentFailed(str(e), False)
            if failure is not None:
                error = EvalResult.error(str(failure))
                traj = cap.trajectory  # what the agent did before it failed (its tool spans) is still reported
                calls = list(traj.tool_calls)
                results.append(
                    TurnResult(index, False, [error], turn.user, "", calls, "spans" if calls else "none",
                               error=str(failure), trajectory=traj)
                )  # fmt: skip
                return results, failure
            if messages:
                cap.add_messages(messages)
            ctx = self._context(turn, cap, reply, returned, history)
            history.append({"role": "assistant", "content": reply})
            evaluators = checks[index]
            verdicts = list(await asyncio.gather(*(run_evaluator(ev, ctx) for ev in evaluators)))
            info = frozenset(informational_names(evaluators, verdicts))
            ok = all(v.counts_as_passed(self.not_evaluated) or v.name in info for v in verdicts)
            results.append(
                TurnResult(
                    index,
                    ok,
                    verdicts,
                    turn.user,
                    reply,
                    list(ctx.tool_calls),
                    ctx.tool_calls_source,
                    trajectory=ctx.trajectory,
                    not_evaluated=self.not_evaluated,
                    informational=info,
                    expected=expected_steps(evaluators),
                )
            )
        return results, None

    def _context(
        self, turn: Turn, cap: Capture, reply: str, returned: list[ToolCall], history: list[dict[str, Any]]
    ) -> TurnContext:
        traj = cap.trajectory
        ctx = TurnContext.for_trajectory(traj, user=turn.user, reply=reply, history=list(history), config=self.config)
        if returned and not traj.all_calls and not traj.unnamed_calls:  # no tool span: trust what the agent says it did
            spans_traj = traj
            traj = Trajectory(returned, traj.model_requests, traj.agent_runs, traj.tree, traj.recognized_spans)
            traj.incomplete = list(spans_traj.incomplete)
            ctx.trajectory, ctx.tool_calls, ctx.tool_calls_source = traj, traj.tool_calls, "returned"
        return ctx


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    return value


def _seconds(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"{name} must be a number of seconds > 0, got {value!r}")
    return float(value)


def _session_receiver() -> Any:
    """The `otlp_receiver` fixture's receiver when a test session started it (never imports the receiver)."""
    service = sys.modules.get("tracegrade.receiver._service")
    return service.active_session_receiver() if service is not None else None
