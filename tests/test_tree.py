"""`SpanTree`, `SpanNode` and `SpanQuery` (tracegrade.tree), with pydantic-evals' SpanTree as the oracle."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags, Tracer
from pydantic_evals.otel import SpanTree as OracleTree

from faults._bounded import time_limit
from tracegrade import grade
from tracegrade.dialects import extract
from tracegrade.evaluators import HasMatchingSpan, ToolCorrectness
from tracegrade.spans import Span
from tracegrade.tree import MAX_QUERY_NESTING, RENDER_INDENT_LEVELS, SpanNode, SpanQuery, SpanTree, validate_query

BASE_NS = 1_700_000_000 * 10**9
TRACE_A = 0x0AF7651916CD43DD8448EB211C80319C
TRACE_B = 0x4BF92F3577B34DA6A3CE929D0E0E4736
MS = 1000  # microseconds
EMPTY_RESOURCE = Resource.get_empty()  # ReadableSpan's default runs resource detectors: slow per span


def rspan(
    name: str,
    span_id: int,
    parent_id: int | None = None,
    *,
    trace_id: int = TRACE_A,
    start_us: int = 0,
    duration_us: int | None = 1000,
    attributes: dict[str, Any] | None = None,
    status: StatusCode = StatusCode.UNSET,
    description: str | None = None,
) -> ReadableSpan:
    """A finished (or, with `duration_us=None`, open) SDK span with exact ids and times."""
    start = BASE_NS + start_us * 1000
    return ReadableSpan(
        name,
        context=SpanContext(trace_id, span_id, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED)),
        parent=None if parent_id is None else SpanContext(trace_id, parent_id, is_remote=False),
        resource=EMPTY_RESOURCE,
        attributes=attributes or {},
        status=Status(status, description),
        start_time=start,
        end_time=None if duration_us is None else start + duration_us * 1000,
    )


def names(nodes: Iterable[SpanNode]) -> list[str]:
    return [n.name for n in nodes]


def ids(nodes: Iterable[SpanNode]) -> list[int]:
    return [n.span_id for n in nodes]


@pytest.fixture
def sdk() -> tuple[Tracer, InMemorySpanExporter]:
    """A private SDK provider whose finished spans land in an in-memory exporter."""
    provider = TracerProvider(resource=Resource.create({"service.name": "tree-tests"}))
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("tests.tree", "1.2.3"), exporter


def agent_spans() -> list[ReadableSpan]:
    """One agent run (ids in brackets; start ms, duration ms):

    agent run [1] 0/100
      chat [2] 1/10
      running tools [3] 20/30
        tool:search [4] 21/5 ok
        tool:fetch [5] 30/15 error
          http GET [6] 31/14
      chat [7] 60/20
    """
    return [
        rspan("agent run", 1, start_us=0, duration_us=100 * MS, attributes={"agent": "main"}),
        rspan("chat", 2, 1, start_us=1 * MS, duration_us=10 * MS, attributes={"model": "test", "tokens": 12}),
        rspan("running tools", 3, 1, start_us=20 * MS, duration_us=30 * MS),
        rspan(
            "tool:search",
            4,
            3,
            start_us=21 * MS,
            duration_us=5 * MS,
            status=StatusCode.OK,
            attributes={"tool": "search", "args": '{"q": "x"}', "tags": ("a", "b")},
        ),
        rspan(
            "tool:fetch",
            5,
            3,
            start_us=30 * MS,
            duration_us=15 * MS,
            status=StatusCode.ERROR,
            description="timeout",
            attributes={"tool": "fetch", "args": '{"url": "u"}', "retries": "[1, 2]"},
        ),
        rspan("http GET", 6, 5, start_us=31 * MS, duration_us=14 * MS, attributes={"body": "{not json"}),
        rspan("chat", 7, 1, start_us=60 * MS, duration_us=20 * MS, attributes={"model": "test", "tokens": 30}),
    ]


@pytest.fixture
def tree() -> SpanTree:
    return SpanTree.from_readable_spans(agent_spans())


def found(tree: SpanTree, query: Any) -> list[int]:
    return ids(tree.find(query))


# --- building the tree -------------------------------------------------------------------------------


def test_sdk_spans_are_linked_to_their_parents(sdk: tuple[Tracer, InMemorySpanExporter]) -> None:
    tracer, exporter = sdk
    with (
        tracer.start_as_current_span("root"),
        tracer.start_as_current_span("child"),
        tracer.start_as_current_span("grandchild"),
    ):
        pass
    tree = SpanTree.from_readable_spans(exporter.get_finished_spans())
    [root] = tree.roots
    assert root.name == "root" and root.parent is None
    [child] = root.children
    assert child.name == "child" and child.parent is root
    assert names(child.children) == ["grandchild"] and child.children[0].parent is child


def test_spans_of_separate_traces_form_separate_roots(sdk: tuple[Tracer, InMemorySpanExporter]) -> None:
    tracer, exporter = sdk
    for name in ("first", "second"):
        with tracer.start_as_current_span(name), tracer.start_as_current_span(f"{name}.child"):
            pass
    tree = SpanTree.from_readable_spans(exporter.get_finished_spans())
    assert names(tree.roots) == ["first", "second"]
    assert [names(r.children) for r in tree.roots] == [["first.child"], ["second.child"]]
    assert len(tree.trace_ids) == 2 and tree.trace_ids[0] == tree.roots[0].trace_id


def test_every_parentless_span_of_one_trace_is_a_root() -> None:
    tree = SpanTree.from_readable_spans(
        [rspan("a", 1, start_us=0), rspan("b", 2, start_us=5), rspan("a.child", 3, 1, start_us=1)]
    )
    assert names(tree.roots) == ["a", "b"]
    assert tree.trace_ids == [TRACE_A]


def test_span_whose_parent_was_not_captured_is_a_root() -> None:
    tree = SpanTree.from_readable_spans([rspan("orphan", 2, 99), rspan("orphan.child", 3, 2, start_us=1)])
    [root] = tree.roots
    assert root.name == "orphan" and root.parent is None and root.parent_span_id == 99
    assert root.depth == 0 and names(root.children) == ["orphan.child"]


def test_parent_is_looked_up_in_the_spans_own_trace() -> None:
    spans = [
        rspan("a", 1, trace_id=TRACE_A),
        rspan("b-root", 1, trace_id=TRACE_B, start_us=2),
        rspan("b", 2, 7, trace_id=TRACE_B, start_us=3),  # span 7 exists only in trace A
        rspan("a7", 7, 1, trace_id=TRACE_A, start_us=1),
    ]
    tree = SpanTree.from_readable_spans(spans)
    assert names(tree.roots) == ["a", "b-root", "b"]
    assert names(tree.roots[0].children) == ["a7"]


def test_children_are_ordered_by_start_time(sdk: tuple[Tracer, InMemorySpanExporter]) -> None:
    tracer, exporter = sdk
    with tracer.start_as_current_span("root", start_time=BASE_NS):
        for name, offset in [("late", 30), ("early", 10), ("middle", 20)]:
            tracer.start_span(name, start_time=BASE_NS + offset).end(end_time=BASE_NS + 100)
    tree = SpanTree.from_readable_spans(exporter.get_finished_spans())
    assert names(tree.roots[0].children) == ["early", "middle", "late"]


def test_children_starting_together_are_ordered_by_span_id() -> None:
    tree = SpanTree.from_readable_spans(
        [rspan("root", 1), rspan("c", 0x30, 1, start_us=5), rspan("a", 0x10, 1, start_us=5),
         rspan("b", 0x20, 1, start_us=5)]
    )  # fmt: skip
    assert names(tree.roots[0].children) == ["a", "b", "c"]


def test_iteration_visits_every_span_in_start_order() -> None:
    spans = [
        rspan("third", 3, 1, start_us=30), rspan("first", 1, start_us=0), rspan("fourth", 4, start_us=40),
        rspan("second", 2, 1, start_us=20), rspan("other-trace", 1, trace_id=TRACE_B, start_us=25),
    ]  # fmt: skip
    tree = SpanTree.from_readable_spans(spans)
    assert names(tree) == ["first", "second", "other-trace", "third", "fourth"]
    assert len(tree) == 5


def test_get_finds_a_span_by_id_in_the_given_trace() -> None:
    tree = SpanTree.from_readable_spans([rspan("a", 5, trace_id=TRACE_A), rspan("b", 5, trace_id=TRACE_B)])
    node = tree.get(5, TRACE_B)
    assert node is not None and node.name == "b"


def test_get_without_trace_finds_the_span_in_any_trace() -> None:
    tree = SpanTree.from_readable_spans([rspan("a", 1, trace_id=TRACE_A), rspan("b", 2, trace_id=TRACE_B)])
    node = tree.get(2)
    assert node is not None and node.name == "b"


def test_get_returns_none_for_an_unknown_span() -> None:
    tree = SpanTree.from_readable_spans([rspan("a", 1)])
    assert tree.get(2) is None
    assert tree.get(1, TRACE_B) is None


def test_duplicate_span_id_in_a_trace_raises_value_error() -> None:
    with pytest.raises(ValueError, match=f"duplicate span id {0xAB:016x} in trace {TRACE_A:032x}"):
        SpanTree.from_readable_spans([rspan("a", 0xAB), rspan("b", 0xAB, start_us=1)])


def test_same_span_id_in_different_traces_is_allowed() -> None:
    tree = SpanTree.from_readable_spans([rspan("a", 1, trace_id=TRACE_A), rspan("b", 1, trace_id=TRACE_B)])
    assert len(tree) == 2 and len(tree.roots) == 2


def test_tree_from_span_records_has_the_same_shape_as_from_sdk_spans() -> None:
    spans = agent_spans()
    from_records = SpanTree.from_spans([Span.from_readable(s) for s in spans])
    from_sdk = SpanTree.from_readable_spans(spans)
    assert [(n.node_key, n.parent.node_key if n.parent else None) for n in from_records] == [
        (n.node_key, n.parent.node_key if n.parent else None) for n in from_sdk
    ]


def test_span_record_with_missing_parent_is_a_root() -> None:
    record = Span(trace_id=TRACE_A, span_id=2, parent_id=1, name="orphan", start_ns=BASE_NS, end_ns=BASE_NS + 5)
    tree = SpanTree.from_spans([record])
    assert names(tree.roots) == ["orphan"] and tree.roots[0].parent_span_id == 1


def test_open_span_has_zero_duration_and_ends_at_its_start() -> None:
    [node] = SpanTree.from_readable_spans([rspan("open", 1, duration_us=None)])
    assert node.end_ns is None and node.duration_ns == 0 and node.duration == timedelta(0)
    assert node.end_timestamp == node.start_timestamp


def test_node_exposes_timing_of_its_span() -> None:
    [node] = SpanTree.from_readable_spans([rspan("s", 1, start_us=1500, duration_us=2500)])
    assert node.duration == timedelta(microseconds=2500)
    assert node.start_timestamp == datetime.fromtimestamp(1_700_000_000, tz=UTC) + timedelta(microseconds=1500)
    assert node.end_timestamp - node.start_timestamp == timedelta(microseconds=2500)


def test_node_key_is_the_hex_trace_and_span_id() -> None:
    [node] = SpanTree.from_readable_spans([rspan("s", 0xBEEF)])
    assert node.node_key == f"{TRACE_A:032x}:000000000000beef"


def test_logfire_style_json_attributes_match_structured_values(sdk: tuple[Tracer, InMemorySpanExporter]) -> None:
    tracer, exporter = sdk
    # Logfire records non-primitive arguments as JSON strings next to a JSON schema describing them.
    user = {"id": 3, "roles": ["admin"]}
    with tracer.start_as_current_span(
        "handle {user}",
        attributes={
            "logfire.span_type": "span",
            "logfire.msg_template": "handle {user}",
            "logfire.msg": f"handle {user}",
            "logfire.json_schema": json.dumps({"type": "object", "properties": {"user": {"type": "object"}}}),
            "user": json.dumps(user),
            "code.lineno": 12,
        },
    ):
        pass
    tree = SpanTree.from_readable_spans(exporter.get_finished_spans())
    assert tree.any({"has_attributes": {"logfire.span_type": "span", "user": user, "code.lineno": 12}})
    assert not tree.any({"has_attributes": {"user": {"id": 4, "roles": ["admin"]}}})


# --- SpanQuery: one operator at a time ------------------------------------------------------------------


def test_name_equals_matches_the_whole_name(tree: SpanTree) -> None:
    assert found(tree, {"name_equals": "chat"}) == [2, 7]
    assert found(tree, {"name_equals": "cha"}) == []


def test_name_contains_matches_a_substring(tree: SpanTree) -> None:
    assert found(tree, {"name_contains": "tool"}) == [3, 4, 5]


def test_name_matches_regex_is_anchored_at_the_start(tree: SpanTree) -> None:
    assert found(tree, {"name_matches_regex": "tools"}) == []  # "running tools" only contains it
    assert found(tree, {"name_matches_regex": ".*tools"}) == [3]


def test_name_matches_regex_need_not_match_the_whole_name(tree: SpanTree) -> None:
    assert found(tree, {"name_matches_regex": r"tool:\w"}) == [4, 5]


def test_has_attributes_compares_scalar_values(tree: SpanTree) -> None:
    assert found(tree, {"has_attributes": {"tokens": 12}}) == [2]
    assert found(tree, {"has_attributes": {"tokens": 13}}) == []


def test_has_attributes_requires_every_listed_attribute(tree: SpanTree) -> None:
    assert found(tree, {"has_attributes": {"model": "test", "tokens": 30}}) == [7]


def test_has_attributes_does_not_match_a_missing_attribute(tree: SpanTree) -> None:
    assert found(tree, {"has_attributes": {"nope": "test"}}) == []


def test_has_attributes_dict_matches_its_json_string_form(tree: SpanTree) -> None:
    assert found(tree, {"has_attributes": {"args": {"q": "x"}}}) == [4]
    assert found(tree, {"has_attributes": {"args": {"q": "y"}}}) == []


def test_has_attributes_list_matches_its_json_string_form(tree: SpanTree) -> None:
    assert found(tree, {"has_attributes": {"retries": [1, 2]}}) == [5]
    assert found(tree, {"has_attributes": {"retries": [2, 1]}}) == []


def test_has_attributes_list_matches_a_tuple_attribute(tree: SpanTree) -> None:
    assert found(tree, {"has_attributes": {"tags": ["a", "b"]}}) == [4]
    assert found(tree, {"has_attributes": {"tags": ["a"]}}) == []


def test_has_attributes_structured_value_never_matches_invalid_json(tree: SpanTree) -> None:
    assert found(tree, {"has_attributes": {"body": {"not": "json"}}}) == []


def test_has_attribute_keys_requires_every_key(tree: SpanTree) -> None:
    assert found(tree, {"has_attribute_keys": ["tool", "args"]}) == [4, 5]
    assert found(tree, {"has_attribute_keys": ["tool", "tags"]}) == [4]


def test_has_status_matches_the_span_status(tree: SpanTree) -> None:
    assert found(tree, {"has_status": "error"}) == [5]
    assert found(tree, {"has_status": "ok"}) == [4]
    assert found(tree, {"has_status": "unset"}) == [1, 2, 3, 6, 7]


def test_min_duration_in_float_seconds_is_inclusive(tree: SpanTree) -> None:
    assert found(tree, {"min_duration": 0.015}) == [1, 3, 5, 7]


def test_min_duration_accepts_a_timedelta(tree: SpanTree) -> None:
    assert found(tree, {"min_duration": timedelta(milliseconds=20)}) == [1, 3, 7]


def test_max_duration_in_float_seconds_is_inclusive(tree: SpanTree) -> None:
    assert found(tree, {"max_duration": 0.01}) == [2, 4]


def test_max_duration_accepts_a_timedelta(tree: SpanTree) -> None:
    assert found(tree, {"max_duration": timedelta(milliseconds=14)}) == [2, 4, 6]


def test_not_negates_a_query(tree: SpanTree) -> None:
    assert found(tree, {"not_": {"name_contains": "tool"}}) == [1, 2, 6, 7]


def test_and_requires_every_query(tree: SpanTree) -> None:
    assert found(tree, {"and_": [{"name_contains": "tool"}, {"has_status": "error"}]}) == [5]


def test_or_accepts_any_query(tree: SpanTree) -> None:
    assert found(tree, {"or_": [{"name_equals": "http GET"}, {"has_status": "ok"}]}) == [4, 6]


def test_or_combined_with_other_conditions_is_rejected_by_find(tree: SpanTree) -> None:
    with pytest.raises(ValueError, match="'or_' cannot be combined"):
        tree.find({"or_": [{"name_equals": "chat"}], "has_status": "ok"})


def test_or_combined_with_other_conditions_is_rejected_when_matching(tree: SpanTree) -> None:
    with pytest.raises(ValueError, match="'or_' cannot be combined"):
        tree.roots[0].matches({"or_": [{"name_equals": "chat"}], "has_status": "ok"})


def test_min_child_count_counts_direct_children(tree: SpanTree) -> None:
    assert found(tree, {"min_child_count": 2}) == [1, 3]
    assert found(tree, {"min_child_count": 3}) == [1]


def test_max_child_count_zero_selects_leaves(tree: SpanTree) -> None:
    assert found(tree, {"max_child_count": 0}) == [2, 4, 6, 7]


def test_some_child_has_needs_one_matching_child(tree: SpanTree) -> None:
    assert found(tree, {"some_child_has": {"has_status": "error"}}) == [3]


def test_all_children_have_holds_vacuously_for_leaves(tree: SpanTree) -> None:
    assert found(tree, {"all_children_have": {"name_contains": "tool:"}}) == [2, 3, 4, 6, 7]


def test_all_children_have_rejects_a_parent_with_one_non_matching_child(tree: SpanTree) -> None:
    assert found(tree, {"min_child_count": 1, "all_children_have": {"name_equals": "chat"}}) == []
    assert found(tree, {"min_child_count": 1, "all_children_have": {"name_contains": "tool:"}}) == [3]


def test_no_child_has_rejects_any_matching_child(tree: SpanTree) -> None:
    assert found(tree, {"no_child_has": {"name_equals": "chat"}}) == [2, 3, 4, 5, 6, 7]


def test_min_descendant_count_counts_the_whole_subtree(tree: SpanTree) -> None:
    assert found(tree, {"min_descendant_count": 3}) == [1, 3]
    assert found(tree, {"min_descendant_count": 4}) == [1]


def test_max_descendant_count_counts_the_whole_subtree(tree: SpanTree) -> None:
    assert found(tree, {"max_descendant_count": 1}) == [2, 4, 5, 6, 7]


def test_descendant_counts_ignore_stop_recursing_when(tree: SpanTree) -> None:
    query: SpanQuery = {"min_descendant_count": 6, "stop_recursing_when": {"name_equals": "running tools"}}
    assert found(tree, query) == [1]


def test_some_descendant_has_searches_below_the_children(tree: SpanTree) -> None:
    assert found(tree, {"some_descendant_has": {"name_equals": "http GET"}}) == [1, 3, 5]


def test_stop_recursing_when_prunes_below_matching_descendants(tree: SpanTree) -> None:
    query: SpanQuery = {
        "some_descendant_has": {"name_equals": "http GET"},
        "stop_recursing_when": {"name_contains": "tool:"},
    }
    assert found(tree, query) == [5]  # only tool:fetch reaches http GET without passing a tool: span


def test_stop_recursing_when_still_tests_the_stopping_descendant(tree: SpanTree) -> None:
    query: SpanQuery = {"some_descendant_has": {"has_status": "error"}, "stop_recursing_when": {"has_status": "error"}}
    assert found(tree, query) == [1, 3]


def test_empty_stop_recursing_when_is_ignored_like_an_absent_one(tree: SpanTree) -> None:
    # pydantic-evals (whose semantics SpanQuery has) treats an empty sub-query as absent, as tracegrade
    # does for `some_child_has: {}` and every other sub-query key.
    query: SpanQuery = {"some_descendant_has": {"name_equals": "http GET"}, "stop_recursing_when": {}}
    assert found(tree, query) == found(tree, {"some_descendant_has": {"name_equals": "http GET"}}) == [1, 3, 5]


def test_all_descendants_have_needs_every_descendant(tree: SpanTree) -> None:
    assert found(tree, {"all_descendants_have": {"not_": {"has_status": "error"}}}) == [2, 4, 5, 6, 7]


def test_no_descendant_has_rejects_any_matching_descendant(tree: SpanTree) -> None:
    assert found(tree, {"no_descendant_has": {"name_equals": "http GET"}}) == [2, 4, 6, 7]


def test_min_depth_counts_ancestors(tree: SpanTree) -> None:
    assert found(tree, {"min_depth": 2}) == [4, 5, 6]
    assert found(tree, {"min_depth": 3}) == [6]


def test_max_depth_counts_ancestors(tree: SpanTree) -> None:
    assert found(tree, {"max_depth": 0}) == [1]
    assert found(tree, {"max_depth": 1}) == [1, 2, 3, 7]


def test_some_ancestor_has_searches_all_ancestors(tree: SpanTree) -> None:
    assert found(tree, {"some_ancestor_has": {"name_equals": "agent run"}}) == [2, 3, 4, 5, 6, 7]


def test_stop_recursing_when_prunes_above_matching_ancestors(tree: SpanTree) -> None:
    query: SpanQuery = {
        "some_ancestor_has": {"name_equals": "agent run"},
        "stop_recursing_when": {"name_contains": "tool:"},
    }
    assert found(tree, query) == [2, 3, 4, 5, 7]  # http GET's walk up stops at tool:fetch


def test_all_ancestors_have_needs_every_ancestor(tree: SpanTree) -> None:
    assert found(tree, {"all_ancestors_have": {"not_": {"has_status": "error"}}}) == [1, 2, 3, 4, 5, 7]


def test_no_ancestor_has_rejects_any_matching_ancestor(tree: SpanTree) -> None:
    assert found(tree, {"no_ancestor_has": {"name_equals": "running tools"}}) == [1, 2, 3, 7]


def test_conditions_of_one_query_must_all_hold(tree: SpanTree) -> None:
    query: SpanQuery = {"name_contains": "tool", "min_depth": 2, "max_duration": 0.01}
    assert found(tree, query) == [4]


def test_empty_query_matches_every_span(tree: SpanTree) -> None:
    assert found(tree, {}) == [1, 2, 3, 4, 5, 6, 7]


# --- callables, find / first / any -------------------------------------------------------------------


def test_callable_is_a_predicate_for_find(tree: SpanTree) -> None:
    assert found(tree, lambda n: n.duration_ns > 50 * 10**6) == [1]


def test_callable_predicate_sees_the_node(tree: SpanTree) -> None:
    assert found(tree, lambda n: n.parent is not None and n.parent.name == "running tools") == [4, 5]


def test_callable_nested_in_a_query_is_rejected_by_validation(tree: SpanTree) -> None:
    # validate_query accepts any callable, so a nested one gets through and matching then crashes with
    # AttributeError. Queries are data: a nested callable must be a clear ValueError naming its path.
    with pytest.raises(ValueError, match=r"query\.some_child_has"):
        tree.find({"some_child_has": lambda n: n.name == "tool:fetch"})  # type: ignore[typeddict-item]


def test_find_returns_matches_in_start_order(tree: SpanTree) -> None:
    assert found(tree, {"name_equals": "chat"}) == [2, 7]


def test_find_returns_an_empty_list_without_matches(tree: SpanTree) -> None:
    assert tree.find({"name_equals": "nothing"}) == []


def test_first_returns_the_earliest_match(tree: SpanTree) -> None:
    node = tree.first({"name_equals": "chat"})
    assert node is not None and node.span_id == 2


def test_first_returns_none_without_a_match(tree: SpanTree) -> None:
    assert tree.first({"name_equals": "nothing"}) is None


def test_any_tells_whether_some_span_matches(tree: SpanTree) -> None:
    assert tree.any({"has_status": "error"})
    assert not tree.any({"name_equals": "nothing"})


def test_find_validates_the_query_before_matching() -> None:
    with pytest.raises(ValueError, match="unknown SpanQuery key 'name_equal'"):
        SpanTree().find({"name_equal": "x"})  # type: ignore[typeddict-unknown-key]


# --- node helpers -------------------------------------------------------------------------------------


def node(tree: SpanTree, span_id: int) -> SpanNode:
    found_node = tree.get(span_id)
    assert found_node is not None
    return found_node


def test_find_children_returns_matching_direct_children(tree: SpanTree) -> None:
    assert ids(node(tree, 1).find_children({"name_equals": "chat"})) == [2, 7]
    assert node(tree, 1).find_children({"name_contains": "tool:"}) == []


def test_first_child_returns_the_earliest_matching_child(tree: SpanTree) -> None:
    first = node(tree, 1).first_child({"name_equals": "chat"})
    assert first is not None and first.span_id == 2
    assert node(tree, 1).first_child({"name_equals": "http GET"}) is None


def test_any_child_tells_whether_a_child_matches(tree: SpanTree) -> None:
    assert node(tree, 3).any_child(lambda n: n.status == "error")
    assert not node(tree, 1).any_child(lambda n: n.status == "error")


def test_descendants_are_listed_depth_first_in_start_order(tree: SpanTree) -> None:
    assert ids(node(tree, 1).descendants) == [2, 3, 4, 5, 6, 7]


def test_find_descendants_returns_matches_depth_first(tree: SpanTree) -> None:
    assert ids(node(tree, 1).find_descendants({"name_contains": "t"})) == [2, 3, 4, 5, 6, 7]
    assert ids(node(tree, 1).find_descendants({"name_contains": "tool:"})) == [4, 5]


def test_find_descendants_stops_below_a_stop_match_but_includes_it(tree: SpanTree) -> None:
    found_ids = ids(node(tree, 1).find_descendants(lambda _: True, stop_recursing_when={"has_status": "error"}))
    assert found_ids == [2, 3, 4, 5, 7]


def test_first_descendant_returns_the_first_match_depth_first(tree: SpanTree) -> None:
    first = node(tree, 1).first_descendant({"name_contains": "tool"})
    assert first is not None and first.span_id == 3


def test_any_descendant_respects_stop_recursing_when(tree: SpanTree) -> None:
    root = node(tree, 1)
    assert root.any_descendant({"name_equals": "http GET"})
    assert not root.any_descendant({"name_equals": "http GET"}, stop_recursing_when={"name_equals": "running tools"})


def test_ancestors_are_listed_nearest_first(tree: SpanTree) -> None:
    assert ids(node(tree, 6).ancestors) == [5, 3, 1]
    assert node(tree, 6).depth == 3 and node(tree, 1).depth == 0


def test_find_ancestors_returns_matches_nearest_first(tree: SpanTree) -> None:
    assert ids(node(tree, 6).find_ancestors({"name_contains": "tool"})) == [5, 3]


def test_find_ancestors_stops_at_a_stop_match_but_includes_it(tree: SpanTree) -> None:
    found_ids = ids(node(tree, 6).find_ancestors(lambda _: True, stop_recursing_when={"name_equals": "running tools"}))
    assert found_ids == [5, 3]


def test_first_ancestor_returns_the_nearest_match(tree: SpanTree) -> None:
    first = node(tree, 6).first_ancestor({"name_contains": "tool"})
    assert first is not None and first.span_id == 5


def test_any_ancestor_respects_stop_recursing_when(tree: SpanTree) -> None:
    leaf = node(tree, 6)
    assert leaf.any_ancestor({"name_equals": "agent run"})
    assert not leaf.any_ancestor({"name_equals": "agent run"}, stop_recursing_when={"name_equals": "running tools"})


# --- validate_query -------------------------------------------------------------------------------------


def test_validate_names_an_unknown_top_level_key_and_the_closest_one() -> None:
    with pytest.raises(ValueError) as err:
        validate_query({"has_statuss": "ok"})
    assert str(err.value) == "query: unknown SpanQuery key 'has_statuss' (did you mean 'has_status'?)"


def test_validate_names_the_path_of_an_unknown_nested_key() -> None:
    with pytest.raises(ValueError) as err:
        validate_query({"some_child_has": {"name_equal": "x"}})
    assert str(err.value) == "query.some_child_has: unknown SpanQuery key 'name_equal' (did you mean 'name_equals'?)"


def test_validate_names_the_index_of_a_bad_query_in_a_list() -> None:
    with pytest.raises(ValueError, match=r"^query\.and_\[1\]\.not_: unknown SpanQuery key 'min_dept'"):
        validate_query({"and_": [{"name_equals": "a"}, {"not_": {"min_dept": 1}}]})


def test_validate_omits_the_hint_when_no_key_is_close() -> None:
    with pytest.raises(ValueError) as err:
        validate_query({"zzzz": 1})
    assert str(err.value) == "query: unknown SpanQuery key 'zzzz'"


def test_validate_uses_the_given_path() -> None:
    with pytest.raises(ValueError, match=r"^evaluators\[0\]\.query: unknown SpanQuery key"):
        validate_query({"nam": "x"}, "evaluators[0].query")


def test_validate_rejects_an_invalid_regex() -> None:
    message = r"^query\.some_descendant_has\.name_matches_regex: invalid regex '\(unclosed'"
    with pytest.raises(ValueError, match=message):
        validate_query({"some_descendant_has": {"name_matches_regex": "(unclosed"}})


def test_validate_rejects_an_unknown_status() -> None:
    with pytest.raises(ValueError) as err:
        validate_query({"has_status": "failed"})
    assert str(err.value) == "query.has_status: expected 'unset', 'ok' or 'error', got 'failed'"


def test_validate_rejects_or_combined_with_other_conditions() -> None:
    with pytest.raises(ValueError, match=r"^query\.not_: 'or_' cannot be combined"):
        validate_query({"not_": {"or_": [{"name_equals": "a"}], "name_contains": "b"}})


def test_validate_rejects_a_non_list_and() -> None:
    with pytest.raises(ValueError, match=r"^query\.and_: expected a list of SpanQuery, got dict"):
        validate_query({"and_": {"name_equals": "a"}})


def test_validate_rejects_a_non_mapping_query() -> None:
    with pytest.raises(
        ValueError, match=r"^query\.not_: expected a SpanQuery mapping \(callables only at the top level\), got str"
    ):
        validate_query({"not_": "chat"})


def test_validate_accepts_a_query_using_every_operator() -> None:
    sub: SpanQuery = {"name_equals": "a"}
    every: dict[str, Any] = {
        "name_equals": "a", "name_contains": "a", "name_matches_regex": "a.*", "has_attributes": {"k": [1]},
        "has_attribute_keys": ["k"], "has_status": "ok", "min_duration": 0.1, "max_duration": timedelta(1),
        "not_": sub, "and_": [sub], "min_child_count": 1, "max_child_count": 2, "some_child_has": sub,
        "all_children_have": sub, "no_child_has": sub, "stop_recursing_when": sub, "min_descendant_count": 1,
        "max_descendant_count": 2, "some_descendant_has": sub, "all_descendants_have": sub,
        "no_descendant_has": sub, "min_depth": 1, "max_depth": 2, "some_ancestor_has": sub,
        "all_ancestors_have": sub, "no_ancestor_has": sub,
    }  # fmt: skip
    assert set(every) | {"or_"} == set(SpanQuery.__annotations__)
    validate_query(every)
    validate_query({"or_": [sub, {"and_": [sub]}]})


# --- rendering and conversion --------------------------------------------------------------------------


def test_render_outlines_the_forest_with_durations_and_statuses() -> None:
    tree = SpanTree.from_readable_spans(
        [
            rspan("root", 1, duration_us=12_500),
            rspan("child", 2, 1, start_us=1, duration_us=3000, status=StatusCode.ERROR),
            rspan("grandchild", 3, 2, start_us=2, duration_us=250),
            rspan("second", 1, trace_id=TRACE_B, start_us=5, duration_us=1000, status=StatusCode.OK),
        ]
    )
    assert tree.render() == (
        "root (12.5 ms)\n"
        "  child (3.0 ms) [error]\n"
        "    grandchild (0.2 ms)\n"
        "second (1.0 ms) [ok]"
    )  # fmt: skip


def test_render_appends_the_attributes_callback_text() -> None:
    tree = SpanTree.from_readable_spans([rspan("tool", 1, attributes={"name": "search"})])
    assert tree.render(attributes=lambda n: f" name={n.attributes['name']}") == "tool (1.0 ms) name=search"


def test_render_of_an_empty_tree_is_empty() -> None:
    assert SpanTree().render() == ""


def test_node_span_converts_an_sdk_span_to_a_span_record(sdk: tuple[Tracer, InMemorySpanExporter]) -> None:
    tracer, exporter = sdk
    attributes = {"k": "v", "n": (1, 2)}
    with (
        tracer.start_as_current_span("outer"),
        tracer.start_as_current_span("call", kind=SpanKind.CLIENT, attributes=attributes) as s,
    ):
        s.add_event("retry", {"attempt": 1}, timestamp=BASE_NS + 7)
        s.set_status(Status(StatusCode.ERROR, "boom"))
    tree = SpanTree.from_readable_spans(exporter.get_finished_spans())
    [call] = tree.find({"name_equals": "call"})
    record = call.span
    sdk_span = call.source
    assert isinstance(sdk_span, ReadableSpan) and sdk_span.context is not None and sdk_span.parent is not None
    assert (record.trace_id, record.span_id, record.parent_id) == (
        sdk_span.context.trace_id, sdk_span.context.span_id, sdk_span.parent.span_id,
    )  # fmt: skip
    assert (record.start_ns, record.end_ns) == (sdk_span.start_time, sdk_span.end_time)
    assert record.attributes == {"k": "v", "n": (1, 2)}
    assert (record.status, record.status_message, record.kind) == ("error", "boom", "client")
    assert [(e.name, e.time_ns, dict(e.attributes)) for e in record.events] == [("retry", BASE_NS + 7, {"attempt": 1})]
    assert record.resource["service.name"] == "tree-tests"
    assert (record.scope_name, record.scope_version) == ("tests.tree", "1.2.3")


def test_node_data_is_the_same_whether_built_from_sdk_spans_or_records(
    sdk: tuple[Tracer, InMemorySpanExporter],
) -> None:
    tracer, exporter = sdk
    with tracer.start_as_current_span("server", kind=SpanKind.SERVER, attributes={"a": 1}) as s:
        s.add_event("log", {"level": "info"})
        s.set_status(Status(StatusCode.ERROR, "bad"))
    [from_sdk] = SpanTree.from_readable_spans(exporter.get_finished_spans())
    [from_record] = SpanTree.from_spans([from_sdk.span])

    def data(n: SpanNode) -> tuple[Any, ...]:
        return (
            n.name, n.trace_id, n.span_id, n.parent_span_id, n.start_ns, n.end_ns, dict(n.attributes), n.status,
            n.status_message, n.kind, n.events, dict(n.resource), n.scope_name, n.duration,
        )  # fmt: skip

    assert data(from_record) == data(from_sdk)
    assert from_sdk.kind == "server" and from_sdk.status_message == "bad"


def test_span_records_rebuild_the_same_tree_and_query_results(tree: SpanTree) -> None:
    rebuilt = SpanTree.from_spans([n.span for n in tree])
    assert rebuilt.render() == tree.render()
    for query in ({"has_attributes": {"args": {"q": "x"}}}, {"some_ancestor_has": {"has_status": "error"}}):
        assert found(rebuilt, query) == found(tree, query)


def test_node_span_of_a_record_node_is_the_record_itself() -> None:
    record = Span(trace_id=TRACE_A, span_id=1, parent_id=None, name="s", start_ns=BASE_NS, end_ns=BASE_NS + 1)
    [n] = SpanTree.from_spans([record])
    assert n.span is record


# --- property: the same matches as pydantic-evals' SpanTree ------------------------------------------------

NAMES = ("agent run", "chat", "running tools", "tool:a", "tool:ab", "b")
DURATIONS_US = (0, 500, 1000, 2000)
OBJ_TEXTS = ('{"q": "x"}', '{"q": "y"}', "[1, 2]", '{"q": ["x"]}', "not json")
CHILD_KEYS = ("some_child_has", "all_children_have", "no_child_has")
RECURSIVE_KEYS = (
    "some_descendant_has", "all_descendants_have", "no_descendant_has",
    "some_ancestor_has", "all_ancestors_have", "no_ancestor_has",
)  # fmt: skip

attributes = st.fixed_dictionaries(
    {},
    optional={
        "k": st.sampled_from(["x", "y"]),
        "n": st.integers(0, 2),
        "flag": st.booleans(),
        "tags": st.lists(st.sampled_from(["p", "q"]), max_size=2).map(tuple),
        "obj": st.sampled_from(OBJ_TEXTS),
    },
)


@st.composite
def forests(draw: st.DrawFn) -> list[ReadableSpan]:
    """1-12 spans over two traces: roots, children of earlier spans (no cycles) and orphans. Span ids are
    unique per trace but shared between traces; times are whole microseconds (pydantic-evals' resolution)."""
    count = draw(st.integers(1, 12))
    next_id = {TRACE_A: draw(st.integers(1, 3)), TRACE_B: 1}  # ids repeat across traces
    made: list[ReadableSpan] = []
    for i in range(count):
        link = draw(st.sampled_from(["root", "child", "child", "child", "orphan"] if made else ["root", "orphan"]))
        if link == "child":
            parent = made[draw(st.integers(0, len(made) - 1))]
            assert parent.context is not None
            trace_id, parent_id = parent.context.trace_id, parent.context.span_id
        else:
            trace_id, parent_id = draw(st.sampled_from([TRACE_A, TRACE_B])), None if link == "root" else 100 + i
        span_id = next_id[trace_id]
        next_id[trace_id] += 1
        made.append(
            rspan(
                draw(st.sampled_from(NAMES)), span_id, parent_id, trace_id=trace_id,
                start_us=draw(st.integers(0, 20)),
                duration_us=draw(st.sampled_from(DURATIONS_US) | st.integers(0, 3000)),
                attributes=draw(attributes),
                status=draw(st.sampled_from([StatusCode.UNSET, StatusCode.OK, StatusCode.ERROR])),
            )
        )  # fmt: skip
    return made


def one_key(key: str, values: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return values.map(lambda v: {key: v})


durations = st.sampled_from((*DURATIONS_US, 1500)).flatmap(
    lambda us: st.sampled_from([us / 1e6, timedelta(microseconds=us)])
)
ATTRIBUTE_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "k": st.sampled_from(["x", "y", "z"]),
    "n": st.integers(0, 2) | st.just(True),
    "flag": st.booleans(),
    "tags": st.sampled_from([[], ["p"], ["p", "q"], ["q", "p"], ("p",)]),
    "obj": st.sampled_from([{"q": "x"}, {"q": "y"}, [1, 2], {"q": ["x"]}, "not json", ["x"]]),
}
attribute_queries = st.lists(st.sampled_from(sorted(ATTRIBUTE_VALUES)), min_size=1, max_size=2, unique=True).flatmap(
    lambda ks: st.fixed_dictionaries({k: ATTRIBUTE_VALUES[k] for k in ks})
)
leaf_queries = st.one_of(
    st.just({}),
    one_key("name_equals", st.sampled_from((*NAMES, "chat2"))),
    one_key("name_contains", st.sampled_from(["a", "b", "tool", "chat", "s", "z"])),
    one_key("name_matches_regex", st.sampled_from(["a", "tool", ".*a$", "t.*:a", "b|c", "(chat|b)$", ".*n"])),
    one_key("has_attributes", attribute_queries),
    one_key("has_attribute_keys", st.lists(st.sampled_from(["k", "n", "flag", "tags", "obj"]), max_size=2)),
    one_key("has_status", st.sampled_from(["unset", "ok", "error"])),
    one_key("min_duration", durations),
    one_key("max_duration", durations),
    *(one_key(k, st.integers(0, 3)) for k in ("min_child_count", "max_child_count", "min_depth", "max_depth")),
    *(one_key(k, st.integers(0, 4)) for k in ("min_descendant_count", "max_descendant_count")),
)


def merged(pair: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
    a, b = pair
    if "or_" in a or "or_" in b:  # 'or_' stands alone at its level
        return {"and_": [a, b]}
    return {**a, **b}


def recursive_query(
    item: tuple[str, dict[str, Any], dict[str, Any] | None, dict[str, Any] | None],
) -> dict[str, Any]:
    key, sub, stop, extra = item
    query = {key: sub} if stop is None else {key: sub, "stop_recursing_when": stop}
    return query if extra is None else {**extra, **query}


stops = st.none() | st.just({}) | st.sampled_from([{"name_contains": "tool"}, {"has_status": "error"}])
counts = st.sampled_from(["min_descendant_count", "max_descendant_count", "min_depth", "max_depth"]).flatmap(
    lambda k: one_key(k, st.integers(0, 3))
)
queries = st.recursive(
    leaf_queries,
    lambda sub: st.one_of(
        sub.map(lambda q: {"not_": q}),
        st.lists(sub, min_size=1, max_size=3).map(lambda qs: {"and_": qs}),
        st.lists(sub, min_size=1, max_size=3).map(lambda qs: {"or_": qs}),
        st.tuples(st.sampled_from(CHILD_KEYS), sub).map(lambda t: {t[0]: t[1]}),
        st.tuples(st.sampled_from(RECURSIVE_KEYS), sub, stops | sub, st.none() | counts).map(recursive_query),
        st.tuples(sub, sub).map(merged),
    ),
    max_leaves=6,
)


def keys(nodes: Iterable[Any]) -> set[tuple[int, int]]:
    return {(n.trace_id, n.span_id) for n in nodes}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spans=forests())
def test_tree_has_the_same_shape_as_pydantic_evals(spans: list[ReadableSpan]) -> None:
    ours = SpanTree.from_readable_spans(spans)
    oracle = OracleTree()
    oracle.add_readable_spans(spans)
    assert keys(ours.roots) == keys(oracle.roots)
    assert {n.node_key: n.parent.node_key if n.parent else None for n in ours} == {
        n.node_key: n.parent.node_key if n.parent else None for n in oracle
    }
    assert {n.node_key: n.depth for n in ours} == {n.node_key: len(n.ancestors) for n in oracle}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spans=forests(), query_list=st.lists(queries, min_size=1, max_size=10))
