"""`tracegrade demo`: the README's main job, recorded, graded and reported with no network."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tracegrade.cli import main
from tracegrade.demo import CASES, run_demo


def test_demo_grades_every_case_from_spans() -> None:
    runs = run_demo()
    assert [case.name for case, *_ in runs] == [c.name for c in CASES]
    outcomes = [[r.outcome for r in results] for _, _, _, results in runs]
    assert outcomes == [["passed"] * 4, ["passed"] * 3, ["passed", "passed", "passed", "failed"]]
    _, cap, reply, results = runs[2]
    assert results[-1].reasoning == "4 tool call(s), budget=3"
    assert [c.describe() for c in cap.trajectory.calls(include_failed=True)][1:3] == [
        "issue_refund(order_id='999', amount=250.0)",
        "issue_refund(order_id='999', amount=100.0)",
    ]
    assert "refunded $100.00" in reply


def test_demo_command_prints_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "lookup_order(order_id='777')" in out
    assert "(failed: retry requested)" in out
    assert "checks: 10 passed, 1 failed" in out


def test_python_dash_m_runs_the_demo() -> None:
    proc = subprocess.run([sys.executable, "-m", "tracegrade", "demo"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "checks: 10 passed, 1 failed" in proc.stdout
