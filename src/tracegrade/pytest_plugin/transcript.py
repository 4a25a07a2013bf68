"""The transcript vocabulary of the pytest API: `Turn`, `Expect`, `AgentReply`, `JudgeConfig`,
`ToolCallArgsConfig`. `Expect` is shorthand for a list of evaluators (`Expect.build()`); the
evaluators are built once, at construction, so a bad regex or span query fails right there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ExpectError
from ..evaluators import (
    ContainsEvaluator,
    HasMatchingSpan,
    MaxModelRequests,
    MaxToolCalls,
    ToolCallArgsEvaluator,
    ToolCallEvaluator,
    TrajectoryMatch,
)
from ..evaluators.judge import JudgeEvaluator, ToolCallArgsJudgeEvaluator
from ..matching import ArgsMode, KeyRule
from ..trajectory import ToolCall
from ..tree import SpanPredicate, SpanQuery

if TYPE_CHECKING:
    from pydantic_ai.models import Model

__all__ = ["AgentReply", "Expect", "ExpectError", "JudgeConfig", "ToolCallArgsConfig", "Turn"]


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


@dataclass
class JudgeConfig:
    """An LLM-as-judge rubric; `model` falls back to `[tool.agent_eval]` judge_model / model."""

    rubric: str
    model: str | Model | None = None
    retries: int = 2
    timeout: float = 30.0


@dataclass
class ToolCallArgsConfig:
    """Assertions on one tool's arguments: values (`args`, matched by `mode`) and/or a `judge` rubric.

    `mode` is any argument match mode (`subset`, `exact`, `superset`, `ignore`); `recursive`,
    `key_modes`, `ignore_keys` and `occurrence` are `ToolCallArgsEvaluator`'s options.
    """

    tool: str
    args: dict[str, Any] | None = None
    mode: ArgsMode = "subset"
    judge: JudgeConfig | None = None
    recursive: bool = False
    key_modes: dict[str, KeyRule] | None = None
    ignore_keys: list[str] = field(default_factory=list)
    occurrence: Literal["first", "last", "any"] | int = "any"


@dataclass
class Expect:
    """Expectations of one turn. Tool checks read the turn's tool spans.

    The fields of pytest-agent-eval's `Expect`, plus span-native ones: `trajectory` (a
    `TrajectoryMatch`, its `expected_trajectory` list, or its keyword arguments), `max_tool_calls`,
    `max_model_requests` and `spans` (`SpanQuery`s that must each match some span of the turn).
    """

    evaluators: list[Any] = field(default_factory=list)
    reply_contains_any: list[str] = field(default_factory=list)
    reply_contains_all: list[str] = field(default_factory=list)
    reply_matches_any: list[str] = field(default_factory=list)
    reply_matches_all: list[str] = field(default_factory=list)
    tool_calls_include: list[str] = field(default_factory=list)
    tool_calls_exclude: list[str] = field(default_factory=list)
    tool_calls_ordered: bool = False
    tool_calls_args: list[ToolCallArgsConfig] = field(default_factory=list)
    judge: JudgeConfig | None = None
    trajectory: TrajectoryMatch | list[str] | dict[str, Any] | None = None
    max_tool_calls: int | None = None
    max_model_requests: int | None = None
    spans: list[SpanQuery | SpanPredicate] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._built = self._build()

    def build(self) -> list[Any]:
        """The evaluators these expectations stand for, in a fixed order: `evaluators` first."""
        return list(self._built)

    def _build(self) -> list[Any]:
        built: list[Any] = []
        for i, ev in enumerate(self.evaluators):
            if not callable(getattr(ev, "evaluate", None)):
                raise ExpectError(f"evaluators[{i}]", f"{ev!r} has no evaluate(ctx) method")
            built.append(ev)
        for name in _STR_LISTS:
            _check_str_list(getattr(self, name), name)
        if self.reply_contains_any or self.reply_contains_all or self.reply_matches_any or self.reply_matches_all:
            _checked_regexes(self.reply_matches_any, "reply_matches_any")
            _checked_regexes(self.reply_matches_all, "reply_matches_all")
            built.append(
                ContainsEvaluator(
                    any_of=list(self.reply_contains_any),
                    all_of=list(self.reply_contains_all),
                    matches_any=list(self.reply_matches_any),
                    matches_all=list(self.reply_matches_all),
                )
            )
        if self.tool_calls_include or self.tool_calls_exclude:
            built.append(
                ToolCallEvaluator(
                    must_include=list(self.tool_calls_include),
                    must_exclude=list(self.tool_calls_exclude),
                    ordered=bool(self.tool_calls_ordered),
                )
            )
        for i, spec in enumerate(self.tool_calls_args):
            built.extend(_tool_args_evaluators(spec, f"tool_calls_args[{i}]"))
        if self.judge is not None:
            with _field("judge"):
                built.append(_judge(self.judge, JudgeEvaluator))
        if self.trajectory is not None:
            with _field("trajectory"):
                built.append(_trajectory(self.trajectory))
        if self.max_tool_calls is not None:
            with _field("max_tool_calls"):
                built.append(MaxToolCalls(max_calls=_non_negative(self.max_tool_calls)))
        if self.max_model_requests is not None:
            with _field("max_model_requests"):
                built.append(MaxModelRequests(max_requests=_non_negative(self.max_model_requests)))
        for i, query in enumerate(self.spans):
            with _field(f"spans[{i}]"):
                built.append(HasMatchingSpan(query, evaluation_name=f"spans[{i}]"))
        return built


@dataclass
class Turn:
    """One user message and what the agent's answer to it must satisfy."""

    user: str
    expect: Expect = field(default_factory=Expect)

    def __post_init__(self) -> None:
        if not isinstance(self.user, str):
            raise ValueError(f"Turn.user must be a string, got {type(self.user).__name__}")
        if not isinstance(self.expect, Expect):
            raise ValueError(f"Turn.expect must be an Expect, got {type(self.expect).__name__}")


