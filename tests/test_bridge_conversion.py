"""What the pydantic-evals bridge converts: span trees both ways and every dialect's runs.

`SpanTree` conversions (hypothesis round trips, and against a real capture); OpenInference /
OpenLLMetry tasks graded through pydantic-evals; cases without a span tree (or without an agent).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry import trace
from pydantic_evals import Case, Dataset
from pydantic_evals import evaluators as pe
from pydantic_evals.evaluators import EvaluationReason, EvaluatorContext
from pydantic_evals.otel import SpanNode as PESpanNode
from pydantic_evals.otel import SpanTree as PESpanTree
from pydantic_evals.otel import SpanTreeRecordingError

import tracegrade.bridges.pydantic_evals as tb
from _bridge_helpers import SIDE_BY_SIDE, _values, sdk_provider, shop_task  # noqa: F401 (sdk_provider: an autouse fixture)
from tracegrade import Span, capture
from tracegrade.tree import SpanTree

# --- every dialect ---------------------------------------------------------------------------------


def _openinference_run() -> str:
    tracer = trace.get_tracer("openinference.instrumentation.openai_agents")
    with (
        tracer.start_as_current_span("Agent workflow", attributes={"openinference.span.kind": "CHAIN"}),
        tracer.start_as_current_span(
            "support", attributes={"openinference.span.kind": "AGENT", "agent.name": "support"}
        ),
    ):
        llm = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o", "llm.token_count.prompt": 12}
        with tracer.start_as_current_span("response", attributes=llm):
            pass
        tool = {
            "openinference.span.kind": "TOOL",
            "tool.name": "issue_refund",
            "input.value": json.dumps({"order_id": "12345"}),
        }
        with tracer.start_as_current_span("issue_refund", attributes=tool):
            pass
    return "Refund issued for order 12345."


def _openllmetry_run() -> str:
    tracer = trace.get_tracer("traceloop.tracer")
    agent = {"traceloop.span.kind": "agent", "traceloop.entity.name": "support", "traceloop.workflow.name": "refunds"}
    with tracer.start_as_current_span("support.agent", attributes=agent):
        chat = {"llm.request.type": "chat", "gen_ai.request.model": "gpt-4o", "traceloop.workflow.name": "refunds"}
        with tracer.start_as_current_span("openai.chat", attributes=chat):
            pass
        tool = {
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": "issue_refund",
            "traceloop.workflow.name": "refunds",
            "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"order_id": "12345"}}),
        }
        with tracer.start_as_current_span("issue_refund.tool", attributes=tool):
            pass
    return "Refund issued for order 12345."


@pytest.mark.parametrize("run", [_openinference_run, _openllmetry_run], ids=["openinference", "openllmetry"])
def test_openinference_and_openllmetry_tasks_are_graded(run: Callable[[], str]) -> None:
    def evaluators(m: Any) -> list[Any]:
        return [
            m.ToolCorrectness(expected_tools=["issue_refund"]),
            m.TrajectoryMatch(expected_trajectory=["issue_refund"]),
            m.ArgumentCorrectness(tool_name="issue_refund", expected_arguments={"order_id": "12345"}),
            m.MaxToolCalls(max_calls=1),
            m.MaxModelRequests(max_requests=1),
        ]

    def values(m: Any) -> dict[str, Any]:
        ds = Dataset(
            name="dialects", cases=[Case(name="refund", inputs="Refund order 12345")], evaluators=evaluators(m)
        )
        return {n: r.value for (_, n), r in _values(ds.evaluate_sync(lambda _: run(), progress=False)).items()}

    assert values(tb) == {
        "ToolCorrectness": True,
        "TrajectoryMatch": 1.0,
        "ArgumentCorrectness": True,
        "MaxToolCalls": True,
        "MaxModelRequests": True,
    }
    theirs = values(pe)  # pydantic-evals' evaluators only know Pydantic AI's spans
    assert theirs["ToolCorrectness"] is False and theirs["ArgumentCorrectness"] is False


# --- no span tree ----------------------------------------------------------------------------------


def _context(
    span_tree: Any, output: Any = "done", metrics: dict[str, Any] | None = None
) -> EvaluatorContext[Any, Any, Any]:
    return EvaluatorContext(
        name="case", inputs="go", metadata=None, expected_output=None, output=output, duration=0.1,
        _span_tree=span_tree, attributes={}, metrics=metrics or {},
    )  # fmt: skip


def test_without_a_span_tree_the_values_are_pydantic_evals_graceful_failures() -> None:
    ctx = _context(SpanTreeRecordingError("call logfire.configure()"), metrics={"requests": 1})
    for label, make in SIDE_BY_SIDE.items():
        ours = make(tb, None).evaluate(ctx)
        assert isinstance(ours, EvaluationReason)
        assert ours.reason is not None
        # how to instrument, in pydantic-evals' words and ours, then pydantic-evals' own message
        assert ours.reason.startswith("No span tree available — ensure logfire/instrumentation is configured")
        assert "tracer provider" in ours.reason and "Agent.instrument_all()" in ours.reason
        assert "pydantic-evals: call logfire.configure()" in ours.reason
        if label.startswith("HasMatchingSpan"):  # pydantic-evals raises; the bridge fails gracefully
            with pytest.raises(SpanTreeRecordingError):
                make(pe, None).evaluate(ctx)
            assert ours.value is False
            continue
        theirs = make(pe, None).evaluate(ctx)
        assert (type(ours.value), ours.value) == (type(theirs.value), theirs.value), label


def test_without_a_span_tree_in_a_real_experiment(monkeypatch: pytest.MonkeyPatch) -> None:
    import pydantic_evals.dataset

    @contextmanager
    def no_tree() -> Iterator[SpanTreeRecordingError]:
        yield SpanTreeRecordingError("no tracer provider")

    monkeypatch.setattr(pydantic_evals.dataset, "context_subtree", no_tree)
    dataset = Dataset(
        name="no_tree",
        cases=[Case(name="c", inputs="success")],
        evaluators=[
            tb.ToolCorrectness(expected_tools=["search"]),
            tb.TrajectoryMatch(expected_trajectory=["search"]),
            tb.ContainsEvaluator(any_of=["done"]),  # reads the output: still graded
        ],
    )
    values = {n: r.value for (_, n), r in _values(dataset.evaluate_sync(shop_task, progress=False)).items()}
    assert values == {"ToolCorrectness": False, "TrajectoryMatch": 0.0, "ContainsEvaluator": True}


def test_a_case_with_spans_but_no_agent_is_not_evaluated_rather_than_vacuously_passed() -> None:
    def task(_: str) -> str:
        with trace.get_tracer("app").start_as_current_span("plain work"):
            return "done"

    ds = Dataset(name="x", cases=[Case(name="c", inputs="go")], evaluators=[tb.MaxToolCalls(max_calls=3)])
    [(value, reason)] = [(r.value, r.reason) for r in _values(ds.evaluate_sync(task, progress=False)).values()]
    assert value is False and reason is not None and reason.startswith("not evaluated:")
    assert "none is an agent, model or tool span" in reason


# --- SpanTree conversions ------------------------------------------------------------------------

_ATTR_VALUES = st.one_of(
    st.text(max_size=8),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.lists(st.text(max_size=4), max_size=3).map(tuple),
    st.lists(st.integers(min_value=-5, max_value=5), max_size=3).map(tuple),
)
_ATTRS = st.dictionaries(st.text(min_size=1, max_size=10), _ATTR_VALUES, max_size=5)
_NS = st.integers(min_value=0, max_value=2**62)


@st.composite
def span_forests(draw: st.DrawFn) -> list[Span]:
    """Spans of one to three traces: roots, children of earlier spans, orphans (absent parents)."""
    traces = draw(st.lists(st.integers(min_value=1, max_value=2**128 - 1), min_size=1, max_size=3, unique=True))
    ids = draw(st.lists(st.integers(min_value=1, max_value=2**64 - 1), min_size=1, max_size=12, unique=True))
    spans: list[Span] = []
    for span_id in ids:
        trace_id = draw(st.sampled_from(traces))
        earlier = [s.span_id for s in spans if s.trace_id == trace_id]
        parent = draw(
            st.one_of(
                st.none(),
                st.sampled_from(earlier) if earlier else st.none(),
                st.integers(1, 2**64 - 1).filter(lambda p: p not in ids),  # absent: not a cycle by chance
            )
        )
        start = draw(_NS)
        spans.append(
            Span(
                trace_id=trace_id,
                span_id=span_id,
                parent_id=parent,
                name=draw(st.text(max_size=12)),
                start_ns=start,
                end_ns=start + draw(st.integers(min_value=0, max_value=10**12)),
                attributes=draw(_ATTRS),
                status=draw(st.sampled_from(["unset", "ok", "error"])),
            )
        )
    return spans


def _shape(tree: SpanTree, *, by_key: bool = False) -> list[tuple[Any, ...]]:
    """Every node's fields and links, in tree order (`by_key`: sorted by ids, children too, for
    trees whose equal start times may list ties either way)."""
    rows = [
        (n.trace_id, n.span_id, n.parent_span_id, n.name, dict(n.attributes), n.status,
         n.parent.span_id if n.parent else None,
         sorted(c.span_id for c in n.children) if by_key else [c.span_id for c in n.children])
        for n in tree
    ]  # fmt: skip
    return sorted(rows, key=lambda r: (r[0], r[1])) if by_key else rows


def _pe_shape(tree: PESpanTree) -> list[tuple[Any, ...]]:
    """Every node's fields and links; ordered by key (ties in start time may be listed either way)."""
    return sorted(
        (n.node_key, n.parent_span_id, n.name, n.attributes, n.status, n.start_timestamp, n.end_timestamp,
         n.parent.node_key if n.parent else None, sorted(c.node_key for c in n.children))
        for n in tree
    )  # fmt: skip


