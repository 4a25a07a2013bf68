"""A dialect's fast `classify(node)` answers exactly what its readable spec (`recognizes` then
`agent_run` / `tool_call` / `model_request`, and `handoff` where it has one) answers, on every span of
every recorded fixture and of the 2026 GenAI shapes; every dialect has one; the data layer imports no
dialect."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracegrade.trajectory
from tracegrade.dialects import DIALECTS, NO_STEP, Dialect, genai, register_dialect
from tracegrade.ingest import read_spans, trace_files
from tracegrade.trajectory import AgentRun, Handoff, ModelRequest, ToolCall
from tracegrade.tree import SpanNode, SpanTree

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FILES = [
    *trace_files([FIXTURES / "dialects", FIXTURES / "otlp", FIXTURES / "jaeger"]),
    *sorted((FIXTURES / "frameworks").glob("*.traces.json")),
]


def _slow(d: Dialect, node: SpanNode) -> object:
    if not d.recognizes(node):
        return False
    handoff = getattr(d, "handoff", lambda node: None)
    claims = getattr(d, "claims", lambda node: False)
    return (
        d.agent_run(node) or d.tool_call(node) or d.model_request(node) or handoff(node)
        or (NO_STEP if claims(node) else True)
    )  # fmt: skip


def _genai_2026_spans() -> list[SpanNode]:
    """The 2026 GenAI span shapes, made by the real SDK: turn / workflow anchors, transfer and handoff
    spans, a tool span naming its agent, a priced request holding only a reference to its output."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent.framework")
    op = "gen_ai.operation.name"
    shapes: list[tuple[str, dict[str, Any]]] = [
        ("handle_conversation_turn", {op: "handle_conversation_turn"}),
        ("handle_conversation_turn", {}),
        ("invoke_workflow flow", {op: "invoke_workflow", "gen_ai.workflow.name": "flow"}),
        ("invoke_agent a", {op: "invoke_agent", "gen_ai.agent.name": "a", "gen_ai.invocation.is_nested": True}),
        ("execute_tool transfer_to_b b", {op: "execute_tool", "gen_ai.tool.name": "transfer_to_b",
                                          "gen_ai.transfer.target.name": "b", "gen_ai.agent.name": "a"}),
        ("execute_tool transfer_to_c", {op: "execute_tool", "gen_ai.tool.name": "transfer_to_c",
                                        "gen_ai.transfer.mode": "return"}),
        ("handoff", {"gen_ai.agent.handoff.source.name": "a", "gen_ai.agent.handoff.target.name": "b"}),
        ("execute_tool search", {op: "execute_tool", "gen_ai.tool.name": "search", "gen_ai.agent.name": "b"}),
        ("chat gpt-4o", {op: "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.cost.amount": 0.01,
                         "gen_ai.usage.cost.currency": "USD", "gen_ai.output.messages_ref": "file:///x.json"}),
    ]  # fmt: skip
    for name, attrs in shapes:
        with tracer.start_as_current_span(name, attributes=attrs):
            pass
    provider.shutdown()
    return list(SpanTree.from_readable_spans(exporter.get_finished_spans()))


def _comparable(step: object) -> Any:
    if isinstance(step, ToolCall):
        fields = ("name", "args_text", "args_source", "call_id", "status", "error", "retry_cause", "deferred",
                  "output_function", "dialect")  # fmt: skip
        return ("tool", *(getattr(step, f) for f in fields), repr(step.result))
    if isinstance(step, ModelRequest | AgentRun | Handoff):
        values = dataclasses.asdict(dataclasses.replace(step, span=None))  # type: ignore[type-var]
        return (type(step).__name__, sorted((k, repr(v)) for k, v in values.items()))
    return step


@pytest.fixture(scope="module")
def nodes() -> list[SpanNode]:
    out: list[SpanNode] = []
    for path in FILES:
        out.extend(SpanTree.from_spans(read_spans(path)))
    return out + _genai_2026_spans()


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
def test_classify_equals_the_readable_spec_on_every_recorded_span(dialect: Dialect, nodes: list[SpanNode]) -> None:
    fast = dialect.classify
    assert len(nodes) > 1_500  # the whole corpus
    mismatches = [(n.name, _comparable(fast(n)), _comparable(_slow(dialect, n))) for n in nodes
                  if _comparable(fast(n)) != _comparable(_slow(dialect, n))]  # fmt: skip
    assert not mismatches, mismatches[:5]


def test_the_2026_shapes_are_read_as_what_the_conventions_say() -> None:
    steps = [genai.classify(n) for n in _genai_2026_spans()]
    kinds = [type(s).__name__ if not isinstance(s, bool) else s for s in steps]
    assert kinds == ["AgentRun", "AgentRun", "AgentRun", "AgentRun", "Handoff", "Handoff", "Handoff", "ToolCall",
                     "ModelRequest"]  # fmt: skip


def test_every_dialect_has_the_whole_protocol_and_a_partial_one_is_refused() -> None:
    for d in DIALECTS:
        assert all(
            callable(getattr(d, f)) for f in ("classify", "recognizes", "agent_run", "tool_call", "model_request")
        )
    partial = SimpleNamespace(name="partial", recognizes=lambda n: False, agent_run=lambda n: None,
                              tool_call=lambda n: None, model_request=lambda n: None)  # fmt: skip
    with pytest.raises(TypeError, match="lacks classify"):
        register_dialect(partial)  # type: ignore[arg-type]
    assert all(d.name != "partial" for d in DIALECTS)


def test_the_trajectory_module_imports_nothing_from_the_reading_layer() -> None:
    tree = ast.parse(Path(tracegrade.trajectory.__file__).read_text())
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if "dialects" in m or "recovery" in m], imported  # lazy imports included
