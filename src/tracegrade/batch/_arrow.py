"""Span tables in the ClickHouse `otel_traces` layout (also otlp2parquet's) ↔ `Span`s, and reading
Parquet files, Parquet datasets and Delta tables of that layout with the filters pushed down.

Layout (one row per span): `Timestamp` (start, ns), `TraceId` / `SpanId` / `ParentSpanId` (hex),
`TraceState`, `SpanName`, `SpanKind` (`Client` or `SPAN_KIND_CLIENT`), `ServiceName`,
`ResourceAttributes` / `SpanAttributes` (maps of strings), `ScopeName`, `ScopeVersion`, `Duration`
(ns), `StatusCode` (`Error` or `STATUS_CODE_ERROR`), `StatusMessage`, `Events.Timestamp` /
`Events.Name` / `Events.Attributes` (parallel arrays), `Links.*` (not read). Attribute values are
strings, as the exporter writes them (numbers as decimal text, arrays and maps as JSON): they are
kept as strings, which the dialects read.
"""

from __future__ import annotations

import base64
import operator
import os
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from .._gc import paused_gc
from ..spans import Span, SpanEvent
from ._core import BatchInputError, Condition, normal_kind, normal_status

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.dataset as ds

__all__ = [
    "READ_COLUMNS",
    "SpanTableSource",
    "arrow_spans",
    "bucket_ranges",
    "check_columns",
    "require_pyarrow",
    "span_schema",
    "spans_to_table",
    "table_traces",
    "write_span_parquet",
]

REQUIRED = ("Timestamp", "TraceId", "SpanId", "ParentSpanId", "SpanName")
READ_COLUMNS = (
    *REQUIRED, "SpanKind", "ServiceName", "ResourceAttributes", "ScopeName", "ScopeVersion", "SpanAttributes",
    "Duration", "StatusCode", "StatusMessage", "Events.Timestamp", "Events.Name", "Events.Attributes",
)  # fmt: skip
"""The columns read (when present); `TraceState` and `Links.*` are not."""


def require_pyarrow(extra: str = "batch") -> Any:
    try:
        import pyarrow
    except ImportError:
        raise ImportError(f'reading and writing span tables needs pyarrow: pip install "tracegrade[{extra}]"') from None
    return pyarrow


# --- Span → table (writing fixtures, exporting) --------------------------------------------------


