"""`agent_eval` results as report cases (`tracegrade.reporting`): JSON-safe, so xdist workers can
ship them to the controller, and written by the same writers as the CLI's reports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..reporting import CaseRecord, CheckRecord, RunRecord, TurnRecord
from ..reporting.redact import Redactor, scrub_case
from ..trajectory import ToolCall
from .session import RunResult, TranscriptResult, TurnResult, describe_call

__all__ = ["transcript_case"]


def _describe(call: ToolCall, source: str, redactor: Redactor) -> str:
    return redactor.describe(call) if redactor and call.args_recorded else describe_call(call, source)


def _trace(run: RunResult, redactor: Redactor) -> dict[str, Any] | None:
    from ..reporting.trace import trace_view

    return trace_view(run.capture.trajectory, redactor) if run.capture is not None else None


def _diff(turn: TurnResult, redactor: Redactor) -> list[dict[str, Any]] | None:
    """The turn's calls (failed and deferred ones too, when spans recorded them) against its expected trajectory."""
    from ..reporting.trace import trajectory_diff

    if turn.expected is None:
        return None
    traj = turn.trajectory
    calls = (
        traj.listed(traj.calls(include_failed=True, include_deferred=True))
        if traj is not None and turn.tool_calls_source == "spans"
        else turn.tool_calls
    )
    view = [
        {"name": c.label, "args": redactor.value(c.args) if c.args_recorded else None, "state": c.state} for c in calls
    ]
    return trajectory_diff(turn.expected, view)


def transcript_case(
    nodeid: str,
    result: TranscriptResult,
    tags: Sequence[str] = (),
    *,
    traces: bool = False,
    redact: Sequence[str] = (),
) -> CaseRecord:
    """One `agent_eval.run(...)` call as a report case: every run, turn and check; with `traces`,
    each run's spans and each turn's expected-vs-observed trajectory diff for the HTML report. Values under keys matching `redact` globs are hidden."""
    redactor = Redactor(redact)
    runs = [
        RunRecord(
            run.run_index,
            run.passed,
            [
                TurnRecord(
                    turn.turn_index,
                    turn.passed,
                    [CheckRecord.from_result(r, r.name in turn.informational) for r in turn.eval_results],
                    turn.user,
                    turn.reply,
                    [_describe(c, turn.tool_calls_source, redactor) for c in turn.tool_calls],
                    turn.tool_calls_source,
                    turn.error,
                    _diff(turn, redactor) if traces else None,
                )
                for turn in run.turn_results
            ],
            run.attempts,
            run.error,
            _trace(run, redactor) if traces else None,
        )
        for run in result.runs
    ]
    case = CaseRecord(nodeid, result.passed, runs, result.threshold, result.not_evaluated, list(tags))
    return scrub_case(case, redactor)
