"""Batch grading of repeated runs of a case (`case_attribute` / `--case-attribute`): the `case_id`
column, pass@k, pass^k, per-check Wilson intervals and flaky checks in the summary and the HTML
page; and `redact` / `--redact`, which hides values in the reasons without changing the grades."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _batch_data import CARD_ID, SPEC, record_cases, write_files
from tracegrade.batch import grade_traces
from tracegrade.cli import main
from tracegrade.errors import BatchInputError
from tracegrade.reporting.batch_page import case_statistics


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return write_files(record_cases(), tmp_path_factory.mktemp("cases"), files=2)


def test_the_case_attribute_becomes_a_case_id_column_whatever_the_worker_count(cases: list[Path]) -> None:
    one = grade_traces(cases, SPEC, workers=1, case_attribute="eval.case")
    two = grade_traces(cases, SPEC, workers=2, case_attribute="eval.case")
    assert one.table.column_names[-1] == "case_id" and one.rows() == two.rows()
    per_unit = [r["case_id"] for r in one.rows()[:: len(SPEC)]]
    assert sorted(per_unit, key=str) == [None, "hello", "hello", "refund", "refund", "refund"]
    plain = grade_traces(cases, SPEC, workers=1)
    assert "case_id" not in plain.table.column_names and case_statistics(plain.summary.to_dict()) == {}
    assert [{k: v for k, v in r.items() if k != "case_id"} for r in one.rows()] == plain.rows()


def test_repeated_runs_of_a_case_get_pass_at_k_wilson_intervals_and_flaky_checks(cases: list[Path]) -> None:
    summary = grade_traces(cases, SPEC, workers=1, case_attribute="eval.case").summary.to_dict()
    assert summary["case_attribute"] == "eval.case" and sorted(summary["case_runs"]) == ["hello", "refund"]
    hello, refund = case_statistics(summary)["cases"]
    assert (hello["case"], hello["runs"], hello["runs_passed"]) == ("eval.case=hello", 2, 0)
    assert (refund["case"], refund["runs"], refund["runs_passed"]) == ("eval.case=refund", 3, 2)
    stats = refund["stats"]
    assert stats["pass_at_k"] == {"1": pytest.approx(2 / 3), "3": 1.0} and stats["pass_hat_k"]["3"] == 0.0
    assert stats["flaky"] == ["ArgumentCorrectness"]
    (arg,) = [c for c in stats["checks"] if c["name"] == "ArgumentCorrectness"]
    assert (arg["passed"], arg["runs"]) == (2, 3) and arg["ci95"] == [pytest.approx(0.2077, abs=1e-4),
                                                                      pytest.approx(0.9385, abs=1e-4)]  # fmt: skip
    assert summary["units"] == 6  # the run without the attribute is graded, just not part of a case


def test_redaction_hides_argument_values_in_reasons_and_leaves_the_grades_alone(cases: list[Path]) -> None:
    plain = grade_traces(cases, SPEC, workers=1).rows()
    redacted = grade_traces(cases, SPEC, workers=1, redact=["i?"]).rows()
    assert any(str(CARD_ID) in r["reason"] for r in plain)
    assert not any(str(CARD_ID) in r["reason"] for r in redacted)
    assert any("got [redacted]" in r["reason"] for r in redacted)
    keep = ("trace_id", "root_span_id", "agent", "evaluator", "outcome", "score")
    assert [[r[k] for k in keep] for r in redacted] == [[r[k] for k in keep] for r in plain]


def test_batch_redaction_follows_the_reports_redactor(cases: list[Path]) -> None:
    from tracegrade.dialects import extract
    from tracegrade.ingest import iter_traces
    from tracegrade.reporting.redact import Redactor

    globs = ["i?", "gen_ai.input.*"]
    plain = grade_traces(cases, SPEC, workers=1).rows()
    redacted = grade_traces(cases, SPEC, workers=1, redact=globs).rows()
    expected = {}
    for tree in iter_traces(cases):
        traj = extract(tree)
        redactor = Redactor(globs)
        for node in tree:
            redactor.value(dict(node.attributes))
        for call in traj.calls(include_failed=True, include_deferred=True):
            if call.args_recorded:
                redactor.value(call.args)
        expected[f"{tree.roots[0].trace_id:032x}"] = redactor
    assert [r["reason"] for r in redacted] == [expected[r["trace_id"]].scrub(r["reason"]) for r in plain]


def test_a_blank_case_attribute_or_redact_glob_is_an_error() -> None:
    with pytest.raises(BatchInputError, match="case_attribute must be a span attribute key"):
        grade_traces(["x.json"], SPEC, case_attribute=" ")
    with pytest.raises(BatchInputError, match="redact must be non-empty key globs"):
        grade_traces(["x.json"], SPEC, redact=[""])


def test_cli_prints_case_statistics_and_writes_them_redacted_to_json_and_the_html_page(
    cases: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - ArgumentCorrectness: {tool_name: get_order, expected_arguments: {id: 1234}}\n")
    page = tmp_path / "page.html"
    args = ["batch", *map(str, cases), "--spec", str(spec), "--workers", "1", "--case-attribute", "eval.case"]
    assert main([*args, "--redact", "id", "--html", str(page)]) == 1
    out = capsys.readouterr().out
    assert "repeated runs by case (eval.case)" in out and "pass rate by case and check" in out
    assert "pass@1 0.67, pass@3 1.00, pass^3 0.00;" in out and str(CARD_ID) not in out
    html = page.read_text()
    assert "repeated runs by case (eval.case)" in html and "0.21-0.94" in html and str(CARD_ID) not in html
    assert main([*args, "--summary-json"]) == 1
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert [c["case"] for c in doc["cases"]] == ["eval.case=hello", "eval.case=refund"] and "case_runs" not in doc
    by_check = doc["case_tables"][1]["rows"]
    assert ["eval.case=refund", "ArgumentCorrectness", "2/3", "0.67", "0.21-0.94", "0", "yes"] in by_check
