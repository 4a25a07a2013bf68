"""`tracegrade batch SOURCES... --spec SPEC --out results.parquet`: grade at fleet scale.

Exit codes like `grade`: 0 every unit passed, 1 a unit failed, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:
    from ._result import BatchResult

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sources", nargs="+", metavar="SOURCE",
                        help="OTLP trace files or directories; Parquet files or datasets, or Delta tables, in the "
                        "ClickHouse otel_traces span layout")  # fmt: skip
    parser.add_argument("--spec", required=True, help="YAML file with a top-level `evaluators:` list")
    parser.add_argument(
        "--out", default=None, help="results file: .parquet or .jsonl (one row per trace and evaluator)"
    )
    parser.add_argument("--engine", choices=["local", "spark"], default="local",
                        help="local: a process pool on this machine (default); spark: PySpark (local mode unless a "
                        "session is active)")  # fmt: skip
    parser.add_argument(
        "--workers", type=int, default=None, help="processes (local) or Spark cores (default: all cores)"
    )
    parser.add_argument("--sample", type=float, default=1.0,
                        help="grade this share of traces (or conversations), chosen by a hash of the id (default 1)")  # fmt: skip
    parser.add_argument("--group-by", choices=["trace", "conversation"], default="trace",
                        help="grade each trace, or each conversation (gen_ai.conversation.id / session.id)")  # fmt: skip
    parser.add_argument("--where", action="append", default=[], metavar="CONDITION",
                        help="keep only spans matching `FIELD OP VALUE` (repeatable), e.g. "
                        "'Timestamp >= 2026-01-01T00:00:00Z' or 'SpanKind in client,internal'; pushed into table scans")  # fmt: skip
    parser.add_argument("--max-spans", type=int, default=10_000,
                        help="a unit with more spans is not evaluated (default 10000)")  # fmt: skip
    parser.add_argument("--not-evaluated", choices=["fail", "skip"], default="fail",
                        help="how a check that could not run counts toward the exit code (default: fail)")  # fmt: skip
    parser.add_argument("--dialect", default=None, help="force one span convention instead of auto-detecting")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="show a progress display on stderr (default: when stderr is a terminal)")  # fmt: skip
    parser.add_argument("--summary-json", action="store_true", help="print the summary as JSON instead of tables")
    parser.add_argument("--html", default=None, metavar="FILE",
                        help="write a self-contained HTML summary (pass rates, worst cohorts, links to the worst traces)")  # fmt: skip
    parser.add_argument("--case-attribute", metavar="KEY", default=None,
                        help="units whose spans carry the same value of attribute KEY are repeated runs of one case "
                        "(a case_id column; pass@k, pass^k, per-check pass rates and flaky checks in the summary)")  # fmt: skip
    parser.add_argument("--redact", action="append", default=[], metavar="KEY_GLOB",
                        help="hide argument and attribute values under keys matching KEY_GLOB in the reasons of the "
                        "results, the summary and the HTML page (repeatable; grading sees the real values)")  # fmt: skip


def _worst_rows(result: BatchResult, not_evaluated: str, n: int = 25) -> list[dict[str, Any]]:
    """Every result row of the `n` units with the most checks not passed (ranked in Arrow, so only
    those units' rows become Python objects)."""
    import pyarrow.compute as pc

    table = result.table
    bad = pc.not_equal(table["outcome"], "passed")
    if not_evaluated == "skip":
        bad = pc.and_(bad, pc.not_equal(table["outcome"], "not_evaluated"))
    counts = table.filter(bad).group_by(["trace_id", "root_span_id"]).aggregate([("outcome", "count")])
    top = counts.sort_by([("outcome_count", "descending"), ("trace_id", "ascending")]).slice(0, n)
    keep = pc.is_in(table["trace_id"], value_set=top["trace_id"])
    return table.filter(keep).to_pylist()  # type: ignore[no-any-return]


def _table(spec: dict[str, Any]) -> Any:
    """A plain `{"title", "columns", "rows"}` table as a Rich table (cells as text, never markup, their
    control characters written as escapes: case ids and check names are recorded text)."""
    from rich.table import Table

    from .._text import clip, printable

    table = Table(title=spec["title"], title_justify="left")
    for name in spec["columns"]:
        table.add_column(name)
    for row in spec["rows"]:
        table.add_row(*(Text(printable(clip(str(v)))) for v in row))
    return table


def run(args: argparse.Namespace, console: Console) -> int:
    from .._text import printable
    from ..errors import BatchInputError, SpecError, TraceFormatError
    from . import grade_traces

    try:
        result = grade_traces(
            args.sources, args.spec, engine=args.engine, workers=args.workers, out=args.out, sample=args.sample,
            group_by=args.group_by, where=args.where, max_spans=args.max_spans, dialect=args.dialect,
            not_evaluated=args.not_evaluated, progress=args.progress, case_attribute=args.case_attribute,
            redact=args.redact,
        )  # fmt: skip
    except (BatchInputError, TraceFormatError, SpecError, OSError, ValueError, ImportError) as e:
        print(f"tracegrade batch: error: {printable(str(e))}", file=sys.stderr)  # one line, whatever the input held
        return 2
    from ..reporting.batch_page import case_statistics

    summary = result.summary
    doc = summary.to_dict()
    repeated = case_statistics(doc, args.not_evaluated)  # with --case-attribute: statistics per case
    if args.summary_json:
        if repeated:
            doc = {k: v for k, v in doc.items() if k != "case_runs"} | {
                "cases": repeated["cases"], "case_tables": repeated["tables"]
            }  # fmt: skip
        print(json.dumps(doc, indent=2))
    else:
        for table in summary.tables():
            console.print(table)
        for spec in repeated.get("tables", []):
            console.print(_table(spec))
        from ..reporting import summary_line
        from ..reporting.batch_page import batch_totals

        line = Text(summary_line(batch_totals(summary.to_dict(), summary.not_evaluated)), style="bold")
        if result.path is not None:
            line.append(f" → {result.path}")
        console.print(line, soft_wrap=True, highlight=False)
    if args.html and summary.units:
        from ..reporting.batch_page import batch_report
        from ..reporting.html import write_html

        rows = _worst_rows(result, args.not_evaluated)
        page = batch_report(summary.to_dict(), rows, not_evaluated=args.not_evaluated)
        with open(args.html, "w", encoding="utf-8") as f:
            f.write(write_html(page))
        print(f"tracegrade batch: HTML summary written to {args.html}", file=sys.stderr)
    if summary.units == 0:
        print("tracegrade batch: error: no traces found (after sampling and filters)", file=sys.stderr)
    return result.exit_code