class _field:
    """Re-raise construction errors as `ExpectError(name, ...)`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if exc is not None and not isinstance(exc, ExpectError) and isinstance(exc, ValueError | TypeError):
            raise ExpectError(self.name, str(exc)) from None


_STR_LISTS = (
    "reply_contains_any",
    "reply_contains_all",
    "reply_matches_any",
    "reply_matches_all",
    "tool_calls_include",
    "tool_calls_exclude",
)


def _check_str_list(value: Any, name: str) -> None:
    if isinstance(value, str) or not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ExpectError(name, f"expected a list of strings, got {value!r}")


def _checked_regexes(patterns: Sequence[str], name: str) -> Sequence[str]:
    import re

    for i, p in enumerate(patterns):
        try:
            re.compile(p)
        except (re.error, TypeError) as e:
            raise ExpectError(f"{name}[{i}]", f"invalid regex {p!r}: {e}") from None
    return patterns


def _non_negative(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"expected an integer >= 0, got {value!r}")
    return value


def _judge(config: JudgeConfig | Mapping[str, Any], cls: Any, **extra: Any) -> Any:
    if isinstance(config, Mapping):
        config = JudgeConfig(**config)
    if not isinstance(config, JudgeConfig):
        raise ValueError(f"expected a JudgeConfig, got {config!r}")
    return cls(rubric=config.rubric, model=config.model, retries=config.retries, timeout=config.timeout, **extra)


def _tool_args_evaluators(spec: ToolCallArgsConfig, where: str) -> list[Any]:
    if not isinstance(spec, ToolCallArgsConfig):
        raise ExpectError(where, f"expected a ToolCallArgsConfig, got {spec!r}")
    if spec.args is None and spec.judge is None:
        raise ExpectError(where, f"ToolCallArgsConfig(tool={spec.tool!r}) needs `args`, `judge` or both")
    out: list[Any] = []
    if spec.args is not None:
        with _field(f"{where}.args"):
            out.append(
                ToolCallArgsEvaluator(
                    tool=spec.tool,
                    args=spec.args,
                    mode=spec.mode,
                    recursive=spec.recursive,
                    key_modes=spec.key_modes,
                    ignore_keys=list(spec.ignore_keys),
                    occurrence=spec.occurrence,
                )  # fmt: skip
            )
    if spec.judge is not None:
        with _field(f"{where}.judge"):
            out.append(_judge(spec.judge, ToolCallArgsJudgeEvaluator, tool=spec.tool))
    return out


def _trajectory(spec: TrajectoryMatch | list[str] | dict[str, Any]) -> TrajectoryMatch:
    if isinstance(spec, TrajectoryMatch):
        return spec
    if isinstance(spec, list | tuple):
        return TrajectoryMatch(expected_trajectory=[str(s) for s in spec])
    if isinstance(spec, Mapping):
        return TrajectoryMatch(**spec)
    raise ValueError(f"expected a TrajectoryMatch, a list of tool names or its keyword arguments, got {spec!r}")