@example(  # an empty sub-query is absent in pydantic-evals; as stop_recursing_when it must not prune
    spans=[rspan("a", 1), rspan("b", 2, 1, start_us=1), rspan("c", 3, 2, start_us=2)],
    query_list=[{"some_descendant_has": {"name_equals": "c"}, "stop_recursing_when": {}}],
)
def test_span_query_matches_the_same_spans_as_pydantic_evals(
    spans: list[ReadableSpan], query_list: list[dict[str, Any]]
) -> None:
    ours = SpanTree.from_readable_spans(spans)
    oracle = OracleTree()
    oracle.add_readable_spans(spans)
    for query in query_list:
        expected = keys(oracle.find(query))  # type: ignore[arg-type]
        event("matches: " + ("none" if not expected else "all" if len(expected) == len(spans) else "some"))
        assert keys(ours.find(query)) == expected, query  # type: ignore[arg-type]


# --- parent cycles: broken with a note, every operation terminates --------------------------------------




def record(name: str, span_id: int, parent_id: int | None = None, *, start_us: int = 0, **kw: Any) -> Span:
    start = BASE_NS + start_us * 1000
    return Span(
        trace_id=TRACE_A, span_id=span_id, parent_id=parent_id, name=name, start_ns=start, end_ns=start + 1000, **kw
    )


