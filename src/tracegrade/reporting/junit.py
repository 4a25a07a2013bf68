"""The JUnit XML report: one `<testsuite>` per case, one `<testcase>` per check of every run and
turn; a check that did not pass is a `<failure>` (an `error` outcome an `<error>`, a skipped
`not_evaluated` one `<skipped>`). Suite properties carry the case's score, threshold and runs."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from .model import CaseRecord, CheckRecord, Report

__all__ = ["write_junit"]

# XML 1.0 cannot carry these characters at all, escaped or not.
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _x(text: object) -> str:
    return _NOT_XML.sub("\ufffd", str(text))


def _case_name(check: CheckRecord, run: int, turn: int, case: CaseRecord) -> str:
    name = check.name or "check"
    where = []
    if len(case.runs) > 1:
        where.append(f"run {run + 1}")
    if any(len(r.turns) > 1 for r in case.runs):
        where.append(f"turn {turn + 1}")
    return f"{name} [{', '.join(where)}]" if where else name


def _suite(case: CaseRecord) -> ET.Element:
    suite = ET.Element("testsuite", name=_x(case.id))
    props = ET.SubElement(suite, "properties")
    for key, value in (("verdict", case.verdict), ("score", f"{case.score:.4f}"), ("threshold", f"{case.threshold:.4f}"),
                       ("runs_passed", str(case.runs_passed)), ("runs_total", str(len(case.runs)))):  # fmt: skip
        ET.SubElement(props, "property", name=key, value=value)
    if (stats := case.stats) is not None:
        for k, v in stats.pass_at.items():
            ET.SubElement(props, "property", name=f"pass@{k}", value=f"{v:.4f}")
        for k, v in stats.pass_hat.items():
            ET.SubElement(props, "property", name=f"pass^{k}", value=f"{v:.4f}")
        for c in stats.checks:
            lo, hi = c.interval
            rate = "" if c.rate is None else f"{c.rate:.4f}"
            for key, value in (("pass_rate", rate), ("ci95", f"{lo:.4f}-{hi:.4f}"), ("runs", f"{c.passed}/{c.runs}"),
                               ("flaky", str(c.flaky).lower()), ("informational", str(c.informational).lower())):  # fmt: skip
                ET.SubElement(props, "property", name=_x(f"check.{c.name}.{key}"), value=value)
    tests = failures = errors = skipped = 0
    for run in case.runs:
        if run.error:
            tests += 1
            errors += 1
            tc = ET.SubElement(suite, "testcase", classname=_x(case.id), name=f"run {run.index + 1}")
            ET.SubElement(tc, "error", message=_x(run.error)).text = _x(run.error)
        for turn in run.turns:
            for check in turn.checks:
                tests += 1
                tc = ET.SubElement(
                    suite, "testcase", classname=_x(case.id), name=_x(_case_name(check, run.index, turn.index, case))
                )
                if check.outcome == "passed":
                    continue
                if check.informational:  # reported, never a failure
                    ET.SubElement(tc, "system-out").text = _x(f"informational check {check.outcome}: {check.reason}")
                    continue
                if check.outcome == "not_evaluated" and case.not_evaluated == "skip":
                    skipped += 1
                    ET.SubElement(tc, "skipped", message=_x(check.reason))
                elif check.outcome == "error":
                    errors += 1
                    ET.SubElement(tc, "error", message=_x(check.reason)).text = _x(check.reason)
                else:
                    failures += 1
                    el = ET.SubElement(tc, "failure", message=_x(check.reason), type=check.outcome)
                    el.text = _x(check.reason)
    suite.attrib.update(tests=str(tests), failures=str(failures), errors=str(errors), skipped=str(skipped))
    return suite


def write_junit(report: Report) -> str:
    root = ET.Element("testsuites", name="tracegrade")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for case in report.cases:
        suite = _suite(case)
        root.append(suite)
        for key in totals:
            totals[key] += int(suite.attrib[key])
    root.attrib.update({k: str(v) for k, v in totals.items()})
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
