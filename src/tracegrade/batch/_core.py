"""Engine-independent pieces of batch grading: options, span filters, sampling, grouping keys, and
grading one unit (a trace, an agent run of it, or a conversation) into result rows."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeVar

import orjson

from .._gc import paused_gc
from .._redact import Redactor
from ..errors import BatchInputError
from ..grading import grade
from ..spans import LogRecord, Span
from ..tree import SpanTree

__all__ = [
    "COLUMNS",
    "CONVERSATION_KEYS",
    "NO_LOGS",
    "BatchInputError",
    "Condition",
    "GradingPlan",
    "Logs",
    "Options",
    "Row",
    "attach_logs",
    "case_id_of",
    "conversation_of",
    "gc_paused",
    "grade_unit",
    "params_hash",
    "parse_condition",
    "sample_bound",
    "sampled_key",
    "sampled_trace",
]

COLUMNS = ("trace_id", "root_span_id", "agent", "evaluator", "params_hash", "outcome", "score", "reason")
"""One row per (graded unit, evaluator); grouping by conversation adds a `conversation_id` column, a
case attribute (`case_attribute`) a `case_id` column."""
CONVERSATION_KEYS = ("gen_ai.conversation.id", "session.id")
"""Span attributes that name a conversation, in order of preference."""

Row = tuple[Any, ...]
GroupBy = Literal["trace", "conversation"]
Logs = tuple[tuple[LogRecord, ...], int]
"""The log records attached to a unit's spans, and how many records offered to it named none of them."""
NO_LOGS: Logs = ((), 0)


def attach_logs(tree: SpanTree, logs: Logs) -> None:
    """Attach to `tree` the records of `logs` that name its spans; its count of records that named
    no span becomes that of `logs` (records naming spans outside this unit belong to another unit of
    the same trace, or to spans a `where` condition dropped)."""
    records, unattached = logs
    if records:
        tree.attach_logs(records)
    tree.unattached_logs = unattached


# --- span conditions (`--where`) ---------------------------------------------------------------

FIELDS = ("Timestamp", "Duration", "TraceId", "SpanName", "SpanKind", "ServiceName", "ScopeName", "StatusCode")
_CONDITION = re.compile(r"^\s*([A-Za-z]+)\s*(<=|>=|!=|==|=|<|>|\bnot\s+in\b|\bin\b)\s*(.*?)\s*$", re.S)
_DURATION = re.compile(r"^(\d+)\s*(ns|us|ms|s)?$")
_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000, None: 1}
KIND_NAMES = ("internal", "server", "client", "producer", "consumer")
STATUS_NAMES = ("unset", "ok", "error")


def normal_kind(text: str) -> str | None:
    """`Client`, `SPAN_KIND_CLIENT`, `client`, 3 → `client`; unspecified → `internal`; else None."""
    t = text.strip().upper().removeprefix("SPAN_KIND_")
    if t in ("", "UNSPECIFIED", "0"):
        return "internal"
    if t.isdigit():
        n = int(t)
        return KIND_NAMES[n - 1] if 1 <= n <= 5 else None
    return t.lower() if t.lower() in KIND_NAMES else None


def normal_status(text: str) -> str | None:
    t = text.strip().upper().removeprefix("STATUS_CODE_")
    if t in ("", "UNSET", "0"):
        return "unset"
    if t.isdigit():
        return {"1": "ok", "2": "error"}.get(t)
    return t.lower() if t.lower() in STATUS_NAMES else None


@dataclass(frozen=True, slots=True)
class Condition:
    """`FIELD OP VALUE` on a span column of the ClickHouse `otel_traces` layout; values normalized
    (times and durations in ns, kinds and statuses as tracegrade names, trace ids lowercase hex)."""

    field: str
    op: str
    values: tuple[Any, ...]
    text: str

    def test(self, span: Span) -> bool:
        value = _span_value(span, self.field)
        op, values = self.op, self.values
        if op == "in":
            return value in values
        if op == "not in":
            return value not in values
        v = values[0]
        if op == "=":
            return bool(value == v)
        if op == "!=":
            return bool(value != v)
        if op == "<":
            return bool(value < v)
        if op == "<=":
            return bool(value <= v)
        if op == ">":
            return bool(value > v)
        return bool(value >= v)


