"""Results as telemetry: `gen_ai.evaluation.result` events on the graded run's trace.

The graded spans have already ended, so the events go on a new `gen_ai.evaluation` span whose
parent is the run's top span (same trace id): graders show up in the same backend as the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from .capture import Capture
from .results import EvalResult
from .trajectory import Trajectory
from .tree import SpanNode, SpanTree

__all__ = ["emit_results", "result_attributes"]


def result_attributes(result: EvalResult) -> dict[str, Any]:
    """The GenAI semantic-convention attributes of one evaluation result."""
    attrs: dict[str, Any] = {
        "gen_ai.evaluation.name": result.name or "evaluator",
        "gen_ai.evaluation.score.label": result.outcome,
        "gen_ai.evaluation.score.value": result.score if result.score is not None else float(result.passed),
        "gen_ai.evaluation.explanation": result.reasoning,
    }
    if result.outcome == "error":
        attrs["error.type"] = "evaluator_error"
    return attrs


def _top_span(source: Capture | Trajectory | SpanTree) -> SpanNode:
    if isinstance(source, Capture):
        source = source.trajectory
    if isinstance(source, Trajectory):
        top = next((r.span for r in source.agent_runs if r.parent is None and r.span is not None), None)
        if top is not None:
            return top
        if source.tree is None:
            raise ValueError("emit_results(): the trajectory has no span tree to attach results to")
        source = source.tree
    if not source.roots:
        raise ValueError("emit_results(): no spans to attach results to")
    return source.roots[0]


def emit_results(
    results: Sequence[EvalResult],
    source: Capture | Trajectory | SpanTree,
    *,
    tracer_provider: trace.TracerProvider | None = None,
) -> None:
    """Record each result as a `gen_ai.evaluation.result` event in the graded run's trace."""
    top = _top_span(source)
    parent = SpanContext(top.trace_id, top.span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    tracer = (tracer_provider or trace.get_tracer_provider()).get_tracer("tracegrade")
    ctx = trace.set_span_in_context(NonRecordingSpan(parent))
    with tracer.start_as_current_span(
        "gen_ai.evaluation", context=ctx, attributes={"gen_ai.operation.name": "evaluate"}
    ) as span:
        for result in results:
            span.add_event("gen_ai.evaluation.result", attributes=result_attributes(result))
