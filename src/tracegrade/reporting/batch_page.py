"""The batch summary as a report: the run's totals, pass rates by evaluator and agent, the worst
cohorts, and the worst traces (most checks not passed) as cases the summary links to. Built from
plain data (`BatchSummary.to_dict()` and result rows), so reporting does not depend on batch."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from ..results import OUTCOMES
from .model import CaseRecord, CheckRecord, Report, RunRecord, Totals, TurnRecord

__all__ = ["batch_report", "batch_totals", "case_statistics"]


def batch_totals(summary: Mapping[str, Any], not_evaluated: str = "fail") -> Totals:
    """`BatchSummary.to_dict()` as the totals every surface's summary line is printed from."""
    outcomes = summary["outcomes"]
    units, failed = int(summary["units"]), int(summary["units_failed"])
    skipped = int(outcomes.get("not_evaluated", 0)) if not_evaluated == "skip" else 0
    return Totals(units, units - failed, failed, 0, {o: int(outcomes.get(o, 0)) for o in OUTCOMES}, skipped)


def case_records(summary: Mapping[str, Any], not_evaluated: str = "fail") -> list[CaseRecord]:
    """The repeated cases of a batch run with a case attribute (`BatchSummary.to_dict()["case_runs"]`)
    as report cases `KEY=value`: one run per unit, passing when every check counts as passed."""
    key = summary.get("case_attribute")
    policy: Literal["fail", "skip"] = "skip" if not_evaluated == "skip" else "fail"
    out = []
    for cid, units in summary.get("case_runs", {}).items():
        runs = []
        for i, unit in enumerate(units):
            checks = [CheckRecord.from_dict({"name": name, "outcome": outcome}) for name, outcome in unit]
            ok = all(c.counts_as_passed(policy) for c in checks)
            runs.append(RunRecord(i, ok, [TurnRecord(0, ok, checks)]))
        case = CaseRecord(f"{key}={cid}", True, runs, 1.0, policy)
        case.passed = case.score >= case.threshold
        out.append(case)
    return out


def case_statistics(summary: Mapping[str, Any], not_evaluated: str = "fail") -> dict[str, Any]:
    """With a case attribute: `{"cases": [...], "tables": [...]}` — per case its runs and statistics
    (`CaseStats.to_dict()`, None for a single run), and two plain tables: repeated runs by case
    (pass@k, pass^k, flaky checks) and pass rate by case and check (Wilson 95% intervals). Empty
    without one."""
    if summary.get("case_attribute") is None:
        return {}
    cases: list[dict[str, Any]] = []
    by_case: list[list[Any]] = []
    by_check: list[list[Any]] = []
    for case in case_records(summary, not_evaluated):
        stats = case.stats
        cases.append({"case": case.id, "runs": len(case.runs), "runs_passed": case.runs_passed,
                      "stats": None if stats is None else stats.to_dict()})  # fmt: skip
        by_case.append([case.id, f"{case.runs_passed}/{len(case.runs)}", "" if stats is None else stats.line()])
        for c in stats.checks if stats is not None else ():
            lo, hi = c.interval
            rate = "" if c.rate is None else f"{c.rate:.2f}"
            by_check.append([case.id, c.name, f"{c.passed}/{c.runs}", rate, f"{lo:.2f}-{hi:.2f}",
                             str(c.not_evaluated), "yes" if c.flaky else ""])  # fmt: skip
    tables = [
        {"title": f"repeated runs by case ({summary['case_attribute']})", "columns": ["case", "runs passed", "statistics"],
         "rows": by_case},
        {"title": "pass rate by case and check",
         "columns": ["case", "check", "runs passed", "pass rate", "95% CI", "not evaluated", "flaky"], "rows": by_check},
    ]  # fmt: skip
    return {"cases": cases, "tables": tables}


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
    repeated = case_statistics(summary, not_evaluated).get("tables", [])  # with a case attribute
    tables = [cohorts, worst_cohorts, worst_traces, *repeated]
    return Report(cases, title="tracegrade batch", tables=tables, counted=counted)
