"""Sources → work: classify each source (OTLP files, Parquet, Delta), cut the work into tasks that
each engine runs the same way, and turn a task into graded units (one list of rows per unit)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..spans import LogRecord, Span
from ..tree import SpanTree
from ._arrow import SpanTableSource, bucket_ranges, table_traces
from ._core import (
    NO_LOGS,
    BatchInputError,
    GradingPlan,
    Logs,
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
    "Sources",
    "TableTask",
    "Task",
    "classify_sources",
    "conversation_tasks",
    "conversation_traces",
    "forget_logs",
    "joined",
    "keyed_traces",
    "logs_of",
    "plan_tasks",
    "run_task",
]

Source = Path | SpanTableSource
"""An OTLP trace file, or a span table."""

_ALL = 1 << 64
DEFAULT_ROWS_PER_TASK = 250_000
"""A Parquet/Delta task holds about this many spans at most (a larger table is cut by trace-id prefix, each
range read in its own pass)."""


@dataclass(frozen=True, slots=True)
class Sources:
    """The classified sources: trace files and span tables in order, and the OTLP logs files among
    them (read with every trace file, as `load_traces` and `tracegrade grade` read them)."""

    items: list[Source]
    logs: tuple[str, ...] = ()


def classify_sources(sources: Iterable[str | os.PathLike[str]]) -> Sources:
    """Each source as OTLP trace files (a file, or a directory's trace files), an OTLP logs file (a
    collector file holding both signals is both), or a span table (a `.parquet` file, a directory of Parquet files, a Delta table: a directory with
    `_delta_log`). Logs files need trace files to attach to: span tables carry no log records."""
    from ..ingest import trace_files
    from ..ingest._traces import split_inputs

    sources = list(sources)
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
    traces, logs_files = split_inputs(p for p in out if isinstance(p, Path))  # a file may hold both signals
    logs = tuple(map(str, logs_files))
    spans_from = set(traces)
    items = [p for p in out if not isinstance(p, Path) or p in spans_from]
    if not items:
        raise BatchInputError("no trace files or span tables in " + ", ".join(map(str, sources)))
    if logs and not any(isinstance(p, Path) for p in items):
        raise BatchInputError(
            f"{logs[0]}: an OTLP logs file attaches to the spans of OTLP trace files, and span tables carry no "
            "log records; give the trace files it belongs with"
        )
    return Sources(items, logs)


def _trace_like(path: Path) -> list[Path]:
    """The trace files of a directory (its other files, such as Parquet, ignored without a warning)."""
    import warnings

    from ..ingest import trace_files

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return trace_files(path)


@dataclass(frozen=True, slots=True)
class OtlpTask:
    """The traces of one OTLP file (traces are grouped per file, as `iter_traces` does), with the
    records of the OTLP logs files `logs` attached to the spans they name."""

    path: str
    logs: tuple[str, ...] = ()

    def trees(self, split_runs: bool = True) -> Iterator[SpanTree]:
        """`iter_traces([path, *logs])`, the logs files read once per process (every task of a job shares them)."""
        from ..ingest._traces import trees_of

        logs = tuple(map(Path, self.logs))
        return trees_of([Path(self.path)], _logs_index(self.logs), split_runs=split_runs, logs_files=logs)

    def label(self) -> str:
        return self.path


_LOGS: tuple[tuple[tuple[str, int, int], ...], dict[int, list[LogRecord]]] = ((), {})


def _logs_index(paths: tuple[str, ...]) -> dict[int, list[LogRecord]]:
    """The records of the logs files `paths` by trace id. The last index is kept for the next task
    of the job, keyed by each file's path, size and modification time (a changed file is read again)."""
    global _LOGS
    if not paths:
        return {}
    key = tuple((p, (st := os.stat(p)).st_size, st.st_mtime_ns) for p in paths)
    if _LOGS[0] != key:
        from ..ingest._traces import logs_by_trace

        _LOGS = ((), {})  # the previous index is freed before the next is read
        _LOGS = (key, logs_by_trace(map(Path, paths)))
    return _LOGS[1]


def forget_logs() -> None:
    """Drop the kept logs index (at the end of a job run in this process)."""
    global _LOGS
    _LOGS = ((), {})


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
    """Assembled conversations, graded as they are: (conversation id or None, spans of its traces,
    the log records attached to them)."""

    units: tuple[tuple[str | None, tuple[Span, ...], Logs], ...]

    def label(self) -> str:
        return f"{len(self.units)} conversation(s)"


Task = OtlpTask | TableTask | ConversationTask


def plan_tasks(
    sources: Sequence[Source], workers: int, rows_per_task: int = DEFAULT_ROWS_PER_TASK, logs: tuple[str, ...] = ()
) -> list[Task]:
    """Trace grouping: one task per OTLP file; each span table cut into trace-id prefix ranges, at
    least one per worker and enough that a task reads about `rows_per_task` spans at most. Rows come
    out in task order, so the output does not depend on the number of workers."""
    tasks: list[Task] = []
    for src in sources:
        if isinstance(src, Path):
            tasks.append(OtlpTask(str(src), logs))
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
        for conversation, spans, logs in task.units:
            yield grade_unit(spans, plan, conversation, logs)
        return
    for unit, logs in task_units(task, plan):
        yield grade_unit(unit, plan, logs=logs)


