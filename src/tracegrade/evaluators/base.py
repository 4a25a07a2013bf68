"""The evaluator protocol, the checked-parameter base, and the scoped base of the trajectory checks.

`CheckedParameters` gives a dataclass's constructor one behaviour on every surface (Python, YAML
transcripts, grading specs, the pydantic-evals bridge): an unknown keyword names the closest
parameter, a missing one is named, and every value is checked against its annotation before the
class's own `__post_init__` checks, each failure a `ParameterError` (`MaxToolCalls.max_calls: must
be an integer, got '3'`). `ScopedEvaluator` runs the preconditions shared by the trajectory checks
(spans present, scoping to an agent / subtree, the data the check `needs` recorded) and calls `check`.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import types
import typing
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import ConfigDict, InstanceOf, TypeAdapter, ValidationError

from .._hints import did_you_mean
from ..errors import ParameterError
from ..results import EvalResult, TurnContext
from ..trajectory import NO_SPANS_REASON, ToolCall
from ..tree import SpanQuery, validate_query

if TYPE_CHECKING:
    from ..trajectory import Trajectory

__all__ = [
    "OWN_CHECK",
    "BaseEvaluator",
    "CheckedParameters",
    "Evaluator",
    "ScopedEvaluator",
    "check_threshold",
    "evaluator_name",
    "missing_tool_evidence",
    "not_recorded_reason",
    "require_trajectory",
    "scoped_trajectory",
]


OWN_CHECK: dict[str, Any] = {"tracegrade.check": False}
"""Field metadata: the class checks this value itself (e.g. a `SpanQuery`, with `validate_query`)."""


@runtime_checkable
class Evaluator(Protocol):
    """Anything with `evaluate(ctx) -> EvalResult`, sync or async. No base class is required."""

    def evaluate(self, ctx: TurnContext) -> EvalResult | Awaitable[EvalResult]: ...


# --- checked parameters -----------------------------------------------------------------------------

_STRICT = ConfigDict(strict=True, arbitrary_types_allowed=True)


def _describe(hint: Any) -> str:
    """`list[str]` → "a list of strings": what a value of `hint` is, for messages."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        named = [a for a in args if a is not type(None)]
        text = " or ".join(_describe(a) for a in named)
        return text + " or None" if len(named) < len(args) else text
    if origin is Literal:
        return f"one of {args!r}"
    if origin in (list, tuple, set, frozenset, typing.Sequence, typing.Iterable) or hint in (list, tuple):
        inner = _describe(args[0]) if args else "a value"
        return "a list of " + " or ".join(_plural(part) for part in inner.split(" or "))
    if origin is dict or hint is dict or origin is typing.Mapping:
        return "a dict"
    if origin is Callable or hint is Callable:
        return "a callable"
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}
    return names.get(hint, f"a {getattr(hint, '__name__', hint)}")


def _plural(text: str) -> str:
    """`a string` → `strings` (for `_describe` of lists)."""
    if text == "true":
        return "booleans"
    if text in ("false", "None") or text.startswith("one of"):
        return text
    noun = text.split(" ", 1)[1] if text.startswith(("a ", "an ")) else text
    return noun if noun.endswith("s") else noun + "s"


def _hint_of(cls: type, name: str) -> Any:
    """The evaluated annotation of field `name`, or None when it cannot be evaluated here (a name
    imported only for type checkers)."""
    for klass in cls.__mro__:
        raw = inspect.get_annotations(klass).get(name)
        if raw is None:
            continue
        if not isinstance(raw, str):
            return raw
        module = sys.modules.get(klass.__module__)
        try:  # the class's own annotation, evaluated as typing.get_type_hints does
            return eval(raw, dict(vars(module)) if module else {}, {})
        except Exception:
            return None
    return None


_CHECKS: dict[type, tuple[tuple[str, Any, TypeAdapter[Any]], ...]] = {}


def _checks(cls: type) -> tuple[tuple[str, Any, TypeAdapter[Any]], ...]:
    """(field, annotation, strict validator) for each checkable init field of `cls` (made once)."""
    if (known := _CHECKS.get(cls)) is not None:
        return known
    out = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init or f.metadata.get("tracegrade.check") is False:
            continue
        hint = _hint_of(cls, f.name)
        if hint is None or hint is Any:
            continue
        try:
            adapter: TypeAdapter[Any] = TypeAdapter(_instances(hint), config=_STRICT)
            adapter.rebuild(raise_errors=True)  # built now (and failing here), not at first use
        except Exception:  # a type pydantic cannot check: the class's own checks apply
            continue
        out.append((f.name, hint, adapter))
    _CHECKS[cls] = tuple(out)
    return _CHECKS[cls]


