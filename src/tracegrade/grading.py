"""`grade` / `agrade`: run evaluators on a recorded run; one `EvalResult` per evaluator, in order."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import os
import threading
from collections.abc import Awaitable, Iterable, Sequence
from typing import Any, ClassVar

from .capture import Capture
from .evaluators.base import evaluator_name
from .results import EvalResult, TurnContext
from .spans import Span
from .trajectory import Trajectory
from .tree import SpanTree

__all__ = [
    "Informational",
    "agrade",
    "context_for",
    "grade",
    "informational",
    "informational_names",
    "is_informational",
    "run_evaluator",
]

Source = Capture | SpanTree | Trajectory | TurnContext | Sequence[Any] | str | os.PathLike[str]


def context_for(source: Source) -> TurnContext:
    """Turn any supported source into the context evaluators read."""
    if isinstance(source, TurnContext):
        return source
    if isinstance(source, Capture):
        return TurnContext.for_trajectory(source.trajectory)
    if isinstance(source, Trajectory):
        return TurnContext.for_trajectory(source)
    if isinstance(source, SpanTree):
        from .dialects import extract

        return TurnContext.for_trajectory(extract(source))
    if isinstance(source, str | os.PathLike):
        from .ingest import read_tree

        return context_for(read_tree(source))
    if isinstance(source, Sequence):
        items = list(source)
        if items and all(isinstance(s, SpanTree) for s in items):  # e.g. load_traces(path): graded as one run
            return context_for(items[0] if len(items) == 1 else _merged(items))
        if items and all(isinstance(s, str | os.PathLike) for s in items):  # e.g. [traces, logs]: one run
            from .ingest import read_tree

            return context_for(read_tree(items))
        if all(isinstance(s, Span) for s in items):
            return context_for(SpanTree.from_spans(items))
        from opentelemetry.sdk.trace import ReadableSpan

        if all(isinstance(s, ReadableSpan) for s in items):
            return context_for(SpanTree.from_readable_spans(items))
        bad = next(type(s).__name__ for s in items if not isinstance(s, Span | ReadableSpan))
        raise TypeError(f"grade(): a list source must hold spans, SpanTrees or paths, found {bad}")
    raise TypeError(
        "grade(): source must be a Capture, SpanTree, Trajectory, TurnContext, a list of spans or a trace "
        f"file path, got {type(source).__name__}"
    )


def _merged(trees: list[SpanTree]) -> SpanTree:
    """The spans of `trees` as one tree, their log records still attached (and their unattached ones counted)."""
    tree = SpanTree.from_spans(n.span for t in trees for n in t)
    tree.attach_logs(r for t in trees for n in t for r in n.logs)
    tree.unattached_logs += sum(t.unattached_logs for t in trees)
    tree.unread_logs = tuple(dict.fromkeys(f for t in trees for f in t.unread_logs))
    return tree


def _live_context(source: Source, evaluators: list[object]) -> TurnContext | list[EvalResult]:
    """`context_for(source)`; for recorded spans (a `Capture`, a list of SDK spans) that cannot be
    read as a run (e.g. two spans with one id), an `error` result per evaluator saying why."""
    if not isinstance(source, Capture | list | tuple):
        return context_for(source)
    try:
        return context_for(source)
    except TypeError:
        raise  # not spans at all: the caller's mistake
    except Exception as e:
        reason = f"the recorded spans cannot be graded: {e}"
        if dups := source.duplicate_span_ids() if isinstance(source, Capture) else []:
            shown = ", ".join(f"{sid:016x} (trace {tid:032x})" for tid, sid in dups[:3])
            more = f" (+{len(dups) - 3} more)" if len(dups) > 3 else ""
            reason = (
                f"the recorded spans cannot be graded: span id {shown}{more} was given to more than one span; "
                "the TracerProvider's id_generator must return unique span ids"
            )
        return [dataclasses.replace(EvalResult.error(reason), name=evaluator_name(ev)) for ev in evaluators]


def _coerce(evaluator: object, value: Any) -> EvalResult:
    if isinstance(value, EvalResult):
        return value
    if hasattr(value, "value") and hasattr(value, "reason"):  # pydantic-evals EvaluationReason
        result = _coerce(evaluator, value.value)
        return dataclasses.replace(result, reasoning=value.reason or result.reasoning)
    if isinstance(value, bool):
        return EvalResult(value)
    if isinstance(value, int | float) and 0 <= value <= 1:
        threshold = getattr(evaluator, "threshold", 1.0)
        return EvalResult(value >= threshold, f"score {value:.3f}, threshold {threshold:g}", float(value))
    return EvalResult.error(
        f"{evaluator_name(evaluator)}.evaluate returned {value!r}; expected an EvalResult, a bool or a score in [0, 1]"
    )


def _start(evaluator: object, ctx: TurnContext) -> EvalResult | Awaitable[Any]:
    """Call `evaluate`; a sync result is finished here, an awaitable is returned to be awaited."""
    try:
        value = evaluator.evaluate(ctx)  # type: ignore[attr-defined]
    except Exception as e:
        return _failed(evaluator, e)
    if type(value) is EvalResult:  # the common case, finished as `_finish` would
        return value if value.name else _named(value, evaluator_name(evaluator))
    return value if inspect.isawaitable(value) else _finish(evaluator, value)


_new, _set = object.__new__, object.__setattr__


def _named(result: EvalResult, name: str) -> EvalResult:
    """`dataclasses.replace(result, name=name)` for a plain `EvalResult`, whose other fields were checked
    when it was built."""
    named = _new(EvalResult)
    _set(named, "passed", result.passed)
    _set(named, "reasoning", result.reasoning)
    _set(named, "score", result.score)
    _set(named, "outcome", result.outcome)
    _set(named, "name", name)
    return named


def _failed(evaluator: object, e: Exception) -> EvalResult:
    name = evaluator_name(evaluator)
    return EvalResult(False, f"{name} raised {type(e).__name__}: {e}", None, "error", name)


def _finish(evaluator: object, value: Any) -> EvalResult:
    try:
        result = _coerce(evaluator, value)
    except Exception as e:
        return _failed(evaluator, e)
    return result if result.name else dataclasses.replace(result, name=evaluator_name(evaluator))


async def _await(evaluator: object, pending: Awaitable[Any]) -> EvalResult:
    try:
        value = await pending
    except Exception as e:
        return _failed(evaluator, e)
    return _finish(evaluator, value)


class Informational:
    """An evaluator whose results are reported (with their statistics) but never fail a turn, a
    test, a trace or an exit code. Grading is the wrapped evaluator's, under its name."""

    informational: ClassVar[bool] = True

    def __init__(self, evaluator: object) -> None:
        if not callable(getattr(evaluator, "evaluate", None)):
            raise TypeError(f"informational() needs an evaluator (with evaluate(ctx)), got {evaluator!r}")
        self.evaluator = evaluator

    @property
    def name(self) -> str:
        return evaluator_name(self.evaluator)

    def evaluate(self, ctx: TurnContext) -> Any:
        return self.evaluator.evaluate(ctx)  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"informational({self.evaluator!r})"


