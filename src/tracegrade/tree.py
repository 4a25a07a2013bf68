"""`SpanTree` / `SpanNode`: a parent/child index over spans, and `SpanQuery` to search it.

`SpanQuery` has the operators and semantics of pydantic-evals' `SpanQuery` (it is data: the same
query works from Python, YAML specs and reports). Nodes are built straight from SDK
`ReadableSpan`s or from `Span` records, without copying attributes.

Whatever the input, every operation terminates and none recurses on the tree's depth: parent cycles
are broken when the tree is built (and noted in `SpanTree.notes`), walks use explicit stacks, and a
query's descendant/ancestor conditions cost time linear in the tree's size (see `_Matcher`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from operator import attrgetter
from typing import TYPE_CHECKING, Any, cast

from opentelemetry.trace import SpanContext, Status, StatusCode
from typing_extensions import TypedDict

from ._gc import paused_gc
from ._hints import did_you_mean
from ._text import printable
from .spans import SPAN_KINDS, LogRecord, Span, SpanEvent, SpanKind, SpanStatus, status_of

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = [
    "MAX_QUERY_NESTING", "RENDER_INDENT_LEVELS", "SpanNode", "SpanPredicate", "SpanQuery", "SpanTree",
    "validate_query",
]  # fmt: skip


class SpanQuery(TypedDict, total=False):
    """A serializable span condition; all present fields must hold (AND)."""

    name_equals: str
    name_contains: str
    name_matches_regex: str
    has_attributes: dict[str, Any]
    has_attribute_keys: list[str]
    has_status: SpanStatus
    min_duration: timedelta | float
    max_duration: timedelta | float
    not_: SpanQuery
    and_: list[SpanQuery]
    or_: list[SpanQuery]
    min_child_count: int
    max_child_count: int
    some_child_has: SpanQuery
    all_children_have: SpanQuery
    no_child_has: SpanQuery
    stop_recursing_when: SpanQuery
    min_descendant_count: int
    max_descendant_count: int
    some_descendant_has: SpanQuery
    all_descendants_have: SpanQuery
    no_descendant_has: SpanQuery
    min_depth: int
    max_depth: int
    some_ancestor_has: SpanQuery
    all_ancestors_have: SpanQuery
    no_ancestor_has: SpanQuery


SpanPredicate = Callable[["SpanNode"], bool]
_QUERY_KEYS = frozenset(SpanQuery.__annotations__)
_SUBQUERY_KEYS = frozenset(
    k for k in _QUERY_KEYS if k.endswith(("_has", "_have")) or k in ("not_", "stop_recursing_when")
)


def validate_query(query: Any, path: str = "query", *, top: bool = True) -> None:
    """Raise `ValueError` naming the path of the first unknown or mistyped key in a `SpanQuery`.

    A callable predicate is accepted in place of the whole query, not nested inside one. Queries
    nest at most `MAX_QUERY_NESTING` levels deep.
    """
    _validate(query, path, top, 0)


MAX_QUERY_NESTING = 64
"""How deeply sub-queries (`not_`, `and_`, `some_child_has`, ...) may nest in one `SpanQuery`."""


def _validate(query: Any, path: str, top: bool, level: int) -> None:
    if callable(query) and top:
        return
    if not isinstance(query, Mapping):
        what = "a SpanQuery mapping or a callable" if top else "a SpanQuery mapping (callables only at the top level)"
        raise ValueError(f"{path}: expected {what}, got {type(query).__name__}")
    if level > MAX_QUERY_NESTING:
        raise ValueError(f"{path}: SpanQuery nested more than {MAX_QUERY_NESTING} levels deep")
    for key, value in query.items():
        if key not in _QUERY_KEYS:
            raise ValueError(f"{path}: unknown SpanQuery key {key!r}{did_you_mean(str(key), sorted(_QUERY_KEYS))}")
        if key in _SUBQUERY_KEYS:
            _validate(value, f"{path}.{key}", False, level + 1)
        elif key in ("and_", "or_"):
            if not isinstance(value, list | tuple):
                raise ValueError(f"{path}.{key}: expected a list of SpanQuery, got {type(value).__name__}")
            for i, sub in enumerate(value):
                _validate(sub, f"{path}.{key}[{i}]", False, level + 1)
        elif key == "name_matches_regex":
            try:
                re.compile(value)
            except (re.error, TypeError) as e:
                raise ValueError(f"{path}.{key}: invalid regex {value!r}: {e}") from None
        elif key == "has_status" and value not in ("unset", "ok", "error"):
            raise ValueError(f"{path}.has_status: expected 'unset', 'ok' or 'error', got {value!r}")
        elif key in ("name_equals", "name_contains") and not isinstance(value, str):
            raise ValueError(f"{path}.{key}: expected a string, got {type(value).__name__}")
        elif key == "has_attributes" and not isinstance(value, Mapping):
            raise ValueError(f"{path}.has_attributes: expected a mapping of attribute values, got {type(value).__name__}")
        elif key == "has_attribute_keys" and (
            not isinstance(value, list | tuple) or not all(isinstance(k, str) for k in value)
        ):
            raise ValueError(f"{path}.has_attribute_keys: expected a list of strings, got {value!r}")
        elif key in ("min_duration", "max_duration") and (
            type(value) is bool or not isinstance(value, int | float | timedelta) or _seconds(value) < 0
        ):
            raise ValueError(f"{path}.{key}: expected a number of seconds >= 0 or a timedelta, got {value!r}")
        elif key.startswith(("min_", "max_")) and key.endswith(("_count", "_depth")) and (
            type(value) is not int or value < 0
        ):
            raise ValueError(f"{path}.{key}: expected an integer >= 0, got {value!r}")
    if "or_" in query and len(query) > 1:
        raise ValueError(f"{path}: 'or_' cannot be combined with other conditions at the same level")


def _seconds(value: timedelta | float) -> float:
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


_NO_LOGS: list[LogRecord] = []


class SpanNode:
    """A span in a `SpanTree`, with links to its parent and children (ordered by start time)."""

    __slots__ = (
        "_depth",
        "_logs",
        "attributes",
        "children",
        "end_ns",
        "name",
        "parent",
        "parent_span_id",
        "source",
        "span_id",
        "start_ns",
        "status",
        "trace_id",
    )

    _logs: list[LogRecord]  # `_NO_LOGS` (shared, never changed) until SpanTree.attach_logs gives it its own

    def __init__(
        self,
        name: str,
        trace_id: int,
        span_id: int,
        parent_span_id: int | None,
        start_ns: int,
        end_ns: int | None,
        attributes: Mapping[str, Any],
        status: SpanStatus,
        source: Span | ReadableSpan,
    ) -> None:
        self.name = name
        self.trace_id = trace_id
        self.span_id = span_id
        self.parent_span_id = parent_span_id
        self.start_ns = start_ns
        self.end_ns = end_ns
        self.attributes = attributes
        self.status = status
        self.source = source
        self.parent: SpanNode | None = None
        self.children: list[SpanNode] = []
        self._depth = 0
        self._logs = _NO_LOGS

    @property
    def logs(self) -> list[LogRecord]:
        """The OTel log records (events) that name this span, in time order (`SpanTree.attach_logs`)."""
        return self._logs

    @classmethod
    def from_span(cls, span: Span) -> SpanNode:
        return cls(
            span.name, span.trace_id, span.span_id, span.parent_id, span.start_ns, span.end_ns,
            span.attributes, span.status, span,
        )  # fmt: skip

    @classmethod
    def from_readable_span(cls, span: ReadableSpan) -> SpanNode:
        ctx = span.context
        if ctx is None or span.start_time is None:
            raise ValueError(f"span {span.name!r} has no context or start time")
        parent = span.parent
        return cls(
            span.name, ctx.trace_id, ctx.span_id, parent.span_id if parent is not None else None,
            span.start_time, span.end_time, _attributes_of(span),
            status_of(span.status.status_code.value), span,
        )  # fmt: skip

    # --- span data -------------------------------------------------------------------------
    @property
    def span(self) -> Span:
        """The node's span as a `Span` record (converted on demand from an SDK span)."""
        src = self.source
        return src if isinstance(src, Span) else Span.from_readable(src)

    @property
    def duration_ns(self) -> int:
        return 0 if self.end_ns is None else self.end_ns - self.start_ns

    @property
    def duration(self) -> timedelta:
        return timedelta(microseconds=self.duration_ns / 1000)

    @property
    def start_timestamp(self) -> datetime:
        return datetime.fromtimestamp(self.start_ns / 1e9, tz=UTC)

    @property
    def end_timestamp(self) -> datetime:
        return datetime.fromtimestamp((self.end_ns or self.start_ns) / 1e9, tz=UTC)

    @property
    def kind(self) -> SpanKind:
        src = self.source
        return src.kind if isinstance(src, Span) else SPAN_KINDS[src.kind.value]

    @property
    def events(self) -> tuple[SpanEvent, ...]:
        src = self.source
        if isinstance(src, Span):
            return src.events
        return tuple(SpanEvent(e.name, e.timestamp or 0, dict(e.attributes or {})) for e in src.events)

    @property
    def status_message(self) -> str:
        src = self.source
        return src.status_message if isinstance(src, Span) else (src.status.description or "")

    @property
    def resource(self) -> Mapping[str, Any]:
        src = self.source
        if isinstance(src, Span):
            return src.resource
        return src.resource.attributes if src.resource is not None else {}

    @property
    def scope_name(self) -> str:
        src = self.source
        if type(src) is Span:
            return src.scope_name
        scope = getattr(src, "_instrumentation_scope", None) or src.instrumentation_scope  # type: ignore[union-attr]
        return scope.name if scope is not None else ""

    @property
    def node_key(self) -> str:
        return f"{self.trace_id:032x}:{self.span_id:016x}"

    # --- traversal ---------------------------------------------------------------------------
    @property
    def depth(self) -> int:
        """Number of ancestors; roots have depth 0 (set when the node's `SpanTree` is built)."""
        return self._depth

    @property
    def descendants(self) -> list[SpanNode]:
        """All descendants in depth-first (pre-order, start-time) order."""
        return list(self._walk_down(None))

    @property
    def ancestors(self) -> list[SpanNode]:
        """All ancestors, nearest first."""
        return list(self._walk_up(None))

    def _walk_down(self, stop: SpanPredicate | None) -> Iterator[SpanNode]:
        """Descendants in pre-order; below a node matching `stop` nothing is visited (it is, itself)."""
        stack = self.children[::-1]
        while stack:
            node = stack.pop()
            yield node
            if node.children and (stop is None or not stop(node)):
                stack.extend(reversed(node.children))

    def _walk_up(self, stop: SpanPredicate | None) -> Iterator[SpanNode]:
        """Ancestors, nearest first, up to and including the first one matching `stop`."""
        node = self.parent
        while node is not None:
            yield node
            if stop is not None and stop(node):
                return
            node = node.parent

    def find_children(self, predicate: SpanQuery | SpanPredicate) -> list[SpanNode]:
        match = _Matcher().predicate(predicate)
        return [c for c in self.children if match(c)]

    def first_child(self, predicate: SpanQuery | SpanPredicate) -> SpanNode | None:
        match = _Matcher().predicate(predicate)
        return next((c for c in self.children if match(c)), None)

    def any_child(self, predicate: SpanQuery | SpanPredicate) -> bool:
        return self.first_child(predicate) is not None

    def find_descendants(
        self, predicate: SpanQuery | SpanPredicate, stop_recursing_when: SpanQuery | SpanPredicate | None = None
    ) -> list[SpanNode]:
        match, stop = _predicates(predicate, stop_recursing_when)
        return [n for n in self._walk_down(stop) if match(n)]

    def first_descendant(
        self, predicate: SpanQuery | SpanPredicate, stop_recursing_when: SpanQuery | SpanPredicate | None = None
    ) -> SpanNode | None:
        match, stop = _predicates(predicate, stop_recursing_when)
        return next((n for n in self._walk_down(stop) if match(n)), None)

    def any_descendant(
        self, predicate: SpanQuery | SpanPredicate, stop_recursing_when: SpanQuery | SpanPredicate | None = None
    ) -> bool:
        return self.first_descendant(predicate, stop_recursing_when) is not None

    def find_ancestors(
        self, predicate: SpanQuery | SpanPredicate, stop_recursing_when: SpanQuery | SpanPredicate | None = None
    ) -> list[SpanNode]:
        match, stop = _predicates(predicate, stop_recursing_when)
        return [n for n in self._walk_up(stop) if match(n)]

    def first_ancestor(
        self, predicate: SpanQuery | SpanPredicate, stop_recursing_when: SpanQuery | SpanPredicate | None = None
    ) -> SpanNode | None:
        match, stop = _predicates(predicate, stop_recursing_when)
        return next((n for n in self._walk_up(stop) if match(n)), None)

    def any_ancestor(
        self, predicate: SpanQuery | SpanPredicate, stop_recursing_when: SpanQuery | SpanPredicate | None = None
    ) -> bool:
        return self.first_ancestor(predicate, stop_recursing_when) is not None

    # --- matching ------------------------------------------------------------------------------
    def matches(self, query: SpanQuery | SpanPredicate) -> bool:
        """Whether this node satisfies a `SpanQuery` or a predicate callable."""
        if callable(query):
            return bool(query(self))
        return _Matcher().match(query, self)

    def _attribute_matches(self, key: str, expected: Any) -> bool:
        if key not in self.attributes:
            return False
        stored = self.attributes[key]
        if stored == expected:
            return True
        # OTel attributes cannot hold objects: dicts/lists are stored as JSON strings or tuples.
        if isinstance(expected, dict | list) and isinstance(stored, str):
            try:
                return bool(json.loads(stored) == expected)
            except (ValueError, RecursionError):
                return False
        return isinstance(expected, list) and isinstance(stored, tuple) and list(stored) == expected

    def __repr__(self) -> str:
        return f"<SpanNode {self.name!r} span_id={self.span_id:016x} children={len(self.children)}>"


