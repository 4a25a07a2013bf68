"""The transcript vocabulary of the pytest API: `Turn`, `Expect`, `AgentReply`, `JudgeConfig`,
`ToolCallArgsConfig`. `Expect` is shorthand for a list of evaluators (`Expect.build()`), described by
one table (`SHORTHANDS`: an `Expect` field → an evaluator's parameter) that Python and YAML
transcripts share. Every class checks its arguments at construction (unknown names get the closest
valid one) by building the evaluators once, so a bad value fails right there with the evaluator's
own message, prefixed by the `Expect` field (`max_tool_calls: ...`). `build()` reads the fields
again each time (`EvalSession.run` calls it), so a field changed after construction counts and is
checked the same way.

The JSON Schema of YAML transcripts is derived from these classes by `tracegrade.pytest_plugin.schema`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from os import PathLike
from typing import Any

from .._hints import unknown_field
from ..errors import ExpectError, ParameterError
from ..evaluators import (
    ContainsEvaluator,
    HasMatchingSpan,
    MaxModelRequests,
    MaxToolCalls,
    ToolCallArgsEvaluator,
    ToolCallEvaluator,
    TrajectoryMatch,
)
from ..evaluators.base import OWN_CHECK, BaseEvaluator, CheckedParameters
from ..evaluators.judge import JudgeEvaluator, JudgeParameters, ToolCallArgsJudgeEvaluator
from ..evaluators.tools import ArgsCheck, ArgsMatchOptions
from ..trajectory import ToolCall
from ..tree import SpanPredicate, SpanQuery
from .audio import check_audio

__all__ = [
    "JUDGE_RETRIES",
    "JUDGE_TIMEOUT",
    "SHORTHANDS",
    "AgentReply",
    "Expect",
    "JudgeConfig",
    "Shorthand",
    "ToolCallArgsConfig",
    "Turn",
]


@dataclass
class AgentReply:
    """What an agent callable may return: the reply text and, for uninstrumented agents, the tool
    calls it made (`ToolCall(name, args)` or plain names). Tool spans, when recorded, take priority.

    `messages` (e.g. `result.all_messages()`) lets arguments missing from spans (include_content
    off) be recovered by tool call id.
    """

    reply: str
    tool_calls: Sequence[str | ToolCall] = ()
    messages: Sequence[Any] = ()


JUDGE_RETRIES = 2
"""Retries of a `JudgeConfig` judge that sets none, when the session sets none (`[tool.agent_eval] retries`)."""
JUDGE_TIMEOUT = 30.0
"""Seconds per call of a `JudgeConfig` judge that sets none, when the session sets none (`timeout`)."""


@dataclass
class JudgeConfig(JudgeParameters):
    """An LLM-as-judge rubric: the judges' own parameters (`JudgeParameters`: `rubric`, `model`,
    `retries`, `timeout`), declared and checked there; `model` falls back to `[tool.agent_eval]`
    judge_model / model, and `retries` / `timeout` left unset (None) are the session's judge
    retries / timeout (`[tool.agent_eval]` retries / timeout), as pytest-agent-eval's are."""

    retries: int | None = None  # type: ignore[assignment]  # unset: the session's
    timeout: float | None = None  # type: ignore[assignment]

    def evaluator(
        self, cls: type[Any], *, retries: int = JUDGE_RETRIES, timeout: float = JUDGE_TIMEOUT, **extra: Any
    ) -> Any:
        """The judge of class `cls` with this configuration's current values, checked again, and
        `retries` / `timeout` where it sets none (`extra`: more parameters, e.g. `tool`)."""
        self.__post_init__()
        values = {f.name: getattr(self, f.name) for f in fields(JudgeParameters)}
        values["retries"] = retries if self.retries is None else self.retries
        values["timeout"] = timeout if self.timeout is None else self.timeout
        return cls(**values, **extra)


@dataclass
class _ArgsConfigHead(ArgsCheck):
    args: dict[str, Any] | None = None  # type: ignore[assignment]  # optional here: `judge` may stand alone
    judge: JudgeConfig | None = None