def parents(tree: SpanTree) -> dict[int, int | None]:
    return {n.span_id: n.parent.span_id if n.parent else None for n in tree}


def test_two_spans_naming_each_other_as_parent_are_split_at_the_first_started() -> None:
    tree = SpanTree.from_spans([record("b", 2, 1, start_us=5), record("a", 1, 2, start_us=0)])
    assert parents(tree) == {1: None, 2: 1}
    assert names(tree.roots) == ["a"] and [n.depth for n in tree] == [0, 1]
    assert tree.notes == [
        "span 'a' (0000000000000001) named parent 'b' (0000000000000002), which closes a cycle: treated as a root"
    ]


def test_span_that_is_its_own_parent_becomes_a_root_with_a_note() -> None:
    tree = SpanTree.from_spans([record("loop", 7, 7), record("child", 8, 7, start_us=1)])
    assert parents(tree) == {7: None, 8: 7}
    assert tree.notes == [
        "span 'loop' (0000000000000007) named parent 'loop' (0000000000000007), which closes a cycle: treated as a root"
    ]


def test_longer_cycle_with_spans_hanging_off_it_keeps_every_span() -> None:
    # 1 → 2 → 3 → 4 → 1 (each names the next as parent); 5 and 6 hang below 3; 4 started first
    spans = [
        record("one", 1, 2, start_us=3), record("two", 2, 3, start_us=2), record("three", 3, 4, start_us=1),
        record("four", 4, 1, start_us=0), record("five", 5, 3, start_us=4), record("six", 6, 5, start_us=5),
    ]  # fmt: skip
    tree = SpanTree.from_spans(spans)
    assert parents(tree) == {4: None, 3: 4, 2: 3, 1: 2, 5: 3, 6: 5}
    assert [len(tree.roots), len(tree.roots[0].descendants)] == [1, 5]
    assert {n.span_id: n.depth for n in tree} == {4: 0, 3: 1, 2: 2, 5: 2, 1: 3, 6: 3}
    assert tree.notes == [
        "span 'four' (0000000000000004) named parent 'one' (0000000000000001), which closes a cycle: treated as a root"
    ]