_CHILD_SUBQUERIES = ("some_child_has", "all_children_have", "no_child_has")
_TREE_SUBQUERIES = frozenset(
    (*_CHILD_SUBQUERIES, "some_descendant_has", "all_descendants_have", "no_descendant_has",
     "some_ancestor_has", "all_ancestors_have", "no_ancestor_has")
)  # fmt: skip


class _Matcher:
    """Evaluates `SpanQuery`s for one operation (a `find`, a `matches`, a walk).

    A query with child, descendant or ancestor sub-queries is evaluated at most once per (query,
    node), and "some/all/no descendant (ancestor) has" is an aggregate computed once per node from
    its children's (its parent's) values, in loops over the tree. So an operation is linear in the
    tree's size times the query's size, and recursion is bounded by the query's nesting, never by
    the tree's depth. The memos are keyed by object identity: they live only as long as the
    operation, while the caller holds the query.
    """

    __slots__ = ("_above", "_below", "_counts", "_memo", "_tree_queries")

    def __init__(self) -> None:
        self._tree_queries: dict[int, bool] = {}
        self._counts: dict[int, int] = {}
        self._memo: dict[int, dict[int, bool]] = {}
        self._below: dict[tuple[int, int, bool], dict[int, bool]] = {}
        self._above: dict[tuple[int, int, bool], dict[int, bool]] = {}

    def predicate(self, query: SpanQuery | SpanPredicate) -> SpanPredicate:
        if callable(query):
            return lambda node: bool(query(node))
        if not self._is_tree_query(query):  # the span's own data only: no memo needed
            evaluate = self._evaluate
            return lambda node: evaluate(query, node)
        return lambda node: self.match(query, node)

    def _is_tree_query(self, q: SpanQuery) -> bool:
        """Whether `q` looks at other nodes (children, descendants, ancestors) anywhere inside it."""
        known = self._tree_queries.get(id(q))
        if known is None:
            subs: list[Any] = [q.get("not_"), *(q.get("and_") or ()), *(q.get("or_") or ())]
            known = not _TREE_SUBQUERIES.isdisjoint(q) or any(
                isinstance(s, Mapping) and self._is_tree_query(cast(SpanQuery, s)) for s in subs
            )
            self._tree_queries[id(q)] = known
        return known

    def match(self, q: SpanQuery, node: SpanNode) -> bool:
        if not self._is_tree_query(q):
            return self._evaluate(q, node)
        memo = self._memo.get(id(q))
        if memo is None:
            memo = self._memo[id(q)] = {}
        found = memo.get(id(node))
        if found is None:
            found = memo[id(node)] = self._evaluate(q, node)
        return found

    def _evaluate(self, q: SpanQuery, node: SpanNode) -> bool:
        if or_ := q.get("or_"):
            if len(q) > 1:
                raise ValueError("'or_' cannot be combined with other conditions at the same level")
            return any(self.match(sub, node) for sub in or_)
        if (not_ := q.get("not_")) and self.match(not_, node):
            return False
        if (and_ := q.get("and_")) and not all(self.match(sub, node) for sub in and_):
            return False
        if (v := q.get("name_equals")) and node.name != v:
            return False
        if (v := q.get("name_contains")) and v not in node.name:
            return False
        if (v := q.get("name_matches_regex")) and not re.match(v, node.name):
            return False
        if (attrs := q.get("has_attributes")) and not all(node._attribute_matches(k, val) for k, val in attrs.items()):
            return False
        if (keys := q.get("has_attribute_keys")) and not all(k in node.attributes for k in keys):
            return False
        if (v := q.get("has_status")) and node.status != v:
            return False
        if (d := q.get("min_duration")) is not None and node.duration_ns / 1e9 < _seconds(d):
            return False
        if (d := q.get("max_duration")) is not None and node.duration_ns / 1e9 > _seconds(d):
            return False
        children = node.children
        if (n := q.get("min_child_count")) and len(children) < n:
            return False
        if (n := q.get("max_child_count")) is not None and len(children) > n:
            return False
        if (sub := q.get("some_child_has")) and not any(self.match(sub, c) for c in children):
            return False
        if (sub := q.get("all_children_have")) and not all(self.match(sub, c) for c in children):
            return False
        if (sub := q.get("no_child_has")) and any(self.match(sub, c) for c in children):
            return False
        if (n := q.get("min_descendant_count")) and self._count_below(node) < n:
            return False
        if (n := q.get("max_descendant_count")) is not None and self._count_below(node) > n:
            return False
        stop = q.get("stop_recursing_when") or None  # an empty query is ignored, as in pydantic-evals
        if (sub := q.get("some_descendant_has")) and not self._some_below(node, sub, stop, True):
            return False
        if (sub := q.get("all_descendants_have")) and self._some_below(node, sub, stop, False):
            return False
        if (sub := q.get("no_descendant_has")) and self._some_below(node, sub, stop, True):
            return False
        if (n := q.get("min_depth")) and node._depth < n:
            return False
        if (n := q.get("max_depth")) is not None and node._depth > n:
            return False
        if (sub := q.get("some_ancestor_has")) and not self._some_above(node, sub, stop, True):
            return False
        if (sub := q.get("all_ancestors_have")) and self._some_above(node, sub, stop, False):
            return False
        return not ((sub := q.get("no_ancestor_has")) and self._some_above(node, sub, stop, True))

    def _count_below(self, node: SpanNode) -> int:
        """The number of descendants: computed for the node's whole subtree, children before parents."""
        memo = self._counts
        found = memo.get(id(node))
        if found is not None:
            return found
        stack: list[tuple[SpanNode, bool]] = [(node, False)]
        while stack:
            current, children_done = stack.pop()
            if not children_done:
                stack.append((current, True))
                stack.extend((c, False) for c in current.children if c.children and id(c) not in memo)
            else:
                children = current.children
                memo[id(current)] = len(children) + sum(memo[id(c)] for c in children if c.children)
        return memo[id(node)]

    def _some_below(self, node: SpanNode, sub: SpanQuery, stop: SpanQuery | None, want: bool) -> bool:
        """Whether a descendant (not below one matching `stop`) has `match(sub) == want`: computed
        for the node's whole subtree at once, children before parents."""
        memo = self._below.setdefault((id(sub), id(stop), want), {})
        found = memo.get(id(node))
        if found is not None:
            return found
        match = self.match
        stack: list[tuple[SpanNode, bool]] = [(node, False)]
        while stack:
            current, children_done = stack.pop()
            if not children_done:
                stack.append((current, True))
                stack.extend((c, False) for c in current.children if c.children and id(c) not in memo)
                continue
            value = False
            for c in current.children:
                if match(sub, c) is want or (c.children and (stop is None or not match(stop, c)) and memo[id(c)]):
                    value = True
                    break
            memo[id(current)] = value
        return memo[id(node)]

    def _some_above(self, node: SpanNode, sub: SpanQuery, stop: SpanQuery | None, want: bool) -> bool:
        """Whether an ancestor (up to and including the first matching `stop`) has `match(sub) ==
        want`: computed for the unknown part of the node's path, parents before children."""
        memo = self._above.setdefault((id(sub), id(stop), want), {})
        path: list[SpanNode] = []
        current: SpanNode | None = node
        while current is not None and id(current) not in memo:
            path.append(current)
            current = current.parent
        match = self.match
        for current in reversed(path):
            p = current.parent
            memo[id(current)] = p is not None and (
                match(sub, p) is want or ((stop is None or not match(stop, p)) and memo[id(p)])
            )
        return memo[id(node)]