@dataclass
class ToolCallArgsConfig(ArgsMatchOptions, _ArgsConfigHead):
    """Assertions on one tool's arguments: values (`args`, matched by `mode`) and/or a `judge` rubric.

    `ToolCallArgsEvaluator`'s parameters (`ArgsCheck`, `ArgsMatchOptions`: `recursive`, `key_modes`,
    `ignore_keys`, `occurrence`, passed by name), with `args` optional and `judge` in fourth place.
    """

    def __post_init__(self) -> None:
        self.build()

    def build(self, *, judge_retries: int = JUDGE_RETRIES, judge_timeout: float = JUDGE_TIMEOUT) -> list[Any]:
        """`ToolCallArgsEvaluator` (with `args`) and `ToolCallArgsJudgeEvaluator` (with `judge`; its
        unset `retries` / `timeout` are `judge_retries` / `judge_timeout`), from the fields' current
        values, checked as at construction (a `judge` mapping becomes a `JudgeConfig`)."""
        if isinstance(self.judge, Mapping):
            try:
                self.judge = JudgeConfig(**self.judge)
            except ParameterError as e:  # the parameter's path under `judge`
                raise self._invalid(f"judge.{e.param}" if e.param else "judge", e.problem) from None
        super().__post_init__()
        if self.args is None and self.judge is None:
            raise ValueError(
                f"ToolCallArgsConfig(tool={self.tool!r}) needs 'args' (a deterministic check), "
                "'judge' (an LLM-judged rubric) or both; got neither"
            )
        out: list[Any] = []
        if self.args is not None:
            shared = (*fields(ArgsCheck), *fields(ArgsMatchOptions))
            out.append(ToolCallArgsEvaluator(**{f.name: getattr(self, f.name) for f in shared}))
        if self.judge is not None:
            try:
                judge = self.judge.evaluator(
                    ToolCallArgsJudgeEvaluator, retries=judge_retries, timeout=judge_timeout, tool=self.tool
                )
                out.append(judge)
            except ParameterError as e:  # a JudgeConfig changed after construction
                raise self._invalid(f"judge.{e.param}" if e.param else "judge", e.problem) from None
        return out


@dataclass(frozen=True)
class Shorthand:
    """`Expect` fields that stand for one evaluator: `params` maps each field to the evaluator's
    parameter. The evaluator is built when a field outside `modifiers` is set."""

    evaluator: type[BaseEvaluator]
    params: Mapping[str, str]
    modifiers: tuple[str, ...] = ()

    def build(self, expect: Expect) -> BaseEvaluator | None:
        values = {name: getattr(expect, name) for name in self.params}
        if not any(v not in (None, [], ()) for k, v in values.items() if k not in self.modifiers):
            return None
        try:
            built: BaseEvaluator = self.evaluator(**{self.params[k]: v for k, v in values.items() if v is not None})
            return built
        except ParameterError as e:
            param, bracket, index = e.param.partition("[")  # matches_any[1] → reply_matches_any[1]
            fields_ = [k for k, p in self.params.items() if p == param]
            if not fields_:
                raise
            raise ExpectError(fields_[0] + bracket + index, e.problem) from None


SHORTHANDS: dict[str, Shorthand] = {
    "reply": Shorthand(ContainsEvaluator, {"reply_contains_any": "any_of", "reply_contains_all": "all_of",
                                           "reply_matches_any": "matches_any", "reply_matches_all": "matches_all"}),
    "tool_calls": Shorthand(ToolCallEvaluator, {"tool_calls_include": "must_include",
                                                "tool_calls_exclude": "must_exclude",
                                                "tool_calls_ordered": "ordered"}, ("tool_calls_ordered",)),
    "max_tool_calls": Shorthand(MaxToolCalls, {"max_tool_calls": "max_calls"}),
    "max_model_requests": Shorthand(MaxModelRequests, {"max_model_requests": "max_requests"}),
}  # fmt: skip
"""The `Expect` fields that map one-to-one onto an evaluator's parameters."""


