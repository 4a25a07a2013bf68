"""Terminal output: Rich tables and lines for the CLI, plain lines for pytest's terminal summary.
Recorded text (names, arguments, reasons, replies) is always a `rich.text.Text`, never markup, and its
control characters are printed as escapes (`\\x1b`; `_text.printable`), never sent to the terminal; a value
longer than `_text.MAX_TEXT` characters is clipped with a note saying so."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .._text import clip, printable
from ..results import EvalResult
from ..trajectory import Trajectory
from .model import CaseRecord, CheckRecord, Report, headline
from .redact import Redactor

__all__ = [
    "OUTCOME_STYLE",
    "case_lines",
    "print_case",
    "print_heading",
    "print_summary",
    "results_table",
    "trajectory_lines",
]

OUTCOME_STYLE = {"passed": "green", "failed": "red", "not_evaluated": "yellow", "error": "magenta"}
_VERDICT_STYLE = {"passed": ("PASS", "green"), "failed": ("FAIL", "red"), "no checks": ("NO CHECKS", "yellow")}
_MAX_FAILED_TURNS = 10


def results_table(results: Sequence[CheckRecord | EvalResult], title: str = "") -> Table:
    """evaluator | outcome | score | reason, one row per check (an informational one says so)."""
    table = Table(title=Text(title) if title else None, title_justify="left", show_lines=False)
    table.add_column("evaluator", overflow="fold")  # long words wrap: nothing is cut at any width
    table.add_column("outcome", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("reason", overflow="fold")
    for r in results:
        check = r if isinstance(r, CheckRecord) else CheckRecord.from_result(r)
        score = "" if check.score is None else f"{check.score:.3f}"
        table.add_row(
            Text(_shown(check.name) + (" (informational)" if check.informational else "")),
            Text(check.outcome, style=OUTCOME_STYLE[check.outcome]), score, Text(_shown(check.reason, lines=True)),
        )  # fmt: skip
    return table


def trajectory_lines(traj: Trajectory, redactor: Redactor | None = None) -> list[Text]:
    """One line per tool call (failed and deferred ones flagged) and a model-request line."""
    lines = []
    calls = traj.listed(traj.calls(include_failed=True, include_deferred=True, include_blocked=True))
    for i, call in enumerate(calls, 1):
        line = Text(f"  {i}. {_shown(redactor.describe(call) if redactor else call.describe())}")
        if call.failed:
            line.append(" (failed: retry requested)" if call.retry_cause else " (failed)", style="red")
        if call.deferred:
            line.append(f" (deferred: {call.deferred})", style="yellow")
        if call.blocked:  # denied or awaiting approval: never executed
            line.append(f" ({call.blocked.replace('_', ' ')}: not executed)", style="yellow")
        if call.agent:
            line.append(f" {_shown(call.agent)}", style="dim")
        lines.append(line)
    lines.extend(Text(f"  handoff: {_shown(h.source or '?')} -> {_shown(h.target or '?')}") for h in traj.handoffs)
    tokens = sum(r.total_tokens or 0 for r in traj.model_requests)
    lines.append(Text(f"  model requests: {len(traj.model_requests)}, tokens: {tokens}"))
    return lines


def print_heading(console: Console, title: Text) -> None:
    """`── title` on a line of its own, never clipped to the console's width (a rule would cut it at 80
    columns when the output is not a terminal)."""
    console.print(Text.assemble(("── ", "dim"), title), soft_wrap=True, highlight=False)


def print_case(
    console: Console,
    case: CaseRecord,
    traj: Trajectory | None = None,
    *,
    verbose: bool = False,
    redactor: Redactor | None = None,
) -> None:
    """A passing case as one line (unless `verbose`), followed by its informational checks that did not
    pass (they fail nothing, but are reported); otherwise a heading naming it, its trajectory and its checks."""
    word, style = _VERDICT_STYLE[case.verdict]
    checks = [c for run in case.runs for c in run.checks]
    if case.verdict == "passed" and not verbose:
        console.print(Text.assemble((word, style), f" {_shown(case.id)} ({len(checks)} checks)"), soft_wrap=True)
        for c in checks:
            if c.informational and c.outcome != "passed":
                line = Text.assemble(f"  informational: {_clip(c.name or 'check')} [", (c.outcome, OUTCOME_STYLE[c.outcome]),
                                     f"]: {_clip(c.reason)}")  # fmt: skip
                console.print(line, soft_wrap=True)
        return
    print_heading(console, Text.assemble((word, style), f" {_shown(case.id)}"))
    if traj is not None:
        for line in trajectory_lines(traj, redactor):
            console.print(line, highlight=False)
    console.print(results_table(checks))


def print_summary(console: Console, report: Report) -> None:
    """The repeated-run statistics of cases with several runs, then the summary line."""
    for case in report.cases:
        if (stats := case.stats) is not None:
            word, style = _VERDICT_STYLE[case.verdict]
            console.print(Text.assemble((word, style), f" {_shown(case.id)} - {headline(case)}"), soft_wrap=True)
            console.print(Text(f"  {_shown(stats.line())}"), soft_wrap=True)
            for check in stats.checks:
                if check.informational:
                    console.print(Text(f"  informational: {_shown(check.describe())}", style="dim"), soft_wrap=True)
    console.print(Text(report.summary, style="bold"), soft_wrap=True, highlight=False)


def _shown(text: str, *, lines: bool = False) -> str:
    """Recorded text as printed: clipped (`_text.clip`), control characters escaped (newlines kept with `lines`)."""
    return printable(clip(text), lines=lines)


def _clip(text: str) -> str:
    """Recorded text on one line: whitespace folded, clipped, control characters escaped."""
    return printable(clip(" ".join(str(text).split())))


def _quoted(text: str, limit: int) -> str:
    """The start of `text` (folded) as a Python string literal, and how much was left out."""
    text = " ".join(str(text).split())
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}… (clipped: {len(text) - limit:,} more characters)"


def case_lines(report: Report) -> list[str]:
    """Plain lines: per case its verdict, score and runs (and its informational checks' statistics,
    or their misses for one run); for each failed turn the checks that did not pass with their
    reasons and the observed trajectory; then the summary line."""
    lines: list[str] = []
    for case in report.cases:
        lines.append(f"{case.verdict.upper()} {_clip(case.id)} - {headline(case)}")
        if (stats := case.stats) is not None:
            lines.append(f"  {_clip(stats.line())}")
            lines += [f"  informational: {_clip(c.describe())}" for c in stats.checks if c.informational]
        else:  # one run: the informational checks that did not pass (they failed nothing)
            lines += [
                f"  informational: {_clip(c.name or 'check')} [{c.outcome}]: {_clip(c.reason)}"
                for run in case.runs for c in run.checks if c.informational and c.outcome != "passed"
            ]  # fmt: skip
        failed = [(run, turn) for run in case.runs for turn in run.turns if not turn.passed]
        for run, turn in failed[:_MAX_FAILED_TURNS]:
            lines.append(f"  run {run.index + 1}, turn {turn.index + 1}: {_quoted(turn.user, 80)}")
            if turn.error:
                lines.append(f"    error: {_clip(turn.error)}")
            for check in turn.checks:
                if check.outcome != "passed":
                    lines.append(f"    {_clip(check.name or 'check')} [{check.outcome}]: {_clip(check.reason)}")
            lines.append(f"    trajectory ({turn.source}): {_clip(', '.join(turn.tool_calls) or 'no tool calls')}")
        if len(failed) > _MAX_FAILED_TURNS:
            lines.append(f"  ... and {len(failed) - _MAX_FAILED_TURNS} more failed turn(s)")
    if report.cases:
        lines.append(report.summary)
    return lines
