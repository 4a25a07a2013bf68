"""Reports of graded runs, one module for every surface (CLI, pytest plugin, batch): the data
(`Report` of `CaseRecord`s of runs, turns and checks), the counting and the summary line, and the
terminal, markdown, JSON, JUnit and HTML writers.

    report = Report([CaseRecord.from_results("trace 1", results)])
    report.summary            # "1 eval(s): 1 passed, 0 failed; checks: ..."
    write(report, "junit")    # or "json", "markdown", "html"
"""

from __future__ import annotations

from typing import Literal

from .json_report import read_json, write_json
from .junit import write_junit
from .markdown import write_markdown
from .model import CaseRecord, CheckRecord, Report, RunRecord, Totals, TurnRecord, summary_line

__all__ = [
    "FORMATS",
    "CaseRecord",
    "CheckRecord",
    "Report",
    "RunRecord",
    "Totals",
    "TurnRecord",
    "read_json",
    "summary_line",
    "write",
    "write_json",
    "write_junit",
    "write_markdown",
]

FileFormat = Literal["json", "junit", "markdown", "html"]
FORMATS: tuple[FileFormat, ...] = ("json", "junit", "markdown", "html")


def write(report: Report, fmt: FileFormat) -> str:
    """The report as a document in `fmt`."""
    if fmt == "json":
        return write_json(report)
    if fmt == "junit":
        return write_junit(report)
    if fmt == "markdown":
        return write_markdown(report)
    if fmt == "html":
        from .html import write_html

        return write_html(report)
    raise ValueError(f"unknown report format {fmt!r} (expected one of {', '.join(FORMATS)})")