def task_units(task: OtlpTask | TableTask, plan: GradingPlan) -> Iterator[tuple[SpanTree | list[Span], Logs]]:
    """The graded units of a trace-grouping task (sampled traces, filtered, split per agent run), each
    with the log records to attach to its spans (a tree has them attached already)."""

    bound = plan.options.bound
    if isinstance(task, TableTask):
        table = task.source.scan(plan.options.where, bound, task.bucket)
        for spans in table_traces(table, task.source.path):
            for unit in trace_units(spans, plan):
                yield unit, NO_LOGS
        return
    if plan.options.where:
        for tree in task.trees(split_runs=False):
            if tree.roots and sampled_trace(tree.roots[0].trace_id, bound):
                logs = logs_of(tree)
                for unit in trace_units([n.source for n in tree.nodes], plan):  # type: ignore[misc]
                    yield unit, logs
        return
    for tree in task.trees():
        if tree.roots and (bound >= _ALL or sampled_trace(tree.roots[0].trace_id, bound)):
            yield tree, NO_LOGS


# --- conversations ------------------------------------------------------------------------------


def _source_traces(sources: Sources, plan: GradingPlan) -> Iterator[tuple[list[Span], Logs]]:
    """Every trace of every source, whole (not split per agent run), `where`-filtered, with its log records."""

    keep = plan.options.keep if plan.options.where else None
    for src in sources.items:
        if isinstance(src, Path):
            for tree in OtlpTask(str(src), sources.logs).trees(split_runs=False):
                spans: list[Span] = [n.source for n in tree.nodes]  # type: ignore[misc]
                if keep is not None:
                    spans = [s for s in spans if keep(s)]
                if spans:
                    yield spans, logs_of(tree)
        else:
            table = src.scan(plan.options.where, _ALL, None)
            for spans in table_traces(table, src.path):
                yield spans, NO_LOGS


def logs_of(tree: SpanTree) -> Logs:
    """The log records attached to `tree`'s spans and its count of records that named none (to
    attach them again to a tree rebuilt from its spans)."""
    return tuple(r for n in tree.nodes for r in n.logs), tree.unattached_logs


def _key(spans: list[Span]) -> tuple[str | None, str]:
    """(conversation id or None, the grouping key: the conversation id, or the trace's own id)."""
    conv = conversation_of(spans)
    return conv, conv if conv is not None else f"\x00{spans[0].trace_id:032x}"


def conversation_units(sources: Sources, plan: GradingPlan) -> Iterator[tuple[str | None, list[Span], Logs]]:
    """Traces grouped by conversation (`gen_ai.conversation.id`, else `session.id`; a trace naming
    neither is its own unit), sampled by conversation. Two passes: the first counts each
    conversation's traces, so the second emits a conversation once its last trace is read and
    holds only conversations in flight."""
    expected: Counter[str] = Counter(_key(spans)[1] for spans, _ in _source_traces(sources, plan))
    pending: dict[str, list[tuple[list[Span], Logs]]] = {}
    for key, conv, spans, logs in conversation_traces(sources, plan):
        group = pending.setdefault(key, [])
        group.append((spans, logs))
        if len(group) >= expected[key]:
            del pending[key]
            yield (conv, *joined(group))
    for key, group in pending.items():  # the second read found more traces than the first
        yield (None if key.startswith("\x00") else key), *joined(group)


def conversation_traces(sources: Sources, plan: GradingPlan) -> Iterator[tuple[str, str | None, list[Span], Logs]]:
    """Every sampled trace of `sources` (sampled by conversation, or by trace when it names none), as
    (grouping key, conversation id or None, its `where`-filtered spans, its log records)."""
    return keyed_traces(_source_traces(sources, plan), plan.options.bound)


def keyed_traces(
    traces: Iterable[tuple[list[Span], Logs]], bound: int
) -> Iterator[tuple[str, str | None, list[Span], Logs]]:
    """The traces (spans, log records) kept by the sample `bound` (by conversation, or by trace when
    one names none), as (grouping key, conversation id or None, spans, log records)."""
    for spans, logs in traces:
        conv, key = _key(spans)
        if sampled_key(conv, bound) if conv is not None else sampled_trace(spans[0].trace_id, bound):
            yield key, conv, spans, logs


def joined(group: Iterable[tuple[list[Span], Logs]]) -> tuple[list[Span], Logs]:
    """The traces of one conversation as one unit: their spans, and their log records."""
    group = list(group)
    records = tuple(r for _, (rs, _n) in group for r in rs)
    return [s for spans, _ in group for s in spans], (records, sum(n for _, (_rs, n) in group))


def conversation_tasks(sources: Sources, plan: GradingPlan, per_task: int = 32) -> Iterator[ConversationTask]:
    chunk: list[tuple[str | None, tuple[Span, ...], Logs]] = []
    for conv, spans, logs in conversation_units(sources, plan):
        chunk.append((conv, tuple(spans), logs))
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
