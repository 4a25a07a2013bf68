"""`SpanTree`'s fast build reads the same spans its public paths read: SDK span fields (context tuple,
status, attributes) against the public `ReadableSpan` API, `from_spans` against node-by-node
construction over the whole framework corpus, and the first repeated id in tree order is the one
reported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, Status, StatusCode, TraceFlags

from tracegrade import capture
from tracegrade.ingest import read_spans
from tracegrade.spans import LogRecord, Span
from tracegrade.tree import SpanNode, SpanTree, _nodes_from_readable

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"
_FIELDS = ("name", "trace_id", "span_id", "parent_span_id", "start_ns", "end_ns", "status")


def _fields(node: SpanNode) -> tuple[Any, ...]:
    return (*(getattr(node, f) for f in _FIELDS), dict(node.attributes), node.source)


def _sdk_spans(limits: SpanLimits | None = None) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(span_limits=limits) if limits else TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("root", attributes={"a": 1, "b": "x"}) as root:
        with tracer.start_as_current_span("ok", attributes={"c": (1, 2)}) as ok:
            ok.set_status(Status(StatusCode.OK))
            ok.add_event("e", {"k": "v"})
        with tracer.start_as_current_span("failed") as failed:
            failed.set_status(Status(StatusCode.ERROR, "boom"))
        root.set_attribute("late", True)
    provider.shutdown()
    return list(exporter.get_finished_spans())


class _Context(SpanContext):
    """A `SpanContext` subclass: read through its properties, not as the SDK's tuple."""


def test_nodes_read_from_sdk_fields_equal_the_public_readable_span_api() -> None:
    spans = [*_sdk_spans(), *_sdk_spans(SpanLimits(max_span_attributes=1))]
    subclassed = ReadableSpan(
        "sub", context=_Context(7, 8, is_remote=False, trace_flags=TraceFlags(1)),
        parent=_Context(7, 9, is_remote=False), resource=Resource.get_empty(), attributes={"x": 1},
        status=Status(StatusCode.ERROR), start_time=1, end_time=2,
    )  # fmt: skip
    spans.append(subclassed)
    fast = _nodes_from_readable(spans)
    assert [_fields(n) for n in fast] == [_fields(SpanNode.from_readable_span(s)) for s in spans]
    assert {n.status for n in fast} == {"ok", "error", "unset"}
    assert fast[-1].parent_span_id == 9 and (fast[-1].trace_id, fast[-1].span_id) == (7, 8)


def test_spans_a_capture_slimmed_read_as_the_public_api_reads_them() -> None:
    with capture() as cap:
        from opentelemetry import trace

        with trace.get_tracer("t").start_as_current_span("run", attributes={"k": "v"}):
            pass
    fast = _nodes_from_readable(cap.spans)
    assert [_fields(n) for n in fast] == [_fields(SpanNode.from_readable_span(s)) for s in cap.spans]


@pytest.mark.parametrize("entry", json.loads((CORPUS / "manifest.json").read_text())["runs"], ids=lambda e: e["traces"])
def test_from_spans_builds_the_tree_node_by_node_construction_builds(entry: dict[str, Any]) -> None:
    spans = list(read_spans(CORPUS / entry["traces"]))
    fast, slow = SpanTree.from_spans(spans), SpanTree([SpanNode.from_span(s) for s in spans])
    assert [_fields(n) for n in fast] == [_fields(n) for n in slow]
    assert [n.span_id for n in fast.roots] == [n.span_id for n in slow.roots]
    assert [[c.span_id for c in n.children] for n in fast] == [[c.span_id for c in n.children] for n in slow]
    assert [n.depth for n in fast] == [n.depth for n in slow] and fast.notes == slow.notes


def test_the_first_repeated_span_id_in_tree_order_is_reported() -> None:
    spans = [Span(1, sid, None, f"s{sid}", start, start + 1, {}) for sid, start in ((5, 30), (3, 10), (5, 40), (3, 20))]
    with pytest.raises(ValueError, match=f"^duplicate span id {3:016x} in trace {1:032x}$"):
        SpanTree.from_spans(spans)


def test_a_subclass_with_its_own_init_is_built_through_it() -> None:
    built: list[int] = []

    class Counted(SpanTree):
        def __init__(self, nodes: Any = ()) -> None:
            nodes = list(nodes)
            built.append(len(nodes))
            super().__init__(nodes)

    tree = Counted.from_spans([Span(1, 2, None, "s", 0, 1, {})])
    assert type(tree) is Counted and built == [1] and len(tree) == 1


def test_every_node_starts_without_logs_and_attaching_gives_only_that_node_its_own() -> None:
    tree = SpanTree.from_spans([Span(1, 2, None, "a", 0, 5, {}), Span(1, 3, 2, "b", 1, 2, {})])
    a, b = tree.nodes
    assert a.logs == [] and b.logs == []
    tree.attach_logs([LogRecord(trace_id=1, span_id=3, time_ns=1, event_name="e", body=None)])
    assert a.logs == [] and [r.event_name for r in b.logs] == ["e"]
    assert SpanTree.from_spans([Span(1, 2, None, "c", 0, 5, {})]).nodes[0].logs == []
