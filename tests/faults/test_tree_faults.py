"""Fault suite for `SpanTree` / `SpanQuery`: hostile tree shapes × every tree operation, each time-bounded.

Shapes: a deep chain, a two-span cycle and a self-parent with a chain hanging below, one long cycle,
a forest of many small traces, a wide fan, and spans whose names only look alike. At CI scale the
shapes have about 5k spans (the fan 10k) and every check runs in-process under a time limit; under
`--faults-full` a 100k-span chain is attacked in a bounded child process.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from tracegrade import grade, write_otlp_json
from tracegrade.dialects import extract
from tracegrade.evaluators import HasMatchingSpan
from tracegrade.spans import Span
from tracegrade.tree import SpanTree

from ._bounded import run_bounded, time_limit

BASE_NS = 1_700_000_000 * 10**9
SIZES = {"ci": 5_000, "full": 20_000}
FAN_SIZES = {"ci": 10_000, "full": 100_000}
CHECK_SECONDS = 5.0
"""Every single check must finish within this (a linear operation on these sizes takes well under 1 s)."""




def span(span_id: int, parent_id: int | None, name: str, *, trace_id: int = 1, start: int = 0) -> Span:
    return Span(
        trace_id=trace_id, span_id=span_id, parent_id=parent_id, name=name,
        start_ns=BASE_NS + start, end_ns=BASE_NS + start + 1000,
        attributes={"i": span_id, "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
        if name == "tool" else {"i": span_id},
        status="error" if span_id % 97 == 0 else "unset",
    )  # fmt: skip


def chain_spans(n: int, first: int = 1, parent: int | None = None) -> list[Span]:
    return [span(first + i, parent if i == 0 else first + i - 1, "tool" if i % 10 == 3 else f"s{i % 7}", start=first + i)
            for i in range(n)]  # fmt: skip


def shapes(scale: str) -> dict[str, tuple[list[Span], int]]:
    """name → (spans, the number of parent cycles among them)."""
    n, fan = SIZES[scale], FAN_SIZES[scale]
    look_alike = ["tool", "tool ", "Tool", "tool\u200b", "t\u043eol", "tool\n", "[bold]tool[/bold]", ""]
    return {
        "chain": (chain_spans(n), 0),
        "two-span cycle + chain": ([span(1, 2, "a"), span(2, 1, "b", start=1), *chain_spans(n, 3, 2)], 1),
        "self-parent + chain": ([span(1, 1, "self"), *chain_spans(n, 2, 1)], 1),
        "long cycle": ([span(1, n, "ring"), *chain_spans(n - 1, 2, 1)], 1),
        "forest": (
            [
                span(k + 1, k or None, "tool" if k % 3 else "s", trace_id=t + 1, start=k)
                for t in range(50)
                for k in range(n // 50)
            ],
            0,
        ),  # fmt: skip
        "wide fan": (
            [span(1, None, "root"), *(span(i, 1, "tool" if i % 2 else "s", start=i) for i in range(2, fan + 1))],
            0,
        ),
        "look-alike names": ([span(i + 1, i or None, look_alike[i % len(look_alike)], start=i) for i in range(n)], 0),
    }


RECURSIVE = ("some_descendant_has", "all_descendants_have", "no_descendant_has",
             "some_ancestor_has", "all_ancestors_have", "no_ancestor_has")  # fmt: skip
QUERIES: dict[str, dict[str, Any]] = {
    "name_equals": {"name_equals": "tool"},
    "name_contains": {"name_contains": "oo"},
    "name_matches_regex": {"name_matches_regex": "t.o"},
    "has_attributes": {"has_attributes": {"i": 7}},
    "has_attribute_keys": {"has_attribute_keys": ["gen_ai.tool.name"]},
    "has_status": {"has_status": "error"},
    "min_duration": {"min_duration": 0.000001},
    "max_duration": {"max_duration": 0.0},
    "not_": {"not_": {"name_equals": "tool"}},
    "and_": {"and_": [{"name_contains": "t"}, {"has_status": "unset"}]},
    "or_": {"or_": [{"name_equals": "tool"}, {"has_status": "error"}]},
    "min_child_count": {"min_child_count": 2},
    "max_child_count": {"max_child_count": 0},
    "some_child_has": {"some_child_has": {"name_equals": "tool"}},
    "all_children_have": {"all_children_have": {"name_equals": "tool"}},
    "no_child_has": {"no_child_has": {"name_equals": "tool"}},
    "min_descendant_count": {"min_descendant_count": 100},
    "max_descendant_count": {"max_descendant_count": 100},
    "min_depth": {"min_depth": 100},
    "max_depth": {"max_depth": 100},
    **{key: {key: {"has_status": "error"}} for key in RECURSIVE},
    **{
        f"{key} + stop_recursing_when": {key: {"has_status": "error"}, "stop_recursing_when": {"name_equals": "tool"}}
        for key in RECURSIVE
    },  # fmt: skip
    "nested": {"some_descendant_has": {"some_ancestor_has": {"no_child_has": {"name_equals": "x"}}}},
}
NEGATIONS = [  # (query, its complement): each pair must split the spans exactly in two
    ({"some_descendant_has": {"has_status": "error"}}, {"no_descendant_has": {"has_status": "error"}}),
    ({"some_ancestor_has": {"name_equals": "tool"}}, {"no_ancestor_has": {"name_equals": "tool"}}),
    ({"all_descendants_have": {"name_contains": "o"}}, {"some_descendant_has": {"not_": {"name_contains": "o"}}}),
    ({"all_ancestors_have": {"has_status": "unset"}, "stop_recursing_when": {"name_equals": "tool"}},
     {"some_ancestor_has": {"not_": {"has_status": "unset"}}, "stop_recursing_when": {"name_equals": "tool"}}),
]  # fmt: skip

Operation = Callable[[SpanTree], object]
OPERATIONS: dict[str, Operation] = {
    "iterate": lambda t: sum(1 for _ in t),
    "depth": lambda t: max(n.depth for n in t),
    "walk from roots": lambda t: sum(1 + len(r.descendants) for r in t.roots),
    "ancestors of the last span": lambda t: len(t.nodes[-1].ancestors),
    "render": lambda t: len(t.render()),
    "find_descendants + stop": lambda t: [
        len(r.find_descendants({"has_status": "error"}, {"name_equals": "tool"})) for r in t.roots
    ],  # fmt: skip
    "first_ancestor": lambda t: t.nodes[-1].first_ancestor({"name_equals": "missing"}),
    "find_ancestors + stop": lambda t: len(t.nodes[-1].find_ancestors({}, {"name_equals": "tool"})),
    "trajectory": lambda t: len(extract(t).all_calls),
    "HasMatchingSpan": lambda t: (
        grade(t, [HasMatchingSpan(query={"some_ancestor_has": {"name_equals": "missing"}})])[0].outcome
    ),
    **{f"find {name}": (lambda t, q=q: len(t.find(q))) for name, q in QUERIES.items()},  # type: ignore[misc]
}


@pytest.fixture(scope="module")
def trees(fault_scale: str) -> dict[str, tuple[SpanTree, int, int]]:
    """shape → (tree, spans given, cycles among them); building each is itself a bounded check."""
    built = {}
    for name, (spans, cycles) in shapes(fault_scale).items():
        with time_limit(CHECK_SECONDS, f"building {name}"):
            built[name] = (SpanTree.from_spans(spans), len(spans), cycles)
    return built


SHAPES = list(shapes("ci"))


@pytest.mark.parametrize("shape", SHAPES)
def test_every_shape_keeps_every_span_and_notes_each_broken_cycle(
    trees: dict[str, tuple[SpanTree, int, int]], shape: str
) -> None:
    tree, given, cycles = trees[shape]
    with time_limit(CHECK_SECONDS, f"walking {shape}"):
        reached = sum(1 + len(r.descendants) for r in tree.roots)
    assert len(tree) == reached == given
    assert len(tree.notes) == cycles and all("closes a cycle: treated as a root" in note for note in tree.notes)


@pytest.mark.parametrize("shape", SHAPES)
def test_every_operation_finishes_in_time_on_every_shape(
    trees: dict[str, tuple[SpanTree, int, int]], shape: str
) -> None:
    tree, _, _ = trees[shape]
    slow = {}
    for what, operation in OPERATIONS.items():
        started = time.perf_counter()
        with time_limit(CHECK_SECONDS, f"{what} on {shape}"):
            operation(tree)
        slow[what] = time.perf_counter() - started
    assert len(slow) == len(OPERATIONS)


@pytest.mark.parametrize("shape", SHAPES)
def test_complementary_queries_split_every_shape_in_two(
    trees: dict[str, tuple[SpanTree, int, int]], shape: str
) -> None:
    tree, _, _ = trees[shape]
    for query, complement in NEGATIONS:
        with time_limit(CHECK_SECONDS, f"{query} on {shape}"):
            yes, no = tree.find(query), tree.find(complement)  # type: ignore[arg-type]
        assert len(yes) + len(no) == len(tree) and not {id(n) for n in yes} & {id(n) for n in no}, query


def test_chain_query_results_are_those_of_a_chain(trees: dict[str, tuple[SpanTree, int, int]]) -> None:
    tree, n, _ = trees["chain"]
    assert [len(tree.find({"min_depth": d})) for d in (0, 1, n - 1, n)] == [n, n - 1, 1, 0]
    assert len(tree.find({"some_descendant_has": {"name_equals": "tool"}})) == max(
        i for i in range(n) if i % 10 == 3
    )  # every span above the last tool span
    assert len(tree.find({"max_descendant_count": 9})) == 10
    render = tree.render().splitlines()
    assert len(render) == n and render[-1].lstrip().startswith(f"[depth {n - 1}] ")


def test_look_alike_names_are_told_apart(trees: dict[str, tuple[SpanTree, int, int]]) -> None:
    tree, n, _ = trees["look-alike names"]
    exact = tree.find({"name_equals": "tool"})
    assert len(exact) == n // 8 and {s.name for s in exact} == {"tool"}
    assert "[bold]tool[/bold]" in tree.render()  # shown as recorded, never read as markup here


FULL_SCALE_ATTACK = """
import json, time
from tracegrade import grade, write_otlp_json
from tracegrade.evaluators import HasMatchingSpan
from tracegrade.spans import Span
from tracegrade.tree import SpanTree
B = 1_700_000_000 * 10**9
n = {n}
spans = [Span(trace_id=1, span_id=i + 1, parent_id=i or (n if {cycle} else None), name=f"s{{i % 7}}",
              start_ns=B + i, end_ns=B + 2 * n - i) for i in range(n)]
