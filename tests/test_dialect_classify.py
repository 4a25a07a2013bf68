"""A dialect's fast `classify(node)` answers exactly what its readable spec (`recognizes` then
`agent_run` / `tool_call` / `model_request`) answers, on every span of every recorded fixture."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from tracegrade.dialects import DIALECTS, Dialect
from tracegrade.ingest import read_spans, trace_files
from tracegrade.trajectory import AgentRun, ModelRequest, ToolCall
from tracegrade.tree import SpanNode, SpanTree

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FILES = [
    *trace_files([FIXTURES / "dialects", FIXTURES / "otlp", FIXTURES / "jaeger"]),
    *sorted((FIXTURES / "frameworks").glob("*.traces.json")),
]


def _slow(d: Dialect, node: SpanNode) -> object:
    if not d.recognizes(node):
        return False
    return d.agent_run(node) or d.tool_call(node) or d.model_request(node) or True


def _comparable(step: object) -> Any:
    if isinstance(step, ToolCall):
        fields = ("name", "args_text", "args_source", "call_id", "status", "error", "retry_cause", "deferred",
                  "output_function", "dialect")  # fmt: skip
        return ("tool", *(getattr(step, f) for f in fields), repr(step.result))
    if isinstance(step, ModelRequest | AgentRun):
        values = dataclasses.asdict(dataclasses.replace(step, span=None))  # type: ignore[type-var]
        return (type(step).__name__, sorted((k, repr(v)) for k, v in values.items()))
    return step


@pytest.fixture(scope="module")
def nodes() -> list[SpanNode]:
    out: list[SpanNode] = []
    for path in FILES:
        out.extend(SpanTree.from_spans(read_spans(path)))
    return out


@pytest.mark.parametrize("dialect", [d for d in DIALECTS if hasattr(d, "classify")], ids=lambda d: d.name)
def test_classify_equals_the_readable_spec_on_every_recorded_span(dialect: Dialect, nodes: list[SpanNode]) -> None:
    fast = dialect.classify  # type: ignore[attr-defined]
    assert len(nodes) > 1_500  # the whole corpus
    mismatches = [(n.name, _comparable(fast(n)), _comparable(_slow(dialect, n))) for n in nodes
                  if _comparable(fast(n)) != _comparable(_slow(dialect, n))]  # fmt: skip
    assert not mismatches, mismatches[:5]
