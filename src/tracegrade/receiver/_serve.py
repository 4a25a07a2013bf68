"""Online grading (`tracegrade serve`): grade each trace a receiver assembles, keep running counts,
and emit every verdict as a `gen_ai.evaluation.result` log record parented to the graded run."""

from __future__ import annotations

import logging
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .._version import __version__ as _tracegrade_version
from ..batch._core import params_hash
from ..dialects import extract
from ..grading import grade
from ..results import EvalResult
from ..telemetry import result_attributes
from ..trajectory import Trajectory
from ..tree import SpanTree
from ._store import AssembledTrace

__all__ = ["GradedTrace", "OnlineGrader", "evaluation_logs_request", "sampled"]

_log = logging.getLogger("tracegrade.receiver")
_LOW64 = (1 << 64) - 1
OUTCOMES = ("passed", "failed", "not_evaluated", "error")


def sampled(trace_id: int, rate: float) -> bool:
    """Deterministic sampling by trace id, OpenTelemetry's `TraceIdRatioBased` rule: kept when the
    id's low 64 bits are below `rate * 2**64` (so the same traces are kept in every run and process)."""
    return (trace_id & _LOW64) < round(rate * (1 << 64))


@dataclass(frozen=True, slots=True)
class GradedTrace:
    trace_id: int
    root_span_id: int
    root_name: str
    results: list[EvalResult]
    incomplete: list[str]
    passed: bool
    """Every check passed (`not_evaluated` counting as `OnlineGrader.not_evaluated` says)."""


@dataclass(slots=True)
class EvaluatorCounts:
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def pass_rate(self) -> float:
        return self.counts["passed"] / self.total if self.total else 0.0


def _top(traj: Trajectory, tree: SpanTree) -> tuple[int, str]:
    """(span id, name) of the graded run's top span: the outermost agent run, else the first root."""
    top = next((r.span for r in traj.agent_runs if r.parent is None and r.span is not None), None)
    if top is None and tree.roots:
        top = tree.roots[0]
    return (top.span_id, top.name) if top is not None else (0, "")


def evaluation_logs_request(
    graded: GradedTrace, evaluators: Sequence[object], time_ns: int | None = None
) -> bytes:  # fmt: skip
    """A serialized `ExportLogsServiceRequest`: one `gen_ai.evaluation.result` record per result,
    with the graded run's trace and top span ids."""
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    def value(x: Any) -> AnyValue:
        if isinstance(x, bool):
            return AnyValue(bool_value=x)
        if isinstance(x, int):
            return AnyValue(int_value=x)
        if isinstance(x, float):
            return AnyValue(double_value=x)
        return AnyValue(string_value=str(x))

    now = time_ns or time.time_ns()
    request = ExportLogsServiceRequest()
    rl = request.resource_logs.add()
    rl.resource.attributes.add(key="service.name", value=AnyValue(string_value="tracegrade"))
    sl = rl.scope_logs.add()
    sl.scope.name, sl.scope.version = "tracegrade", _tracegrade_version
    for result, evaluator in zip(graded.results, evaluators, strict=True):
        attrs = result_attributes(result)
        attrs["gen_ai.evaluation.evaluator.id"] = f"{type(evaluator).__name__}/{params_hash(evaluator)}"
        attrs["gen_ai.evaluation.evaluator.version"] = _tracegrade_version
        record = sl.log_records.add(
            time_unix_nano=now,
            observed_time_unix_nano=now,
            event_name="gen_ai.evaluation.result",
            trace_id=graded.trace_id.to_bytes(16, "big"),
            span_id=graded.root_span_id.to_bytes(8, "big"),
            severity_number=9,  # INFO
            severity_text="INFO",
        )
        record.attributes.extend(KeyValue(key=k, value=value(v)) for k, v in attrs.items())
    return bytes(request.SerializeToString())


def post_otlp(url: str, body: bytes, attempts: int = 3, timeout: float = 10.0) -> None:
    """POST one protobuf OTLP request, retrying on 429/502/503/504 (honouring Retry-After);
    raises `OSError` when it could not be delivered."""
    request = urllib.request.Request(url, body, {"Content-Type": "application/x-protobuf"}, method="POST")
    for attempt in range(attempts):
        try:
            with urllib.request.urlopen(request, timeout=timeout):
                return
        except urllib.error.HTTPError as e:
            if e.code not in (429, 502, 503, 504) or attempt + 1 == attempts:
                raise OSError(f"{url} answered {e.code}") from None
            try:
                delay = float(e.headers.get("Retry-After") or 1)
            except ValueError:
                delay = 1.0
            time.sleep(min(max(delay, 0.0), 10.0))


class OnlineGrader:
    """Grades assembled traces with one spec's evaluators and keeps the running counts."""

    def __init__(
        self,
        evaluators: Sequence[object],
        *,
        sample: float = 1.0,
        emit_results: str | None = None,
        dialect: str | None = None,
        not_evaluated: Literal["fail", "skip"] = "fail",
        recent: int = 12,
    ) -> None:
        if not 0.0 <= sample <= 1.0:
            raise ValueError(f"sample: expected a rate in [0, 1], got {sample}")
        self.evaluators = list(evaluators)
        self.sample = sample
        self.emit_url = _logs_url(emit_results) if emit_results else None
        self.dialect = dialect
        self.not_evaluated: Literal["fail", "skip"] = not_evaluated
        self.graded = 0
        self.failed = 0
        self.incomplete = 0
        self.sampled_out = 0
        self.emitted = 0
        self.emit_failures = 0
        self.logs_without_spans = 0
        """Log records of traces taken with no spans (they came after their trace was graded, or its
        spans never did): counted, not graded."""
        self.per_evaluator: dict[str, EvaluatorCounts] = {}
        self.recent: deque[GradedTrace] = deque(maxlen=recent)

    def process(self, trace: AssembledTrace) -> GradedTrace | None:
        """Grade one trace, its log records attached to the spans they name (None when sampled out or
        holding no spans); emits its results if asked."""
        if not sampled(trace.trace_id, self.sample):
            self.sampled_out += 1
            return None
        if not trace.spans:
            self.logs_without_spans += len(trace.logs)
            return None
        tree = SpanTree.from_spans(trace.spans)
        tree.attach_logs(trace.logs)
        traj = extract(tree, dialect=self.dialect)
        results = grade(traj, self.evaluators)
        top_id, top_name = _top(traj, tree)
        passed = all(r.counts_as_passed(self.not_evaluated) for r in results)
        graded = GradedTrace(trace.trace_id, top_id, top_name, results, list(trace.incomplete), passed)
        self.graded += 1
        self.failed += not graded.passed
        self.incomplete += bool(graded.incomplete)
        for r in results:
            self.per_evaluator.setdefault(r.name, EvaluatorCounts()).counts[r.outcome] += 1
        self.recent.append(graded)
        if self.emit_url:
            try:
                post_otlp(self.emit_url, evaluation_logs_request(graded, self.evaluators))
                self.emitted += len(results)
            except OSError as e:
                self.emit_failures += len(results)
                _log.warning("tracegrade serve: emitting results of trace %032x failed: %s", trace.trace_id, e)
        return graded


def _logs_url(base: str) -> str:
    base = base.rstrip("/")
    return base if base.endswith("/v1/logs") else base + "/v1/logs"
