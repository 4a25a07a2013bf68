"""The JSON report: `{"format": "tracegrade-report", "version": 1, "created", "summary", "cases"}`;
`read_json` reads it back into the same `Report`."""

from __future__ import annotations

import json
from typing import Any

from .model import CaseRecord, Report, Totals

__all__ = ["FORMAT", "VERSION", "read_json", "report_dict", "write_json"]

FORMAT = "tracegrade-report"
VERSION = 1


def report_dict(report: Report) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "title": report.title,
        "created": report.created,
        "summary": report.totals.to_dict(),
        "tables": report.tables,
        "cases": [c.to_dict() for c in report.cases],
    }


def write_json(report: Report) -> str:
    return json.dumps(report_dict(report), indent=2, ensure_ascii=False)


def read_json(text: str) -> Report:
    """The `Report` a `write_json` document holds (`ValueError` naming what is wrong otherwise)."""
    doc = json.loads(text)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f'not a tracegrade JSON report (expected "format": {FORMAT!r})')
    if doc.get("version") != VERSION:
        raise ValueError(f"tracegrade JSON report version {doc.get('version')!r} is not supported (expected {VERSION})")
    cases = []
    for i, case in enumerate(doc.get("cases", [])):
        try:
            cases.append(CaseRecord.from_dict(case))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"cases[{i}]: {type(e).__name__}: {e}") from None
    tables = doc.get("tables", [])
    if not isinstance(tables, list):
        raise ValueError("tables: expected a list")
    report = Report(
        cases, int(doc["summary"].get("not_live", 0)), str(doc["created"]), str(doc.get("title", "")), tables
    )
    stored = Totals.from_dict(doc["summary"])
    if stored != report.totals:  # the cases are a selection (batch's worst traces)
        report.counted = stored
    return report