def _span_value(span: Span, field: str) -> Any:
    if field == "Timestamp":
        return span.start_ns
    if field == "Duration":
        return span.duration_ns
    if field == "TraceId":
        return f"{span.trace_id:032x}"
    if field == "SpanName":
        return span.name
    if field == "SpanKind":
        return span.kind
    if field == "ServiceName":
        return span.resource.get("service.name", "")
    if field == "ScopeName":
        return span.scope_name
    return span.status


def parse_condition(text: str) -> Condition:
    """Parse `FIELD OP VALUE` (`SpanKind in client,internal`, `Timestamp >= 2026-01-01T00:00:00Z`)."""
    m = _CONDITION.match(text)
    if m is None:
        raise BatchInputError(f"--where {text!r}: expected `FIELD OP VALUE`, e.g. `SpanKind in client,internal`")
    field, op, raw = m[1], " ".join(m[2].split()), m[3]
    op = "=" if op == "==" else op
    if field not in FIELDS:
        raise BatchInputError(f"--where {text!r}: unknown field {field!r}; fields: {', '.join(FIELDS)}")
    items = [v.strip() for v in raw.split(",")] if op in ("in", "not in") else [raw]
    if not raw or any(not v for v in items):
        raise BatchInputError(f"--where {text!r}: missing value")
    if op in ("<", "<=", ">", ">=") and field not in ("Timestamp", "Duration", "TraceId", "SpanName"):
        raise BatchInputError(f"--where {text!r}: {field} supports only =, !=, in, not in")
    return Condition(field, op, tuple(_value(field, v, text) for v in items), text)


def _value(field: str, raw: str, text: str) -> Any:
    if field == "Timestamp":
        if raw.isdigit():
            return int(raw)
        try:
            dt = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            raise BatchInputError(f"--where {text!r}: expected an ISO 8601 time or nanoseconds, got {raw!r}") from None
        if dt.tzinfo is None:
            raise BatchInputError(f"--where {text!r}: give the time zone (e.g. a trailing Z for UTC)")
        return int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1_000
    if field == "Duration":
        m = _DURATION.match(raw)
        if m is None:
            raise BatchInputError(f"--where {text!r}: expected a duration like 250ms, 2s or 1500000 (ns), got {raw!r}")
        return int(m[1]) * _UNITS[m[2]]
    if field == "SpanKind":
        kind = normal_kind(raw)
        if kind is None:
            raise BatchInputError(f"--where {text!r}: unknown span kind {raw!r}; kinds: {', '.join(KIND_NAMES)}")
        return kind
    if field == "StatusCode":
        status = normal_status(raw)
        if status is None:
            raise BatchInputError(f"--where {text!r}: unknown status {raw!r}; statuses: {', '.join(STATUS_NAMES)}")
        return status
    if field == "TraceId":
        return raw.lower()
    return raw


# --- sampling ----------------------------------------------------------------------------------

_LOW64 = (1 << 64) - 1


def sample_bound(rate: float) -> int:
    """The bound of OpenTelemetry's `TraceIdRatioBased` sampler: a trace is kept when the low 64 bits of its id are below it."""
    if not 0.0 <= rate <= 1.0:
        raise BatchInputError(f"--sample: expected a rate in [0, 1], got {rate}")
    return round(rate * (1 << 64))


def sampled_trace(trace_id: int, bound: int) -> bool:
    return (trace_id & _LOW64) < bound


def sampled_key(key: str, bound: int) -> bool:
    """Sampling of a conversation: the same rule on the first 64 bits of the BLAKE2b hash of its id."""
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "big") < bound