def _text(value: Any) -> str:
    """An attribute value as the ClickHouse exporter writes it (pcommon `AsString`)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return orjson.dumps(value, default=repr, option=orjson.OPT_NON_STR_KEYS).decode()


def span_schema() -> pa.Schema:
    pa = require_pyarrow()
    attrs = pa.map_(pa.string(), pa.string())
    ts = pa.timestamp("ns", tz="UTC")
    return pa.schema([
        ("Timestamp", ts), ("TraceId", pa.string()), ("SpanId", pa.string()), ("ParentSpanId", pa.string()),
        ("TraceState", pa.string()), ("SpanName", pa.string()), ("SpanKind", pa.string()),
        ("ServiceName", pa.string()), ("ResourceAttributes", attrs), ("ScopeName", pa.string()),
        ("ScopeVersion", pa.string()), ("SpanAttributes", attrs), ("Duration", pa.uint64()),
        ("StatusCode", pa.string()), ("StatusMessage", pa.string()), ("Events.Timestamp", pa.list_(ts)),
        ("Events.Name", pa.list_(pa.string())), ("Events.Attributes", pa.list_(attrs)),
        ("Links.TraceId", pa.list_(pa.string())), ("Links.SpanId", pa.list_(pa.string())),
        ("Links.TraceState", pa.list_(pa.string())), ("Links.Attributes", pa.list_(attrs)),
    ])  # fmt: skip


def spans_to_table(spans: Iterable[Span]) -> pa.Table:
    """Spans as a table in the ClickHouse `otel_traces` layout (what its exporter would have stored)."""
    pa = require_pyarrow()
    cols: dict[str, list[Any]] = {f.name: [] for f in span_schema()}
    for s in spans:
        c = cols
        c["Timestamp"].append(s.start_ns)
        c["TraceId"].append(f"{s.trace_id:032x}")
        c["SpanId"].append(f"{s.span_id:016x}")
        c["ParentSpanId"].append("" if s.parent_id is None else f"{s.parent_id:016x}")
        c["TraceState"].append("")
        c["SpanName"].append(s.name)
        c["SpanKind"].append(s.kind.title())
        c["ServiceName"].append(str(s.resource.get("service.name", "")))
        c["ResourceAttributes"].append([(k, _text(v)) for k, v in s.resource.items()])
        c["ScopeName"].append(s.scope_name)
        c["ScopeVersion"].append(s.scope_version)
        c["SpanAttributes"].append([(k, _text(v)) for k, v in s.attributes.items()])
        c["Duration"].append(s.duration_ns)
        c["StatusCode"].append(s.status.title())
        c["StatusMessage"].append(s.status_message)
        c["Events.Timestamp"].append([e.time_ns for e in s.events])
        c["Events.Name"].append([e.name for e in s.events])
        c["Events.Attributes"].append([[(k, _text(v)) for k, v in e.attributes.items()] for e in s.events])
        for name in ("Links.TraceId", "Links.SpanId", "Links.TraceState", "Links.Attributes"):
            c[name].append([])
    return pa.table(cols, schema=span_schema())


def write_span_parquet(spans: Iterable[Span], path: str | os.PathLike[str], *, row_group_size: int = 64_000) -> Path:
    """Write spans as a Parquet file in the ClickHouse `otel_traces` layout."""
    require_pyarrow()
    import pyarrow.parquet as pq

    pq.write_table(spans_to_table(spans), path, row_group_size=row_group_size)
    return Path(path)


# --- table → Spans ----------------------------------------------------------------------------------


def _ids(values: list[Any], width: int, column: str, where: str) -> list[int]:
    try:
        return [int(v, 16) if v else 0 for v in values]
    except (TypeError, ValueError):
        pass
    out = []
    for v in values:
        try:
            n = int(v, 16) if v else 0
        except (TypeError, ValueError):
            n = -1
        if not 0 <= n < 1 << (width * 4) or (v and len(v) > width):
            raise BatchInputError(f"{where}: column {column}: expected a {width}-digit hex id, got {v!r}")
        out.append(n)
    return out


def _nanos(column: Any) -> list[Any]:
    import pyarrow as pa

    if pa.types.is_timestamp(column.type) or pa.types.is_date(column.type):
        column = column.cast(pa.timestamp("ns", tz=getattr(column.type, "tz", None))).cast(pa.int64())
    return column.to_pylist()  # type: ignore[no-any-return]


def _strings(array: Any) -> list[Any]:
    """A string array as a list, each distinct value one shared `str` (map keys repeat on every row:
    decoded and hashed once)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(array) < 2:
        return array.to_pylist()  # type: ignore[no-any-return]
    encoded = array if pa.types.is_dictionary(array.type) else pc.dictionary_encode(array)
    distinct = encoded.dictionary.to_pylist()
    return list(operator.itemgetter(*encoded.indices.to_pylist())(distinct))


def _maps(column: Any, shared: bool = False) -> list[Any]:
    """A map column as one dict (or None) per row: from the flattened keys and values, much faster
    than pyarrow's `to_pylist` of a map (which builds a tuple per entry). `shared`: equal maps of
    consecutive rows are one dict (resources)."""
    import pyarrow as pa

    if not pa.types.is_map(column.type):
        return [None if v is None else dict(v) for v in column.to_pylist()]
    out: list[Any] = []
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    for arr in chunks:
        offsets = arr.offsets.to_pylist()
        lo, hi = offsets[0], offsets[-1]
        entries = arr.values.slice(lo, hi - lo)  # offsets index the unsliced entries
        keys, values = _strings(entries.field(0)), entries.field(1).to_pylist()
        valid = arr.is_valid().to_pylist() if arr.null_count else None
        last: tuple[list[Any], list[Any], dict[str, Any]] | None = None
        for i in range(len(arr)):
            if valid is not None and not valid[i]:
                out.append(None)
                continue
            a, b = offsets[i] - lo, offsets[i + 1] - lo
            k, v = keys[a:b], values[a:b]
            if shared:
                if last is not None and last[0] == k and last[1] == v:
                    out.append(last[2])
                    continue
                last = (k, v, dict(zip(k, v, strict=True)))
                out.append(last[2])
            else:
                out.append(dict(zip(k, v, strict=True)))
    return out


def arrow_spans(table: pa.Table | pa.RecordBatch, where: str, order: Sequence[int] | None = None) -> list[Span]:
    """The spans of a table (or record batch) in the span layout, in row order (or in `order`)."""
    with paused_gc():  # tens of thousands of acyclic objects: no cyclic-GC passes over them while they are built
        return _arrow_spans(table, where, order)