def test_cycle_of_sdk_spans_is_broken_like_one_of_span_records() -> None:
    tree = SpanTree.from_readable_spans([rspan("a", 1, 3), rspan("b", 2, 1, start_us=1), rspan("c", 3, 2, start_us=2)])
    assert parents(tree) == {1: None, 2: 1, 3: 2}
    assert len(tree.notes) == 1 and "span 'a' (0000000000000001) named parent 'c'" in tree.notes[0]


def test_the_span_a_cycle_is_broken_at_does_not_depend_on_input_order() -> None:
    spans = [record(f"s{i}", i, i % 5 + 1, start_us=(3 * i) % 5) for i in range(1, 6)]  # 1 → 2 → ... → 5 → 1
    first = SpanTree.from_spans(spans)
    for order in (spans[::-1], spans[2:] + spans[:2]):
        again = SpanTree.from_spans(order)
        assert (parents(again), again.notes) == (parents(first), first.notes)


def test_separate_cycles_each_get_a_note_in_start_order() -> None:
    tree = SpanTree.from_spans(
        [record("x", 1, 2, start_us=1), record("y", 2, 1, start_us=2), record("z", 3, 3, start_us=0)]
    )
    assert [note.split(" named")[0] for note in tree.notes] == [
        "span 'z' (0000000000000003)",
        "span 'x' (0000000000000001)",
    ]
    assert names(tree.roots) == ["z", "x"]


