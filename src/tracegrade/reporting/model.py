"""The report's data: cases (a test, or a recorded trace) of runs of turns of checks, plain and
JSON-safe (xdist workers ship them to the controller as dicts), and the counting every format shares.

A case is what gets one verdict: a pytest `agent_eval` test (its `runs` repetitions) or one graded
trace of the CLI (a single run). A run holds its turns; a turn holds the checks that judged it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from ..results import OUTCOMES, EvalResult, Outcome, checks_phrase, summary_text

if TYPE_CHECKING:
    from .stats import CaseStats

__all__ = [
    "CaseRecord",
    "CheckRecord",
    "Report",
    "RunRecord",
    "Totals",
    "TurnRecord",
    "Verdict",
    "headline",
    "summary_line",
]

NotEvaluatedPolicy = Literal["fail", "skip"]
Verdict = Literal["passed", "failed", "no checks"]


def _verdict(passed: bool, checks: Iterable[CheckRecord], error: bool) -> Verdict:
    """`no checks` when nothing failed and no check reached a verdict: none ran, or each one was
    `not_evaluated` without failing (the `skip` policy, or informational); else passed or failed."""
    if passed and not error and all(c.outcome == "not_evaluated" for c in checks):
        return "no checks"
    return "passed" if passed else "failed"


@dataclass(frozen=True, slots=True)
class CheckRecord:
    """One evaluator's verdict on one turn."""

    name: str
    outcome: Outcome
    reason: str = ""
    score: float | None = None
    informational: bool = False
    """Reported (with its statistics) but never fails its run, case or exit code."""

    @classmethod
    def from_result(cls, result: EvalResult, informational: bool = False) -> CheckRecord:
        return cls(result.name, result.outcome, result.reasoning, result.score, informational)

    def counts_as_passed(self, policy: NotEvaluatedPolicy) -> bool:
        return self.informational or self.outcome == "passed" or (policy == "skip" and self.outcome == "not_evaluated")

    def to_dict(self) -> dict[str, Any]:
        d = {"name": self.name, "outcome": self.outcome, "reason": self.reason, "score": self.score}
        if self.informational:
            d["informational"] = True
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CheckRecord:
        outcome = d["outcome"]
        if outcome not in OUTCOMES:
            raise ValueError(f"check outcome must be one of {OUTCOMES}, got {outcome!r}")
        return cls(str(d["name"]), outcome, str(d.get("reason", "")), d.get("score"), bool(d.get("informational")))


@dataclass(slots=True)
class TurnRecord:
    """One turn of one run: the user's message, the reply, the tool calls seen and the checks."""

    index: int
    passed: bool
    checks: list[CheckRecord] = field(default_factory=list)
    user: str = ""
    reply: str = ""
    tool_calls: list[str] = field(default_factory=list)
    """Each call described as `name(args)`."""
    source: str = "spans"
    """Where the tool calls came from: `spans`, `returned` (the agent's own list) or `none`."""
    error: str | None = None
    diff: list[dict[str, Any]] | None = None
    """The turn's expected-vs-observed trajectory diff (`reporting.trace.trajectory_diff` rows), when
    a check of the turn declared an expected trajectory and the report shows traces (pytest)."""

    @property
    def verdict(self) -> Verdict:
        """`no checks` when no check of the turn reached a verdict and nothing failed (see `CaseRecord.verdict`)."""
        return _verdict(self.passed, self.checks, bool(self.error))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "index": self.index, "passed": self.passed, "verdict": self.verdict, "user": self.user, "reply": self.reply,
            "source": self.source, "tool_calls": list(self.tool_calls), "error": self.error,
            "checks": [c.to_dict() for c in self.checks],
        }  # fmt: skip
        if self.diff is not None:
            d["diff"] = self.diff
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TurnRecord:
        diff = d.get("diff")
        return cls(
            int(d["index"]), bool(d["passed"]), [CheckRecord.from_dict(c) for c in d.get("checks", [])],
            str(d.get("user", "")), str(d.get("reply", "")), [str(c) for c in d.get("tool_calls", [])],
            str(d.get("source", "spans")), d.get("error"), None if diff is None else [dict(r) for r in diff],
        )  # fmt: skip


