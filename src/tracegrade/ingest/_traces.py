"""Grouping spans into traces while streaming, per-trace validation, and one tree per agent run."""

from __future__ import annotations

import bisect
import os
import warnings
from collections import OrderedDict
from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeAlias

from ..errors import TraceFormatError
from ..spans import LogRecord, Span, SpanEvent
from ..trajectory import AgentRun
from ..tree import SpanNode, SpanTree
from ._errors import DEFAULT_MAX_ATTRIBUTE_BYTES, DEFAULT_MAX_INFLATED_BYTES
from ._logs import file_logs, holds_traces, is_logs_file
from ._read import Batch, LogsMode, Origin, TraceFileWarning, read_batches

_REPORTED = 20
"""Traces whose exact duplicate spans (or late log records) are each reported; past them, one sum at the
end of the file."""

__all__ = [
    "DEFAULT_IDLE_LINES", "RECORDING_ID", "PathArg", "iter_traces", "load_traces", "logs_by_trace", "read_spans",
    "read_tree", "recording_id", "split_inputs", "trace_files", "trees_of", "without_copies",
]  # fmt: skip

PathArg: TypeAlias = "str | os.PathLike[str] | Iterable[str | os.PathLike[str]]"
DEFAULT_IDLE_LINES = 1000
TRACE_SUFFIXES = (".json", ".jsonl", ".ndjson", ".otlp", ".pb", ".binpb", ".protobuf")
RECORDING_ID = "tracegrade.recording.id"
"""Resource attribute naming the recorded run a trace belongs to (`pytest --tracegrade-record` sets it):
the traces of one recording in one file are one unit (one tree), whatever their trace ids."""


def recording_id(tree: SpanTree) -> str | None:
    """The recorded run a tree is (its `RECORDING_ID` resource attribute), or None."""
    for node in tree.roots[:1] or tree.nodes[:1]:
        value = node.resource.get(RECORDING_ID)
        return value if isinstance(value, str) else None
    return None


def _recording_of(spans: list[Span]) -> str | None:
    value = spans[0].resource.get(RECORDING_ID) if spans else None
    return value if isinstance(value, str) and value else None


def trace_files(source: PathArg) -> list[Path]:
    """Files to read: a file as is; a directory's trace files (by suffix, recursively, sorted); a list of either,
    each file once (a file named again, directly or inside a directory, is read where it first came)."""
    if not isinstance(source, str | os.PathLike):
        seen: set[Path] = set()
        out: list[Path] = []
        for item in source:
            for f in _files(item):
                key = f.resolve()
                if key not in seen:
                    seen.add(key)
                    out.append(f)
        return out
    return _files(source)


def _files(source: PathArg) -> list[Path]:
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.is_dir():
            return [path]
        found: list[Path] = []
        ignored: list[Path] = []
        for p in sorted(path.rglob("*")):
            rel = p.relative_to(path)
            if any(part.startswith(".") for part in rel.parts) or not p.is_file():
                continue
            suffixes = p.name.lower().removesuffix(".gz")
            (found if suffixes.endswith(TRACE_SUFFIXES) else ignored).append(p)
        if ignored:
            names = ", ".join(str(p.relative_to(path)) for p in ignored[:5]) + (", ..." if len(ignored) > 5 else "")
            warnings.warn(
                f"{path}: ignored {len(ignored)} file(s) without a trace file suffix ({names})",
                TraceFileWarning,
                stacklevel=4,
            )
        return found
    return trace_files(source)


class _Trace:
    __slots__ = ("has_root", "last", "runs", "seq", "spans")

    def __init__(self, seq: int) -> None:
        self.seq = seq
        self.spans: list[Span] = []
        self.runs: list[tuple[int, Origin, int]] = []
        """(index in `spans`, origin, index in its request) of each run of spans read one after the
        other from one request: locates any span for an error without a record per span."""
        self.has_root = False
        self.last = 0

    def at(self, k: int) -> tuple[Origin, int]:
        """Where `spans[k]` was read: its request and its index there."""
        i = bisect.bisect_right(self.runs, k, key=lambda run: run[0]) - 1
        start, origin, index = self.runs[i]
        return origin, index + k - start


