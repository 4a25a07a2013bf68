"""Eval results as plain records (JSON-safe, so xdist workers can ship them to the controller),
the terminal summary and the markdown report built from them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..results import OUTCOMES
from .session import TranscriptResult, describe_call

__all__ = ["markdown_report", "summary_line", "terminal_lines", "transcript_record"]

_MAX_TEXT = 300
_MAX_FAILED_TURNS = 10


def _clip(text: str, limit: int = _MAX_TEXT) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def transcript_record(nodeid: str, result: TranscriptResult, tags: Sequence[str] = ()) -> dict[str, Any]:
    """A JSON-safe summary of one `agent_eval.run(...)` call."""
    return {
        "nodeid": nodeid,
        "tags": list(tags),
        "passed": result.passed,
        "score": result.score,
        "threshold": result.threshold,
        "runs_passed": result.passed_run_count,
        "runs_total": len(result.runs),
        "checks": dict(result.outcome_counts),
        "not_evaluated": result.not_evaluated,
        "runs": [
            {
                "index": run.run_index,
                "passed": run.passed,
                "attempts": run.attempts,
                "error": run.error,
                "turns": [
                    {
                        "index": turn.turn_index,
                        "user": turn.user,
                        "reply": turn.reply,
                        "passed": turn.passed,
                        "error": turn.error,
                        "source": turn.tool_calls_source,
                        "trajectory": [describe_call(c, turn.tool_calls_source) for c in turn.tool_calls],
                        "results": [
                            {"name": r.name, "outcome": r.outcome, "reason": r.reasoning, "score": r.score}
                            for r in turn.eval_results
                        ],
                    }
                    for turn in run.turn_results
                ],
            }
            for run in result.runs
        ],
    }


def _verdict(record: dict[str, Any]) -> str:
    return "PASSED" if record["passed"] else "FAILED"


def _checks(counts: dict[str, int], policy: str = "fail") -> str:
    """`checks: 4 passed, 1 failed, 1 not evaluated (skipped), 0 errors`."""
    ne = f"{counts.get('not_evaluated', 0)} not evaluated" + (" (skipped)" if policy == "skip" else "")
    return f"checks: {counts.get('passed', 0)} passed, {counts.get('failed', 0)} failed, {ne}, {counts.get('error', 0)} errors"


def _total(records: Sequence[dict[str, Any]]) -> dict[str, int]:
    total: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
    for record in records:
        for outcome, n in record["checks"].items():
            total[outcome] += n
    return total


def _headline(record: dict[str, Any]) -> str:
    return (
        f"score {record['score']:.2f} ({record['runs_passed']}/{record['runs_total']} runs passed, "
        f"threshold {record['threshold']:.2f}); {_checks(record['checks'], record['not_evaluated'])}"
    )


def _count_cells(record: dict[str, Any]) -> list[str]:
    cells = [str(record["checks"][o]) for o in OUTCOMES]
    if record["not_evaluated"] == "skip" and record["checks"]["not_evaluated"]:
        cells[2] += " (skipped)"
    return cells


def summary_line(records: Sequence[dict[str, Any]]) -> str:
    """The session's totals: evals passed/failed and checks in each of the four outcomes."""
    passed = sum(r["passed"] for r in records)
    return f"{len(records)} eval(s): {passed} passed, {len(records) - passed} failed; {_checks(_total(records))}"


def _failed_turns(record: dict[str, Any]) -> Iterable[tuple[dict[str, Any], dict[str, Any]]]:
    for run in record["runs"]:
        for turn in run["turns"]:
            if not turn["passed"]:
                yield run, turn


def _trajectory(turn: dict[str, Any]) -> str:
    return ", ".join(turn["trajectory"]) or "no tool calls"


def terminal_lines(records: Sequence[dict[str, Any]]) -> list[str]:
    """Per eval: verdict, score and runs passed; for each failed turn the failed evaluators with
    their reasons and the observed trajectory (tool names with arguments)."""
    lines: list[str] = []
    for record in sorted(records, key=lambda r: r["nodeid"]):
        lines.append(f"{_verdict(record)} {record['nodeid']} - {_headline(record)}")
        failed = list(_failed_turns(record))
        for run, turn in failed[:_MAX_FAILED_TURNS]:
            lines.append(f"  run {run['index'] + 1}, turn {turn['index'] + 1}: {_clip(turn['user'], 80)!r}")
            for res in turn["results"]:
                if res["outcome"] != "passed":
                    lines.append(f"    {res['name'] or 'check'} [{res['outcome']}]: {_clip(res['reason'])}")
            lines.append(f"    trajectory ({turn['source']}): {_clip(_trajectory(turn))}")
        if len(failed) > _MAX_FAILED_TURNS:
            lines.append(f"  ... and {len(failed) - _MAX_FAILED_TURNS} more failed turn(s)")
    if records:
        lines.append(summary_line(records))
    return lines


def _cell(text: Any) -> str:
    return _clip(str(text), 500).replace("|", "\\|")


def markdown_report(records: Sequence[dict[str, Any]], skipped: int = 0) -> str:
    """The whole session's evals as markdown: a summary table, then every run and turn."""
    records = sorted(records, key=lambda r: r["nodeid"])
    passed = sum(r["passed"] for r in records)
    total = _total(records)
    out = [
        "# agent_eval report",
        "",
        f"{len(records)} eval(s): {passed} passed, {len(records) - passed} failed"
        + (f", {skipped} skipped (not live)" if skipped else "")
        + f"; {_checks(total)}.",
        "",
        "| Test | Result | Score | Runs passed | Threshold | Checks passed | Failed | Not evaluated | Errors |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    out += [
        f"| `{_cell(r['nodeid'])}` | {_verdict(r)} | {r['score']:.2f} | {r['runs_passed']}/{r['runs_total']} "
        f"| {r['threshold']:.2f} | {' | '.join(_count_cells(r))} |"
        for r in records
    ]
    for record in records:
        out += ["", f"## `{record['nodeid']}`", "", f"**{_verdict(record)}**: {_headline(record)}."]
        if record["tags"]:
            out.append(f"Tags: {', '.join(record['tags'])}.")
        for run in record["runs"]:
            status = "passed" if run["passed"] else "failed"
            extra = f", {run['attempts']} attempts" if run["attempts"] > 1 else ""
            out += ["", f"### Run {run['index'] + 1}: {status}{extra}"]
            if run["error"]:
                out += ["", f"Error: {_cell(run['error'])}"]
            for turn in run["turns"]:
                out += [
                    "",
                    f"#### Turn {turn['index'] + 1}: {'passed' if turn['passed'] else 'failed'}",
                    "",
                    f"- User: {_cell(turn['user'])}",
                    f"- Reply: {_cell(turn['reply'])}",
                    f"- Tool calls ({turn['source']}): "
                    + (", ".join(f"`{_cell(c)}`" for c in turn["trajectory"]) or "none"),
                ]
                if turn["results"]:
                    out += ["", "| Evaluator | Outcome | Score | Reason |", "|---|---|---|---|"]
                    out += [
                        f"| {_cell(r['name'])} | {r['outcome']} | "
                        f"{'' if r['score'] is None else format(r['score'], '.2f')} | {_cell(r['reason'])} |"
                        for r in turn["results"]
                    ]
    return "\n".join(out) + "\n"
