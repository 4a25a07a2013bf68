"""HTML report of 1,000 graded runs: file size, time to write it, and time to load it in headless
Chromium (navigation to the load event, the page's scripts included; goal < 2 s). Printed, never
asserted; exits 0.

    python benchmarks/bench_report.py [--runs 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from _agents import run_captured  # noqa: E402
from _browser import Browser, chromium  # noqa: E402
from tracegrade import grade  # noqa: E402
from tracegrade.evaluators import MaxToolCalls, TrajectoryMatch  # noqa: E402
from tracegrade.reporting import CaseRecord, Report  # noqa: E402
from tracegrade.reporting.html import write_html  # noqa: E402
from tracegrade.reporting.trace import expected_steps, trace_view  # noqa: E402

GOAL_S = 2.0


def build(runs: int, failing: float) -> Report:
    """`runs` cases, each one recorded run of a real agent (an agent run, 5 model requests, 6 tool
    calls with a parallel pair and a retry: 12 spans; arguments differ run to run); `failing` of them fail."""
    ok = [
        TrajectoryMatch(expected_trajectory=["search", "fetch", "fetch", "fetch", "fetch", "answer"]),
        MaxToolCalls(10),
    ]
    bad = [
        TrajectoryMatch(expected_trajectory=["search", {"tool": "fetch", "args": {"u": 9}}, "answer"]),
        MaxToolCalls(3),
    ]
    every = max(1, round(1 / failing)) if failing else 0
    cases = []
    for i in range(runs):
        steps = [
            ("search", {"q": f"order {i}"}),
            [("fetch", {"u": i}), ("fetch", {"u": i + 1})],
            ("answer", {"t": f"ok {i}"}),
        ]
        traj = run_captured(steps, fail=[1]).trajectory
        evaluators = bad if every and i % every == 0 else ok
        results = grade(traj, evaluators)
        calls = [c.describe() for c in traj.tool_calls]
        cases.append(CaseRecord.from_results(f"trace {i:04d}", results, tool_calls=calls, trace=trace_view(traj),
                                             expected=expected_steps(evaluators)))  # fmt: skip
    return Report(cases)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if chromium() is None:
        print("chromium is not installed (apt-get install chromium): nothing measured")
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp, Browser(width=1400, height=1000) as browser:
        browser.open("about:blank")
        for failing in (0.1, 1.0):
            report = build(args.runs, failing)
            start = time.perf_counter()
            page = write_html(report)
            write_s = time.perf_counter() - start
            path = Path(tmp) / f"report-{failing}.html"
            path.write_text(page, encoding="utf-8")
            loads, renders = [], []
            for _ in range(args.repeats):
                browser.open("about:blank")
                loads.append(browser.open(path.as_uri()))
                renders.append(float(browser.evaluate("document.body.dataset.renderMs")) / 1000)
            spans = int(browser.evaluate("document.querySelectorAll('.span-row').length"))
            load = statistics.median(loads)
            rows.append((failing, len(page) / 1e6, write_s, load, statistics.median(renders), spans, load < GOAL_S))
    print(
        f"HTML report of {args.runs} recorded runs (12 spans each), Chromium load = navigation to load event, median of {args.repeats}\n"
    )
    print("| failing | size MB | write s | load s | in-page render done at s | span rows rendered | goal < 2 s |")
    print("|---|---|---|---|---|---|---|")
    for failing, mb, write_s, load, render, spans, ok in rows:
        print(
            f"| {failing:.0%} | {mb:.2f} | {write_s:.3f} | {load:.3f} | {render:.3f} | {spans} | {'PASS' if ok else 'FAIL'} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