@dataclass(slots=True)
class RunRecord:
    """One execution of a case: its turns in order."""

    index: int
    passed: bool
    turns: list[TurnRecord] = field(default_factory=list)
    attempts: int = 1
    error: str | None = None
    trace: dict[str, Any] | None = None
    """The run's spans as `reporting.trace.trace_view` dicts, for the HTML report (None: not kept)."""
    label: str = ""
    """Where the run came from when a case groups several traces (the trace's label)."""

    @property
    def checks(self) -> Iterable[CheckRecord]:
        for turn in self.turns:
            yield from turn.checks

    @property
    def verdict(self) -> Verdict:
        """`no checks` when no check of the run reached a verdict and nothing failed (see `CaseRecord.verdict`)."""
        return _verdict(self.passed, self.checks, bool(self.error) or any(t.error for t in self.turns))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "index": self.index, "passed": self.passed, "verdict": self.verdict, "attempts": self.attempts,
            "error": self.error,
            "turns": [t.to_dict() for t in self.turns],
        }  # fmt: skip
        if self.trace is not None:
            d["trace"] = self.trace
        if self.label:
            d["label"] = self.label
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunRecord:
        return cls(
            int(d["index"]), bool(d["passed"]), [TurnRecord.from_dict(t) for t in d.get("turns", [])],
            int(d.get("attempts", 1)), d.get("error"), d.get("trace"), str(d.get("label", "")),
        )  # fmt: skip