times = {{}}
def timed(what, f):
    t = time.perf_counter(); f(); times[what] = round(time.perf_counter() - t, 3)
timed("build", lambda: globals().__setitem__("tree", SpanTree.from_spans(spans)))
timed("HasMatchingSpan", lambda: grade(tree, [HasMatchingSpan(query={{"some_ancestor_has": {{"name_equals": "x"}}}})]))
timed("render", lambda: tree.render())
timed("descendant query", lambda: tree.find({{"some_descendant_has": {{"has_status": "error"}}}}))
timed("ancestor query + stop", lambda: tree.find({{"all_ancestors_have": {{"name_contains": "s"}},
                                                   "stop_recursing_when": {{"name_equals": "s3"}}}}))
timed("depths", lambda: [m.depth for m in tree])
assert len(tree) == n and len(tree.notes) == {cycle}
print(json.dumps(times))
"""


@pytest.mark.parametrize("cycle", [False, True], ids=["chain", "chain closed into a cycle"])
def test_full_scale_100k_span_chain_is_handled_in_linear_time(fault_scale: str, cycle: bool) -> None:
    if fault_scale != "full":
        pytest.skip("full scale only (--faults-full)")
    result = run_bounded(FULL_SCALE_ATTACK.format(n=100_000, cycle=int(cycle)), timeout=120, max_memory_mb=3072)
    assert result.returncode == 0, result.stderr[-2000:]
    times = json.loads(result.stdout.strip().splitlines()[-1])
    print(f"100k-span chain{' (cycle)' if cycle else ''}: {times}, peak RSS {result.peak_rss_mb:.0f} MB")
    assert all(seconds < 15 for seconds in times.values()), times


def test_show_outlines_a_deep_chain_read_from_a_file(tmp_path: Any, fault_scale: str) -> None:
    n = SIZES[fault_scale]
    path = tmp_path / "chain.json"
    write_otlp_json(chain_spans(n), path)
    result = run_bounded(
        f"""
        import sys
        from tracegrade.cli import main
        sys.exit(main(["show", {str(path)!r}]))
        """,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"[depth {n - 1}] s" in result.stdout and "RecursionError" not in result.stderr
