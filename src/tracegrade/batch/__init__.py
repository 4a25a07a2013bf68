"""Batch grading at fleet scale: `grade_traces(sources, spec, engine="local" | "spark")`.

Sources are OTLP trace files and directories, and Parquet files, datasets or Delta tables in the
ClickHouse `otel_traces` span layout; results are one row per (trace, evaluator). Importing this
package is light: pyarrow, pyspark and deltalake load only when a source, an output or an engine
needs them (install the `batch`, `spark` or `delta` extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._api import grade_traces
    from ._arrow import spans_to_table, write_span_parquet
    from ._result import BatchResult, BatchSummary, Cohort

__all__ = [
    "BatchResult",
    "BatchSummary",
    "Cohort",
    "grade_traces",
    "spans_to_table",
    "write_span_parquet",
]

_LAZY = {
    "grade_traces": "._api",
    "spans_to_table": "._arrow",
    "write_span_parquet": "._arrow",
    "BatchResult": "._result",
    "BatchSummary": "._result",
    "Cohort": "._result",
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY, __all__)