def _micro(ns: int) -> int:
    return (ns + 500) // 1000 * 1000


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(span_forests())
def test_round_trip_tracegrade_to_pydantic_evals_and_back(spans: list[Span]) -> None:
    tree = SpanTree.from_spans(spans)
    converted = tb.to_pydantic_evals_tree(tree)
    assert [n.node_key for n in converted.roots] == [n.node_key for n in tree.roots]
    back = tb.from_pydantic_evals_tree(converted)
    assert _shape(back) == _shape(tree)
    assert [(n.start_ns, n.end_ns) for n in back] == [(n.start_ns, n.end_ns) for n in tree]  # ns precision kept
    for node in converted:  # a pydantic-evals tree that lost the originals: microsecond times
        delattr(node, "_tracegrade_span")
    plain = tb.from_pydantic_evals_tree(converted)
    assert _shape(plain, by_key=True) == _shape(tree, by_key=True)  # rounding to µs may tie start times
    assert {n.node_key: (n.start_ns, n.end_ns) for n in plain} == {
        n.node_key: (_micro(n.start_ns), _micro(n.end_ns or 0)) for n in tree
    }


@st.composite
def pe_trees(draw: st.DrawFn) -> PESpanTree:
    nodes = []
    for span in draw(span_forests()):
        start = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=span.start_ns // 1000)
        nodes.append(
            PESpanNode(
                name=span.name,
                trace_id=span.trace_id,
                span_id=span.span_id,
                parent_span_id=span.parent_id,
                start_timestamp=start,
                end_timestamp=start + timedelta(microseconds=draw(st.integers(0, 10**9))),
                attributes=dict(span.attributes),
                status=span.status,
            )
        )
    tree = PESpanTree()
    tree.add_spans(nodes)
    return tree


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pe_trees())
def test_round_trip_pydantic_evals_to_tracegrade_and_back(tree: PESpanTree) -> None:
    back = tb.to_pydantic_evals_tree(tb.from_pydantic_evals_tree(tree))
    assert _pe_shape(back) == _pe_shape(tree)
    assert sorted(n.node_key for n in back.roots) == sorted(n.node_key for n in tree.roots)
    assert [n.start_timestamp for n in back] == sorted(n.start_timestamp for n in tree)