def _predicates(
    predicate: SpanQuery | SpanPredicate, stop: SpanQuery | SpanPredicate | None
) -> tuple[SpanPredicate, SpanPredicate | None]:
    matcher = _Matcher()
    return matcher.predicate(predicate), None if stop is None else matcher.predicate(stop)


RENDER_INDENT_LEVELS = 24
"""`SpanTree.render` indents this many levels; deeper spans are marked with their depth instead."""


class SpanTree:
    """Spans indexed as a forest: several traces and roots; a span whose parent is absent is a root.

    Iteration visits every node in start-time order (ties broken by span id, so it is deterministic).
    Parent links that form a cycle (possible when spans are built by hand or by a faulty exporter)
    are broken: in each cycle the span that started first becomes a root, and `notes` says so.
    """

    __slots__ = ("__weakref__", "_by_id", "nodes", "notes", "roots", "unattached_logs", "unread_logs")

    def __init__(self, nodes: Iterable[SpanNode] = ()) -> None:
        with paused_gc():
            self._build(nodes)

    def _build(self, nodes: Iterable[SpanNode]) -> None:
        ordered = sorted(nodes, key=_ORDER)
        by_id: dict[tuple[int, int], SpanNode] = {(node.trace_id, node.span_id): node for node in ordered}
        if len(by_id) < len(ordered):
            _raise_duplicate(ordered)
        roots: list[SpanNode] = []
        get = by_id.get
        for node in ordered:
            pid = node.parent_span_id
            parent = get((node.trace_id, pid)) if pid is not None else None
            if parent is None:
                roots.append(node)
            else:
                node.parent = parent
                parent.children.append(node)
        notes: list[str] = []
        if _visit(roots) < len(ordered):  # the others hang off parent cycles
            reached = {id(n) for r in roots for n in (r, *r._walk_down(None))}
            for node in ordered:
                if id(node) not in reached:
                    root = _break_cycle(node, notes)
                    roots.append(root)
                    _visit([root])
                    reached.update(id(n) for n in (root, *root._walk_down(None)))
            roots.sort(key=_ORDER)
        self.nodes: list[SpanNode] = ordered
        self.roots: list[SpanNode] = roots
        self.notes: list[str] = notes
        """What was wrong with the spans' links and how it was resolved (parent cycles broken)."""
        self.unattached_logs = 0
        """Log records given to `attach_logs` that named no span of this tree (no trace / span id, or unknown)."""
        self.unread_logs: tuple[str, ...] = ()
        """OTLP logs files that lie beside the trace file(s) this tree was read from, named as `write_otlp_json` names
        them (`run.json` → `run.logs.json`), but were not read: records naming its spans may be there."""
        self._by_id = by_id

    def attach_logs(self, records: Iterable[LogRecord]) -> list[LogRecord]:
        """Attach each log record to the span it names (`SpanNode.logs`, kept in time order); returns
        the records that name no span of this tree."""
        unattached: list[LogRecord] = []
        touched: dict[int, SpanNode] = {}
        for record in records:
            node = self._by_id.get((record.trace_id, record.span_id)) if record.span_id else None
            if node is None:
                unattached.append(record)
                continue
            if id(node) not in touched:
                touched[id(node)] = node
                node._logs = list(node.logs)
            node._logs.append(record)
        for node in touched.values():
            node._logs.sort(key=lambda r: r.time_ns)
        self.unattached_logs += len(unattached)
        return unattached

    @classmethod
    def from_readable_spans(cls, spans: Iterable[ReadableSpan]) -> SpanTree:
        with paused_gc():
            return cls(_nodes_from_readable(spans))

    @classmethod
    def from_spans(cls, spans: Iterable[Span], readable: Iterable[ReadableSpan] = ()) -> SpanTree:
        """A tree of `Span`s and, optionally, SDK `ReadableSpan`s (a capture's own spans beside the
        spans other processes sent it); a `Span` whose id a `ReadableSpan` has is the same span."""
        with paused_gc():
            nodes = _nodes_from_readable(readable)
            seen = {(n.trace_id, n.span_id) for n in nodes}
            if seen:
                spans = [s for s in spans if (s.trace_id, s.span_id) not in seen]
            from_span = SpanNode.from_span
            nodes.extend([from_span(s) for s in spans])
            return cls(nodes)

    def get(self, span_id: int, trace_id: int | None = None) -> SpanNode | None:
        """The node with this span id (in `trace_id`, or in any trace when omitted)."""
        if trace_id is not None:
            return self._by_id.get((trace_id, span_id))
        return next((n for (_, sid), n in self._by_id.items() if sid == span_id), None)

    @property
    def trace_ids(self) -> list[int]:
        return list(dict.fromkeys(n.trace_id for n in self.nodes))

    def __iter__(self) -> Iterator[SpanNode]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def find(self, predicate: SpanQuery | SpanPredicate) -> list[SpanNode]:
        """All nodes matching the query or predicate, in start-time order."""
        _check(predicate)
        match = _Matcher().predicate(predicate)
        return [n for n in self.nodes if match(n)]

    def first(self, predicate: SpanQuery | SpanPredicate) -> SpanNode | None:
        _check(predicate)
        match = _Matcher().predicate(predicate)
        return next((n for n in self.nodes if match(n)), None)

    def any(self, predicate: SpanQuery | SpanPredicate) -> bool:
        return self.first(predicate) is not None

    def render(self, *, attributes: Callable[[SpanNode], str] | None = None) -> str:
        """An indented text outline of the forest (name, duration, status), two spaces a level; what
        `attributes(node)` returns ends the node's line. Control characters in names and in that text are
        written as escapes (`_text.printable`): a span's name cannot break a line or reach a terminal.

        Past `RENDER_INDENT_LEVELS` levels a line is indented no further and starts with
        `[depth N]` instead, so the outline of a deep chain stays linear in size.
        """
        lines: list[str] = []
        deepest = "  " * RENDER_INDENT_LEVELS
        stack = self.roots[::-1]
        while stack:
            node = stack.pop()
            depth = node._depth
            prefix = "  " * depth if depth <= RENDER_INDENT_LEVELS else f"{deepest}[depth {depth}] "
            status = "" if node.status == "unset" else f" [{node.status}]"
            extra = attributes(node) if attributes else ""
            lines.append(prefix + printable(f"{node.name} ({node.duration_ns / 1e6:.1f} ms){status}{extra}"))
            if node.children:
                stack.extend(reversed(node.children))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<SpanTree roots={len(self.roots)} spans={len(self.nodes)}>"


