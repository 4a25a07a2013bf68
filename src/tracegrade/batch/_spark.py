"""The Spark engine: the same tasks and units as the local engine, run where the tables live.

OTLP files are read one per Spark task (traces are grouped per file). Span tables are read by
Spark with the filters as Spark expressions, hash-partitioned by trace id (no sampling pass, as a
range partitioning would make), sorted within each partition and graded with `mapInArrow`;
grouping by conversation partitions by the conversation key instead (tables given with OTLP files:
their traces are keyed in tasks and grouped with the files' traces). Grouping by trace, a large
table is graded in trace-id ranges, one job each (the driver holds one range's result rows at a
time). The driver puts units in the local engine's order: by trace id within a range. An exception
raised in a task is returned as a result, and raised on the driver as it was raised.
"""

from __future__ import annotations

import pickle
import traceback
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from ..spans import Span
from ._arrow import _KIND_SPELLINGS, _STATUS_SPELLINGS, SpanTableSource, bucket_ranges, iter_trace_groups
from ._core import (
    CONVERSATION_KEYS,
    NO_LOGS,
    BatchInputError,
    Condition,
    GradingPlan,
    Logs,
    Row,
    gc_paused,
    grade_unit,
    sampled_key,
    sampled_trace,
    trace_units,
)
from ._plan import (
    OtlpTask,
    Source,
    Sources,
    conversation_order,
    conversation_traces,
    iter_task,
    joined,
    keyed_traces,
)

__all__ = ["run_spark", "spark_session"]

_DOTTED = {c.replace(".", "_"): c for c in ("Events.Timestamp", "Events.Name", "Events.Attributes")}

_ALL = 1 << 64
SPANS_PER_JOB = 1_000_000
"""Grouping by trace, a table is graded in trace-id ranges of about this many spans, one Spark job each."""


def _pyspark() -> Any:
    try:
        import pyspark
    except ImportError:
        raise ImportError('the Spark engine needs pyspark: pip install "tracegrade[spark]"') from None
    return pyspark


