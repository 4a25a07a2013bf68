"""tracegrade evaluators inside `pydantic_evals.Dataset`, and `SpanTree` conversions both ways.

Migrating from pydantic-evals' agentic evaluators is a one-line import change::

    from tracegrade.bridges.pydantic_evals import ToolCorrectness, TrajectoryMatch, ArgumentCorrectness

The classes here are `pydantic_evals.evaluators.Evaluator` dataclasses that subclass the tracegrade
evaluator of the same name, so their parameters, defaults and construction checks are that class's
(but ArgumentCorrectness' `occurrence`, which selects no call when invalid, as in pydantic-evals):
pydantic-evals' parameters first, in the same order, with the same defaults, then tracegrade's own
(`agent` and `subtree` keyword-only). Value types are pydantic-evals' (bool for ToolCorrectness /
ArgumentCorrectness / MaxToolCalls / MaxModelRequests / HasMatchingSpan / MaxDuration, float for
TrajectoryMatch). Each returns, on the same run, pydantic-evals' value in pydantic-evals' shape,
with pydantic-evals' words where they state the same fact, followed by the calls tracegrade saw; given a
tracegrade `TurnContext` instead, each runs as the tracegrade evaluator it is.
`bridge_class(cls)` makes the same for any registered evaluator (`tracegrade.spec.register_evaluator`),
and `evaluator_types()` lists them all for `Dataset.from_file(custom_evaluator_types=...)`.
Differences, all deliberate:

- every dialect: tool calls of OpenInference-, OpenLLMetry- or GenAI-instrumented tasks count too
  (pydantic-evals' evaluators only see Pydantic AI spans);
- arguments missing from spans (`include_content=False`) are recovered by tool call id when the
  task's output carries the run's messages (a Pydantic AI run result, an `AgentReply`, or any object
  with a `messages` list), so ArgumentCorrectness can pass where pydantic-evals' cannot;
- when the case recorded no span, or none from an agent instrumentation, the value is a failing one
  (False / 0.0) with a "not evaluated" reason, where pydantic-evals would grade an empty trajectory
  (e.g. pass `MaxToolCalls` for an agent that was not instrumented at all);
- an evaluator error (a judge's API failure) raises, so pydantic-evals reports an evaluator failure
  rather than a FAIL verdict.

Without a span tree (`SpanTreeRecordingError`: no tracer provider), the span-based evaluators return
pydantic-evals' graceful failing value (False, or 0.0 for TrajectoryMatch) with its explanation.
`ctx.span_tree` is converted once per case and the trajectory extracted once, shared by all the
case's evaluators. `to_pydantic_evals(evaluator)` wraps any tracegrade evaluator, custom ones included.
"""

from __future__ import annotations

import inspect
import json
import threading
import weakref
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext, EvaluatorOutput
from pydantic_evals.evaluators.spec import EvaluatorSpec
from pydantic_evals.otel import SpanNode as PydanticEvalsSpanNode
from pydantic_evals.otel import SpanTree as PydanticEvalsSpanTree
from pydantic_evals.otel import SpanTreeRecordingError

from .. import evaluators as _tg
from ..dialects import extract
from ..errors import TracegradeEvaluationError
from ..evaluators.base import OWN_CHECK, evaluator_name
from ..evaluators.judge import JudgeParameters
from ..evaluators.tools import RECOVERED
from ..grading import _coerce
from ..results import EvalResult, TurnContext
from ..spans import Span, SpanStatus
from ..trajectory import Trajectory
from ..tree import SpanTree

if TYPE_CHECKING:
    from ..dialects import Dialect

__all__ = [
    "EVALUATOR_TYPES",
    "ArgumentCorrectness",
    "ContainsEvaluator",
    "HasMatchingSpan",
    "JudgeEvaluator",
    "MaxCost",
    "MaxDuration",
    "MaxModelRequests",
    "MaxTokens",
    "MaxToolCalls",
    "NoErrorSpans",
    "NoToolLoops",
    "ToolCallArgsEvaluator",
    "ToolCallArgsJudgeEvaluator",
    "ToolCallEvaluator",
    "ToolCorrectness",
    "TracegradeEvaluator",
    "TrajectoryJudge",
    "TrajectoryMatch",
    "bridge_class",
    "evaluator_types",
    "from_pydantic_evals_tree",
    "to_pydantic_evals",
    "to_pydantic_evals_tree",
    "turn_context",
]

