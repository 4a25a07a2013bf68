"""Results as telemetry: `emit_results` puts `gen_ai.evaluation.result` events on the graded run's trace."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from _agents import run_captured
from tracegrade import grade
from tracegrade.evaluators import MaxToolCalls, ToolCorrectness
from tracegrade.telemetry import emit_results


def test_results_are_emitted_as_evaluation_events_on_the_run_trace() -> None:
    cap = run_captured([("a", {})])
    results = grade(cap, [ToolCorrectness(["a"]), MaxToolCalls(0)])
    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    emit_results(results, cap, tracer_provider=tp)
    [span] = exporter.get_finished_spans()
    run_span = cap.trajectory.agent_runs[0].span
    assert run_span is not None and span.context is not None and span.parent is not None
    assert span.context.trace_id == run_span.trace_id and span.parent.span_id == run_span.span_id
    events = [dict(e.attributes or {}) for e in span.events if e.name == "gen_ai.evaluation.result"]
    assert [(e["gen_ai.evaluation.name"], e["gen_ai.evaluation.score.label"], e["gen_ai.evaluation.score.value"])
            for e in events] == [("ToolCorrectness", "passed", 1.0), ("MaxToolCalls", "failed", 0.0)]  # fmt: skip
    assert events[1]["gen_ai.evaluation.explanation"] == "1 tool call(s), budget=0"