def spark_session(workers: int) -> Any:
    """The active SparkSession, or a new local one with `workers` cores (logging errors only, without
    Spark's console progress bar: stderr is the caller's, for its own progress and errors)."""
    _pyspark()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    return (
        SparkSession.builder.master(f"local[{workers}]")
        .appName("tracegrade-batch")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.log.level", "ERROR")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )


def run_spark(
    sources: Sequence[Source], plan: GradingPlan, workers: int, spark: Any = None, logs: tuple[str, ...] = ()
) -> Iterator[list[Row]]:
    """The rows of every unit, in the local engine's order; the OTLP logs files `logs` are read with every trace file."""
    spark = spark if spark is not None else spark_session(workers)
    files = [s for s in sources if isinstance(s, Path)]
    tables = [s for s in sources if isinstance(s, SpanTableSource)]
    conversation = plan.options.group_by == "conversation"
    if conversation:
        units = _conversations(spark, files, tables, plan, logs) if files else list(_table_units(spark, tables, plan))
        yield from sorted(units, key=conversation_order)
        return
    i = 0
    while i < len(sources):  # in source order, as the local engine; consecutive files in one job
        src = sources[i]
        if isinstance(src, SpanTableSource):
            yield from _table_units(spark, [src], plan)
            i += 1
            continue
        run = [src]
        while i + len(run) < len(sources) and isinstance(nxt := sources[i + len(run)], Path):
            run.append(nxt)
        yield from _otlp_traces(spark, run, plan, logs)
        i += len(run)


# --- errors raised in tasks ---------------------------------------------------------------------


class TaskTraceback(Exception):
    """The traceback of an exception raised in a Spark task (the `__cause__` of the one raised again on the driver)."""

    def __str__(self) -> str:
        return "\n" + str(self.args[0])


class _Failure:
    """An exception raised in a Spark task, returned as a result (pickled, with its traceback) so the
    driver raises it as it was: a failed task would come back as a `PythonException` holding only text."""

    def __init__(self, error: Exception) -> None:
        try:
            payload = pickle.dumps(error)
            pickle.loads(payload)  # an exception whose arguments do not rebuild it fails here
        except Exception:
            payload = pickle.dumps(RuntimeError(f"{type(error).__name__}: {error}"))
        self.blob = pickle.dumps((payload, "".join(traceback.format_exception(error))))

    @staticmethod
    def raise_(blob: bytes) -> None:
        payload, text = pickle.loads(blob)
        raise pickle.loads(payload) from TaskTraceback(text)


T = TypeVar("T")


def _carried(items: Iterator[T]) -> Iterator[T | _Failure]:
    """The items of a task, then, if it raises, the exception as a `_Failure` (and no more items)."""
    try:
        yield from items
    except Exception as e:
        yield _Failure(e)


def _results(items: Iterable[T | _Failure]) -> list[T]:
    """A job's collected results, or the first task failure among them raised on the driver."""
    out = list(items)
    for item in out:
        if isinstance(item, _Failure):
            _Failure.raise_(item.blob)
    return out  # type: ignore[return-value]


# --- OTLP files ----------------------------------------------------------------------------------


def _otlp_traces(spark: Any, files: list[Path], plan: GradingPlan, logs: tuple[str, ...]) -> Iterator[list[Row]]:
    paths = [str(f) for f in files]

    def grade_file(items: Iterator[str]) -> Iterator[list[Row] | _Failure]:
        return _carried(row for path in items for row in iter_task(OtlpTask(path, logs), plan))

    rdd = spark.sparkContext.parallelize(paths, len(paths))
    # rows are small; one job (toLocalIterator runs one per partition)
    yield from _results(rdd.mapPartitions(grade_file).collect())


Keyed = tuple[str | None, tuple[str | None, list[Span], Logs] | _Failure]
"""A trace keyed by its conversation: (grouping key, (conversation id or None, spans, log records)),
or a task's exception with the key None."""


def _keyed(traces: Iterator[tuple[str, str | None, list[Span], Logs]]) -> Iterator[Keyed]:
    """`keyed_traces`' items as `Keyed` pairs, ended by a failure pair if reading them raises."""
    for item in _carried(traces):
        if isinstance(item, _Failure):
            yield None, item
        else:
            key, conv, spans, unit_logs = item
            yield key, (conv, spans, unit_logs)


def _conversations(
    spark: Any, files: list[Path], tables: list[SpanTableSource], plan: GradingPlan, logs: tuple[str, ...]
) -> list[list[Row]]:
    """The conversations of OTLP files and of the span tables given with them: every trace keyed by
    its conversation in Spark tasks (a file per task; a table's traces as `_table_traces` keys them),
    grouped by key, each group graded as one unit."""
    paths = [str(f) for f in files]

    def keyed(items: Iterator[str]) -> Iterator[Keyed]:
        return _keyed(conversation_traces(Sources([Path(p) for p in items], logs), plan))

    def grade_group(item: tuple[str | None, Any]) -> list[Row] | _Failure:
        if item[0] is None:
            return next(iter(item[1]))  # type: ignore[no-any-return]
        try:
            traces = sorted(item[1], key=lambda t: (t[1][0].trace_id, t[1][0].start_ns))
            spans, unit_logs = joined((trace, records) for _, trace, records in traces)
            return grade_unit(spans, plan, traces[0][0], unit_logs)
        except Exception as e:
            return _Failure(e)

    rdd = spark.sparkContext.parallelize(paths, len(paths)).mapPartitions(keyed)
    for src in tables:
        rdd = rdd.union(_table_traces(spark, src, plan))
    return _results(rdd.groupByKey().map(grade_group).collect())


# --- span tables ---------------------------------------------------------------------------------


def _column(name: str) -> Any:
    from pyspark.sql import functions as F

    return F.col(f"`{name}`")


def _spark_condition(c: Condition) -> Any:
    from pyspark.sql import functions as F

    if c.field in ("SpanKind", "StatusCode"):
        spellings = _KIND_SPELLINGS if c.field == "SpanKind" else _STATUS_SPELLINGS
        inside = _column(c.field).isin([s for v in c.values for s in spellings[v]])
        return inside if c.op in ("=", "in") else ~inside
    col = F.lower(_column("TraceId")) if c.field == "TraceId" else _column(c.field)
    if c.op in ("in", "not in"):
        inside = col.isin(list(c.values))
        return inside if c.op == "in" else ~inside
    v = c.values[0]
    return {"=": col == v, "!=": col != v, "<": col < v, "<=": col <= v, ">": col > v, ">=": col >= v}[c.op]


def _read_table(spark: Any, src: SpanTableSource, conditions: Sequence[Condition]) -> Any:
    """The table's span-layout columns (hive partition columns included) as a DataFrame. Its columns
    are checked as the local engine checks them, before any job."""
    from pyspark.sql import functions as F

    from ._arrow import READ_COLUMNS, check_columns

    names = set(src.dataset().schema.names)  # what the local engine reads: the same errors
    check_columns(src.path, names, conditions)
    spark.conf.set("spark.sql.legacy.parquet.nanosAsLong", "true")  # Spark reads no TIMESTAMP(NANOS) otherwise
    files = src.files()
    if not files:
        raise BatchInputError(f"{src.path}: no Parquet files")
    reader = spark.read
    if Path(src.path).is_dir():  # partition columns from the directory names below the root (as Delta writes them)
        reader = reader.option("basePath", src.path)
    df = reader.parquet(*files)
    if unread := [c for c in READ_COLUMNS if c in names and c not in df.columns]:
        raise BatchInputError(
            f"{src.path}: Spark does not find column(s) {', '.join(unread)} of this table in its files or in "
            "hive-style directory names (column=value); grade it with --engine local"
        )
    cols = []
    for c in READ_COLUMNS:
        if c in names:
            col = _column(c)
            if c == "Duration":
                col = col.cast("long")
            elif c == "Timestamp" and dict(df.dtypes)[c] not in ("bigint", "int"):
                col = (F.unix_micros(col) * 1000).cast("long")  # a microsecond timestamp column
            cols.append(col.alias(c.replace(".", "_")))  # mapInArrow cannot pass dotted names
    return df.select(*cols)


def _table_units(spark: Any, tables: list[SpanTableSource], plan: GradingPlan) -> Iterator[list[Row]]:
    """Grouping by trace: one Spark job per trace-id prefix range of a table (about
    `SPANS_PER_JOB` spans each), whose result rows are collected at once (as Arrow), so every core
    grades and the driver holds one range's rows at a time. Grouping by conversation: one job."""
    conversation = plan.options.group_by == "conversation"
    for src in tables:
        if conversation:
            yield from _job(spark, src, plan, None)
            continue
        k = min(256, max(1, -(-src.count_rows() // SPANS_PER_JOB)))
        for bucket in [None] if k == 1 else bucket_ranges(k):
            yield from _job(spark, src, plan, bucket)


@contextmanager
def _analysis(src: SpanTableSource) -> Iterator[None]:
    """Spark's `AnalysisException` (a column of a type the query cannot use) as a `BatchInputError`."""
    from pyspark.errors import AnalysisException

    try:
        yield
    except AnalysisException as e:
        raise BatchInputError(f"{src.path}: Spark cannot read the span table: {str(e).splitlines()[0]}") from None


def _job(spark: Any, src: SpanTableSource, plan: GradingPlan, bucket: tuple[str, str] | None) -> Iterator[list[Row]]:
    with _analysis(src):
        result = _graded_frame(spark, src, plan, bucket)
    units = _regroup(_collect_arrow(result), len(plan.options.columns))
    if plan.options.group_by == "conversation":  # ordered by the caller
        yield from units
    else:  # a trace's units are consecutive in one partition: a stable sort by trace id keeps their order
        yield from sorted(units, key=_trace_of)


def _table_traces(spark: Any, src: SpanTableSource, plan: GradingPlan) -> Any:
    """A table's traces, each keyed by its conversation as `conversation_traces` keys a file's (an RDD
    of `Keyed` pairs, spans pickled through Arrow): to be grouped with the traces of OTLP files."""
    from pyspark.sql import functions as F

    opts = plan.options
    where, bound = src.path, opts.bound

    def keyed(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        def batch(pairs: list[tuple[str | None, bytes]]) -> Any:
            keys, values = zip(*pairs, strict=True)
            return pa.record_batch([pa.array(keys, pa.string()), pa.array(values, pa.binary())], ["k", "v"])

        batches = (b.rename_columns([_DOTTED.get(n, n) for n in b.schema.names]) for b in batches)
        traces = ((spans, NO_LOGS) for spans in iter_trace_groups(batches, where))
        pairs: list[tuple[str | None, bytes]] = []
        for key, value in _keyed(keyed_traces(traces, bound)):
            pairs.append((key, pickle.dumps(value)))
            if len(pairs) >= 256:
                yield batch(pairs)
                pairs = []
        if pairs:
            yield batch(pairs)

    with _analysis(src):
        df = _read_table(spark, src, opts.where)
        for c in opts.where:
            df = df.filter(_spark_condition(c))
        trace = F.lower(_column("TraceId"))
        df = df.repartition(max(1, spark.sparkContext.defaultParallelism * 2), trace)
        df = df.sortWithinPartitions(trace, _column("Timestamp"), _column("SpanId"))
        frame = df.mapInArrow(keyed, "k string, v binary")
    return frame.rdd.map(lambda row: (row[0], pickle.loads(row[1])))


def _graded_frame(spark: Any, src: SpanTableSource, plan: GradingPlan, bucket: tuple[str, str] | None) -> Any:
    """The DataFrame of a table's result rows (`_batch_grader`'s), filtered, partitioned and sorted."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    opts = plan.options
    conversation = opts.group_by == "conversation"
    df = _read_table(spark, src, opts.where)
    for c in opts.where:
        df = df.filter(_spark_condition(c))
    trace = F.lower(_column("TraceId"))
    if not conversation and opts.bound < _ALL:
        df = df.filter(F.substring(trace, 17, 16) < F.lit(f"{opts.bound:016x}"))
    if bucket is not None:
        lo, hi = bucket
        prefix = F.substring(trace, 1, 2)
        if lo != "00":
            df = df.filter(prefix >= F.lit(lo))
        if hi:
            df = df.filter(prefix < F.lit(hi))
    n = max(1, spark.sparkContext.defaultParallelism * 2)
    order = [trace, _column("Timestamp"), _column("SpanId")]  # a trace id in any letter case is one trace
    if conversation:
        attrs = _column("SpanAttributes") if "SpanAttributes" in df.columns else F.lit(None)
        per_span = F.coalesce(*(F.nullif(attrs.getItem(k), F.lit("")) for k in CONVERSATION_KEYS))
        window = (
            Window.partitionBy(trace)
            .orderBy(*order[1:])
            .rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
        )
        df = df.withColumn("__conv", F.first(per_span, ignorenulls=True).over(window))
        df = df.withColumn("__key", F.coalesce(F.col("__conv"), F.concat(F.lit("\x00"), trace)))
        df = df.repartition(n, "__key").sortWithinPartitions("__key", *order)
    else:
        df = df.repartition(n, trace).sortWithinPartitions(*order)
    columns = plan.options.columns
    schema = ", ".join(f"{c} {'double' if c == 'score' else 'string'}" for c in columns)
    return df.mapInArrow(_batch_grader(plan, src.path), f"{schema}, __unit bigint, __error binary")


def _batch_grader(plan: GradingPlan, where: str) -> Any:
    """The `mapInArrow` function: a partition's sorted span rows → result rows, each with a unit number
    unique across partitions."""
    opts = plan.options
    columns = opts.columns

    def units(batches: Iterator[Any]) -> Iterator[list[Row]]:
        batches = (b.rename_columns([_DOTTED.get(n, n) for n in b.schema.names]) for b in batches)
        if opts.group_by != "conversation":
            for spans in iter_trace_groups(batches, where):
                for unit in trace_units(spans, plan):
                    yield grade_unit(unit, plan)
            return
        for conv, spans in _conversation_groups(batches, where):
            if (conv is None and sampled_trace(spans[0].trace_id, opts.bound)) or (
                conv is not None and sampled_key(conv, opts.bound)
            ):
                yield grade_unit(spans, plan, conv)

    def grade_batches(batches: Iterator[Any]) -> Iterator[Any]:
        """Result rows with their unit number; an exception ends the task with one row carrying it in `__error`."""
        import pyarrow as pa
        from pyspark import TaskContext

        from ._result import result_schema

        out_schema = result_schema(columns).append(pa.field("__unit", pa.int64()))
        out_schema = out_schema.append(pa.field("__error", pa.binary()))
        context = TaskContext.get()
        unit = (context.partitionId() if context is not None else 0) << 32
        rows: list[Row] = []
        for item in _carried(gc_paused(units(batches))):
            if isinstance(item, _Failure):
                yield _record_batch([(*(None for _ in columns), -1, item.blob)], out_schema)
                return
            rows.extend((*r, unit, None) for r in item)
            unit += 1
            if len(rows) >= 4096:
                yield _record_batch(rows, out_schema)
                rows = []
        if rows:
            yield _record_batch(rows, out_schema)

    return grade_batches


def _conversation_groups(batches: Iterator[Any], where: str) -> Iterator[tuple[str | None, list[Any]]]:
    """Consecutive rows with one `__key` (a conversation's or a lone trace's spans) as spans."""
    pending: list[Any] = []
    pending_key: str | None = None
    conv: str | None = None
    for batch in batches:
        keys = batch.column("__key").to_pylist()
        convs = batch.column("__conv").to_pylist()
        start = 0
        for i in range(1, len(keys) + 1):
            if i == len(keys) or keys[i] != keys[start]:
                if pending and keys[start] != pending_key:
                    yield conv, pending
                    pending = []
                pending.extend(_spans_of(batch.slice(start, i - start), where))
                pending_key, conv = keys[start], convs[start]
                start = i
    if pending:
        yield conv, pending


def _spans_of(batch: Any, where: str) -> list[Any]:
    from ._arrow import arrow_spans

    return arrow_spans(batch, where)


def _record_batch(rows: list[tuple[Any, ...]], schema: Any) -> Any:
    import pyarrow as pa

    cols = list(zip(*rows, strict=True))
    return pa.record_batch([pa.array(c, f.type) for c, f in zip(cols, schema, strict=True)], schema=schema)


def _collect_arrow(df: Any) -> Iterator[tuple[Any, ...]]:
    """Every row of `df` (a `_batch_grader` result) as a tuple without its `__error` column, in
    partition order, collected in one job as Arrow batches (every partition runs at once;
    `toLocalIterator` would run one partition after another). A task's exception is raised here
    (the first one, in partition order) before any row is returned."""
    to_arrow = getattr(df, "toArrow", None)  # pyspark >= 4.0
    batches = to_arrow().to_batches() if to_arrow is not None else df._collect_as_arrow()
    for batch in batches:
        errors = batch.column("__error")
        if errors.null_count < len(errors):
            _Failure.raise_(errors.drop_null()[0].as_py())
    for batch in batches:
        yield from zip(*(column.to_pylist() for column in batch.columns[:-1]), strict=True)


def _trace_of(rows: list[Row]) -> Any:
    return rows[0][0]  # the trace_id column


def _regroup(rows: Iterator[tuple[Any, ...]], width: int) -> Iterator[list[Row]]:
    """Result rows (with a per-partition `__unit` number) back into one list per unit, in order."""
    current: list[Row] = []
    last: Any = None
    for values in rows:
        unit = values[width]
        if current and unit != last:
            yield current
            current = []
        current.append(values[:width])
        last = unit
    if current:
        yield current