def conversation_of(spans: Iterable[Span]) -> str | None:
    """The conversation a trace belongs to: on the first span (start order, ties by span id) naming
    one, its `gen_ai.conversation.id`, else its `session.id`."""
    best: tuple[int, int] | None = None
    found: str | None = None
    for s in spans:
        attrs = s.attributes
        for key in CONVERSATION_KEYS:
            v = attrs.get(key)
            if v is not None and v != "":
                order = (s.start_ns, s.span_id)
                if best is None or order < best:
                    best, found = order, str(v)
                break
    return found


# --- options and grading -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Options:
    """What to grade and how; the same for every engine (so every engine yields the same rows)."""

    group_by: GroupBy = "trace"
    sample: float = 1.0
    where: tuple[Condition, ...] = ()
    max_spans: int = 10_000
    dialect: str | None = None
    case_attribute: str | None = None
    """Units whose spans carry the same value of this attribute are repeated runs of one case (`case_id`)."""
    redact: tuple[str, ...] = ()
    """Key globs: values under matching keys (tool arguments, span attributes) are taken out of the
    rows' reasons; outcomes and scores are the graded ones."""

    @property
    def bound(self) -> int:
        return sample_bound(self.sample)

    @property
    def columns(self) -> tuple[str, ...]:
        columns = (*COLUMNS, "conversation_id") if self.group_by == "conversation" else COLUMNS
        return (*columns, "case_id") if self.case_attribute else columns

    def keep(self, span: Span) -> bool:
        return all(c.test(span) for c in self.where)


def params_hash(evaluator: object) -> str:
    """A stable 16-hex-digit hash of an evaluator's class and parameters (to tell configurations apart)."""
    params: Any
    if dataclasses.is_dataclass(evaluator) and not isinstance(evaluator, type):
        params = {f.name: getattr(evaluator, f.name) for f in dataclasses.fields(evaluator) if f.init}
    else:
        params = repr(evaluator)
    doc = {"class": f"{type(evaluator).__module__}.{type(evaluator).__qualname__}", "params": params}
    raw = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=repr)
    return hashlib.sha256(raw).hexdigest()[:16]


@dataclass(slots=True)
class GradingPlan:
    """The evaluators, their names and parameter hashes (computed once), and the options."""

    evaluators: list[object]
    options: Options
    names: list[str] = dataclasses.field(default_factory=list)
    hashes: list[str] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        from ..evaluators.base import evaluator_name

        self.names = [evaluator_name(e) for e in self.evaluators]
        self.hashes = [params_hash(e) for e in self.evaluators]


_END = object()
T = TypeVar("T")


def gc_paused(items: Iterator[T]) -> Iterator[T]:
    """The items of `items`, each one produced with the cyclic GC paused; it may run between items.

    Reading and grading a unit builds many objects that reference counting frees (`grade_unit`
    unlinks its tree); a GC pass in the middle would rescan every trace still held in flight."""
    while True:
        with paused_gc():
            item = next(items, _END)
        if item is _END:
            return
        yield item  # type: ignore[misc]