def test_tree_without_cycles_has_no_notes(tree: SpanTree) -> None:
    assert tree.notes == []


WALK_ALL = {  # sub-queries that make each operator look at every ancestor or descendant (no early exit)
    key: {"not_": {"name_equals": "none"}} if key.startswith("all_") else {"name_equals": "none"}
    for key in RECURSIVE_KEYS
}
CYCLE_OPERATIONS: list[tuple[str, Any]] = [
    ("depth", lambda t: [n.depth for n in t]),
    ("ancestors", lambda t: [n.ancestors for n in t]),
    ("descendants", lambda t: [n.descendants for n in t]),
    ("render", lambda t: t.render()),
    ("find_ancestors with stop", lambda t: [n.find_ancestors({}, {"name_equals": "none"}) for n in t]),
    ("find_descendants with stop", lambda t: [n.find_descendants({}, {"name_equals": "none"}) for n in t]),
    *((key, lambda t, key=key: t.find({key: WALK_ALL[key]})) for key in RECURSIVE_KEYS),
    *((key, lambda t, key=key: t.find({key: 2})) for key in ("min_depth", "max_depth")),
    *((key, lambda t, key=key: t.find({key: 2})) for key in ("min_descendant_count", "max_descendant_count")),
    *(
        (
            f"{key} + stop_recursing_when",
            lambda t, key=key: t.find({key: WALK_ALL[key], "stop_recursing_when": {"name_equals": "x"}}),
        )
        for key in RECURSIVE_KEYS
    ),
]