def _visit(roots: list[SpanNode]) -> int:
    """Set the depth of every node under `roots`; return how many nodes that is."""
    level, depth, count = roots, 0, 0
    while level:  # breadth first, a level at a time
        count += len(level)
        for node in level:
            node._depth = depth
        level = [child for node in level if node.children for child in node.children]
        depth += 1
    return count


def _break_cycle(node: SpanNode, notes: list[str]) -> SpanNode:
    """Detach the first-started span of the parent cycle `node` leads into; return it (now a root).

    `node` is not reachable from any root, so following its parents must come back to a span
    already on the path.
    """
    on_path: dict[int, int] = {}
    path: list[SpanNode] = []
    current: SpanNode | None = node
    while current is not None and id(current) not in on_path:
        on_path[id(current)] = len(path)
        path.append(current)
        current = current.parent
    if current is None:  # unreachable: a chain ending in a root would have been visited
        raise AssertionError(f"span {node.span_id:016x} is not linked to a root nor to a cycle")
    root = min(path[on_path[id(current)] :], key=_ORDER)
    parent = cast(SpanNode, root.parent)
    parent.children.remove(root)
    root.parent = None
    notes.append(
        f"span {root.name!r} ({root.span_id:016x}) named parent {parent.name!r} ({parent.span_id:016x}), "
        f"which closes a cycle: treated as a root"
    )
    return root