def _arrow_spans(table: pa.Table | pa.RecordBatch, where: str, order: Sequence[int] | None) -> list[Span]:
    names = set(table.schema.names)
    if missing := [c for c in REQUIRED if c not in names]:
        raise BatchInputError(
            f"{where}: not a span table in the ClickHouse otel_traces layout: missing column(s) {', '.join(missing)}"
        )
    n = table.num_rows

    def col(name: str, default: Any) -> list[Any]:
        return table.column(name).to_pylist() if name in names else [default] * n

    def maps(name: str, shared: bool = False) -> list[Any]:
        return _maps(table.column(name), shared) if name in names else [None] * n

    start = _nanos(table.column("Timestamp"))
    trace_ids = _ids(table.column("TraceId").to_pylist(), 32, "TraceId", where)
    span_ids = _ids(table.column("SpanId").to_pylist(), 16, "SpanId", where)
    parent_ids = _ids(table.column("ParentSpanId").to_pylist(), 16, "ParentSpanId", where)
    span_names = table.column("SpanName").to_pylist()
    kinds, statuses = col("SpanKind", ""), col("StatusCode", "")
    services, messages = col("ServiceName", ""), col("StatusMessage", "")
    scopes, versions = col("ScopeName", ""), col("ScopeVersion", "")
    durations = col("Duration", None)
    resources, attributes = maps("ResourceAttributes", shared=True), maps("SpanAttributes")
    has_events = "Events.Name" in names and _any_items(table.column("Events.Name"))
    ev_times = _nanos_lists(table.column("Events.Timestamp")) if has_events and "Events.Timestamp" in names else None
    ev_names = col("Events.Name", None) if has_events else []
    ev_attrs = col("Events.Attributes", None) if has_events else []
    kind_of: dict[str, str] = {}
    status_of: dict[str, str] = {}
    out: list[Span] = []
    for i in range(n) if order is None else order:
        if not trace_ids[i] or not span_ids[i]:
            raise BatchInputError(
                f"{where}: {_row_name(trace_ids[i], span_ids[i])}: empty {'SpanId' if trace_ids[i] else 'TraceId'}"
            )
        k = kinds[i] or ""
        kind = kind_of.get(k) or kind_of.setdefault(k, normal_kind(k) or "")
        if not kind:
            raise BatchInputError(f"{where}: {_row_name(trace_ids[i], span_ids[i])}: unknown SpanKind {k!r}")
        st = statuses[i] or ""
        status = status_of.get(st) or status_of.setdefault(st, normal_status(st) or "")
        if not status:
            raise BatchInputError(f"{where}: {_row_name(trace_ids[i], span_ids[i])}: unknown StatusCode {st!r}")
        resource = resources[i] or {}
        if services[i] and "service.name" not in resource:
            resource = {**resource, "service.name": services[i]}
        events: tuple[SpanEvent, ...] = ()
        if has_events and ev_names[i]:
            times = ev_times[i] if ev_times is not None else None
            attrs = ev_attrs[i]
            events = tuple(
                SpanEvent(name or "", (times[j] if times else 0) or 0, dict(attrs[j]) if attrs and attrs[j] else {})
                for j, name in enumerate(ev_names[i])
            )
        s = start[i]
        d = durations[i]
        out.append(Span(
            trace_ids[i], span_ids[i], parent_ids[i] or None, span_names[i] or "", s,
            None if d is None else s + d, attributes[i] or {}, status,  # type: ignore[arg-type]
            messages[i] or "", kind, events, resource, scopes[i] or "", versions[i] or "",  # type: ignore[arg-type]
        ))  # fmt: skip
    return out


def _row_name(trace_id: int, span_id: int) -> str:
    """A row named by its ids (the same whichever engine, batch or task reads it), as far as it has them."""
    if trace_id and span_id:
        return f"span {span_id:016x} of trace {trace_id:032x}"
    if trace_id:
        return f"a span of trace {trace_id:032x}"
    return f"span {span_id:016x}" if span_id else "a span"


def _any_items(column: Any) -> bool:
    """Whether a list column holds any item (most span tables have no events)."""
    import pyarrow.compute as pc

    return bool(pc.sum(pc.list_value_length(column)).as_py())