@pytest.mark.parametrize(("what", "operation"), CYCLE_OPERATIONS, ids=[w for w, _ in CYCLE_OPERATIONS])
def test_every_ancestor_and_descendant_operation_terminates_on_a_parent_cycle(what: str, operation: Any) -> None:
    spans = [
        record("a", 1, 2),
        record("b", 2, 3, start_us=1),
        record("c", 3, 1, start_us=2),
        record("d", 4, 4, start_us=3),
    ]
    tree = SpanTree.from_spans(spans)
    with time_limit(5):
        operation(tree)


def test_render_of_a_tree_with_a_cycle_shows_every_span() -> None:
    tree = SpanTree.from_spans([record("a", 1, 2), record("b", 2, 1, start_us=1), record("c", 3, 2, start_us=2)])
    assert tree.render() == "a (0.0 ms)\n  b (0.0 ms)\n    c (0.0 ms)"


def genai_tool_span(tool: str, span_id: int, parent_id: int, start_us: int) -> Span:
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool, "gen_ai.tool.call.arguments": "{}"}
    return record(f"execute_tool {tool}", span_id, parent_id, start_us=start_us, attributes=attrs)


def test_tool_spans_inside_a_cycle_stay_in_the_trajectory_which_is_marked_incomplete() -> None:
    tree = SpanTree.from_spans([genai_tool_span("search", 1, 2, 0), genai_tool_span("fetch", 2, 1, 10)])
    traj = extract(tree)
    assert [c.name for c in traj.all_calls] == ["search", "fetch"]
    assert traj.incomplete[:1] == tree.notes and "closes a cycle" in traj.incomplete[0]


def test_grading_a_tree_with_a_parent_cycle_gives_results_naming_the_cycle() -> None:
    tree = SpanTree.from_spans([genai_tool_span("search", 1, 2, 0), genai_tool_span("fetch", 2, 1, 10)])
    with time_limit(10):
        tools, span = grade(tree, [ToolCorrectness(expected_tools=["search", "fetch"]), HasMatchingSpan(query={
            "name_equals": "execute_tool fetch", "some_ancestor_has": {"name_equals": "execute_tool search"},
        })])  # fmt: skip
    assert tools.outcome == "not_evaluated" and "which closes a cycle: treated as a root" in tools.reason
    assert span.outcome == "passed"


# --- deep chains: no recursion on the tree's depth, linear work ---------------------------------------------