# --- SpanTree conversions -------------------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_STASH = "_tracegrade_span"
"""Attribute of a pydantic-evals node made by `to_pydantic_evals_tree`: the `Span` it came from."""
_STATUSES: frozenset[str] = frozenset({"unset", "ok", "error"})


def _ns(when: datetime) -> int:
    """Nanoseconds since the epoch, exactly (a naive datetime is taken as UTC)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    delta = when - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def _datetime(ns: int) -> datetime:
    """The UTC datetime nearest to `ns` (datetimes hold microseconds)."""
    return _EPOCH + timedelta(microseconds=(ns + 500) // 1_000)


def _matches_stash(span: Span, node: PydanticEvalsSpanNode) -> bool:
    """The node still holds what `to_pydantic_evals_tree` put in it (nobody edited it since)."""
    end = span.end_ns if span.end_ns is not None else span.start_ns
    return (
        node.name == span.name
        and node.trace_id == span.trace_id
        and node.span_id == span.span_id
        and node.parent_span_id == span.parent_id
        and node.status == span.status
        and node.start_timestamp == _datetime(span.start_ns)
        and node.end_timestamp == _datetime(end)
        and node.attributes == dict(span.attributes)
    )


def _span_of(node: PydanticEvalsSpanNode) -> Span:
    stashed = getattr(node, _STASH, None)
    if isinstance(stashed, Span) and _matches_stash(stashed, node):
        return stashed
    status: SpanStatus = node.status if node.status in _STATUSES else "unset"
    return Span(
        trace_id=node.trace_id,
        span_id=node.span_id,
        parent_id=node.parent_span_id,
        name=node.name,
        start_ns=_ns(node.start_timestamp),
        end_ns=_ns(node.end_timestamp),
        attributes=dict(node.attributes),
        status=status,
    )


def from_pydantic_evals_tree(tree: PydanticEvalsSpanTree) -> SpanTree:
    """A tracegrade `SpanTree` with the spans of a pydantic-evals `SpanTree` (e.g. `ctx.span_tree`).

    Name, trace/span/parent ids, start/end times, attributes and status are kept. pydantic-evals
    holds times as datetimes, i.e. to the microsecond: the nanosecond times are whole microseconds.
    Nodes made by `to_pydantic_evals_tree` and not modified since give back the original spans, with
    nanosecond times and everything pydantic-evals has no field for (kind, events, resource,
    instrumentation scope, status message).
    """
    return SpanTree.from_spans(_span_of(node) for node in tree)


def to_pydantic_evals_tree(tree: SpanTree) -> PydanticEvalsSpanTree:
    """A pydantic-evals `SpanTree` with the spans of a tracegrade `SpanTree` (e.g. `cap.tree`).

    Name, ids, attributes and status are kept exactly; times are rounded to the nearest microsecond
    (pydantic-evals' datetimes). A span that had not ended gets its start time as end time (a
    pydantic-evals node always has one). `from_pydantic_evals_tree` undoes the conversion exactly.
    """
    nodes: list[PydanticEvalsSpanNode] = []
    for source in tree:
        span = source.span
        end = span.end_ns if span.end_ns is not None else span.start_ns
        node = PydanticEvalsSpanNode(
            name=span.name,
            trace_id=span.trace_id,
            span_id=span.span_id,
            parent_span_id=span.parent_id,
            start_timestamp=_datetime(span.start_ns),
            end_timestamp=_datetime(end),
            attributes=dict(span.attributes),
            status=span.status,
        )
        setattr(node, _STASH, span)
        nodes.append(node)
    converted = PydanticEvalsSpanTree()
    converted.add_spans(nodes)
    return converted


# --- one conversion and one trajectory per case ----------------------------------------------------


class _Case:
    __slots__ = ("trajectories", "tree")

    def __init__(self, tree: SpanTree) -> None:
        self.tree = tree
        self.trajectories: dict[tuple[object, int], tuple[object, Trajectory]] = {}


_CASES: dict[int, tuple[weakref.ref[PydanticEvalsSpanTree], _Case]] = {}
_CASES_LOCK = threading.Lock()


def _forget(key: int, ref: weakref.ref[PydanticEvalsSpanTree]) -> None:
    with _CASES_LOCK:
        entry = _CASES.get(key)
        if entry is not None and entry[0] is ref:
            del _CASES[key]


def _case(pe_tree: PydanticEvalsSpanTree) -> _Case:
    """The case data of a pydantic-evals tree, converted on first use (pydantic-evals' trees are
    unhashable dataclasses: keyed by identity, dropped when the tree is garbage collected)."""
    key = id(pe_tree)
    with _CASES_LOCK:
        entry = _CASES.get(key)
        if entry is not None and entry[0]() is pe_tree:
            return entry[1]
    case = _Case(from_pydantic_evals_tree(pe_tree))
    try:
        ref = weakref.ref(pe_tree, lambda r, key=key: _forget(key, r))  # type: ignore[misc]
    except TypeError:  # not weak-referenceable: convert every time
        return case
    with _CASES_LOCK:
        entry = _CASES.get(key)
        if entry is not None and entry[0]() is pe_tree:
            return entry[1]
        _CASES[key] = (ref, case)
    return case


def _messages_of(output: object) -> list[Any] | None:
    """The run's model messages carried by a task's output, if any."""
    all_messages = getattr(output, "all_messages", None)
    if callable(all_messages):  # a Pydantic AI run result
        try:
            messages = all_messages()
        except Exception:
            return None
        return list(messages) if isinstance(messages, Sequence) else None
    messages = getattr(output, "messages", None)  # AgentReply, or the reference page's SupportRun
    if isinstance(messages, Sequence) and not isinstance(messages, str | bytes) and messages:
        return list(messages)
    return None


def _trajectory(case: _Case, output: object, dialect: str | Dialect | None) -> Trajectory:
    key = (dialect if dialect is None or isinstance(dialect, str) else id(dialect), id(output))
    with _CASES_LOCK:
        hit = case.trajectories.get(key)
    if hit is not None and hit[0] is output:
        return hit[1]
    traj = extract(case.tree, dialect=dialect, messages=_messages_of(output))
    with _CASES_LOCK:
        case.trajectories[key] = (output, traj)  # the output is kept so that its id stays its own
    return traj


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    reply = getattr(value, "reply", None)  # AgentReply
    if isinstance(reply, str):
        return reply
    if hasattr(value, "output") and (callable(getattr(value, "all_messages", None)) or hasattr(value, "messages")):
        return _text(value.output)  # a run result, or an output+messages record
    return str(value)


def _judge_config() -> dict[str, Any]:
    """Judges without a model use pydantic-evals' default judge model (`set_default_judge_model`)."""
    try:
        from pydantic_evals.evaluators import llm_as_a_judge
    except ImportError:  # pragma: no cover
        return {}
    model = getattr(llm_as_a_judge, "_default_model", None)
    return {"judge_model": model} if model is not None else {}