class _Grouper:
    """Buffers spans per trace id; a trace is complete once its root (a span without a parent) has
    been seen and no span of it arrived for `idle` batches (lines), or at the end of the input."""

    def __init__(self, idle: int) -> None:
        self.idle = idle
        self.active: OrderedDict[int, _Trace] = OrderedDict()  # by last activity
        self.rootless: dict[int, _Trace] = {}
        self.emitted: set[int] = set()
        self.tick = 0
        self.seq = 0
        self.duplicates = 0
        self.warned = 0

    def add(self, batch: Batch) -> Iterator[list[Span]]:
        self.tick += 1
        tick, origin = self.tick, batch.origin
        active = self.active
        trace: _Trace | None = None
        current = 0
        for index, span in enumerate(batch.spans):
            if span.trace_id != current or trace is None:
                current = tid = span.trace_id
                trace = active.get(tid)
                if trace is None:
                    trace = self.rootless.pop(tid, None) or self._new(tid, origin, index)
                    active[tid] = trace
                elif trace.last != tick:
                    active.move_to_end(tid)
                trace.last = tick
                trace.runs.append((len(trace.spans), origin, index))
            if span.parent_id is None:
                trace.has_root = True
            trace.spans.append(span)
        while active:
            tid, trace = next(iter(active.items()))
            if trace.last > tick - self.idle:
                break
            del active[tid]
            if trace.has_root:
                yield self._emit(tid, trace)
            else:
                self.rootless[tid] = trace

    def flush(self) -> Iterator[list[Span]]:
        pending = sorted([*self.active.items(), *self.rootless.items()], key=lambda item: item[1].seq)
        self.active.clear()
        self.rootless.clear()
        for tid, trace in pending:
            yield self._emit(tid, trace)
        self.emitted.clear()

    def _new(self, tid: int, origin: Origin, index: int) -> _Trace:
        if tid in self.emitted:
            warnings.warn(
                f"{origin.where(index)}: trace {tid:032x} has spans after it was emitted as complete "
                f"({self.idle} lines without a span of it); they form a separate trace (raise idle_lines)",
                TraceFileWarning,
                stacklevel=4,
            )
        self.seq += 1
        return _Trace(self.seq)

    def _emit(self, tid: int, trace: _Trace) -> list[Span]:
        self.emitted.add(tid)
        spans, dropped = _validate(tid, trace)
        if dropped:
            self.duplicates += len(dropped)
            self.warned += 1
            if self.warned <= _REPORTED:
                origin, index = trace.at(dropped[0][1])
                first = trace.at(dropped[0][0])
                warnings.warn(
                    f"{origin.where(index)}: dropped {len(dropped)} exact duplicate span(s) of trace {tid:032x}, "
                    f"the same spans recorded again (an exporter retrying a request; first copy at "
                    f"{first[0].where(first[1])})",
                    TraceFileWarning,
                    stacklevel=4,
                )
        return spans

    def report_duplicates(self, where: str) -> None:
        """Sum up the duplicates past the first warnings (at the end of a file, or of the input)."""
        if self.warned > _REPORTED:
            warnings.warn(
                f"{where}: dropped {self.duplicates:,} exact duplicate span(s) in {self.warned:,} traces in all",
                TraceFileWarning,
                stacklevel=4,
            )
        self.duplicates = self.warned = 0