@dataclass
class Expect(CheckedParameters):
    """Expectations of one turn. Tool checks read the turn's tool spans.

    The fields of pytest-agent-eval's `Expect`, plus span-native ones: `trajectory` (a
    `TrajectoryMatch`, its `expected_trajectory` list, or its keyword arguments), `max_tool_calls`,
    `max_model_requests` and `spans` (`SpanQuery`s that must each match some span of the turn).
    `judge` and `tool_calls_args` entries may also be mappings of their configs' keyword arguments.
    """

    evaluators: list[Any] = field(default_factory=list)
    reply_contains_any: list[str] = field(default_factory=list)
    reply_contains_all: list[str] = field(default_factory=list)
    reply_matches_any: list[str] = field(default_factory=list)
    reply_matches_all: list[str] = field(default_factory=list)
    tool_calls_include: list[str] = field(default_factory=list)
    tool_calls_exclude: list[str] = field(default_factory=list)
    tool_calls_ordered: bool = False
    tool_calls_args: list[ToolCallArgsConfig | dict[str, Any]] = field(default_factory=list)
    judge: JudgeConfig | dict[str, Any] | None = None
    trajectory: TrajectoryMatch | list[str | dict[str, Any]] | dict[str, Any] | None = None
    max_tool_calls: int | None = None
    max_model_requests: int | None = None
    spans: list[SpanQuery | SpanPredicate] = field(default_factory=list, metadata=OWN_CHECK)

    def __post_init__(self) -> None:
        self.build()

    @classmethod
    def _parameter_error(cls, param: str, problem: str) -> Exception:
        return ExpectError(param or "Expect", problem)

    @classmethod
    def _unknown_parameter(cls, key: str, names: Sequence[str]) -> Exception:
        return ExpectError(key, unknown_field(key, names))

    def build(self, *, judge_retries: int = JUDGE_RETRIES, judge_timeout: float = JUDGE_TIMEOUT) -> list[Any]:
        """The evaluators these expectations stand for, built from the fields' current values and
        checked as at construction (mappings become configs), in pytest-agent-eval's order:
        `evaluators`, the tool-name check, the reply check, `judge`, `tool_calls_args`; then
        `trajectory`, `max_tool_calls`, `max_model_requests` and `spans`.
        The judges of `judge` and `tool_calls_args` that set no `retries` / `timeout` get
        `judge_retries` / `judge_timeout` (the session's)."""
        super().__post_init__()
        built: list[Any] = []
        for i, ev in enumerate(self.evaluators):
            if not callable(getattr(ev, "evaluate", None)):
                raise ExpectError(f"evaluators[{i}]", f"{ev!r} has no evaluate(ctx) method")
            built.append(ev)
        for shorthand in (SHORTHANDS["tool_calls"], SHORTHANDS["reply"]):
            if (ev := shorthand.build(self)) is not None:
                built.append(ev)
        if self.judge is not None:
            with _field("judge"):
                config_ = JudgeConfig(**self.judge) if isinstance(self.judge, Mapping) else self.judge
                built.append(config_.evaluator(JudgeEvaluator, retries=judge_retries, timeout=judge_timeout))
                self.judge = config_
        configs: list[ToolCallArgsConfig | dict[str, Any]] = []  # mappings become configs, as in YAML
        for i, spec in enumerate(self.tool_calls_args):
            with _field(f"tool_calls_args[{i}]"):
                config = ToolCallArgsConfig(**spec) if isinstance(spec, Mapping) else spec
                built.extend(config.build(judge_retries=judge_retries, judge_timeout=judge_timeout))
                configs.append(config)
        self.tool_calls_args = configs
        if self.trajectory is not None:
            with _field("trajectory"):
                built.append(_trajectory(self.trajectory))
        for shorthand in (SHORTHANDS["max_tool_calls"], SHORTHANDS["max_model_requests"]):
            if (ev := shorthand.build(self)) is not None:
                built.append(ev)
        for i, query in enumerate(self.spans):
            with _field(f"spans[{i}]"):
                built.append(HasMatchingSpan(query, evaluation_name=f"spans[{i}]"))
        return built


@dataclass
class Turn:
    """One user message and what the agent's answer to it must satisfy. The positional order is
    pytest-agent-eval's: `Turn(user, audio, expect)`; pass `expect=` by name."""

    user: str
    audio: str | PathLike[str] | None = None
    """A recording of the message for voice agents, passed as the history message's `"audio"` path."""
    expect: Expect = field(default_factory=Expect)

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Raise `ValueError` (`TypeError` for `audio`) for a field of the wrong type, at construction
        and again when the turn runs."""
        if not isinstance(self.user, str):
            raise ValueError(f"Turn.user must be a string, got {type(self.user).__name__}")
        if isinstance(self.audio, Expect):
            raise TypeError(
                "Turn.audio must be a path, got an Expect: Turn's second positional parameter is `audio` "
                "(pytest-agent-eval's order: user, audio, expect); pass the Expect as expect=..."
            )
        check_audio(self.audio, "Turn")
        if not isinstance(self.expect, Expect):
            raise ValueError(f"Turn.expect must be an Expect, got {type(self.expect).__name__}")


class _field:
    """Re-raise construction errors as `ExpectError(name, ...)`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if isinstance(exc, ExpectError):
            raise ExpectError(f"{self.name}.{exc.field}", exc.message) from None
        if isinstance(exc, ParameterError):  # the parameter's path under this field
            raise ExpectError(f"{self.name}.{exc.param}" if exc.param else self.name, exc.problem) from None
        if exc is not None and isinstance(exc, ValueError | TypeError):
            raise ExpectError(self.name, str(exc)) from None


def _trajectory(spec: TrajectoryMatch | list[str | dict[str, Any]] | dict[str, Any]) -> TrajectoryMatch:
    if isinstance(spec, TrajectoryMatch):
        return spec
    if isinstance(spec, list | tuple):
        return TrajectoryMatch(expected_trajectory=list(spec))
    return TrajectoryMatch(**spec)