def chain(n: int, *, name: Any = "s") -> SpanTree:
    """`n` spans, each the parent of the next; names from `name(i)` (or all the same)."""
    made = [
        Span(trace_id=TRACE_A, span_id=i + 1, parent_id=i or None, name=name(i) if callable(name) else name,
             start_ns=BASE_NS + i, end_ns=BASE_NS + 2 * n - i)
        for i in range(n)
    ]  # fmt: skip
    return SpanTree.from_spans(made)


def test_render_of_a_deep_chain_outlines_every_span_without_recursing() -> None:
    depth = 3 * sys.getrecursionlimit()
    lines = chain(depth, name=lambda i: f"s{i}").render().splitlines()
    assert len(lines) == depth
    assert lines[2] == "    s2 (0.0 ms)"
    limit = RENDER_INDENT_LEVELS
    assert lines[limit].startswith("  " * limit + "s")
    assert lines[limit + 1] == "  " * limit + f"[depth {limit + 1}] s{limit + 1} (0.0 ms)"
    assert lines[-1] == "  " * limit + f"[depth {depth - 1}] s{depth - 1} (0.0 ms)"


def test_render_indents_spans_below_the_limit_two_spaces_a_level(tree: SpanTree) -> None:
    assert [len(line) - len(line.lstrip()) for line in tree.render().splitlines()] == [0, 2, 2, 4, 4, 6, 2]


def test_queries_on_a_deep_chain_do_not_recurse_on_its_depth() -> None:
    n = 3 * sys.getrecursionlimit()
    tree = chain(n, name=lambda i: "leaf" if i == n - 1 else "top" if i == 0 else "mid")
    assert ids(tree.find({"some_descendant_has": {"name_equals": "leaf"}})) == list(range(1, n))
    assert ids(tree.find({"some_ancestor_has": {"name_equals": "top"}})) == list(range(2, n + 1))
    assert ids(tree.find({"all_descendants_have": {"name_matches_regex": "mid|leaf"}})) == list(range(1, n + 1))
    assert ids(tree.find({"no_ancestor_has": {"name_equals": "mid"}})) == [1, 2]
    assert ids(tree.find({"min_descendant_count": n - 1})) == [1]
    assert ids(tree.find({"min_depth": n - 1})) == [n]
    stopped = {"some_descendant_has": {"name_equals": "leaf"}, "stop_recursing_when": {"name_equals": "mid"}}
    assert ids(tree.find(stopped)) == [n - 1]
    assert tree.nodes[0].first_descendant({"name_equals": "leaf"}) is tree.nodes[-1]
    assert tree.nodes[-1].depth == n - 1 and len(tree.nodes[-1].ancestors) == n - 1


class CountingQuery(dict[str, Any]):
    """A sub-query that counts how often it is evaluated (each evaluation reads its `name_equals`)."""

    evaluations = 0

    def get(self, key: str, default: Any = None) -> Any:
        if key == "name_equals":
            type(self).evaluations += 1
        return super().get(key, default)


LINEAR_QUERIES = {
    "some_ancestor_has": lambda sub: {"some_ancestor_has": sub},
    "all_ancestors_have": lambda sub: {"all_ancestors_have": {"not_": sub}},
    "no_ancestor_has with stop": lambda sub: {"no_ancestor_has": sub, "stop_recursing_when": {"name_equals": "z"}},
    "some_descendant_has": lambda sub: {"some_descendant_has": sub},
    "all_descendants_have": lambda sub: {"all_descendants_have": {"not_": sub}},
    "no_descendant_has with stop": lambda sub: {"no_descendant_has": sub, "stop_recursing_when": {"name_equals": "z"}},
    "nested": lambda sub: {"some_descendant_has": {"some_ancestor_has": {"some_child_has": sub}}},
}


@pytest.mark.parametrize("make", LINEAR_QUERIES.values(), ids=list(LINEAR_QUERIES))
def test_ancestor_and_descendant_queries_evaluate_each_sub_query_once_per_span(make: Any) -> None:
    n = 2000
    tree = chain(n)
    CountingQuery.evaluations = 0
    tree.find(make(CountingQuery(name_equals="missing")))
    assert CountingQuery.evaluations <= n  # naively, each span would look at each of its ancestors: n²/2