def informational(evaluator: object) -> Informational:
    """Mark `evaluator` informational (see `Informational`); marking twice is marking once."""
    return evaluator if isinstance(evaluator, Informational) else Informational(evaluator)


def is_informational(evaluator: object) -> bool:
    return getattr(evaluator, "informational", False) is True


def informational_names(evaluators: Sequence[object], results: Sequence[EvalResult]) -> set[str]:
    """The names of the results (in evaluator order) of the evaluators marked `informational(...)`."""
    return {r.name for ev, r in zip(evaluators, results, strict=True) if is_informational(ev)}


async def run_evaluator(evaluator: object, ctx: TurnContext) -> EvalResult:
    """Run one evaluator; exceptions become an `error` result naming them."""
    started = _start(evaluator, ctx)
    return started if isinstance(started, EvalResult) else await _await(evaluator, started)


async def agrade(source: Source, evaluators: Iterable[object]) -> list[EvalResult]:
    """Grade `source` with each evaluator (async ones concurrently); results in evaluator order.

    `source` is one run: a `Capture`, `SpanTree`, `Trajectory`, `TurnContext`, a list of spans or of SpanTrees,
    or a path (or a list of paths) whose spans are all read as one run, with the records of the logs files among
    them attached (`ingest.read_tree`; grade each tree of `load_traces(path)` to grade its traces one by one)."""
    evaluators = list(evaluators)
    ctx = _live_context(source, evaluators)
    if isinstance(ctx, list):
        return ctx
    return list(await asyncio.gather(*(run_evaluator(ev, ctx) for ev in evaluators)))


def grade(source: Source, evaluators: Iterable[object]) -> list[EvalResult]:
    """Synchronous `agrade`. Sync evaluators run inline; async ones in an event loop (in a worker
    thread when called from inside a running loop)."""
    evaluators = list(evaluators)
    ctx = _live_context(source, evaluators)
    if isinstance(ctx, list):
        return ctx
    started = [_start(ev, ctx) for ev in evaluators]
    pending = [(i, s) for i, s in enumerate(started) if not isinstance(s, EvalResult)]
    if not pending:
        return started  # type: ignore[return-value]

    async def finish_all() -> list[EvalResult]:
        return list(await asyncio.gather(*(_await(evaluators[i], s) for i, s in pending)))

    for (i, _), result in zip(pending, _run_coroutine(finish_all), strict=True):
        started[i] = result
    return started  # type: ignore[return-value]


def _run_coroutine(factory: Any) -> list[EvalResult]:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())  # type: ignore[no-any-return]
    box: list[Any] = []

    def target() -> None:
        try:
            box.append(asyncio.run(factory()))
        except BaseException as e:
            box.append(e)

    thread = threading.Thread(target=target, name="tracegrade-grade")
    thread.start()
    thread.join()
    if isinstance(box[0], BaseException):
        raise box[0]
    return box[0]  # type: ignore[no-any-return]