def _context(
    ctx: EvaluatorContext[Any, Any, Any], dialect: str | Dialect | None = None
) -> tuple[TurnContext, SpanTreeRecordingError | None]:
    fields_: dict[str, Any] = {
        "user": ctx.inputs if isinstance(ctx.inputs, str) else _json_text(ctx.inputs),
        "metrics": dict(ctx.metrics),
        "config": {**_judge_config(), "surface": "pydantic-evals"},
    }
    if ctx.output is not None:
        fields_["reply"] = _text(ctx.output)
    try:
        pe_tree = ctx.span_tree
    except SpanTreeRecordingError as e:
        fields_.setdefault("reply", "")
        return TurnContext(**fields_), e
    traj = _trajectory(_case(pe_tree), ctx.output, dialect)
    return TurnContext.for_trajectory(traj, **fields_), None


def _json_text(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def turn_context(ctx: EvaluatorContext[Any, Any, Any], *, dialect: str | Dialect | None = None) -> TurnContext:
    """The tracegrade `TurnContext` of a pydantic-evals case: the converted span tree and its
    trajectory (shared by all evaluators of the case), `user` from `ctx.inputs`, `reply` from
    `ctx.output`, `metrics` from `ctx.metrics`: for custom pydantic-evals evaluators that want
    tracegrade's `tool_calls` (with `.args`) or `trajectory`. Without a span tree (no tracer
    provider), `span_tree` and `trajectory` are None and `tool_calls` is empty."""
    return _context(ctx, dialect)[0]


# --- the evaluators --------------------------------------------------------------------------------

Value = Literal["auto", "passed", "score"]


def _value_kind(evaluator: object, value: Value) -> Literal["passed", "score", "auto"]:
    if value == "auto" and isinstance(evaluator, JudgeParameters):  # every judge: its verdict
        return "passed"
    return value


_RECOVERY_HINT = (
    ". In a pydantic-evals task, return the run result (or an object with `output` and `messages`) "
    "to recover them by call id"
)


_NO_SPAN_TREE = (
    "No span tree available — ensure logfire/instrumentation is configured: set an OpenTelemetry SDK tracer "
    "provider before the evaluation (`logfire.configure()`, or `tracegrade.capture.ensure_recorder()`) and "
    "instrument the agent (`Agent.instrument_all()`, or your framework's instrumentor)"
)


_Shape = Literal["reason", "quiet_pass", "bare"]
"""How a verdict is returned, as pydantic-evals' evaluator of the same name returns it: an
`EvaluationReason` with tracegrade's reason; the same without a reason on a pass (ToolCorrectness,
ArgumentCorrectness; a pass decided by arguments recovered from the run's messages keeps its reason);
the bare value (HasMatchingSpan, MaxDuration). A "not evaluated" verdict always comes with its reason."""


def _evaluation_reason(
    result: EvalResult,
    kind: Literal["passed", "score", "auto"],
    missing: SpanTreeRecordingError | None,
    shape: _Shape = "reason",
) -> EvaluationReason | bool:
    if result.outcome == "error":
        raise TracegradeEvaluationError(result.reasoning or "the evaluator failed")
    if kind == "auto":
        kind = "score" if result.score is not None else "passed"
    reason = result.reasoning
    if shape == "bare" and kind == "passed" and result.outcome in ("passed", "failed"):
        return result.passed
    if shape == "quiet_pass" and kind == "passed" and result.outcome == "passed" and not reason.endswith(RECOVERED):
        return EvaluationReason(value=True)
    if kind == "score":
        value: bool | float = result.score if result.score is not None else float(result.passed)
    else:
        value = result.passed
        if result.score is not None:
            reason = f"{reason} (score {result.score:.3f})" if reason else f"score {result.score:.3f}"
    if result.outcome == "not_evaluated":
        if "not recorded" in reason:
            reason += _RECOVERY_HINT
        reason = f"not evaluated: {reason}"
        if missing is not None:
            reason = f"{_NO_SPAN_TREE}; pydantic-evals: {missing.message} ({reason})"
    return EvaluationReason(value=value, reason=reason or None)


@dataclass(repr=False)
class _Bridge(Evaluator[object, object, object]):
    """A pydantic-evals evaluator that is also the tracegrade evaluator it subclasses (its fields,
    defaults and checks are that class's): `evaluate` takes an `EvaluatorContext` (or a tracegrade
    `TurnContext`) and runs the tracegrade check."""

    _target: ClassVar[type[Any] | None] = None
    """The tracegrade evaluator class this bridge subclasses (None for `TracegradeEvaluator`)."""
    _value: ClassVar[Value] = "passed"
    _needs_spans: ClassVar[bool] = True
    """Without a span tree, return the failing value (the evaluator reads spans) instead of running."""
    _shape: ClassVar[_Shape] = "reason"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._target = next(
            (b for b in cls.__mro__ if issubclass(b, _tg.BaseEvaluator) and not issubclass(b, _Bridge)), None
        )

    def __post_init__(self) -> None:
        post_init = getattr(super(), "__post_init__", None)
        if post_init is not None:
            post_init()

    @property
    def tracegrade_evaluator(self) -> Any:
        """The tracegrade evaluator this one runs (itself, for the named bridges)."""
        return self

    def _inner(self) -> Any:
        return self

    def get_default_evaluation_name(self) -> str:
        name = getattr(self, "evaluation_name", None)
        return name if isinstance(name, str) else self.get_serialization_name()

    def as_spec(self) -> EvaluatorSpec:
        """pydantic-evals' spec, in its compact form (`{MaxToolCalls: 3}`) when only the first
        positional parameter differs from its default (keyword-only fields come first in `fields`)."""
        spec = super().as_spec()
        if isinstance(spec.arguments, dict) and len(spec.arguments) == 1:
            [(key, value)] = spec.arguments.items()
            first = next((f.name for f in fields(self) if f.init and not f.kw_only), None)
            if key == first and not isinstance(value, Mapping):
                return EvaluatorSpec(name=spec.name, arguments=(value,))
        return spec

    def _dialect(self) -> str | Dialect | None:
        return None

    def _from_case(self, ctx: EvaluatorContext[object, object, object]) -> bool | None:
        """The value, when this evaluator decides from the case itself (not its spans)."""
        return None

    def _value_setting(self) -> Value:
        return self._value

    def _run(self, tctx: TurnContext) -> Any:
        target = self._target
        assert target is not None
        return target.evaluate(self, tctx)

    def evaluate(self, ctx: EvaluatorContext[object, object, object]) -> EvaluatorOutput | Awaitable[EvaluatorOutput]:
        if isinstance(ctx, TurnContext):  # used as the tracegrade evaluator it is
            return self._run(ctx)  # type: ignore[no-any-return]
        if (decided := self._from_case(ctx)) is not None:
            return decided
        inner = self._inner()
        kind = _value_kind(inner, self._value_setting())
        tctx, missing = _context(ctx, self._dialect())
        if missing is not None and self._needs_spans:
            failing: bool | float = 0.0 if kind == "score" else False
            return EvaluationReason(value=failing, reason=f"{_NO_SPAN_TREE}; pydantic-evals: {missing.message}")
        out = self._run(tctx)
        if inspect.isawaitable(out):
            return self._finish(out, kind, missing)
        return _evaluation_reason(_coerce(inner, out), kind, missing, self._shape)

    async def _finish(
        self, pending: Awaitable[Any], kind: Literal["passed", "score", "auto"], missing: SpanTreeRecordingError | None
    ) -> EvaluationReason | bool:
        return _evaluation_reason(_coerce(self._inner(), await pending), kind, missing, self._shape)


# The named bridges: the tracegrade evaluator's fields, pydantic-evals' value types. (mypy sees two
# `evaluate` signatures; `_Bridge.evaluate` takes both contexts.)


@dataclass(repr=False)
class ToolCorrectness(_Bridge, _tg.ToolCorrectness):  # type: ignore[misc]
    """pydantic-evals' `ToolCorrectness` (bool), computed by tracegrade: the agent called exactly this
    multiset of tools. See `tracegrade.evaluators.ToolCorrectness` for `agent` and `subtree`."""

    _shape = "quiet_pass"


@dataclass(repr=False)
class TrajectoryMatch(_Bridge, _tg.TrajectoryMatch):  # type: ignore[misc]
    """pydantic-evals' `TrajectoryMatch` (float score), computed by tracegrade.

    `parallel` defaults to `"ordered"` here, comparing calls in the order they ran, as pydantic-evals
    does; `parallel="unordered"` lets the calls one model response requested together match in any
    order (tracegrade's default). Steps may also be `{"tool": name, "args": {...}, "optional": True}`.
    """

    parallel: Literal["unordered", "ordered"] = "ordered"

    _value = "score"


@dataclass(repr=False)
class ArgumentCorrectness(_Bridge, _tg.ArgumentCorrectness):  # type: ignore[misc]
    """pydantic-evals' `ArgumentCorrectness` (bool), computed by tracegrade. Arguments missing from
    spans are recovered from the run's messages when the task output carries them. An `occurrence`
    that selects no call (a negative or out-of-range index, or not an occurrence) gives a failing
    value with a reason, as in pydantic-evals, not an error at construction."""

    occurrence: Literal["first", "last", "any"] | int = field(default="first", metadata=OWN_CHECK)

    _shape = "quiet_pass"
    _occurrence_checked = False


@dataclass(repr=False)
class MaxToolCalls(_Bridge, _tg.MaxToolCalls):  # type: ignore[misc]
    """pydantic-evals' `MaxToolCalls` (bool), computed by tracegrade."""


@dataclass(repr=False)
class MaxModelRequests(_Bridge, _tg.MaxModelRequests):  # type: ignore[misc]
    """pydantic-evals' `MaxModelRequests` (bool), computed by tracegrade (`ctx.metrics['requests']`
    when present and unscoped, else the model-request spans of every dialect)."""


@dataclass(repr=False)
class HasMatchingSpan(_Bridge, _tg.HasMatchingSpan):  # type: ignore[misc]
    """pydantic-evals' `HasMatchingSpan`: a bool, as pydantic-evals returns it. A callable query
    receives tracegrade `SpanNode`s (same attribute names). Without a span tree it returns False with
    a reason instead of raising."""

    _shape = "bare"


@dataclass(repr=False)
class ContainsEvaluator(_Bridge, _tg.ContainsEvaluator):  # type: ignore[misc]
    """tracegrade's `ContainsEvaluator` on `str(ctx.output)` (needs no spans)."""

    _needs_spans = False


@dataclass(repr=False)
class ToolCallEvaluator(_Bridge, _tg.ToolCallEvaluator):  # type: ignore[misc]
    """tracegrade's `ToolCallEvaluator` on the case's tool spans."""


@dataclass(repr=False)
class ToolCallArgsEvaluator(_Bridge, _tg.ToolCallArgsEvaluator):  # type: ignore[misc]
    """tracegrade's `ToolCallArgsEvaluator` on the case's tool spans."""


@dataclass(repr=False)
class JudgeEvaluator(_Bridge, _tg.JudgeEvaluator):  # type: ignore[misc]
    """tracegrade's `JudgeEvaluator` (bool verdict) on `ctx.inputs` and `ctx.output` (needs no spans).
    Without `model`, pydantic-evals' default judge model is used."""

    _needs_spans = False


@dataclass(repr=False)
class ToolCallArgsJudgeEvaluator(_Bridge, _tg.ToolCallArgsJudgeEvaluator):  # type: ignore[misc]
    """tracegrade's `ToolCallArgsJudgeEvaluator` (bool verdict) on the case's tool calls."""


@dataclass(repr=False)
class TrajectoryJudge(_Bridge, _tg.TrajectoryJudge):  # type: ignore[misc]
    """tracegrade's `TrajectoryJudge` (bool verdict): the judge sees the inputs, every tool call in
    order (arguments, results, errors) and the output."""


@dataclass(repr=False)
class MaxDuration(_Bridge, _tg.MaxDuration):  # type: ignore[misc]
    """pydantic-evals' `MaxDuration`: a bool, whether the case's task took at most `seconds`
    (`ctx.duration`, as pydantic-evals measures it). With `tool`, `agent` or `subtree`, tracegrade's
    check of the case's spans (each call of `tool`, or their `percentile`; that agent's runs)."""

    _shape = "bare"

    def _from_case(self, ctx: EvaluatorContext[object, object, object]) -> bool | None:
        if self.tool is None and self.agent is None and self.subtree is None:
            return ctx.duration <= self.limit()
        return None


@dataclass(repr=False)
class NoErrorSpans(_Bridge, _tg.NoErrorSpans):  # type: ignore[misc]
    """tracegrade's `NoErrorSpans` (bool) on the case's spans."""


@dataclass(repr=False)
class MaxTokens(_Bridge, _tg.MaxTokens):  # type: ignore[misc]
    """tracegrade's `MaxTokens` (bool) on the case's model-request spans."""


@dataclass(repr=False)
class MaxCost(_Bridge, _tg.MaxCost):  # type: ignore[misc]
    """tracegrade's `MaxCost` (bool) on the cost recorded on the case's model-request spans."""


@dataclass(repr=False)
class NoToolLoops(_Bridge, _tg.NoToolLoops):  # type: ignore[misc]
    """tracegrade's `NoToolLoops` (bool) on the case's tool calls."""


@dataclass(repr=False)
class TracegradeEvaluator(_Bridge):
    """Any tracegrade evaluator (anything with `evaluate(TurnContext)`, sync or async) as a
    pydantic-evals evaluator; made by `to_pydantic_evals`."""

    evaluator: Any
    evaluation_name: str | None = field(default=None)
    value: Value = "auto"
    dialect: Any = None

    def __post_init__(self) -> None:
        if not callable(getattr(self.evaluator, "evaluate", None)):
            raise TypeError(f"to_pydantic_evals() needs an object with an evaluate(ctx) method, got {self.evaluator!r}")
        if self.value not in ("auto", "passed", "score"):
            raise ValueError(f"value must be 'auto', 'passed' or 'score', got {self.value!r}")

    _needs_spans = False

    @property
    def tracegrade_evaluator(self) -> Any:
        return self.evaluator

    def _inner(self) -> Any:
        return self.evaluator

    def _run(self, tctx: TurnContext) -> Any:
        return self.evaluator.evaluate(tctx)

    def _value_setting(self) -> Value:
        return self.value

    def _dialect(self) -> str | Dialect | None:
        return self.dialect  # type: ignore[no-any-return]

    def get_default_evaluation_name(self) -> str:
        if isinstance(self.evaluation_name, str):
            return self.evaluation_name
        return evaluator_name(self.evaluator)


def to_pydantic_evals(
    evaluator: object,
    *,
    evaluation_name: str | None = None,
    value: Value = "auto",
    dialect: str | Dialect | None = None,
) -> TracegradeEvaluator:
    """Wrap a tracegrade evaluator (built-in or custom) for `pydantic_evals.Dataset(evaluators=[...])`
    or a `Case(evaluators=[...])`.

    It reads the case's span tree (converted once per case) and returns an `EvaluationReason` named
    after the evaluator. `value`: `"passed"` (bool), `"score"` (float: the score, else 1.0/0.0) or
    `"auto"`: the score when the evaluator set one (TrajectoryMatch), else passed; judges report
    their verdict. `dialect` forces one instrumentation convention instead of auto-detection.
    An outcome `error` raises `TracegradeEvaluationError` (pydantic-evals reports it as a failure);
    `not_evaluated` is a failing value whose reason starts with "not evaluated".
    """
    return TracegradeEvaluator(evaluator, evaluation_name=evaluation_name, value=value, dialect=dialect)


EVALUATOR_TYPES: tuple[type[Evaluator[object, object, object]], ...] = (
    MaxDuration,
    NoErrorSpans,
    MaxTokens,
    MaxCost,
    NoToolLoops,
    ToolCorrectness,
    TrajectoryMatch,
    ArgumentCorrectness,
    MaxToolCalls,
    MaxModelRequests,
    HasMatchingSpan,
    ContainsEvaluator,
    ToolCallEvaluator,
    ToolCallArgsEvaluator,
    JudgeEvaluator,
    ToolCallArgsJudgeEvaluator,
    TrajectoryJudge,
)
"""The named evaluators, for `Dataset.from_file(..., custom_evaluator_types=EVALUATOR_TYPES)`: they
then replace pydantic-evals' evaluators of the same names in a saved dataset."""

_NAMED: dict[type[Any], type[Evaluator[object, object, object]]] = {
    b._target: b for b in EVALUATOR_TYPES if issubclass(b, _Bridge) and b._target is not None
}
_MADE: dict[type[Any], type[Evaluator[object, object, object]]] = {}


def bridge_class(cls: type[Any]) -> type[Evaluator[object, object, object]]:
    """The pydantic-evals evaluator class of a tracegrade evaluator class (a dataclass subclass of
    `tracegrade.evaluators.BaseEvaluator`): the named bridge for a built-in, else a subclass made
    once, with the same name and fields. Its value is the score when the check sets one, else
    passed; it returns the failing value without a span tree when `cls` is a `ScopedEvaluator`."""
    if cls in _NAMED:
        return _NAMED[cls]
    if (made := _MADE.get(cls)) is not None:
        return made
    if not (isinstance(cls, type) and issubclass(cls, _tg.BaseEvaluator) and is_dataclass(cls)):
        raise TypeError(f"bridge_class() needs a dataclass subclass of BaseEvaluator, got {cls!r}")
    namespace = {"__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__,
                 "_value": "auto", "_needs_spans": issubclass(cls, _tg.ScopedEvaluator)}  # fmt: skip
    made = dataclass(repr=False)(type(cls.__name__, (_Bridge, cls), namespace))
    _MADE[cls] = made
    return made


def evaluator_types() -> tuple[type[Evaluator[object, object, object]], ...]:
    """The bridge classes of every evaluator usable by name (`tracegrade.spec.evaluator_registry()`:
    the built-ins and those added with `register_evaluator`), for `custom_evaluator_types=`."""
    from ..spec import evaluator_registry

    return tuple(bridge_class(cls) for cls in evaluator_registry().values())