def _nodes_from_readable(spans: Iterable[ReadableSpan]) -> list[SpanNode]:
    """`SpanNode.from_readable_span` for many spans, reading the SDK span's fields directly rather than
    through its properties (this is the hot path of every capture)."""
    out: list[SpanNode] = []
    append = out.append
    error, ok = StatusCode.ERROR, StatusCode.OK
    for span in spans:
        try:
            ctx, parent, start, end = span._context, span._parent, span._start_time, span._end_time
            attrs = span._attributes
            status = span._status
        except AttributeError:  # not an SDK span object: use the public API
            append(SpanNode.from_readable_span(span))
            continue
        if ctx is None or start is None:
            raise ValueError(f"span {span.name!r} has no context or start time")
        code = status._status_code if type(status) is Status else status.status_code
        if type(ctx) is SpanContext:  # a tuple that starts with the ids (its properties read them)
            trace_id, span_id = ctx[0], ctx[1]
        else:
            trace_id, span_id = ctx.trace_id, ctx.span_id
        parent_id = None if parent is None else parent[1] if type(parent) is SpanContext else parent.span_id
        inner = attrs if type(attrs) is dict else getattr(attrs, "_dict", None)  # a dict: slimmed by the recorder
        append(SpanNode(
            span._name, trace_id, span_id, parent_id, start, end,
            inner if isinstance(inner, dict) and end is not None else (span.attributes or {}),
            "error" if code is error else "ok" if code is ok else "unset", span,
        ))  # fmt: skip
    return out


def _attributes_of(span: ReadableSpan) -> Mapping[str, Any]:
    """The span's attributes without a copy. A finished SDK span's `BoundedAttributes` is immutable;
    reading its plain dict avoids a Python-level `Mapping.get` on every lookup."""
    attrs = getattr(span, "_attributes", None)
    inner = attrs if type(attrs) is dict else getattr(attrs, "_dict", None)
    if isinstance(inner, dict) and span.end_time is not None:
        return inner
    return span.attributes or {}


_ORDER = attrgetter("start_ns", "span_id")
"""Tree order: start time, ties broken by span id."""


def _raise_duplicate(ordered: list[SpanNode]) -> None:
    """Raise for the first node, in tree order, whose (trace id, span id) an earlier node has."""
    seen: set[tuple[int, int]] = set()
    for node in ordered:
        key = (node.trace_id, node.span_id)
        if key in seen:
            raise ValueError(f"duplicate span id {node.span_id:016x} in trace {node.trace_id:032x}")
        seen.add(key)


def _check(predicate: object) -> None:
    if not callable(predicate):
        validate_query(cast(Any, predicate))