@dataclass(slots=True)
class CaseRecord:
    """What gets one verdict: a test (N runs, passing when the share of passing runs reaches
    `threshold`) or one graded trace (one run, threshold 1)."""

    id: str
    passed: bool
    runs: list[RunRecord] = field(default_factory=list)
    threshold: float = 1.0
    not_evaluated: NotEvaluatedPolicy = "fail"
    tags: list[str] = field(default_factory=list)
    expected: list[dict[str, Any]] | None = None
    """The expected trajectory (`{"tool", "args", "optional"}` steps), when a check declared one: the
    HTML report's diff aligns each run's calls against it."""

    @classmethod
    def from_results(
        cls, id: str, results: Sequence[EvalResult], *, tool_calls: Sequence[str] = (), user: str = "",
        reply: str = "", not_evaluated: NotEvaluatedPolicy = "fail", trace: dict[str, Any] | None = None,
        expected: list[dict[str, Any]] | None = None, informational: Collection[str] = (),
    ) -> CaseRecord:  # fmt: skip
        """A single graded run (a trace graded by the CLI or batch): passes when every result
        counts as passed under the `not_evaluated` policy; checks named in `informational` never fail it."""
        checks = [CheckRecord.from_result(r, r.name in informational) for r in results]
        ok = all(c.counts_as_passed(not_evaluated) for c in checks)
        turn = TurnRecord(0, ok, checks, user, reply, list(tool_calls))
        return cls(id, ok, [RunRecord(0, ok, [turn], trace=trace)], 1.0, not_evaluated, expected=expected)

    @property
    def runs_passed(self) -> int:
        return sum(r.passed for r in self.runs)

    @property
    def score(self) -> float:
        """The share of runs that passed."""
        return self.runs_passed / len(self.runs) if self.runs else 0.0

    @property
    def counts(self) -> dict[Outcome, int]:
        """Checks of every run and turn in each outcome (all four keys present)."""
        counts: dict[Outcome, int] = dict.fromkeys(OUTCOMES, 0)
        for run in self.runs:
            for check in run.checks:
                counts[check.outcome] += 1
        return counts

    @property
    def stats(self) -> CaseStats | None:
        """pass@k, pass^k and per-check rates over the runs (None for a single run)."""
        from .stats import case_stats

        return case_stats(self)

    def add_run(self, run: RunRecord) -> None:
        """Append a repeated run (renumbered) and update the verdict: the share of passing runs
        must reach `threshold`."""
        run.index = len(self.runs)
        self.runs.append(run)
        self.passed = self.score >= self.threshold

    @property
    def verdict(self) -> Verdict:
        """`no checks` (neither passed nor failed) when nothing failed and no check of any run reached a
        verdict: none ran, or every one was `not_evaluated` and did not fail the case (the `skip` policy)."""
        errors = any(r.error or any(t.error for t in r.turns) for r in self.runs)
        return _verdict(self.passed, (c for r in self.runs for c in r.checks), errors)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "passed": self.passed, "verdict": self.verdict, "score": self.score,
            "threshold": self.threshold, "runs_passed": self.runs_passed, "runs_total": len(self.runs),
            "not_evaluated": self.not_evaluated, "tags": list(self.tags), "expected": self.expected,
            "checks": dict(self.counts), "stats": None if (st := self.stats) is None else st.to_dict(),
            "runs": [r.to_dict() for r in self.runs],
        }  # fmt: skip

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CaseRecord:
        policy = d.get("not_evaluated", "fail")
        if policy not in ("fail", "skip"):
            raise ValueError(f"case {d.get('id')!r}: not_evaluated must be 'fail' or 'skip', got {policy!r}")
        expected = d.get("expected")
        if expected is not None and not all(isinstance(e, dict) and isinstance(e.get("tool"), str) for e in expected):
            raise ValueError(f"case {d.get('id')!r}: expected must be a list of {{tool, args, optional}} steps")
        return cls(
            str(d["id"]), bool(d["passed"]), [RunRecord.from_dict(r) for r in d.get("runs", [])],
            float(d.get("threshold", 1.0)), policy, [str(t) for t in d.get("tags", [])],
            None if expected is None else [dict(e) for e in expected],
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Totals:
    """Counts over a report: cases by verdict, checks by outcome."""

    cases: int
    passed: int
    failed: int
    no_checks: int
    checks: dict[Outcome, int]
    not_evaluated_skipped: int
    """`not_evaluated` checks of cases under the `skip` policy (they did not fail their case)."""
    not_live: int = 0
    """pytest: tests skipped because live mode was off."""

    @classmethod
    def of(cls, cases: Iterable[CaseRecord], not_live: int = 0) -> Totals:
        checks: dict[Outcome, int] = dict.fromkeys(OUTCOMES, 0)
        verdicts = {"passed": 0, "failed": 0, "no checks": 0}
        skipped = n = 0
        for case in cases:
            n += 1
            verdicts[case.verdict] += 1
            counts = case.counts
            for outcome, k in counts.items():
                checks[outcome] += k
            if case.not_evaluated == "skip":
                skipped += counts["not_evaluated"]
        return cls(n, verdicts["passed"], verdicts["failed"], verdicts["no checks"], checks, skipped, not_live)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Totals:
        checks: dict[Outcome, int] = {o: int(d["checks"].get(o, 0)) for o in OUTCOMES}
        return cls(int(d["cases"]), int(d["passed"]), int(d["failed"]), int(d.get("no_checks", 0)), checks,
                   int(d.get("not_evaluated_skipped", 0)), int(d.get("not_live", 0)))  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {
            "cases": self.cases, "passed": self.passed, "failed": self.failed, "no_checks": self.no_checks,
            "not_live": self.not_live, "checks": dict(self.checks), "not_evaluated_skipped": self.not_evaluated_skipped,
            "line": summary_line(self),
        }  # fmt: skip


def headline(case: CaseRecord) -> str:
    """`score 1.00 (2/2 runs passed, threshold 1.00); checks: ...` for one case."""
    counts = case.counts
    skipped = counts["not_evaluated"] if case.not_evaluated == "skip" else 0
    return (
        f"score {case.score:.2f} ({case.runs_passed}/{len(case.runs)} runs passed, threshold {case.threshold:.2f}); "
        f"{checks_phrase(counts, skipped)}"
    )


def summary_line(totals: Totals) -> str:
    """The one summary every surface prints (`results.summary_text`):
    `2 eval(s): 1 passed, 1 failed; checks: 4 passed, 2 failed, 0 not evaluated, 0 errors`."""
    return summary_text(totals.cases, totals.passed, totals.failed, totals.checks, totals.not_evaluated_skipped,
                        totals.no_checks, totals.not_live)  # fmt: skip


@dataclass(slots=True)
class Report:
    """Everything a report file shows: the cases, in order, and the session's not-live skips."""

    cases: list[CaseRecord] = field(default_factory=list)
    not_live: int = 0
    created: str = field(default_factory=lambda: date.today().isoformat())
    title: str = "LLM Eval Report"
    tables: list[dict[str, Any]] = field(default_factory=list)
    """Extra summary tables (batch: pass rates by cohort): `{"title", "columns", "rows", "links"?}`;
    `links` maps a first-column value to the id of a case (`case-N`) it links to."""
    counted: Totals | None = None
    """The totals when `cases` are a selection of what was graded (batch: the worst traces)."""

    @property
    def totals(self) -> Totals:
        return self.counted if self.counted is not None else Totals.of(self.cases, self.not_live)

    @property
    def summary(self) -> str:
        return summary_line(self.totals)

    @property
    def exit_code(self) -> int:
        """0 when no case failed, else 1 (a case with no checks does not fail)."""
        return 1 if self.totals.failed else 0

    def sorted(self) -> Report:
        """The same report with cases ordered by id (xdist workers finish in any order)."""
        return Report(
            sorted(self.cases, key=lambda c: c.id), self.not_live, self.created, self.title, self.tables, self.counted
        )
