"""`grade_traces`: grade every trace (or conversation) of files and span tables on an engine."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Literal

from ._core import BatchInputError, Condition, GradingPlan, Options, Row, parse_condition
from ._result import BatchResult, BatchSummary, ResultWriter, output_format

if TYPE_CHECKING:
    from ._plan import Sources, Task

__all__ = ["grade_traces"]

Engine = Literal["local", "spark"]
SourceArg = str | os.PathLike[str]


def _evaluators(spec_or_evaluators: Any) -> list[object]:
    from ..spec import build_evaluators, load_spec

    if isinstance(spec_or_evaluators, str | os.PathLike):
        return load_spec(spec_or_evaluators)  # an empty `evaluators:` list is a SpecError there
    items = list(spec_or_evaluators)
    if not items:
        raise BatchInputError("no evaluators: a spec needs at least one (an empty list grades nothing)")
    if all(isinstance(i, str | dict) for i in items):
        return build_evaluators(items)
    if bad := [i for i in items if not callable(getattr(i, "evaluate", None))]:
        raise BatchInputError(f"not an evaluator (no evaluate method): {bad[0]!r}")
    return items


def grade_traces(
    sources: SourceArg | Iterable[SourceArg],
    spec_or_evaluators: SourceArg | Sequence[Any],
    *,
    engine: Engine = "local",
    workers: int | None = None,
    out: SourceArg | None = None,
    sample: float = 1.0,
    group_by: Literal["trace", "conversation"] = "trace",
    where: Iterable[str | Condition] = (),
    max_spans: int = 10_000,
    dialect: str | None = None,
    not_evaluated: Literal["fail", "skip"] = "fail",
    progress: bool | None = None,
    spark: Any = None,
    case_attribute: str | None = None,
    redact: Iterable[str] = (),
) -> BatchResult:
    """Grade every trace of `sources` with the evaluators of a spec (a YAML path, spec items, or evaluator objects).

    Sources: OTLP trace files and directories (any format `load_traces` reads), Parquet files or
    datasets and Delta tables in the ClickHouse `otel_traces` span layout. Units: each trace (one
    per agent run when a trace holds several, like `iter_traces`), or with `group_by="conversation"`
    the traces sharing a `gen_ai.conversation.id` / `session.id`. `sample` keeps a deterministic share
    of them (OpenTelemetry's trace-id ratio rule; conversations by a hash of their id); `where`
    conditions (`"SpanKind in client,internal"`) drop spans before grouping, pushed into table scans;
    a unit over `max_spans` spans is `not_evaluated`.

    One row per (unit, evaluator): `trace_id`, `root_span_id`, `agent`, `evaluator`, `params_hash`,
    `outcome`, `score`, `reason` (+ `conversation_id`), written to `out` (`.parquet` or `.jsonl`) or
    kept in memory. Rows come in source order, a table's by trace id (conversations: by conversation
    id), the same for every engine and worker count.

    `case_attribute`: units whose spans carry the same value of this attribute are repeated runs of
    one case (a `case_id` column; the summary adds pass@k, pass^k, per-check pass rates with Wilson
    95% intervals and flaky checks per case; the exit code stays per unit). `redact`: key globs whose
    values (tool arguments, span attributes) are replaced in the rows' reasons, as `--redact` does in
    reports; outcomes and scores are unchanged.
    """
    from ._plan import classify_sources, forget_logs, plan_tasks

    if isinstance(sources, str | os.PathLike):
        sources = [sources]
    sources = list(sources)
    if not sources:
        raise BatchInputError("no sources given")
    if engine not in ("local", "spark"):
        raise BatchInputError(f"unknown engine {engine!r}; engines: local, spark")
    if group_by not in ("trace", "conversation"):
        raise BatchInputError(f"unknown grouping {group_by!r}; expected 'trace' or 'conversation'")
    if max_spans < 1:
        raise BatchInputError(f"max_spans must be positive, got {max_spans}")
    if workers is not None and workers < 1:
        raise BatchInputError(f"workers must be positive, got {workers}")
    if case_attribute is not None and (not isinstance(case_attribute, str) or not case_attribute.strip()):
        raise BatchInputError(f"case_attribute must be a span attribute key, got {case_attribute!r}")
    redact = tuple(redact)
    if bad := [g for g in redact if not isinstance(g, str) or not g]:
        raise BatchInputError(f"redact must be non-empty key globs, got {bad[0]!r}")
    if out is not None:
        output_format(out)
    conditions = tuple(c if isinstance(c, Condition) else parse_condition(c) for c in where)
    options = Options(group_by, sample, conditions, max_spans, dialect, case_attribute, redact)
    options.bound  # noqa: B018  # validates the rate
    classified = classify_sources(sources)
    from ._local import default_workers, start_pool

    n = workers or default_workers()
    tasks = plan_tasks(classified.items, n, logs=classified.logs) if engine == "local" and group_by == "trace" else None
    if engine == "local" and n > 1 and (tasks is None or len(tasks) > 1):
        start_pool()  # the workers' imports run while this process reads the spec
    plan = GradingPlan(_evaluators(spec_or_evaluators), options)
    writer = ResultWriter(out, options.columns)
    summary = BatchSummary(not_evaluated, case_attribute=case_attribute)
    try:
        with _progress(progress) as advance:
            for rows in _units(engine, classified, tasks, plan, n, spark, advance):
                writer.write(rows)
                summary.add(rows)
    except BaseException:
        writer.abort()  # a failed job leaves no results file (and an earlier one at `out` as it was)
        raise
    finally:
        forget_logs()
    table = writer.close()
    return BatchResult(summary, options.columns, writer.path, table)


def _units(
    engine: Engine,
    sources: Sources,
    tasks: list[Task] | None,
    plan: GradingPlan,
    workers: int,
    spark: Any,
    advance: Callable[[str, int], None],
) -> Iterator[list[Row]]:
    """The rows of every unit; `tasks`: the local engine's, grouping by trace."""
    from ._plan import conversation_order, conversation_tasks

    if engine == "spark":
        from ._spark import run_spark

        for rows in run_spark(sources.items, plan, workers, spark, sources.logs):
            advance("", 1)
            yield rows
        return
    from ._local import run_local

    def done(task: Any, units: int) -> None:
        advance(task.label(), units)

    if tasks is None:
        units = list(run_local(conversation_tasks(sources, plan), plan, workers, done))
        yield from sorted(units, key=conversation_order)
        return
    yield from run_local(tasks, plan, min(workers, len(tasks)), done)  # no pool for a single task


def _progress(enabled: bool | None) -> AbstractContextManager[Callable[[str, int], None]]:
    """A progress display on stderr (when it is a terminal, or when asked): units graded, tasks done."""
    if enabled is False or (enabled is None and not sys.stderr.isatty()):
        return nullcontext(lambda label, units: None)
    return _Progress()


class _Progress:
    def __enter__(self) -> Callable[[str, int], None]:
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            SpinnerColumn(), TextColumn("{task.fields[units]} unit(s)"), TimeElapsedColumn(),
            TextColumn("{task.description}", markup=False), console=Console(stderr=True), transient=False,
        )  # fmt: skip
        self.progress.start()
        self.task = self.progress.add_task("grading", units=0)
        self.units = 0

        from .._text import printable

        def advance(label: str, units: int) -> None:
            self.units += units
            description = f"grading {printable(label)}" if label else "grading"  # a file name is untrusted text
            self.progress.update(self.task, units=self.units, description=description)

        return advance

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()