def _instances(hint: Any) -> Any:
    """`hint` with every class pydantic would validate field by field (dataclasses, models) taken as
    is: an instance of it is checked by its own constructor."""
    if isinstance(hint, type) and (dataclasses.is_dataclass(hint) or hasattr(hint, "model_fields")):
        return typing.cast(Any, InstanceOf)[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if not args or origin is Literal:
        return hint
    converted = tuple(_instances(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return typing.Union[converted]  # noqa: UP007 - built from a tuple
    if origin in (list, dict, tuple, set, frozenset):
        return origin[converted]
    return hint


def _plain(value: Any) -> Any:
    """Tuples as lists (strict validation takes only lists where a list is annotated)."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _problem(name: str, hint: Any, value: Any, error: ValidationError) -> tuple[str, str]:
    """(parameter, problem) for a value that failed `hint`: the item of a list that is wrong
    (`expected_trajectory[2]`), or the value as a whole."""
    loc = error.errors()[0]["loc"]
    inner = [a for a in typing.get_args(hint) if a is not type(None)]
    listed = hint if typing.get_origin(hint) is list else (inner[0] if len(inner) == 1 else None)
    if (loc and isinstance(loc[0], int) and isinstance(value, list | tuple) and loc[0] < len(value)
            and typing.get_origin(listed) is list and typing.get_args(listed)):  # fmt: skip
        item_hint = typing.get_args(listed)[0]
        return f"{name}[{loc[0]}]", f"must be {_describe(item_hint)}, got {value[loc[0]]!r}"
    return name, f"must be {_describe(hint)}, got {value!r}"


class _Restore:
    """The one argument copy and pickle give `CheckedParameters.__new__` (`__getnewargs__`): the object is being
    restored from its state, not built from arguments to check."""

    def __reduce__(self) -> str:
        return "_RESTORE"  # pickled as a reference to this module's `_RESTORE`


_RESTORE = _Restore()


class CheckedParameters:
    """A dataclass whose constructor arguments are checked on every surface (see the module docstring).

    Subclasses that define `__post_init__` call `super().__post_init__()` first.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if not (len(args) == 1 and args[0] is _RESTORE and not kwargs):
            cls.check_arguments(*args, **kwargs)
        return super().__new__(cls)

    def __getnewargs__(self) -> tuple[Any, ...]:
        return (_RESTORE,)

    @classmethod
    def check_arguments(cls, *args: Any, **kwargs: Any) -> None:
        """Raise `ParameterError` for an unknown keyword (naming the closest parameter), too many
        positional arguments, or a missing required parameter."""
        if not dataclasses.is_dataclass(cls):
            return
        init = [f for f in dataclasses.fields(cls) if f.init]
        names = [f.name for f in init]
        for key in kwargs:
            if key not in names:
                raise cls._unknown_parameter(key, names)
        positional = [f for f in init if not f.kw_only]
        if len(args) > len(positional):
            raise cls._parameter_error("", f"takes {len(positional)} positional argument(s), got {len(args)}")
        given = {f.name for f in positional[: len(args)]} | set(kwargs)
        missing = [f.name for f in init if f.name not in given and f.default is dataclasses.MISSING
                   and f.default_factory is dataclasses.MISSING]  # fmt: skip
        if missing:
            raise cls._parameter_error("", f"missing required parameter(s) {missing}")

    def __post_init__(self) -> None:
        for name, hint, adapter in _checks(type(self)):
            value = getattr(self, name)
            try:
                adapter.validate_python(_plain(value))
            except ValidationError as e:
                raise self._parameter_error(*_problem(name, hint, value, e)) from None

    @classmethod
    def _parameter_error(cls, param: str, problem: str) -> Exception:
        """The error for a bad argument of `param` ("" for the call as a whole)."""
        return ParameterError(cls.__name__, param, problem)

    @classmethod
    def _unknown_parameter(cls, key: str, names: list[str]) -> Exception:
        """The error for a keyword that is not a parameter."""
        return cls._parameter_error(key, f"unknown parameter{did_you_mean(key, names, 'parameters')}")

    def _invalid(self, param: str, problem: str) -> Exception:
        """The error for a bad value of `param`, for the class's own checks."""
        return self._parameter_error(param, problem)


def check_threshold(owner: CheckedParameters, threshold: float, param: str = "threshold") -> None:
    """Raise `owner`'s `ParameterError` unless 0 <= `threshold` <= 1."""
    if not 0.0 <= threshold <= 1.0:
        raise owner._invalid(param, f"must be between 0 and 1, got {threshold!r}")


class BaseEvaluator(CheckedParameters):
    """Base of the built-ins: parameters are plain dataclass fields (so YAML specs can build them),
    checked at construction."""

    evaluation_name: str | None = None

    @property
    def name(self) -> str:
        return self.evaluation_name or type(self).__name__

    def evaluate(self, ctx: TurnContext) -> EvalResult | Awaitable[EvalResult]:
        raise NotImplementedError

    def __repr__(self) -> str:
        if not dataclasses.is_dataclass(self):
            return f"{type(self).__name__}()"
        shown = []
        for f in sorted(dataclasses.fields(self), key=lambda f: f.kw_only):
            value = getattr(self, f.name)
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            if f.init and value != default:
                shown.append(f"{f.name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"


def evaluator_name(evaluator: object) -> str:
    name = getattr(evaluator, "name", None)
    if isinstance(name, str) and name:
        return name
    evaluation_name = getattr(evaluator, "evaluation_name", None)
    return evaluation_name if isinstance(evaluation_name, str) and evaluation_name else type(evaluator).__name__


def missing_tool_evidence(ctx: TurnContext) -> str | None:
    """Why the turn's tool calls cannot be judged (the pytest-family checks read `ctx.tool_calls`):
    no spans and no calls returned by the agent, or spans whose telemetry does not hold the calls."""
    if ctx.tool_calls_source == "none" and not ctx.tool_calls:
        return f"{_no_steps_reason(ctx)}, and the agent returned no tool calls: nothing tells which tools were called"
    traj = ctx.trajectory
    if ctx.tool_calls_source == "spans" and traj is not None:
        return traj.missing.get("tool_calls") or traj.unnamed_reason()
    return None


def _no_steps_reason(ctx: TurnContext) -> str:
    """Why the context holds nothing to grade: extraction's note when spans were recorded (naming the
    instrumentation they come from and what would record the steps), else how to record agent spans."""
    traj = ctx.trajectory
    if traj is not None and traj.is_empty and (why := traj.missing.get("tool_calls")) is not None:
        return why
    n = len(ctx.span_tree) if ctx.span_tree is not None else 0
    if n:  # a trajectory not made by extraction
        return f"{n} span(s) were recorded but none is an agent, model or tool span of a known instrumentation; {NO_SPANS_REASON}"
    return NO_SPANS_REASON


def require_trajectory(ctx: TurnContext) -> Trajectory | EvalResult:
    """The context's trajectory, or a `not_evaluated` result saying why there is nothing to grade: no spans (how to
    record them), or spans holding no agent run, model request or tool call (`dialects.no_steps_evidence`: the
    instrumentation they come from, what is missing and the setting that would record it)."""
    traj = ctx.trajectory
    if traj is None or traj.is_empty:
        return EvalResult.not_evaluated(_no_steps_reason(ctx))
    if traj.incomplete:
        more = f" (+{len(traj.incomplete) - 3} more)" if len(traj.incomplete) > 3 else ""
        return EvalResult.not_evaluated("the recorded run is incomplete: " + "; ".join(traj.incomplete[:3]) + more)
    return traj


def scoped_trajectory(
    ctx: TurnContext, agent: str | None, subtree: object | None, needs: tuple[str, ...] = ()
) -> Trajectory | EvalResult:
    """`require_trajectory`, narrowed to one agent's calls and/or one subtree (`not_evaluated` if absent
    or when the telemetry does not hold what the check `needs`: `"tool_calls"`, `"model_requests"`)."""
    traj = require_trajectory(ctx)
    if isinstance(traj, EvalResult):
        return traj
    for need in needs:
        if (reason := traj.missing.get(need)) is not None:
            return EvalResult.not_evaluated(reason)
    if agent is None and subtree is None:
        return traj
    try:
        return traj.scope(agent=agent, subtree=subtree)
    except LookupError as e:
        return EvalResult.not_evaluated(f"cannot scope the trajectory: {e}")


def not_recorded_reason(call: ToolCall, surface: str | None = None) -> str:
    """Why a call's arguments cannot be checked, and how to get them: the setting of the instrumentation
    that wrote its span, and the recovery that fits where the check ran (`surface`: `"pytest"`,
    `"pydantic-evals"`, or None for the Python API and files)."""
    from ..dialects import content_setting

    who = f" by agent {call.agent!r}" if call.agent else ""
    if call.dropped_attributes:
        return (
            f"Arguments of tool {call.name!r}{who} are missing from its span, which dropped "
            f"{call.dropped_attributes} attribute(s) to the SDK's span limits; raise OTEL_ATTRIBUTE_COUNT_LIMIT"
        )
    if call.args_ref is not None:  # an external content reference: tracegrade does not fetch it
        return (
            f"Arguments of tool {call.name!r}{who} are stored outside the telemetry, at {call.args_ref} (an external "
            "content reference, e.g. an upload hook); record message content on the spans to check them"
        )
    span = call.span
    scope = span.scope_name if span is not None and span.scope_name else None
    by = f" by {scope}" if scope else ""
    if call.args_text is not None:  # recorded, but without the parameters' names
        text = call.args_text if len(call.args_text) <= 200 else call.args_text[:200] + "..."
        reason = (
            f"Arguments of tool {call.name!r}{who} were recorded{by} without their names ({text!r}: the function was "
            "called with positional arguments); pass them by keyword, or record the model request that asked for "
            "the call (its arguments are taken by call id)"
        )
    else:
        reason = f"Arguments of tool {call.name!r}{who} were not recorded{by}"
        reason += f"; to record them: {content_setting(span, call.dialect)}"
    if surface == "pytest":
        return reason + ("; or return the run's messages from the agent callable (the pydantic-ai run result, or "
                         "AgentReply(..., messages=...)) to recover them by call id")  # fmt: skip
    if surface == "pydantic-evals":
        return reason  # the bridge adds how a task returns its messages
    return reason + "; or give the run's messages to the capture (capture(messages=...) / cap.add_messages(...))"


@dataclasses.dataclass(repr=False)
class ScopedEvaluator(BaseEvaluator):
    """Base of the checks that read the run's `Trajectory`: `evaluate` returns `not_evaluated` when
    there are no agent spans, the run is incomplete, the telemetry lacks what the check `needs`
    (`Trajectory.missing` keys: `"tool_calls"`, `"model_requests"`), the calls a `"tool_calls"` check selects
    (failed attempts only when its `include_failed` is true) include tool executions whose tool is not recorded
    (`Trajectory.unnamed_reason`), or the scope (`agent`, `subtree`) selects nothing; otherwise it returns `check(trajectory, ctx)` on the scoped trajectory.

    A new trajectory check is a dataclass subclass with its parameters, `needs` and `check`.
    """

    needs: ClassVar[tuple[str, ...]] = ()
    agent: str | None = dataclasses.field(default=None, kw_only=True)
    subtree: SpanQuery | None = dataclasses.field(default=None, kw_only=True, metadata=OWN_CHECK)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.subtree is not None:
            validate_query(self.subtree, "subtree")

    def _trajectory(self, ctx: TurnContext) -> Trajectory | EvalResult:
        traj = scoped_trajectory(ctx, self.agent, self.subtree, self.needs)
        if "tool_calls" in self.needs and not isinstance(traj, EvalResult) and traj.unnamed_calls:
            reason = traj.unnamed_reason(include_failed=getattr(self, "include_failed", False))
            if reason is not None:  # the calls it would read include some whose tool is unknown
                return EvalResult.not_evaluated(reason)
        return traj

    def evaluate(self, ctx: TurnContext) -> EvalResult:
        traj = self._trajectory(ctx)
        if isinstance(traj, EvalResult):
            return self.unevaluated(traj)
        return self.check(traj, ctx)

    def unevaluated(self, result: EvalResult) -> EvalResult:
        """The result when the preconditions fail (override to add a score)."""
        return result

    def check(self, traj: Trajectory, ctx: TurnContext) -> EvalResult:
        """The verdict on the scoped trajectory."""
        raise NotImplementedError