def table_traces(table: pa.Table, where: str) -> Iterator[list[Span]]:
    """The spans of an unsorted table, one list per trace, traces by id (spans by start time, span id).

    Rows are visited in sorted order through an index (sorting the table itself would copy its
    large attribute maps, which Arrow does slowly). Ids are compared as the Spark engine compares
    them: the text lowercased, then the traces by their numeric id."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not table.num_rows:
        return
    ids = table.column("TraceId")
    keyed = pa.table({
        "t": pc.utf8_lower(ids) if pa.types.is_string(ids.type) or pa.types.is_large_string(ids.type) else ids,
        "ts": table.column("Timestamp"), "s": table.column("SpanId"),
    })  # fmt: skip
    order = pc.sort_indices(keyed, sort_keys=[("t", "ascending"), ("ts", "ascending"), ("s", "ascending")])
    traces = list(iter_trace_groups([arrow_spans(table, where, order.to_pylist())], where))
    traces.sort(key=_trace_id)  # stable: the text order for ids of one value (a trace split by agent run later)
    yield from traces


def _trace_id(spans: list[Span]) -> int:
    return spans[0].trace_id


def _nanos_lists(column: Any) -> list[Any]:
    import pyarrow as pa
    import pyarrow.compute as pc

    t = column.type
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_timestamp(t.value_type):
        column = (
            column.cast(pa.list_(pa.int64()))
            if not pa.types.is_large_list(t)
            else pc.cast(column, pa.large_list(pa.int64()))
        )
    return column.to_pylist()  # type: ignore[no-any-return]


def iter_trace_groups(batches: Iterable[pa.RecordBatch | pa.Table | list[Span]], where: str) -> Iterator[list[Span]]:
    """Spans of batches (or span lists) sorted by trace id, as one list per trace (a trace may cross batches),
    without the exact copies of a row (a span written twice, as a retried export writes it: `TraceFileWarning`)."""
    pending: list[Span] = []
    for batch in batches:
        spans = batch if isinstance(batch, list) else arrow_spans(batch, where)
        if not spans:
            continue
        start = 0
        for i in range(1, len(spans) + 1):
            if i == len(spans) or spans[i].trace_id != spans[start].trace_id:
                group = spans[start:i]
                if pending and pending[0].trace_id != group[0].trace_id:
                    yield _once(pending, where)
                    pending = []
                pending.extend(group)
                start = i
    if pending:
        yield _once(pending, where)


def _once(spans: list[Span], where: str) -> list[Span]:
    """One trace's spans, each exact copy of an earlier row dropped with a warning (two different spans with one id
    stay: the tree refuses them, naming the id)."""
    if len({s.span_id for s in spans}) == len(spans):
        return spans
    from ..ingest._read import TraceFileWarning
    from ..ingest._traces import without_copies

    kept, dropped = without_copies(spans)
    if dropped:
        warnings.warn(
            f"{where}: dropped {dropped} exact duplicate span row(s) of trace {spans[0].trace_id:032x}",
            TraceFileWarning,
            stacklevel=2,
        )
    return kept


# --- reading sources ------------------------------------------------------------------------------


def bucket_ranges(k: int) -> list[tuple[str, str]]:
    """`k` contiguous ranges of trace-id prefixes (two hex digits) covering all ids, in order."""
    edges = [round(i * 256 / k) for i in range(k + 1)]
    return [(f"{edges[i]:02x}", "" if edges[i + 1] >= 256 else f"{edges[i + 1]:02x}") for i in range(k)]


class SpanTableSource:
    """A Parquet file, a directory of Parquet files (a dataset, hive partitions allowed) or a Delta table."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        self.path = os.fspath(path)
        self.kind = kind  # "parquet" | "delta"

    def __repr__(self) -> str:
        return f"SpanTableSource({self.path!r}, {self.kind!r})"

    def files(self) -> list[str]:
        """The Parquet files holding the table (a Delta table's current version)."""
        if self.kind == "delta":
            return list(_delta(self.path).file_uris())
        p = Path(self.path)
        if p.is_dir():
            return [
                str(f)
                for f in sorted(p.rglob("*.parquet"))
                if not any(x.startswith((".", "_")) for x in f.relative_to(p).parts)
            ]
        return [self.path]

    def dataset(self) -> ds.Dataset:
        require_pyarrow("delta" if self.kind == "delta" else "batch")
        import pyarrow.dataset as ds

        try:
            if self.kind == "delta":
                return _delta(self.path).to_pyarrow_dataset()
            return ds.dataset(self.path, format="parquet", partitioning="hive")
        except (OSError, ValueError) as e:
            raise BatchInputError(f"{self.path}: cannot open as a {self.kind} span table: {e}") from None

    def scan(
        self, conditions: Sequence[Condition], bound: int, bucket: tuple[str, str] | None, batch_size: int = 16_384
    ) -> pa.Table:
        """The rows passing the filters, read column-projected with the filters pushed into the scan."""
        dataset = self.dataset()
        names = set(dataset.schema.names)
        check_columns(self.path, names, conditions)
        columns = [c for c in READ_COLUMNS if c in names]
        expr = filter_expression(dataset.schema, conditions, bound, bucket)
        try:
            # one thread: the engines run one task per core, so decoding threads would only compete with them
            return dataset.to_table(columns=columns, filter=expr, batch_size=batch_size, use_threads=False)
        except (OSError, ValueError, TypeError) as e:  # pyarrow's ArrowInvalid is a ValueError
            raise BatchInputError(f"{self.path}: cannot read the span table: {e}") from None

    def count_rows(self) -> int:
        return int(self.dataset().count_rows())