def test_a_query_on_one_node_evaluates_sub_queries_at_most_once_per_span() -> None:
    n = 2000
    tree = chain(n)
    CountingQuery.evaluations = 0
    middle = tree.nodes[n // 2]
    assert not middle.matches({"some_descendant_has": {"some_descendant_has": CountingQuery(name_equals="missing")}})
    assert CountingQuery.evaluations <= n


def test_validate_rejects_a_query_nested_past_the_limit() -> None:
    query: dict[str, Any] = {"name_equals": "x"}
    for _ in range(MAX_QUERY_NESTING):
        query = {"not_": query}
    validate_query(query)
    with pytest.raises(ValueError, match=f"nested more than {MAX_QUERY_NESTING} levels deep"):
        validate_query({"some_child_has": query})


# --- property: SpanQuery against a brute-force evaluator; cycles never hang nor drop a span -------------------


class BruteForce:
    """SpanQuery read literally over span records with acyclic parent links: every relation is recomputed
    from the records by scanning them, with no memo and no shortcut."""

    def __init__(self, spans: list[Span]) -> None:
        self.spans = spans
        self.by_key = {(s.trace_id, s.span_id): s for s in spans}
        self._ancestors = {id(s): self._walk_up(s) for s in spans}

    def parent(self, s: Span) -> Span | None:
        return None if s.parent_id is None else self.by_key.get((s.trace_id, s.parent_id))

    def _walk_up(self, s: Span) -> list[Span]:
        out, p = [], self.parent(s)
        while p is not None:
            out.append(p)
            p = self.parent(p)
        return out

    def ancestors(self, s: Span, stop: Any = None) -> list[Span]:
        """Nearest first; with `stop`, up to and including the first ancestor matching it."""
        out = []
        for a in self._ancestors[id(s)]:
            out.append(a)
            if stop is not None and self.matches(stop, a):
                break
        return out

    def children(self, s: Span) -> list[Span]:
        return [c for c in self.spans if self.parent(c) is s]

    def descendants(self, s: Span, stop: Any = None) -> list[Span]:
        """Spans below `s`; with `stop`, not those with a span matching it strictly between them and `s`."""
        out = []
        for d in self.spans:
            path = self._ancestors[id(d)]
            at = next((i for i, a in enumerate(path) if a is s), None)
            if at is not None and (stop is None or not any(self.matches(stop, a) for a in path[:at])):
                out.append(d)
        return out

    @staticmethod
    def attribute_is(s: Span, key: str, expected: Any) -> bool:
        if key not in s.attributes:
            return False
        stored = s.attributes[key]
        if stored == expected:
            return True
        if isinstance(expected, dict | list) and isinstance(stored, str):
            try:
                return bool(json.loads(stored) == expected)
            except ValueError:
                return False
        return isinstance(expected, list) and isinstance(stored, tuple) and list(stored) == expected

    def matches(self, q: Any, s: Span) -> bool:
        if q.get("or_"):
            return any(self.matches(sub, s) for sub in q["or_"])
        duration = timedelta(microseconds=((s.end_ns or s.start_ns) - s.start_ns) / 1000)

        def seconds(v: Any) -> timedelta:
            return v if isinstance(v, timedelta) else timedelta(seconds=v)

        stop = q.get("stop_recursing_when") or None
        checks = {
            "not_": lambda v: not self.matches(v, s),
            "and_": lambda v: all(self.matches(sub, s) for sub in v),
            "name_equals": lambda v: s.name == v,
            "name_contains": lambda v: v in s.name,
            "name_matches_regex": lambda v: re.match(v, s.name) is not None,
            "has_attributes": lambda v: all(self.attribute_is(s, k, x) for k, x in v.items()),
            "has_attribute_keys": lambda v: all(k in s.attributes for k in v),
            "has_status": lambda v: s.status == v,
            "min_duration": lambda v: duration >= seconds(v),
            "max_duration": lambda v: duration <= seconds(v),
            "min_child_count": lambda v: len(self.children(s)) >= v,
            "max_child_count": lambda v: len(self.children(s)) <= v,
            "some_child_has": lambda v: any(self.matches(v, c) for c in self.children(s)),
            "all_children_have": lambda v: all(self.matches(v, c) for c in self.children(s)),
            "no_child_has": lambda v: not any(self.matches(v, c) for c in self.children(s)),
            "min_descendant_count": lambda v: len(self.descendants(s)) >= v,
            "max_descendant_count": lambda v: len(self.descendants(s)) <= v,
            "some_descendant_has": lambda v: any(self.matches(v, d) for d in self.descendants(s, stop)),
            "all_descendants_have": lambda v: all(self.matches(v, d) for d in self.descendants(s, stop)),
            "no_descendant_has": lambda v: not any(self.matches(v, d) for d in self.descendants(s, stop)),
            "min_depth": lambda v: len(self.ancestors(s)) >= v,
            "max_depth": lambda v: len(self.ancestors(s)) <= v,
            "some_ancestor_has": lambda v: any(self.matches(v, a) for a in self.ancestors(s, stop)),
            "all_ancestors_have": lambda v: all(self.matches(v, a) for a in self.ancestors(s, stop)),
            "no_ancestor_has": lambda v: not any(self.matches(v, a) for a in self.ancestors(s, stop)),
        }
        # an absent, empty or zero-valued condition is no condition, except for maxima and durations
        kept_when_falsy = ("max_child_count", "max_descendant_count", "max_depth", "min_duration", "max_duration")
        return all(check(q[key]) for key, check in checks.items() if key in q and (q[key] or key in kept_when_falsy))


@st.composite
def shaped_spans(draw: st.DrawFn) -> list[Span]:
    """Span records shaped as a random tree, a deep chain, a wide fan or a forest of two traces with orphans."""
    shape = draw(st.sampled_from(["random", "chain", "fan", "forest"]))
    event(f"shape: {shape}")
    count = draw(st.integers(1, 40 if shape == "chain" else 24))
    made: list[Span] = []
    for i in range(count):
        trace_id, parent_id = TRACE_A, None
        if shape == "chain":
            parent_id = i or None
        elif shape == "fan":
            parent_id = 1 if i else None
        elif shape == "random" and made and draw(st.integers(0, 5)):
            parent_id = draw(st.sampled_from(made)).span_id
        elif shape == "forest":
            trace_id = draw(st.sampled_from([TRACE_A, TRACE_B]))
            earlier = [s.span_id for s in made if s.trace_id == trace_id]
            parent_id = draw(st.sampled_from([None, 999, *earlier]))  # 999: a parent that was not recorded
        start = BASE_NS + draw(st.integers(0, 20)) * 1000
        duration_us = draw(st.sampled_from(DURATIONS_US) | st.integers(0, 3000))
        made.append(
            Span(
                trace_id=trace_id, span_id=i + 1, parent_id=parent_id, name=draw(st.sampled_from(NAMES)),
                start_ns=start, end_ns=start + duration_us * 1000, attributes=draw(attributes),
                status=draw(st.sampled_from(["unset", "ok", "error"])),
            )
        )  # fmt: skip
    return made


def test_brute_force_evaluator_agrees_with_pydantic_evals_on_a_sample() -> None:
    """Guards the oracle itself: on the agent trace, it matches what pydantic-evals' SpanTree finds."""
    spans = agent_spans()
    records = [Span.from_readable(s) for s in spans]
    oracle = OracleTree()
    oracle.add_readable_spans(spans)
    brute = BruteForce(records)
    for query in (
        {"some_descendant_has": {"has_status": "error"}, "stop_recursing_when": {"name_contains": "tool"}},
        {"all_ancestors_have": {"max_duration": 0.05}},
        {"max_depth": 0},
        {"min_descendant_count": 2, "no_child_has": {"name_equals": "chat"}},
    ):
        assert {s.span_id for s in records if brute.matches(query, s)} == {n.span_id for n in oracle.find(query)}  # type: ignore[arg-type]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(spans=shaped_spans(), query_list=st.lists(queries, min_size=1, max_size=3))
def test_span_query_finds_what_a_brute_force_evaluator_finds(spans: list[Span], query_list: list[Any]) -> None:
    tree = SpanTree.from_spans(spans)
    brute = BruteForce(spans)
    for query in query_list:
        expected = {(s.trace_id, s.span_id) for s in spans if brute.matches(query, s)}
        assert keys(tree.find(query)) == expected, query
        assert keys(n for n in tree if n.matches(query)) == expected, query


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(spans=shaped_spans(), query=queries, stop=st.none() | queries, picks=st.lists(st.integers(0, 99), max_size=3))
def test_node_walks_find_what_a_brute_force_evaluator_finds(
    spans: list[Span], query: Any, stop: Any, picks: list[int]
) -> None:
    tree = SpanTree.from_spans(spans)
    brute = BruteForce(spans)
    in_order = list(zip(tree, sorted(spans, key=lambda s: (s.start_ns, s.span_id)), strict=True))
    for node, s in [in_order[0], in_order[-1], *(in_order[i % len(in_order)] for i in picks)]:
        assert node.depth == len(brute.ancestors(s))
        assert ids(node.find_ancestors(query, stop)) == [
            a.span_id for a in brute.ancestors(s, stop) if brute.matches(query, a)
        ]
        below = [d.span_id for d in brute.descendants(s, stop) if brute.matches(query, d)]
        assert sorted(ids(node.find_descendants(query, stop))) == sorted(below)
        in_start_order = sorted(brute.children(s), key=lambda c: (c.start_ns, c.span_id))
        assert ids(node.find_children(query)) == [c.span_id for c in in_start_order if brute.matches(query, c)]


@st.composite
def arbitrary_links(draw: st.DrawFn) -> list[Span]:
    """Span records whose parents are drawn at random: themselves, any span (cycles), or a missing one."""
    count = draw(st.integers(1, 30))
    made = []
    for i in range(1, count + 1):
        parent = draw(st.none() | st.integers(1, count) | st.just(count + 1))
        made.append(record(f"s{draw(st.integers(0, 2))}", i, parent, start_us=draw(st.integers(0, 5))))
    return made


def cycles_of(spans: list[Span]) -> list[set[int]]:
    """The parent cycles among `spans`, found the slow way: a span is on one if its parents lead back to it."""
    parent = {s.span_id: s.parent_id for s in spans}
    found: list[set[int]] = []
    for s in spans:
        cycle, p = {s.span_id}, parent[s.span_id]
        for _ in range(len(spans)):
            if p is None or p not in parent or p == s.span_id:
                break
            cycle.add(p)
            p = parent[p]
        if p == s.span_id and cycle not in found:
            found.append(cycle)
    return found


@settings(max_examples=150, deadline=None)
@given(spans=arbitrary_links())
@example(spans=[record("ring", i, i % 500 + 1, start_us=i) for i in range(1, 501)])
def test_tree_from_arbitrary_parent_links_keeps_every_span_and_breaks_each_cycle_once(spans: list[Span]) -> None:
    with time_limit(10):
        tree = SpanTree.from_spans(spans)
        reached = [n for r in tree.roots for n in (r, *r.descendants)]
        depths = {n.span_id: (n.depth, len(n.ancestors)) for n in tree}
        tree.find({"some_ancestor_has": {"name_equals": "s1"}, "some_descendant_has": {"name_equals": "s2"}})
    assert sorted(ids(reached)) == sorted(s.span_id for s in spans)  # every span, once
    assert all(depth == count for depth, count in depths.values())
    named = {s.span_id: s.parent_id for s in spans}
    detached = set()
    for node in tree:
        if node.parent is not None:
            assert node.parent.span_id == named[node.span_id]
        elif named[node.span_id] in named:
            detached.add(node.span_id)
    cycles = cycles_of(spans)
    assert len(tree.notes) == len(cycles) == len(detached)
    first_started = {min(c, key=lambda i: (spans[i - 1].start_ns, i)) for c in cycles}
    assert detached == first_started


# --- SpanQuery values of the wrong type are refused, naming the key ---
@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"name_equals": 3}, "query.name_equals: expected a string, got int"),
        ({"not_": {"name_contains": None}}, "query.not_.name_contains: expected a string, got NoneType"),
        ({"has_attributes": ["a"]}, "query.has_attributes: expected a mapping"),
        ({"has_attribute_keys": "gen_ai.tool.name"}, "query.has_attribute_keys: expected a list of strings"),
        ({"min_duration": -1}, "query.min_duration: expected a number of seconds >= 0"),
        ({"max_duration": True}, "query.max_duration: expected a number of seconds >= 0"),
        ({"min_child_count": -1}, "query.min_child_count: expected an integer >= 0"),
        ({"and_": [{"max_depth": 1.5}]}, r"query.and_\[0\].max_depth: expected an integer >= 0"),
    ],
)
def test_a_span_query_value_of_the_wrong_type_is_refused(query: Any, message: str) -> None:
    from tracegrade.evaluators import HasMatchingSpan

    with pytest.raises(ValueError, match=message):
        HasMatchingSpan(query)
    validate_query({"name_equals": "x", "min_duration": timedelta(seconds=1), "max_depth": 0, "has_attribute_keys": []})
