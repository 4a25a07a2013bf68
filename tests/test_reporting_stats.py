"""Repeated runs of a case: pass@k, pass^k, per-check pass rates with Wilson intervals, flaky and
informational checks, from the CLI's grouped traces to every report format."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from itertools import combinations
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry import trace

from _agents import scripted_agent
from tracegrade import capture, write_otlp_json
from tracegrade.cli import main
from tracegrade.reporting import CaseRecord, CheckRecord, Report, RunRecord, TurnRecord, read_json, write_markdown
from tracegrade.reporting.stats import pass_at_k, pass_hat_k, wilson

SPEC = "evaluators:\n  - ToolCorrectness: {expected_tools: [search, answer]}\n  - MaxToolCalls: 1\n"
STATS = (
    "pass@1 0.75, pass@3 1.00, pass@4 1.00, pass^3 0.25, pass^4 0.00; flaky: "
    "ToolCorrectness 3/4 = 0.75 (95% CI 0.30-0.95), MaxToolCalls 1/4 = 0.25 (95% CI 0.05-0.70)"
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four recorded runs of case `refund` (the third skips `answer`) and one of case `other`."""
    root = tmp_path_factory.mktemp("runs")
    tracer = trace.get_tracer("tests")
    plans = [("refund", True), ("refund", True), ("refund", False), ("refund", True), ("other", True)]
    for i, (case, complete) in enumerate(plans):
        steps = [("search", {"q": str(i)}), ("answer", {"t": "ok"})] if complete else [("search", {"q": str(i)})]
        agent = scripted_agent(steps)
        with capture() as cap, tracer.start_as_current_span("eval case", attributes={"eval.case.id": case}):
            agent.run_sync("go")
        write_otlp_json(cap, root / "traces" / f"run{i}.json")
    (root / "spec.yaml").write_text(SPEC)
    return root


def _grade(runs: Path, *extra: str) -> int:
    args = ["grade", str(runs / "traces"), "--spec", str(runs / "spec.yaml"), "--case-attribute", "eval.case.id"]
    return main([*args, "--threshold", "0.7", "--informational", "MaxToolCalls", *extra])


def test_traces_sharing_a_case_id_are_one_case_with_repeated_run_statistics(
    runs: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    assert _grade(runs) == 0  # 3/4 runs pass (threshold 0.7); the informational check never fails
    out = capsys.readouterr().out
    assert "PASS eval.case.id=refund - score 0.75 (3/4 runs passed, threshold 0.70)" in out
    assert f"  {STATS}" in out
    assert "informational: MaxToolCalls 1/4 = 0.25 (95% CI 0.05-0.70)" in out
    assert "2 eval(s): 2 passed, 0 failed; checks: 5 passed, 5 failed, 0 not evaluated, 0 errors" in out


def test_without_informational_the_same_check_fails_the_exit_code(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["grade", str(runs / "traces"), "--spec", str(runs / "spec.yaml"), "--case-attribute", "eval.case.id"]
    assert main([*args, "--threshold", "0.7"]) == 1
    assert "2 eval(s): 0 passed, 2 failed" in capsys.readouterr().out


def test_statistics_reach_json_junit_and_markdown(runs: Path, tmp_path: Path) -> None:
    for fmt in ("json", "junit", "markdown"):
        assert _grade(runs, "--format", fmt, "-o", str(tmp_path / fmt)) == 0
    doc = json.loads((tmp_path / "json").read_text())
    refund = next(c for c in doc["cases"] if c["id"] == "eval.case.id=refund")
    stats = refund["stats"]
    assert stats["pass_at_k"] == {"1": 0.75, "3": 1.0, "4": 1.0} and stats["pass_hat_k"]["4"] == 0.0
    assert stats["flaky"] == ["ToolCorrectness", "MaxToolCalls"]
    tc = stats["checks"][0]
    assert (tc["passed"], tc["runs"], tc["informational"]) == (3, 4, False)
    assert tc["ci95"] == pytest.approx([0.3006, 0.9544], abs=1e-4)
    assert [r["label"].split(":")[0] for r in refund["runs"]] == [
        str(runs / "traces" / f"run{i}.json") for i in range(4)
    ]
    assert read_json((tmp_path / "json").read_text()).cases[0].stats is not None
    root = ET.parse(tmp_path / "junit").getroot()
    props = {p.get("name"): p.get("value") for p in root.find("testsuite").iter("property")}  # type: ignore[union-attr]
    assert props["pass@1"] == "0.7500" and props["pass^4"] == "0.0000"
    assert (
        props["check.ToolCorrectness.ci95"] == "0.3006-0.9544" and props["check.MaxToolCalls.informational"] == "true"
    )
    assert root.get("failures") == "1"  # ToolCorrectness in run 3; MaxToolCalls is informational
    text = (tmp_path / "markdown").read_text()
    assert "| ToolCorrectness | 3/4 | 0.75 | 0.30-0.95 | 0 | yes |  |" in text
    assert "| MaxToolCalls | 1/4 | 0.25 | 0.05-0.70 | 0 | yes | yes |" in text


def test_a_check_not_evaluated_in_a_run_is_left_out_of_its_rate() -> None:
    def run(i: int, outcome: str) -> RunRecord:
        return RunRecord(i, outcome == "passed", [TurnRecord(0, True, [CheckRecord("Args", outcome)])])  # type: ignore[arg-type]

    case = CaseRecord("c", True, [run(0, "passed"), run(1, "not_evaluated"), run(2, "failed")])
    [args] = case.stats.checks  # type: ignore[union-attr]
    assert (args.passed, args.runs, args.not_evaluated, args.flaky) == (1, 2, 1, True)
    assert "| Args | 1/2 | 0.50 |" in write_markdown(Report([case]))
    assert CaseRecord("single", True, [run(0, "passed")]).stats is None


@given(st.integers(1, 8).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_and_pass_hat_k_equal_counting_over_every_k_subset(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(combinations(range(n), k))
    assert pass_at_k(n, c, k) == pytest.approx(sum(any(outcomes[i] for i in s) for s in subsets) / len(subsets))
    assert pass_hat_k(n, c, k) == pytest.approx(sum(all(outcomes[i] for i in s) for s in subsets) / len(subsets))


def test_wilson_interval_matches_the_closed_form_and_stays_in_bounds() -> None:
    assert wilson(3, 4) == pytest.approx((0.30064, 0.95441), abs=1e-5)
    assert wilson(0, 5)[0] == 0.0 and wilson(5, 5)[1] == 1.0 and wilson(0, 0) == (0.0, 1.0)
    assert wilson(50, 100) == pytest.approx((0.40383, 0.59617), abs=1e-5)