def test_edited_pydantic_evals_nodes_are_read_as_edited() -> None:
    tree = SpanTree.from_spans([Span(1, 2, None, "a", 1_000_000_123, 2_000_000_456, {"k": 1}, "ok")])
    converted = tb.to_pydantic_evals_tree(tree)
    [node] = list(converted)
    node.attributes["k"] = 2
    [back] = list(tb.from_pydantic_evals_tree(converted))
    assert dict(back.attributes) == {"k": 2} and back.start_ns == 1_000_000_000  # the node's microseconds


def test_open_spans_get_their_start_as_end_in_pydantic_evals_and_come_back_open() -> None:
    tree = SpanTree.from_spans([Span(1, 2, None, "open", 5_000, None)])
    [node] = list(tb.to_pydantic_evals_tree(tree))
    assert node.end_timestamp == node.start_timestamp
    [back] = list(tb.from_pydantic_evals_tree(tb.to_pydantic_evals_tree(tree)))
    assert back.end_ns is None


def test_a_real_ctx_span_tree_converts_to_what_capture_recorded() -> None:
    """The same run, recorded by pydantic-evals and by tracegrade.capture(): same spans, times to 1 µs."""
    captured: list[SpanTree] = []
    trees: list[PESpanTree] = []

    async def task(kind: str) -> str:
        async with capture() as cap:
            out = await shop_task(kind)
        captured.append(cap.tree)
        return out

    class Keep(pe.Evaluator):
        def evaluate(self, ctx: EvaluatorContext[Any, Any, Any]) -> bool:
            trees.append(ctx.span_tree)
            return True

    Dataset(name="x", cases=[Case(name="c", inputs="parallel")], evaluators=[Keep()]).evaluate_sync(
        task, progress=False
    )
    ours, theirs = captured[0], tb.from_pydantic_evals_tree(trees[0])
    assert _shape(ours) == _shape(theirs)
    assert all(abs(a.start_ns - b.start_ns) <= 1000 and abs((a.end_ns or 0) - (b.end_ns or 0)) <= 1000
               for a, b in zip(ours, theirs, strict=True))  # fmt: skip
    round_trip = tb.to_pydantic_evals_tree(ours)
    assert [(n.node_key, n.attributes, n.status) for n in round_trip] == [
        (n.node_key, n.attributes, n.status) for n in trees[0]
    ]


def test_spans_by_kind_resource_and_events_survive_a_round_trip_through_pydantic_evals() -> None:
    from tracegrade.spans import SpanEvent

    span = Span(1, 2, None, "tool", 10, 20, {"a": 1}, "error", "boom", "client",
                (SpanEvent("exception", 15, {"exception.type": "ValueError"}),), {"service.name": "shop"}, "scope", "1")  # fmt: skip
    [back] = list(tb.from_pydantic_evals_tree(tb.to_pydantic_evals_tree(SpanTree.from_spans([span]))))
    assert back.span == span