def check_columns(path: str, names: Iterable[str], conditions: Sequence[Condition]) -> None:
    """Raise `BatchInputError` unless a table with columns `names` (hive partitions included) has the
    span layout's required columns and every column a `where` condition filters on."""
    names = set(names)
    if missing := [c for c in REQUIRED if c not in names]:
        raise BatchInputError(
            f"{path}: not a span table in the ClickHouse otel_traces layout: missing column(s) "
            f"{', '.join(missing)}; columns: {', '.join(sorted(names)[:20])}"
        )
    for c in conditions:
        if c.field not in names and c.field != "TraceId":
            raise BatchInputError(f"--where {c.text!r}: the table has no {c.field} column")


def _delta(path: str) -> Any:
    try:
        from deltalake import DeltaTable
    except ImportError:
        raise ImportError('reading Delta tables needs deltalake: pip install "tracegrade[delta]"') from None
    try:
        return DeltaTable(path)
    except Exception as e:  # deltalake raises its own TableNotFoundError / DeltaError
        raise BatchInputError(f"{path}: cannot open as a Delta table: {e}") from None


_KIND_SPELLINGS = {
    k: [k, k.title(), k.upper(), f"SPAN_KIND_{k.upper()}"] for k in ("server", "client", "producer", "consumer")
}
_KIND_SPELLINGS["internal"] = ["internal", "Internal", "INTERNAL", "SPAN_KIND_INTERNAL", "Unspecified",
                               "UNSPECIFIED", "SPAN_KIND_UNSPECIFIED", ""]  # fmt: skip
_STATUS_SPELLINGS = {
    "unset": ["unset", "Unset", "UNSET", "STATUS_CODE_UNSET", ""],
    "ok": ["ok", "Ok", "OK", "STATUS_CODE_OK"],
    "error": ["error", "Error", "ERROR", "STATUS_CODE_ERROR"],
}


def filter_expression(
    schema: pa.Schema, conditions: Sequence[Condition], bound: int, bucket: tuple[str, str] | None
) -> ds.Expression | None:
    """The scan filter: the `where` conditions, the trace-id sample (low 64 bits of the id below the
    bound: the last 16 hex digits compared as text) and a trace-id prefix range. The columns are
    checked (`check_columns`) first."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    parts: list[Any] = []
    trace = pc.utf8_lower(ds.field("TraceId"))
    for c in conditions:
        parts.append(_condition_expression(schema, c, trace))
    if bound < 1 << 64:
        parts.append(pc.utf8_slice_codeunits(trace, 16, 32) < pa.scalar(f"{bound:016x}"))
    if bucket is not None:
        lo, hi = bucket
        prefix = pc.utf8_slice_codeunits(trace, 0, 2)
        if lo != "00":
            parts.append(prefix >= pa.scalar(lo))
        if hi:
            parts.append(prefix < pa.scalar(hi))
    if not parts:
        return None
    expr = parts[0]
    for p in parts[1:]:
        expr = expr & p
    return expr  # type: ignore[no-any-return]


def _condition_expression(schema: pa.Schema, c: Condition, trace: Any) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    if c.field in ("SpanKind", "StatusCode"):
        spellings = _KIND_SPELLINGS if c.field == "SpanKind" else _STATUS_SPELLINGS
        values = pa.array([s for v in c.values for s in spellings[v]], pa.string())
        inside = pc.is_in(ds.field(c.field), value_set=values)
        return inside if c.op in ("=", "in") else ~inside
    if c.field == "TraceId":
        field = trace
    elif c.field == "Timestamp":
        field = ds.field("Timestamp")
        t = schema.field("Timestamp").type
        if pa.types.is_timestamp(t):  # compare as ns since the epoch, whatever the column's unit
            field = field.cast(pa.timestamp("ns", tz=t.tz)).cast(pa.int64())
    else:
        field = ds.field(c.field)
    if c.field == "Duration":
        field = field.cast(pa.int64())
    scalars = [pa.scalar(v) for v in c.values]
    if c.op in ("in", "not in"):
        inside = pc.is_in(field, value_set=pa.array(c.values))
        return inside if c.op == "in" else ~inside
    v = scalars[0]
    return {"=": field == v, "!=": field != v, "<": field < v, "<=": field <= v, ">": field > v, ">=": field >= v}[c.op]
