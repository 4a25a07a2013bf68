"""Sources → work: classify each source (OTLP files, Parquet, Delta), cut the work into tasks that
each engine runs the same way, and turn a task into graded units (one list of rows per unit)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..spans import Span
from ..tree import SpanTree
from ._arrow import SpanTableSource, bucket_ranges, table_traces
from ._core import (
    BatchInputError,
    GradingPlan,
    Row,
    conversation_of,
    gc_paused,
    grade_unit,
    sampled_key,
    sampled_trace,
    trace_units,
)

__all__ = [
    "ConversationTask",
    "OtlpTask",
    "Source",
    "TableTask",
    "Task",
    "classify_sources",
    "conversation_tasks",
    "plan_tasks",
    "run_task",
]

Source = Path | SpanTableSource
"""An OTLP trace file, or a span table."""

_ALL = 1 << 64
DEFAULT_ROWS_PER_TASK = 250_000
"""A Parquet/Delta task holds about this many spans at most (a larger table is cut by trace-id prefix, each
range read in its own pass)."""


def classify_sources(sources: Iterable[str | os.PathLike[str]]) -> list[Source]:
    """Each source as OTLP trace files (a file, or a directory's trace files) or a span table
    (a `.parquet` file, a directory of Parquet files, a Delta table: a directory with `_delta_log`)."""
    from ..ingest import trace_files

    out: list[Source] = []
    for src in sources:
        path = Path(src)
        if not path.exists():
            raise BatchInputError(f"{path}: no such file or directory")
        if path.is_dir() and (path / "_delta_log").is_dir():
            out.append(SpanTableSource(path, "delta"))
        elif path.is_file() and path.suffix.lower() == ".parquet":
            out.append(SpanTableSource(path, "parquet"))
        elif path.is_dir() and any(path.rglob("*.parquet")):
            if _trace_like(path):
                raise BatchInputError(
                    f"{path}: holds both Parquet files and trace files; pass the Parquet directory and the trace "
                    "files as separate sources"
                )
            out.append(SpanTableSource(path, "parquet"))
        else:
            out.extend(trace_files(path))
    if not out:
        raise BatchInputError("no trace files or span tables in " + ", ".join(map(str, sources)))
    return out


def _trace_like(path: Path) -> list[Path]:
    """The trace files of a directory (its other files, such as Parquet, ignored without a warning)."""
    import warnings

    from ..ingest import trace_files

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return trace_files(path)


@dataclass(frozen=True, slots=True)
class OtlpTask:
    """The traces of one OTLP file (traces are grouped per file, as `iter_traces` does)."""

    path: str

    def label(self) -> str:
        return self.path


@dataclass(frozen=True, slots=True)
class TableTask:
    """The traces of a span table whose id starts within a prefix range (None: all)."""

    source: SpanTableSource
    bucket: tuple[str, str] | None

    def label(self) -> str:
        return (
            self.source.path
            if self.bucket is None
            else f"{self.source.path} [{self.bucket[0]}..{self.bucket[1] or 'ff'}]"
        )


@dataclass(frozen=True, slots=True)
class ConversationTask:
    """Assembled conversations, graded as they are: (conversation id or None, spans of its traces)."""

    units: tuple[tuple[str | None, tuple[Span, ...]], ...]

    def label(self) -> str:
        return f"{len(self.units)} conversation(s)"


Task = OtlpTask | TableTask | ConversationTask


def plan_tasks(sources: Sequence[Source], workers: int, rows_per_task: int = DEFAULT_ROWS_PER_TASK) -> list[Task]:
    """Trace grouping: one task per OTLP file; each span table cut into trace-id prefix ranges, at
    least one per worker and enough that a task reads about `rows_per_task` spans at most. Rows come
    out in task order, so the output does not depend on the number of workers."""
    tasks: list[Task] = []
    for src in sources:
        if isinstance(src, Path):
            tasks.append(OtlpTask(str(src)))
            continue
        rows = src.count_rows()
        k = min(256, max(2 * workers if workers > 1 else 1, -(-rows // rows_per_task)))
        tasks.extend(TableTask(src, None if k == 1 else b) for b in bucket_ranges(k))
    return tasks


def run_task(task: Task, plan: GradingPlan) -> list[list[Row]]:
    """Grade a task's units; one list of rows per unit, in the task's order."""
    return list(iter_task(task, plan))


def iter_task(task: Task, plan: GradingPlan) -> Iterator[list[Row]]:
    """The rows of a task's units, each unit read and graded with the cyclic GC paused."""
    return gc_paused(_task_rows(task, plan))


def _task_rows(task: Task, plan: GradingPlan) -> Iterator[list[Row]]:
    if isinstance(task, ConversationTask):
        for conversation, spans in task.units:
            yield grade_unit(spans, plan, conversation)
        return
    for unit in task_units(task, plan):
        yield grade_unit(unit, plan)


def task_units(task: OtlpTask | TableTask, plan: GradingPlan) -> Iterator[SpanTree | list[Span]]:
    """The graded units of a trace-grouping task: sampled traces, filtered, split per agent run."""
    from ..ingest import iter_traces

    bound = plan.options.bound
    if isinstance(task, TableTask):
        table = task.source.scan(plan.options.where, bound, task.bucket)
        for spans in table_traces(table, task.source.path):
            yield from trace_units(spans, plan)
        return
    if plan.options.where:
        for tree in iter_traces(task.path, split_runs=False):
            if tree.roots and sampled_trace(tree.roots[0].trace_id, bound):
                yield from trace_units([n.source for n in tree.nodes], plan)  # type: ignore[misc]
        return
    for tree in iter_traces(task.path):
        if tree.roots and (bound >= _ALL or sampled_trace(tree.roots[0].trace_id, bound)):
            yield tree


# --- conversations ------------------------------------------------------------------------------


def _source_traces(sources: Sequence[Source], plan: GradingPlan) -> Iterator[list[Span]]:
    """Every trace of every source, whole (not split per agent run), `where`-filtered."""
    from ..ingest import iter_traces

    keep = plan.options.keep if plan.options.where else None
    for src in sources:
        if isinstance(src, Path):
            for tree in iter_traces(src, split_runs=False):
                spans: list[Span] = [n.source for n in tree.nodes]  # type: ignore[misc]
                if keep is not None:
                    spans = [s for s in spans if keep(s)]
                if spans:
                    yield spans
        else:
            table = src.scan(plan.options.where, _ALL, None)
            yield from table_traces(table, src.path)


def _key(spans: list[Span]) -> tuple[str | None, str]:
    """(conversation id or None, the grouping key: the conversation id, or the trace's own id)."""
    conv = conversation_of(spans)
    return conv, conv if conv is not None else f"\x00{spans[0].trace_id:032x}"


def conversation_units(sources: Sequence[Source], plan: GradingPlan) -> Iterator[tuple[str | None, list[Span]]]:
    """Traces grouped by conversation (`gen_ai.conversation.id`, else `session.id`; a trace naming
    neither is its own unit), sampled by conversation. Two passes: the first counts each
    conversation's traces, so the second emits a conversation once its last trace is read and
    holds only conversations in flight."""
    bound = plan.options.bound
    expected: Counter[str] = Counter(_key(spans)[1] for spans in _source_traces(sources, plan))
    pending: dict[str, list[list[Span]]] = {}
    for spans in _source_traces(sources, plan):
        conv, key = _key(spans)
        if conv is not None and not sampled_key(conv, bound):
            continue
        if conv is None and not sampled_trace(spans[0].trace_id, bound):
            continue
        group = pending.setdefault(key, [])
        group.append(spans)
        if len(group) >= expected[key]:
            del pending[key]
            yield conv, [s for trace in group for s in trace]
    for key, group in pending.items():  # the second read found more traces than the first
        yield (None if key.startswith("\x00") else key), [s for trace in group for s in trace]


def conversation_tasks(sources: Sequence[Source], plan: GradingPlan, per_task: int = 32) -> Iterator[ConversationTask]:
    chunk: list[tuple[str | None, tuple[Span, ...]]] = []
    for conv, spans in conversation_units(sources, plan):
        chunk.append((conv, tuple(spans)))
        if len(chunk) >= per_task:
            yield ConversationTask(tuple(chunk))
            chunk = []
    if chunk:
        yield ConversationTask(tuple(chunk))


def conversation_order(rows: list[Row]) -> tuple[Any, ...]:
    """Sort key of a conversation unit's rows: conversation id (units without one last), then trace and root ids."""
    first = rows[0]
    conv = first[-1]
    return (conv is None, conv or "", first[0], first[1])
