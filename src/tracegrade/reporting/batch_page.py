"""The batch summary as a report: the run's totals, pass rates by evaluator and agent, the worst
cohorts, and the worst traces (most checks not passed) as cases the summary links to. Built from
plain data (`BatchSummary.to_dict()` and result rows), so reporting does not depend on batch."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from ..results import OUTCOMES
from .model import CaseRecord, CheckRecord, Report, RunRecord, Totals, TurnRecord

__all__ = ["batch_report", "batch_totals"]


def batch_totals(summary: Mapping[str, Any], not_evaluated: str = "fail") -> Totals:
    """`BatchSummary.to_dict()` as the totals every surface's summary line is printed from."""
    outcomes = summary["outcomes"]
    units, failed = int(summary["units"]), int(summary["units_failed"])
    skipped = int(outcomes.get("not_evaluated", 0)) if not_evaluated == "skip" else 0
    return Totals(units, units - failed, failed, 0, {o: int(outcomes.get(o, 0)) for o in OUTCOMES}, skipped)


def batch_report(
    summary: Mapping[str, Any],
    rows: Iterable[Mapping[str, Any]],
    *,
    not_evaluated: Literal["fail", "skip"] = "fail",
    worst: int = 25,
) -> Report:
    """`summary` is `BatchSummary.to_dict()`; `rows` result rows (those of the worst units suffice) (`trace_id`, `root_span_id`,
    `agent`, `evaluator`, `outcome`, `score`, `reason`). Keeps the `worst` traces, ordered by checks
    not passed (then by trace id)."""
    by_unit: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        by_unit.setdefault((str(r["trace_id"]), str(r.get("root_span_id") or "")), []).append(r)

    def bad(unit: list[Mapping[str, Any]]) -> int:
        return sum(not CheckRecord("", r["outcome"]).counts_as_passed(not_evaluated) for r in unit)

    ranked = sorted((u for u in by_unit.items() if bad(u[1])), key=lambda u: (-bad(u[1]), u[0]))[:worst]
    cases = []
    for (trace_id, root), unit in ranked:
        checks = [
            CheckRecord(str(r["evaluator"]), r["outcome"], str(r.get("reason") or ""), r.get("score")) for r in unit
        ]
        agent = next((str(r["agent"]) for r in unit if r.get("agent")), "")
        label = f"trace {trace_id}" + (f" span {root}" if root else "") + (f" ({agent})" if agent else "")
        turn = TurnRecord(0, False, checks)
        cases.append(CaseRecord(label, False, [RunRecord(0, False, [turn])], 1.0, not_evaluated))
    counted = batch_totals(summary, not_evaluated)
    failed = counted.failed
    cohorts = {
        "title": "pass rate by evaluator and agent",
        "columns": ["evaluator", "agent", "passed", "failed", "not evaluated", "errors", "pass rate"],
        "rows": [[k["evaluator"], k["agent"] or "-", k["passed"], k["failed"], k["not_evaluated"], k["error"],
                  f"{k['pass_rate']:.1%}"] for k in summary["cohorts"]],
    }  # fmt: skip
    worst_cohorts = {
        "title": "worst cohorts",
        "columns": ["evaluator", "agent", "pass rate", "most frequent reason"],
        "rows": [[k["evaluator"], k["agent"] or "-", f"{k['pass_rate']:.1%}", k["reason"]] for k in summary["worst"]],
    }
    worst_traces = {
        "title": f"worst traces ({len(cases)} of {failed} failed)",
        "columns": ["trace", "checks not passed", "evaluators"],
        "rows": [[c.id, bad(unit), ", ".join(sorted({str(r["evaluator"]) for r in unit if r["outcome"] != "passed"}))]
                 for c, (_, unit) in zip(cases, ranked, strict=True)],
        "links": {c.id: f"case-{i}" for i, c in enumerate(cases)},
    }  # fmt: skip
    return Report(cases, title="tracegrade batch", tables=[cohorts, worst_cohorts, worst_traces], counted=counted)
