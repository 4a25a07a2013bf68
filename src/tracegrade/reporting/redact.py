"""Redaction for reports: values under keys matching a glob (`--redact 'card*'`) are replaced in
tool-call arguments and span attributes (also inside attribute values holding JSON), and the
values removed are scrubbed from the report's free text (reasons, replies). Grading is unaffected:
redaction applies to what is written, after grading."""

from __future__ import annotations

from dataclasses import replace

from .. import _redact
from ..trajectory import ToolCall
from .model import CaseRecord

__all__ = ["Redactor", "scrub_case"]


class Redactor(_redact.Redactor):
    """`tracegrade._redact.Redactor` (the rule batch applies too), plus what reports need."""

    def describe(self, call: ToolCall) -> str:
        """`call.describe()` with matching argument values redacted."""
        if not self.globs or not call.args_recorded:
            return call.describe()
        from .trace import describe_call

        return describe_call(call.label, self.value(call.args))


def scrub_case(case: CaseRecord, redactor: Redactor) -> CaseRecord:
    """`case` with the redactor's removed values taken out of its free text (in place; returned)."""
    if not redactor.removed:
        return case
    s = redactor.scrub
    for run in case.runs:
        run.error = None if run.error is None else s(run.error)
        for turn in run.turns:
            turn.user, turn.reply = s(turn.user), s(turn.reply)
            turn.error = None if turn.error is None else s(turn.error)
            turn.tool_calls = [s(c) for c in turn.tool_calls]
            turn.checks = [replace(c, reason=s(c.reason)) for c in turn.checks]
            if turn.diff is not None:
                turn.diff = [{k: s(v) if isinstance(v, str) else v for k, v in row.items()} for row in turn.diff]
    return case