def grade_unit(
    spans: Sequence[Span] | SpanTree, plan: GradingPlan, conversation: str | None = None, logs: Logs = NO_LOGS
) -> list[Row]:
    """The rows of one graded unit: one per evaluator, in spec order, with the log records `logs`
    attached to its spans. A unit over `max_spans` spans is `not_evaluated` (its tree is never built)."""
    from ..dialects import extract

    opts = plan.options
    extra: tuple[str | None, ...] = (conversation,) if opts.group_by == "conversation" else ()
    if len(spans) > opts.max_spans:
        if opts.case_attribute:
            extra = (*extra, case_id_of(spans, opts.case_attribute))
        first = _first_root(spans)
        trace_id, root_id = f"{first.trace_id:032x}", f"{first.span_id:016x}"
        reason = f"oversized: {len(spans)} spans > limit {opts.max_spans} (raise max_spans / --max-spans to grade it)"
        return [(trace_id, root_id, None, name, h, "not_evaluated", None, reason, *extra)
                for name, h in zip(plan.names, plan.hashes, strict=True)]  # fmt: skip
    with paused_gc():  # one unit's objects are garbage together: no cyclic-GC passes while they are built
        if isinstance(spans, SpanTree):
            tree = spans
        else:
            tree = SpanTree.from_spans(spans)
            attach_logs(tree, logs)
        first = _tree_root(tree)
        trace_id, root_id = f"{first.trace_id:032x}", f"{first.span_id:016x}"
        traj = extract(tree, dialect=opts.dialect)
        agent = next((r.name for r in traj.agent_runs if r.parent is None and r.name), None)
        if opts.case_attribute:
            extra = (*extra, case_id_of(tree, opts.case_attribute))
        results = grade(traj, plan.evaluators)
        reasons = [r.reasoning for r in results] if not opts.redact else _redacted_reasons(tree, traj, results, opts)
        _release(tree)
    return [(trace_id, root_id, agent, name, h, r.outcome, r.score, reason, *extra)
            for name, h, r, reason in zip(plan.names, plan.hashes, results, reasons, strict=True)]  # fmt: skip


def case_id_of(spans: Sequence[Span] | SpanTree, key: str) -> str | None:
    """The value of attribute `key` (as text) on the unit's first span that has it: roots first
    (start order), then every span in start order (ties by span id) — `tracegrade grade --case-attribute`'s rule."""
    if isinstance(spans, SpanTree):
        ordered: list[Any] = [*spans.roots, *spans]  # a tree keeps both in start order
    else:
        ids = {(s.trace_id, s.span_id) for s in spans}
        by_start = sorted(spans, key=lambda s: (s.start_ns, s.span_id))
        ordered = [s for s in by_start if s.parent_id is None or (s.trace_id, s.parent_id) not in ids] + by_start
    for node in ordered:
        value = node.attributes.get(key)
        if value is not None:
            return str(value)
    return None


def _redacted_reasons(tree: SpanTree, traj: Any, results: Sequence[Any], opts: Options) -> list[str]:
    """The results' reasons with every value found under a key matching `opts.redact` (in the unit's
    span attributes, JSON text in them included, and tool-call arguments) replaced by `[redacted]`:
    the redactor the reports apply."""
    redactor = Redactor(opts.redact)
    for node in tree.nodes:
        redactor.value(dict(node.attributes))
    for call in traj.listed(traj.calls(include_failed=True, include_deferred=True)):
        if call.args_recorded:
            redactor.value(call.args)
    return redactor.scrub_all([r.reasoning for r in results])


def _release(tree: SpanTree) -> None:
    """Unlink parents from children, so the unit's tree is freed by reference counting, not left to the cyclic GC."""
    for node in tree.nodes:
        node.parent = None
        node.children = []


def _tree_root(tree: SpanTree) -> Any:
    """The earliest root whose parent is absent (start time, ties by span id; the tree keeps its roots
    in that order), else the earliest root (all roots came from broken parent cycles)."""
    for root in tree.roots:
        if root.parent_span_id is None or tree.get(root.parent_span_id, root.trace_id) is None:
            return root
    return tree.roots[0]


def _first_root(spans: Sequence[Span] | SpanTree) -> Any:
    """The earliest root (start time, ties by span id): names the unit in the `trace_id` / `root_span_id` columns."""
    if isinstance(spans, SpanTree):
        return _tree_root(spans)
    ids = {(s.trace_id, s.span_id) for s in spans}
    roots = [s for s in spans if s.parent_id is None or (s.trace_id, s.parent_id) not in ids]
    return min(roots or spans, key=lambda s: (s.start_ns, s.span_id))


def trace_units(spans: list[Span], plan: GradingPlan) -> Iterable[list[Span]]:
    """The units of one trace's spans under the options: filtered by `where`, split per agent run."""
    from ..ingest import split_agent_runs

    if plan.options.where:
        spans = [s for s in spans if plan.options.keep(s)]
        if not spans:
            return []
    return split_agent_runs(spans)
