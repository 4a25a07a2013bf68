"""The bridge's agentic evaluators against pydantic-evals' own, on the same hand-built span trees.

pydantic-evals 2.62 is the oracle: for random trees of Pydantic AI tool spans (both span-name
schemes, failed attempts, deferred calls, output functions, chat spans), every named bridge gives
pydantic-evals' value, in pydantic-evals' shape (no reason on a ToolCorrectness / ArgumentCorrectness
pass) and, where pydantic-evals states the same fact, starting with its words.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_evals import evaluators as pe
from pydantic_evals.evaluators import EvaluationReason, EvaluatorContext
from pydantic_evals.otel import SpanNode, SpanTree

from tracegrade.bridges import pydantic_evals as tg
from tracegrade.errors import ParameterError

_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
TOOLS = ("search", "rerank", "book")


def _span(name: str, span_id: int, start: float, attributes: dict[str, Any], status: str = "unset") -> SpanNode:
    return SpanNode(
        name=name,
        trace_id=1,
        span_id=span_id,
        parent_span_id=None,
        start_timestamp=_EPOCH + timedelta(seconds=start),
        end_timestamp=_EPOCH + timedelta(seconds=start + 0.01),
        attributes=attributes,
        status=status,  # type: ignore[arg-type]
    )


def _tool_span(span_id: int, start: float, tool: str, kind: str, args: str | None, failed: bool) -> SpanNode:
    """A Pydantic AI tool span: `running tool` (v2) or `execute_tool {name}` (v3+), or an output
    function / deferred call of either shape, which are not tool calls."""
    attrs: dict[str, Any] = {"gen_ai.tool.name": tool, "logfire.msg": f"running tool: {tool}"}
    name = "running tool" if kind == "v2" else f"execute_tool {tool}"
    if args is not None:
        attrs["tool_arguments" if kind == "v2" else "gen_ai.tool.call.arguments"] = args
    if kind == "output":
        attrs["logfire.msg"] = f"running output function: {tool}"
    if kind == "deferred":
        attrs["pydantic_ai.tool.deferral.name"] = "ApprovalRequired"
    return _span(name, span_id, start, attrs, "error" if failed else "unset")


def _context(nodes: list[SpanNode]) -> EvaluatorContext[Any, Any, Any]:
    tree = SpanTree()
    tree.add_spans(nodes)
    return EvaluatorContext(name="case", inputs={}, metadata=None, expected_output=None, output=None, duration=0.5,
                            _span_tree=tree, attributes={}, metrics={})  # fmt: skip


_args = st.one_of(
    st.none(),
    st.fixed_dictionaries({}, optional={"q": st.sampled_from(["a", "b"]), "n": st.integers(0, 2)}).map(json.dumps),
    st.sampled_from(["not-json", "[1, 2]"]),
)
_call = st.tuples(st.sampled_from(TOOLS), st.sampled_from(["v2", "v3", "v3", "output", "deferred"]), _args,
                  st.booleans())  # fmt: skip


@st.composite
def trees(draw: st.DrawFn) -> list[SpanNode]:
    calls = draw(st.lists(_call, min_size=1, max_size=6))
    # at least one call pydantic-evals counts (else tracegrade rightly says "not evaluated")
    tool, _, args, _ = calls[0]
    calls[0] = (tool, "v3", args, False)
    chats = draw(st.integers(1, 3))  # (no model span at all: MaxModelRequests is "not evaluated")
    starts = draw(st.permutations(range(len(calls) + chats)))
    nodes = [_tool_span(i + 1, starts[i], *c) for i, c in enumerate(calls)]
    nodes += [_span("chat gpt-5", 100 + k, starts[len(calls) + k],
                    {"gen_ai.request.model": "gpt-5", "gen_ai.operation.name": "chat"}) for k in range(chats)]  # fmt: skip
    return draw(st.permutations(nodes))  # added in any order: both order calls by start time


_names = st.lists(st.sampled_from(TOOLS), max_size=5)
_bools = st.booleans()
evaluators = st.one_of(
    st.builds(lambda e, a, f: ("ToolCorrectness", {"expected_tools": e, "allow_extra": a, "include_failed": f}),
              _names, _bools, _bools),
    st.builds(lambda e, o, f: ("TrajectoryMatch", {"expected_trajectory": e, "order": o, "include_failed": f}),
              _names, st.sampled_from(["exact", "in_order", "any_order"]), _bools),
    st.builds(lambda n, f: ("MaxToolCalls", {"max_calls": n, "include_failed": f}), st.integers(0, 4), _bools),
    st.builds(lambda n: ("MaxModelRequests", {"max_requests": n}), st.integers(0, 3)),
    st.builds(lambda t, x, m, o, f: ("ArgumentCorrectness", {"tool_name": t, "expected_arguments": x,
                                                             "match_mode": m, "occurrence": o, "include_failed": f}),
              st.sampled_from(TOOLS), st.sampled_from([{}, {"q": "a"}, {"q": "b", "n": 1}]),
              st.sampled_from(["subset", "exact"]), st.sampled_from(["first", "last", 0, 1, 3]), _bools),
)  # fmt: skip


def _reason(out: Any) -> str | None:
    return out.reason if isinstance(out, EvaluationReason) else None


def _value(out: Any) -> Any:
    return out.value if isinstance(out, EvaluationReason) else out


@settings(max_examples=400, deadline=None)
@given(trees(), evaluators)
def test_each_named_bridge_gives_pydantic_evals_value_shape_and_words(
    nodes: list[SpanNode], evaluator: tuple[str, dict[str, Any]]
) -> None:
    name, params = evaluator
    ctx = _context(nodes)
    theirs = getattr(pe, name)(**params).evaluate(ctx)
    ours = getattr(tg, name)(**params).evaluate(ctx)
    assert type(_value(ours)) is type(_value(theirs)) and _value(ours) == pytest.approx(_value(theirs))
    assert type(ours) is type(theirs)
    if _reason(theirs) is None:
        assert _reason(ours) is None
    else:
        assert _reason(ours) is not None
        if name != "ArgumentCorrectness" or _reason(theirs).startswith("No calls"):  # type: ignore[union-attr]
            assert _reason(ours).startswith(_reason(theirs).rstrip("."))  # type: ignore[union-attr]


def test_argument_failures_say_what_pydantic_evals_says() -> None:
    def both(args: str | None, **params: Any) -> tuple[str | None, str | None]:
        ctx = _context([_tool_span(1, 0, "search", "v3", args, False)])
        params = {"tool_name": "search", "expected_arguments": {"q": "cats"}} | params
        return _reason(pe.ArgumentCorrectness(**params).evaluate(ctx)), _reason(tg.ArgumentCorrectness(**params).evaluate(ctx))

    _, ours = both("not-json")
    assert "could not be parsed as JSON" in ours  # type: ignore[operator]
    _, ours = both("[1, 2, 3]")
    assert ours is not None and "not a JSON object: [1, 2, 3]" in ours
    _, ours = both(None)  # a Pydantic AI span without arguments: include_content=False
    assert ours is not None and ours.startswith("not evaluated:") and "include_content=True" in ours
    for occurrence in (5, -1, "middle", None, 1.5):  # pydantic-evals takes these and fails when evaluating
        for reason in both('{"q": "cats"}', occurrence=occurrence):
            assert reason is not None and f"occurrence={occurrence!r} does not select any of them" in reason
            assert "negative ints are not supported" in reason
    with pytest.raises(ParameterError, match="occurrence"):  # tracegrade's own class checks it when built
        from tracegrade.evaluators import ArgumentCorrectness

        ArgumentCorrectness("search", {}, occurrence=-1)


def test_max_duration_and_has_matching_span_return_bare_bools_like_pydantic_evals() -> None:
    ctx = _context([_tool_span(1, 0, "search", "v3", "{}", False)])  # ctx.duration is 0.5
    for seconds in (1.0, 0.1, timedelta(seconds=1)):
        assert tg.MaxDuration(seconds=seconds).evaluate(ctx) is pe.MaxDuration(seconds=seconds).evaluate(ctx)
    for query in ({"name_equals": "execute_tool search"}, {"name_equals": "nothing"}):
        ours = tg.HasMatchingSpan(query=query).evaluate(ctx)  # type: ignore[arg-type]
        assert ours is pe.HasMatchingSpan(query=query).evaluate(ctx)  # type: ignore[arg-type]
    per_tool = tg.MaxDuration(seconds=1.0, tool="search").evaluate(ctx)  # a span-based check of its own
    assert per_tool is True


def test_where_tracegrade_differs_on_purpose_it_says_not_evaluated() -> None:
    empty = _context([])
    assert pe.TrajectoryMatch(expected_trajectory=[]).evaluate(empty).value == 1.0
    ours = tg.TrajectoryMatch(expected_trajectory=[]).evaluate(empty)
    assert isinstance(ours, EvaluationReason) and ours.value == 0.0 and ours.reason.startswith("not evaluated:")
    nameless = _context([_span("running tool", 1, 0, {"gen_ai.tool.name": 123, "logfire.msg": "running tool: 123"})])
    assert pe.ToolCorrectness(expected_tools=[]).evaluate(nameless) == EvaluationReason(value=True)
    ours = tg.ToolCorrectness(expected_tools=[]).evaluate(nameless)
    assert isinstance(ours, EvaluationReason) and ours.value is False and ours.reason.startswith("not evaluated:")
