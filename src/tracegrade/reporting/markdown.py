"""The markdown report, in pytest-agent-eval's outline: `# LLM Eval Report — <date>` and the summary
line, `## Summary` (a table of cases), any extra sections (the plugin's `## Groups`), then `## Details`
(`### <case>`, `#### Run N`, `##### Turn N`).

Recorded text (case ids, trace labels, tool calls, reasons, replies, errors) is made inert: each piece
is an inline code span, in which markdown, HTML, autolinks and mentions are not interpreted, with
newlines folded, control characters written as escapes (`\\x1b`), a value longer than `_text.MAX_TEXT`
characters clipped with a note saying so, and table pipes escaped. The
report's own words (evaluator names, tags) have markdown's inline syntax backslash-escaped and HTML
escaped."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from .._text import clip, printable
from .model import CaseRecord, Report, headline

__all__ = ["write_markdown"]

_VERDICT = {"passed": "PASSED", "failed": "FAILED", "no checks": "NO CHECKS"}
_INLINE_SYNTAX = re.compile(r"[\\`*_\[\]!~|$]")
"""What starts inline markdown (code, emphasis, links and images, strikethrough, math) or ends a table cell."""


def _folded(text: object) -> str:
    return printable(clip(" ".join(str(text).split())))


def _cell(text: object) -> str:
    """The report's own words in a line or a table cell: inline syntax backslash-escaped, HTML escaped."""
    return html.escape(_INLINE_SYNTAX.sub(lambda m: "\\" + m.group(), _folded(text)), quote=False)


def _code(text: object, *, table: bool = True) -> str:
    """Recorded text as an inline code span that holds any text (a longer backtick fence than the text
    contains); in a table cell (`table`) its pipes are escaped, as GFM tables need even in code."""
    text = _folded(text)
    if not text:
        return ""
    if table:
        text = text.replace("|", "\\|")
    fence = "`"
    while fence in text:
        fence += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _count_cells(case: CaseRecord) -> list[str]:
    counts = case.counts
    cells = [str(counts["passed"]), str(counts["failed"]), str(counts["not_evaluated"]), str(counts["error"])]
    if case.not_evaluated == "skip" and counts["not_evaluated"]:
        cells[2] += " (skipped)"
    return cells


def _details(case: CaseRecord) -> list[str]:
    out = ["", f"### {_code(case.id, table=False)}", "", f"**{_VERDICT[case.verdict]}**: {headline(case)}."]
    if case.tags:
        out.append(f"Tags: {', '.join(_cell(t) for t in case.tags)}.")
    if (stats := case.stats) is not None:
        out += ["", f"Repeated runs: {_cell(stats.line())}.", "",
                "| Check | Runs passed | Pass rate | 95% CI | Not evaluated | Flaky | Informational |",
                "|---|---|---|---|---|---|---|"]  # fmt: skip
        for c in stats.checks:
            rate = "" if c.rate is None else f"{c.rate:.2f}"
            lo, hi = c.interval
            out.append(f"| {_cell(c.name)} | {c.passed}/{c.runs} | {rate} | {lo:.2f}-{hi:.2f} | {c.not_evaluated} "
                       f"| {'yes' if c.flaky else ''} | {'yes' if c.informational else ''} |")  # fmt: skip
    if case.expected is not None:
        from .trace import step_text

        steps = [step_text(e) for e in case.expected]
        out.append("Expected trajectory: " + (", ".join(_code(s, table=False) for s in steps) or "none") + ".")
    for run in case.runs:
        extra = f", {run.attempts} attempts" if run.attempts > 1 else ""
        label = f" ({_code(run.label, table=False)})" if run.label else ""
        out += ["", f"#### Run {run.index + 1}: {run.verdict}{extra}{label}"]
        if run.error:
            out += ["", f"Error: {_code(run.error, table=False)}"]
        for turn in run.turns:
            out += ["", f"##### Turn {turn.index + 1}: {turn.verdict}", ""]
            if turn.user:
                out.append(f"- User: {_code(turn.user, table=False)}")
            if turn.reply:
                out.append(f"- Reply: {_code(turn.reply, table=False)}")
            if turn.error:
                out.append(f"- Error: {_code(turn.error, table=False)}")
            calls = ", ".join(_code(c, table=False) for c in turn.tool_calls)
            out.append(f"- Tool calls ({turn.source}): {calls or 'none'}")
            if turn.checks:
                out += ["", "| Evaluator | Outcome | Score | Reason |", "|---|---|---|---|"]
                out += [
                    f"| {_cell(c.name)}{' (informational)' if c.informational else ''} | {c.outcome} | {'' if c.score is None else format(c.score, '.2f')} | {_code(c.reason)} |"
                    for c in turn.checks
                ]
    return out


def write_markdown(report: Report, sections: Sequence[str] = ()) -> str:
    """The report as markdown; `sections` (each a whole `## ...` section) go between the summary
    table and the details."""
    out = [f"# {report.title} — {report.created}", "", f"{report.summary}.", ""]
    if report.cases:
        out += [
            "## Summary",
            "",
            "| Case | Result | Score | Runs passed | Threshold | Checks passed | Failed | Not evaluated | Errors |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        out += [
            f"| {_code(c.id)} | {_VERDICT[c.verdict]} | {c.score:.2f} | {c.runs_passed}/{len(c.runs)} "
            f"| {c.threshold:.2f} | {' | '.join(_count_cells(c))} |"
            for c in report.cases
        ]
    for section in sections:
        out += ["", section.strip("\n")]
    if report.cases:
        out += ["", "## Details"]
    for case in report.cases:
        out += _details(case)
    return "\n".join(out) + "\n"