def same_span(a: Any, b: Any) -> bool:
    """`a` and `b` are one recorded span (or value of one) twice: equal field for field, with equal
    types (1, 1.0 and True differ; NaN equals NaN)."""
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is float:
        return bool(a == b or (a != a and b != b))
    if kind is Span or kind is SpanEvent:
        return all(same_span(getattr(a, f), getattr(b, f)) for f in a.__slots__)
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(same_span(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping):
        return a.keys() == b.keys() and all(same_span(v, b[k]) for k, v in a.items())
    return bool(a == b)


def _validate(tid: int, trace: _Trace) -> tuple[list[Span], list[tuple[int, int]]]:
    """The trace's spans without exact duplicates (`same_span`: the same span read twice, as an
    exporter's retried request writes it), and the (first, copy) indexes of those dropped. Raise on
    two different spans with one id, or a span that is its own ancestor (which no root reaches)."""
    spans = trace.spans
    parent = {s.span_id: s.parent_id for s in spans}
    dropped: list[tuple[int, int]] = []
    if len(parent) != len(spans):
        seen: dict[int, int] = {}
        for k, s in enumerate(spans):
            if (first := seen.setdefault(s.span_id, k)) == k:
                continue
            if same_span(spans[first], s):
                dropped.append((first, k))
                continue
            where = trace.at(first)
            origin, index = trace.at(k)
            problem = (
                f"duplicate span id {s.span_id:016x} in trace {tid:032x}: two different spans (first seen at "
                f"{where[0].where(where[1])})"
            )
            raise origin.error(problem, index)
    state: dict[int, bool] = {}  # span id → True while on the path being walked, False once checked
    for sid in parent:
        if sid in state:
            continue
        path: list[int] = []
        cur: int | None = sid
        while cur is not None and cur in parent:
            on_path = state.get(cur)
            if on_path is False:
                break
            if on_path:
                cycle = " → ".join(f"{c:016x}" for c in [*path[path.index(cur) :], cur])
                origin, index = trace.at(next(k for k, s in enumerate(spans) if s.span_id == cur))
                raise origin.error(f"parent cycle in trace {tid:032x}: span {cycle} is its own ancestor", index)
            state[cur] = True
            path.append(cur)
            cur = parent[cur]
        for p in path:
            state[p] = False
    if dropped:
        copies = {k for _, k in dropped}
        spans = [s for k, s in enumerate(spans) if k not in copies]
    return spans, dropped


def _inputs(
    source: PathArg, max_attribute_bytes: int, idle_lines: int, max_inflated_bytes: int
) -> tuple[list[Path], list[Path]]:
    """`split_inputs` of `source`'s files, after checking the limits."""
    if max_attribute_bytes < 1 or idle_lines < 1 or max_inflated_bytes < 1:
        raise ValueError("max_attribute_bytes, idle_lines and max_inflated_bytes must be positive")
    return split_inputs(trace_files(source), max_inflated_bytes)


def split_inputs(files: Iterable[Path], max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES) -> tuple[list[Path], list[Path]]:
    """(files to read spans from, OTLP logs files to read first), each file sniffed once. A logs
    file (its first request is logs) that holds trace requests too, as one collector `file` exporter
    in both pipelines writes, is in both: its records are read first, its spans in its turn."""
    traces: list[Path] = []
    logs: list[Path] = []
    for path in files:
        if not is_logs_file(path, max_inflated_bytes):
            traces.append(path)
            continue
        logs.append(path)
        if holds_traces(path, max_inflated_bytes):
            traces.append(path)
    return traces, logs


class _Streamed:
    """The log records read from the trace files themselves (JSON lines or protobuf streams holding
    both signals, read with `logs="read"`), held by trace id until their trace is emitted."""

    def __init__(self, grouper: _Grouper) -> None:
        self.grouper = grouper
        self.held: dict[int, list[LogRecord]] = {}
        self.late = self.late_records = 0

    def add(self, batch: Batch) -> None:
        grouper, held = self.grouper, self.held
        late: dict[int, int] = {}
        for record in batch.records:
            tid = record.trace_id
            if tid and tid in grouper.emitted and tid not in grouper.active and tid not in grouper.rootless:
                late[tid] = late.get(tid, 0) + 1
                continue
            group = held.get(tid)
            if group is None:
                held[tid] = group = []
            group.append(record)
        for tid, n in late.items():
            self.late += 1
            if self.late <= _REPORTED:
                origin = batch.origin
                where = origin.path if origin.line is None else f"{origin.path}:{origin.line}"
                warnings.warn(
                    f"{where}{': ' + origin.label if origin.label else ''}: {n} log record(s) of trace {tid:032x} "
                    f"come after the trace was emitted as complete ({grouper.idle} lines without a span of it); "
                    "they are not attached (raise idle_lines)",
                    TraceFileWarning,
                    stacklevel=5,
                )
            self.late_records += n

    def take(self, tid: int) -> list[LogRecord]:
        """The records of trace `tid` (no longer held)."""
        return self.held.pop(tid, []) if self.held else []

    def anonymous(self) -> list[LogRecord]:
        """The records naming no trace, offered to every tree (they count as unattached)."""
        return self.held.get(0, []) if self.held else []

    def close(self, where: str) -> None:
        """At the end of a file (or of the input): report the records no tree took."""
        left = sum(len(records) for tid, records in self.held.items() if tid)
        if self.late > _REPORTED:
            warnings.warn(
                f"{where}: {self.late_records:,} log records of {self.late:,} traces in all came after their trace was "
                "emitted and are not attached",
                TraceFileWarning,
                stacklevel=4,
            )
        if left:
            traces = sum(1 for tid in self.held if tid)
            warnings.warn(
                f"{where}: {left:,} log record(s) name {traces:,} trace(s) that have no spans there; they are not "
                "attached (records read from a trace file attach to its own traces: give a rotated file's "
                "siblings with per_file=False)",
                TraceFileWarning,
                stacklevel=4,
            )
        self.held.clear()
        self.late = self.late_records = 0


def _groups(
    files: list[Path], max_attribute_bytes: int, idle_lines: int, per_file: bool, max_inflated_bytes: int,
    logs_files: Collection[Path] | None = None, sink: list[LogRecord] | None = None,
) -> Iterator[list[Span]]:  # fmt: skip
    units = _units(files, max_attribute_bytes, idle_lines, per_file, max_inflated_bytes, logs_files, sink)
    for spans, _, _ in units:
        yield spans


def _units(
    files: list[Path], max_attribute_bytes: int, idle_lines: int, per_file: bool, max_inflated_bytes: int,
    logs_files: Collection[Path] | None = None, sink: list[LogRecord] | None = None,
) -> Iterator[tuple[list[Span], bool, list[LogRecord]]]:  # fmt: skip
    """(spans, is a recording, log records read with them) of each unit: a trace, or every trace of one
    recorded run (by `RECORDING_ID`, in start order, once the file, or with `per_file=False` the input,
    is read).

    Logs requests in the files: with `logs_files=None` skipped with a warning (spans only); else a file
    of `logs_files` (read as logs already) skips them, and any other file's records go to the units of
    their traces (held until the trace is emitted; records after it are reported), or all to `sink`."""
    grouper = _Grouper(idle_lines)
    streamed = _Streamed(grouper)
    recordings: dict[str, list[tuple[list[Span], list[LogRecord]]]] = {}

    def sort(groups: Iterator[list[Span]]) -> Iterator[tuple[list[Span], bool, list[LogRecord]]]:
        for group in groups:
            rid = _recording_of(group)
            records = streamed.take(group[0].trace_id)  # a group is one trace
            if rid is None:
                yield group, False, [*records, *streamed.anonymous()] if records or streamed.held else records
            else:
                recordings.setdefault(rid, []).append((group, records))

    def release() -> Iterator[tuple[list[Span], bool, list[LogRecord]]]:
        for traces in recordings.values():
            traces.sort(key=lambda t: min((s.start_ns, s.span_id) for s in t[0]))
            records = [r for _, rs in traces for r in rs]
            yield [s for t, _ in traces for s in t], True, [*records, *streamed.anonymous()]
        recordings.clear()

    def where(paths: list[Path]) -> str:
        return str(paths[0]) if len(paths) == 1 else f"{paths[0]} (and {len(paths) - 1} more files)"

    for path in files:
        mode: LogsMode = "warn" if logs_files is None else "skip" if path in logs_files else "read"
        for batch in read_batches(path, max_attribute_bytes, max_inflated_bytes, mode):
            if batch.records:
                if sink is not None:
                    sink.extend(batch.records)
                else:
                    streamed.add(batch)
                if not batch.spans:
                    continue
            yield from sort(grouper.add(batch))
        if per_file:
            yield from sort(grouper.flush())
            grouper.report_duplicates(str(path))
            yield from release()
            streamed.close(str(path))
    yield from sort(grouper.flush())
    if files:
        grouper.report_duplicates(where(files))
    yield from release()
    if files:
        streamed.close(where(files))


def read_spans(
    source: PathArg,
    *,
    max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
    idle_lines: int = DEFAULT_IDLE_LINES,
    per_file: bool = True,
    max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES,
) -> Iterator[Span]:
    """Every span of a trace file (or directory, or list of them), trace by trace.

    The format is sniffed from the content (see `tracegrade.ingest`). Spans come grouped by trace,
    each trace once it is complete (see `iter_traces`), in file order within a trace; every trace is
    checked for duplicate span ids and parent cycles first (an exact copy of a span, as a retried
    export request writes, is dropped with a `TraceFileWarning`). Bad input raises `TraceFormatError`.
    A gzip-compressed file that inflates to more than `max_inflated_bytes` is an error.
    """
    traces, _logs = _inputs(source, max_attribute_bytes, idle_lines, max_inflated_bytes)
    for group in _groups(traces, max_attribute_bytes, idle_lines, per_file, max_inflated_bytes):
        yield from group


def read_tree(
    source: PathArg,
    *,
    max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
    idle_lines: int = DEFAULT_IDLE_LINES,
    max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES,
) -> SpanTree:
    """Every span of `source` (a file, a directory or a list of them) as one tree, one graded unit, with the
    records of the OTLP logs files among the inputs attached to the spans they name (`grade(path)` reads a path
    so). Bad input raises `TraceFormatError`, as does a span id given to two different spans of one trace across
    files (exact copies are dropped with a `TraceFileWarning`)."""
    traces, logs = _inputs(source, max_attribute_bytes, idle_lines, max_inflated_bytes)
    streamed: list[LogRecord] = []  # the records of files holding both signals: all attach to the one tree
    groups = _groups(traces, max_attribute_bytes, idle_lines, True, max_inflated_bytes, logs, streamed)
    spans = [span for group in groups for span in group]
    where = os.fspath(source) if isinstance(source, str | os.PathLike) else ", ".join(str(os.fspath(p)) for p in source)
    if len(traces) > 1:  # each file's traces are checked on their own: a span may be in two files
        spans, copies = without_copies(spans)
        if copies:
            warnings.warn(
                f"{where}: dropped {copies} exact duplicate span(s) that more than one of its trace files holds",
                TraceFileWarning,
                stacklevel=2,
            )
    try:
        tree = SpanTree.from_spans(spans)
    except ValueError as e:  # two different spans with one id, in two files
        raise TraceFormatError(
            f"{e} across its {len(traces)} trace files, read as one run: grade each trace or run of "
            "load_traces() on its own, or give only the files of one run",
            where,
        ) from None
    by_trace = logs_by_trace(logs, max_attribute_bytes=max_attribute_bytes, max_inflated_bytes=max_inflated_bytes)
    if by_trace or streamed:
        tree.attach_logs([*(r for records in by_trace.values() for r in records), *streamed])
    tree.unread_logs = _unread_logs(traces, logs)
    return tree


def _unread_logs(traces: Iterable[Path], logs: Collection[Path]) -> tuple[str, ...]:
    """The logs files `write_otlp_json` would have written beside `traces` (`logs_path_for`) that exist but are not
    among the `logs` read (`SpanTree.unread_logs`)."""
    from ._write import logs_path_for

    read = {p.resolve() for p in logs}
    out: list[str] = []
    for path in traces:
        beside = logs_path_for(path)
        if beside != path and beside.is_file() and beside.resolve() not in read and str(beside) not in out:
            out.append(str(beside))
    return tuple(out)


def without_copies(spans: list[Span]) -> tuple[list[Span], int]:
    """`spans` without the exact copies (`same_span`) of an earlier span, and how many were dropped."""
    first: dict[tuple[int, int], Span] = {}
    kept: list[Span] = []
    for span in spans:
        key = (span.trace_id, span.span_id)
        seen = first.setdefault(key, span)
        if seen is span or not same_span(seen, span):
            kept.append(span)  # two different spans with one id: `SpanTree` says so
    return kept, len(spans) - len(kept)


def iter_traces(
    source: PathArg,
    *,
    max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
    idle_lines: int = DEFAULT_IDLE_LINES,
    per_file: bool = True,
    split_runs: bool = True,
    max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES,
) -> Iterator[SpanTree]:
    """One `SpanTree` per trace (per agent run, see below), streaming.

    Grouping: spans are grouped by trace id, per file (`per_file=False` groups across all the
    files, for traces a rotating exporter split). A trace is emitted once its root span (one
    without a parent) has been read and no span of it arrived in the last `idle_lines` lines of a
    JSON lines file (one line = one export request; a whole document or protobuf message counts as
    one line), or at the end of the file. So memory is bounded by the traces in flight, not by the
    file. A trace whose root is never seen (its parent lives in another service) waits for the end
    of the file; spans that arrive after their trace was emitted form a new group, with a warning.

    Agent runs: when a trace has several root spans (spans whose parent is not in the trace) and at
    least two of them are agent runs (a dialect's `agent_run`, e.g. `invoke_agent`; Logfire pending
    spans excluded), it yields one tree per such run, in start order; a root that is not an agent
    run joins the run that started most recently before it (or the first run). `split_runs=False`
    keeps one tree per trace.

    Recorded runs: the traces whose resource names one recorded run (`RECORDING_ID`, written by
    `pytest --tracegrade-record`; one trace per turn) are one tree, every turn of the run in start
    order, yielded once the file is read (`per_file=False`: once the input is read); never split.

    Log records: OTLP logs files (JSON, JSON lines or protobuf, gzip too) among the inputs
    (`load_traces([traces, logs])`, or a directory holding both, such as the `run.json` and
    `run.logs.json` that `write_otlp_json` writes) are read first and each record is attached to the
    span it names (`SpanNode.logs`: e.g. the GenAI instrumentations' message events). A JSON lines file
    or protobuf stream holding both signals (one collector `file` exporter in both pipelines) gives its
    spans and its records: if its first request is logs, it is read as a logs file first; else its
    records are attached to the trees of its traces (of the file, or with `per_file=False` the input)
    emitted after them, and a record that comes after its trace was emitted, or names a trace without
    spans there, is reported with a `TraceFileWarning`.

    Limits: an attribute value may hold at most `max_attribute_bytes`; a gzip-compressed file may
    inflate to at most `max_inflated_bytes` (it is read no further: raise the limit for a trusted
    file). Past either, `TraceFormatError`.
    """
    traces, logs = _inputs(source, max_attribute_bytes, idle_lines, max_inflated_bytes)
    by_trace = logs_by_trace(logs, max_attribute_bytes=max_attribute_bytes, max_inflated_bytes=max_inflated_bytes)
    yield from trees_of(
        traces, by_trace, max_attribute_bytes=max_attribute_bytes, idle_lines=idle_lines, per_file=per_file,
        split_runs=split_runs, max_inflated_bytes=max_inflated_bytes, logs_files=logs,
    )  # fmt: skip


def logs_by_trace(
    paths: Iterable[Path], *, max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
    max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES,
) -> dict[int, list[LogRecord]]:  # fmt: skip
    """The records of OTLP logs files by trace id (0: records naming no trace), in file order."""
    by_trace: dict[int, list[LogRecord]] = {}
    for path in paths:  # the trace requests of a file holding both signals are read as traces (`split_inputs`)
        for record in file_logs(path, max_attribute_bytes, max_inflated_bytes)[0]:
            by_trace.setdefault(record.trace_id, []).append(record)
    return by_trace


def trees_of(
    traces: list[Path], by_trace: dict[int, list[LogRecord]], *, max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
    idle_lines: int = DEFAULT_IDLE_LINES, per_file: bool = True, split_runs: bool = True,
    max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES, logs_files: Collection[Path] = (),
) -> Iterator[SpanTree]:  # fmt: skip
    """`iter_traces` of trace files whose log records are already read (`logs_by_trace` of
    `logs_files`): one index of the logs serves many trace files. The records of a trace file holding
    both signals (and not among `logs_files`) are read with its spans."""
    units = _units(traces, max_attribute_bytes, idle_lines, per_file, max_inflated_bytes, logs_files)
    unread = _unread_logs(traces, logs_files) if len(traces) == 1 else ()  # (of several files: whose is unknown)
    for group, recorded, streamed in units:
        for part in split_agent_runs(group) if split_runs and not recorded else (group,):
            tree = SpanTree.from_spans(part)
            tree.unread_logs = unread
            if by_trace or streamed:  # records naming no trace (id 0) are offered to every tree: counted as unattached
                tree.attach_logs([*(r for tid in (*tree.trace_ids, 0) for r in by_trace.get(tid, ())), *streamed])
            yield tree


def load_traces(
    source: PathArg,
    *,
    max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
    idle_lines: int = DEFAULT_IDLE_LINES,
    per_file: bool = True,
    split_runs: bool = True,
    max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES,
) -> list[SpanTree]:
    """`list(iter_traces(...))`: every trace (agent run) of a file, a directory or a list of them."""
    return list(
        iter_traces(
            source,
            max_attribute_bytes=max_attribute_bytes,
            idle_lines=idle_lines,
            per_file=per_file,
            split_runs=split_runs,
            max_inflated_bytes=max_inflated_bytes,
        )  # fmt: skip
    )


def _is_agent_run(span: Span) -> bool:
    """Whether `extract` reads the span as an agent run."""
    from ..dialects import classify

    if span.attributes.get("logfire.span_type") == "pending_span":
        return False
    return isinstance(classify(SpanNode.from_span(span)), AgentRun)


def split_agent_runs(spans: list[Span]) -> list[list[Span]]:
    """The spans of one trace, split per top-level agent run (the rule in `iter_traces`); the spans
    of a recorded run (`RECORDING_ID`) are never split."""
    if _recording_of(spans) is not None:  # a recorded run is one unit, its turns included
        return [spans]
    parent = {s.span_id: s.parent_id for s in spans}
    roots = [s for s in spans if s.parent_id is None or s.parent_id not in parent]
    if len(roots) < 2:
        return [spans]
    runs = sorted((r for r in roots if _is_agent_run(r)), key=lambda r: (r.start_ns, r.span_id))
    if len(runs) < 2:
        return [spans]
    owner: dict[int, int] = {r.span_id: r.span_id for r in runs}  # span id → the run root it belongs to
    for root in sorted(roots, key=lambda r: (r.start_ns, r.span_id)):
        if root.span_id not in owner:
            before = [r for r in runs if (r.start_ns, r.span_id) <= (root.start_ns, root.span_id)]
            owner[root.span_id] = (before[-1] if before else runs[0]).span_id
    groups: dict[int, list[Span]] = {r.span_id: [] for r in runs}
    for span in spans:
        chain = []
        cur = span.span_id
        while cur not in owner:
            chain.append(cur)
            cur = parent[cur]  # type: ignore[assignment]  # roots are in `owner`, so the chain ends
        top = owner[cur]
        for c in chain:
            owner[c] = top
        groups[top].append(span)
    return list(groups.values())
