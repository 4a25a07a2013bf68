"""The HTML report, loaded in headless Chromium: what its scripts render (case rows, verdicts, the
trajectory diff, the span waterfall, the conversation), that recorded text stays text, redaction,
and the pytest and batch surfaces that write it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from _agents import run_captured
from _browser import Browser, chromium
from _plugin_helpers import PYDANTIC_AGENT, clean_agent_eval_env, src  # noqa: F401
from tracegrade import write_otlp_json
from tracegrade.cli import main
from tracegrade.pytest_plugin import session as _session  # noqa: F401  # loaded once, outside the inner sessions
from tracegrade.reporting import CaseRecord, Report, read_json
from tracegrade.reporting.html import write_html
from tracegrade.reporting.trace import trajectory_diff

ATTACK = "<script>document.title='pwned'</script><img src=x onerror=\"document.body.dataset.pwned=1\">"
CARD = "4111-1111-1111-1111"
SPEC = (
    "evaluators:\n"
    "  - TrajectoryMatch: {expected_trajectory: [search, {tool: fetch, args: {u: 9}}, answer]}\n"
    "  - MaxToolCalls: 10\n"
)

needs_chromium = pytest.mark.skipif(chromium() is None, reason="needs headless Chromium (apt-get install chromium)")


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("html")
    # search, then two fetches issued by one model response (run in parallel; the first attempt
    # fails and is retried), then answer
    steps = [("search", {"q": ATTACK, "card": CARD}), [("fetch", {"u": 1}), ("fetch", {"u": 2})], ("answer", {"t": 1})]
    write_otlp_json(run_captured(steps, fail=[1], sleep={"fetch": 0.05}), root / "a.json")
    write_otlp_json(run_captured([("answer", {"t": 1}), ("search", {"q": "x"})]), root / "b.json")
    (root / "spec.yaml").write_text(SPEC)
    return root


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if chromium() is None:
        pytest.skip("needs headless Chromium (apt-get install chromium)")
    with Browser(width=1400, height=1000) as b:
        yield b


def _grade(traces: Path, out: Path, *extra: str, fmt: str = "html") -> int:
    files = [str(traces / "a.json"), str(traces / "b.json")]
    return main(["grade", *files, "--spec", str(traces / "spec.yaml"), "--format", fmt, "-o", str(out), *extra])


@pytest.fixture(scope="module")
def report(traces: Path) -> Path:
    out = traces / "report.html"
    assert _grade(traces, out, "--redact", "card") == 1
    return out


def _count(b: Browser, selector: str) -> int:
    return int(b.evaluate(f"document.querySelectorAll({selector!r}).length"))


@needs_chromium
def test_the_report_renders_cases_checks_diff_markers_and_timeline_bars(
    browser: Browser, report: Path, tmp_path: Path
) -> None:
    browser.open(report.as_uri())
    assert browser.evaluate("document.body.dataset.rendered") == "1" and browser.exceptions == []
    assert _count(browser, "tr.case-row") == 2 and _count(browser, "details.case[open]") == 2
    assert browser.evaluate("[...document.querySelectorAll('tr.case-row td:nth-child(2)')].map(e => e.textContent)") == [
        "FAILED", "FAILED"
    ]  # fmt: skip
    assert _count(browser, "tr.check-row") == 4
    marks = browser.evaluate("[...document.querySelectorAll('#case-0 tr.diff-row')].map(r => r.dataset.mark)")
    assert marks == ["match", "ignored", "args", "extra", "extra", "match"]  # TrajectoryMatch leaves out the failed fetch
    assert browser.evaluate("[...document.querySelectorAll('#case-1 tr.diff-row')].map(r => r.dataset.mark)") == [
        "moved", "match", "missing", "moved"
    ]  # fmt: skip
    detail = browser.evaluate("document.querySelector('#case-0 tr.diff-args td:last-child').textContent")
    assert "expected 9, got 2" in detail
    # the waterfall: one agent bar per trace, a bar per model request and tool call
    assert _count(browser, "#case-0 .bar.kind-agent") == 1 and _count(browser, "#case-0 .bar.kind-tool") == 6
    assert _count(browser, "#case-0 .bar.kind-model") == 5 and _count(browser, "#case-1 .bar.kind-tool") == 2
    assert _count(browser, "#case-0 .bar.failed") == 1 and _count(browser, "#case-0 .span-row .badge.failed") == 1
    assert browser.evaluate("document.querySelector('#case-0 .span-row .badge.failed').textContent") == "retried"
    assert _count(browser, "#case-0 .span-row.kind-tool .badge:not(.failed)") >= 2  # the parallel fetches
    width = browser.evaluate("document.querySelector('#case-0 .bar.kind-agent').getBoundingClientRect().width")
    assert width > 100  # the run spans the track; its children sit inside it
    meta = browser.evaluate(
        "[...document.querySelectorAll('#case-0 .span-row.kind-model .span-meta')].map(e => e.textContent)"
    )
    assert all(" tok" in m and ("ms" in m or "µs" in m) for m in meta)
    shot = browser.screenshot(tmp_path / "report.png")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


@needs_chromium
def test_recorded_text_renders_as_text_never_as_html(browser: Browser, report: Path) -> None:
    browser.open(report.as_uri())
    assert browser.evaluate("document.title").startswith("LLM Eval Report — ")
    assert browser.evaluate("document.body.dataset.pwned") is None
    assert _count(browser, "script") == 2 and _count(browser, "img") == 0  # the data and the page's own script
    text = browser.evaluate("document.body.textContent")
    assert f"search(q={ATTACK!r}, card='[redacted]')" in text
    browser.evaluate("document.querySelector('#case-0 .span-row.kind-tool').click()")
    attrs = browser.evaluate("document.querySelector('#case-0 .attrs').textContent")
    assert "document.title='pwned'" in attrs and "[redacted]" in attrs and CARD not in attrs
    assert CARD not in report.read_text()


@needs_chromium
def test_a_span_shows_its_attributes_on_click_and_its_children_collapse(browser: Browser, report: Path) -> None:
    browser.open(report.as_uri())
    rows = "#case-1 .span-row"
    assert _count(browser, f"{rows}.hidden") == 0
    browser.evaluate(f"document.querySelector('{rows}.kind-tool').click()")
    assert _count(browser, "#case-1 .attrs:not(.hidden)") == 1
    assert "gen_ai.tool.name" in browser.evaluate("document.querySelector('#case-1 .attrs').textContent")
    browser.evaluate(f"document.querySelector('{rows} .toggle').click()")  # the agent run: fold its children
    assert _count(browser, f"{rows}.hidden") == _count(browser, rows) - 1
    assert _count(browser, "#case-1 .attrs:not(.hidden)") == 0
    browser.evaluate(f"document.querySelector('{rows} .toggle').click()")
    assert _count(browser, f"{rows}.hidden") == 0


def test_redaction_hides_values_in_every_format_and_grading_is_unchanged(
    traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    plain = tmp_path / "plain.json"
    assert _grade(traces, plain, fmt="json") == 1
    assert CARD in plain.read_text()
    for fmt in ("json", "markdown", "junit", "html"):
        out = tmp_path / f"r.{fmt}"
        assert _grade(traces, out, "--redact", "CARD", fmt=fmt) == 1
        assert CARD not in out.read_text() and "[redacted]" in out.read_text(), fmt
    outcomes = [
        [[c["outcome"], c["score"]] for c in case["runs"][0]["turns"][0]["checks"]]
        for path in (plain, tmp_path / "r.json")
        for case in json.loads(path.read_text())["cases"]
    ]
    assert outcomes[:2] == outcomes[2:]
    capsys.readouterr()
    files = [str(traces / "a.json"), str(traces / "b.json")]
    main(["grade", *files, "--spec", str(traces / "spec.yaml"), "-v", "--redact", "card"])
    assert CARD not in capsys.readouterr().out


def test_recorded_text_cannot_close_the_data_element() -> None:
    case = CaseRecord.from_results("</script><script>alert(1)</script><!--", [])
    page = write_html(Report([case]))
    assert page.count("<script") == 2 and page.count("</script>") == 2
    assert "\\u003c/script\\u003e\\u003cscript\\u003ealert(1)" in page
    assert "http://" not in page and "https://" not in page  # nothing is fetched


def test_the_diff_aligns_matches_missing_extra_moved_and_argument_mismatches() -> None:
    expected = [{"tool": "a"}, {"tool": "b", "args": {"x": 1}}, {"tool": "c"}, {"tool": "d"}]
    calls = [
        {"name": "d", "args": {}},
        {"name": "a", "args": {}},
        {"name": "b", "args": {"x": 2}},
        {"name": "e", "args": None},
    ]
    rows = trajectory_diff(expected, calls)
    assert [r["mark"] for r in rows] == ["moved", "match", "args", "missing", "moved", "extra"]
    assert rows[2]["detail"] == "key 'x': expected 1, got 2" and rows[5]["observed"] == "e(<args not recorded>)"


MULTI_TURN = src(
    """
    import pytest
    from tracegrade import AgentReply, Expect, Turn

    async def agent(history):
        return AgentReply("answer to <b>" + history[-1]["content"] + "</b>", ["lookup"])

    @pytest.mark.agent_eval(runs=2)
    async def test_chat_{name}(agent_eval):
        turns = [Turn("first <i>question</i>"), Turn("second", expect=Expect(tool_calls_include=["{tool}"]))]
        (await agent_eval.run(agent=agent, turns=turns)).assert_threshold()
    """
)


@needs_chromium
def test_pytest_writes_html_json_and_junit_reports_merged_across_xdist_workers(
    pytester: pytest.Pytester, browser: Browser
) -> None:
    pytester.makepyfile(test_one=MULTI_TURN.replace("{name}", "one").replace("{tool}", "lookup"),
                        test_two=MULTI_TURN.replace("{name}", "two").replace("{tool}", "other"))  # fmt: skip
    result = pytester.runpytest(
        "-n", "2", "--agent-eval-live", "--agent-eval-html", "out/report.html", "--agent-eval-json", "out/r.json",
        "--agent-eval-junit", "out/r.xml", "-p", "no:asyncio", "-p", "no:anyio", "-p", "no:logfire",
    )  # fmt: skip
    result.assert_outcomes(passed=1, failed=1)
    page = pytester.path / "out" / "report.html"
    result.stdout.fnmatch_lines([f"agent_eval: report written to {page}"])
    summary = "2 eval(s): 1 passed, 1 failed; checks: 2 passed, 2 failed, 0 not evaluated, 0 errors"
    assert summary in result.stdout.str() and "  pass@1 0.00, pass@2 0.00, pass^2 0.00" in result.stdout.str()
    report = read_json((pytester.path / "out" / "r.json").read_text())  # both workers' cases, in node id order
    assert [c.id for c in report.cases] == ["test_one.py::test_chat_one", "test_two.py::test_chat_two"]
    assert [len(c.runs) for c in report.cases] == [2, 2] and report.summary == summary
    root = ET.parse(pytester.path / "out" / "r.xml").getroot()
    assert (root.get("tests"), root.get("failures")) == ("4", "2")
    failing = [tc.get("name") for tc in root.iter("testcase") if tc.find("failure") is not None]
    assert failing == ["ToolCallEvaluator [run 1, turn 2]", "ToolCallEvaluator [run 2, turn 2]"]
    browser.open(page.as_uri())
    assert browser.exceptions == []
    assert browser.evaluate("[...document.querySelectorAll('tr.case-row a')].map(a => a.textContent)") == [
        "test_one.py::test_chat_one", "test_two.py::test_chat_two"
    ]  # fmt: skip
    browser.evaluate("document.querySelector('#case-0').open = true")  # the passing case renders when opened
    assert _count(browser, "#case-0 section.run") == 2
    users = browser.evaluate(
        "[...document.querySelectorAll('#case-0 .conversation .msg.user')].map(e => e.textContent)"
    )
    assert users[:2] == ["user (turn 1): first <i>question</i>", "user (turn 2): second"]
    assert _count(browser, "#case-0 .conversation i") == 0
    assert "answer to <b>second</b>" in browser.evaluate("document.querySelector('#case-0 .conversation').textContent")


DIFFED = src(
    """
    import itertools
    import pytest
    from agents import make_agent
    from tracegrade import Expect, Turn
    from tracegrade.evaluators import TrajectoryMatch
    from tracegrade.grading import informational

    agent = make_agent()
    runs = itertools.count()

    async def call(history):  # turn 1 calls nothing; in one run, turn 2 fetches the wrong item, then books
        if len(history) == 1:
            return "hi"
        first = next(runs) == 0
        return (await agent.run('search {"q": "<b>x</b>"}\\nfetch {"id": 1}' if first else 'search {"q": "y"}\\nfetch {"id": 2}\\nbook {"time": "9"}')).output

    @pytest.mark.agent_eval(runs=2)
    async def test_diffed(agent_eval):
        expect = Expect(evaluators=[informational(TrajectoryMatch(expected_trajectory=["search", {"tool": "fetch", "args": {"id": 1}}]))])
        turns = [Turn("hello"), Turn("go", expect=expect)]
        (await agent_eval.run(agent=call, turns=turns)).assert_threshold()
    """
)


@needs_chromium
def test_pytest_html_shows_each_turns_expected_vs_observed_diff_and_informational_checks(
    pytester: pytest.Pytester, browser: Browser
) -> None:
    pytester.makepyfile(agents=PYDANTIC_AGENT, test_diffed=DIFFED)
    pytester.syspathinsert()
    result = pytester.runpytest(
        "--agent-eval-live", "--agent-eval-html", "report.html", "-p", "no:asyncio", "-p", "no:anyio", "-p", "no:logfire"
    )  # fmt: skip
    result.assert_outcomes(passed=1)  # the informational check failed in one run: the test still passes
    browser.open((pytester.path / "report.html").as_uri())
    assert browser.exceptions == []
    browser.evaluate("document.querySelector('#case-0').open = true")
    titles = browser.evaluate("[...document.querySelectorAll('#case-0 .diff-wrap h3')].map(e => e.textContent)")
    assert titles == ["Expected vs observed trajectory (turn 2)"] * 2  # turn 1 declared no trajectory
    marks = browser.evaluate(
        "[...document.querySelectorAll('#case-0 section.run')].map(s => [...s.querySelectorAll('tr.diff-row')]"
        ".map(r => r.dataset.mark))"
    )
    assert sorted(marks) == [["match", "args", "extra"], ["match", "match"]]  # runs finish in any order
    observed = browser.evaluate(
        "[...document.querySelectorAll('#case-0 tr.diff-row td:nth-child(3)')].map(e => e.textContent)"
    )
    assert "search(q='<b>x</b>')" in observed and _count(browser, "#case-0 tr.diff-row b") == 0
    detail = browser.evaluate("document.querySelector('#case-0 tr.diff-args td:nth-child(4)').textContent")
    assert detail == "key 'id': expected 1, got 2"
    checks = browser.evaluate(
        "[...document.querySelectorAll('#case-0 tr.check-row td:nth-child(2)')].map(e => e.textContent)"
    )
    assert checks == ["TrajectoryMatch (informational)"] * 2
    assert browser.evaluate("document.querySelector('#case-0 .stats').textContent").count("informational") == 1


@needs_chromium
def test_batch_writes_a_summary_page_linking_to_the_worst_traces(
    traces: Path, tmp_path: Path, browser: Browser
) -> None:
    page = tmp_path / "batch.html"
    args = ["batch", str(traces / "a.json"), str(traces / "b.json"), "--spec", str(traces / "spec.yaml")]
    assert main([*args, "--workers", "1", "--html", str(page)]) == 1
    browser.open(page.as_uri())
    assert browser.evaluate("document.getElementById('summary').textContent").startswith(
        "2 eval(s): 0 passed, 2 failed"
    )
    titles = browser.evaluate("[...document.querySelectorAll('h2')].map(e => e.textContent)")
    assert titles[:3] == ["pass rate by evaluator and agent", "worst cohorts", "worst traces (2 of 2 failed)"]
    links = browser.evaluate("[...document.querySelectorAll('table.summary-table a')].map(a => a.getAttribute('href'))")
    assert links == ["#case-0", "#case-1"]
    browser.evaluate("document.querySelector('table.summary-table a').click()")
    assert browser.evaluate("location.hash") == "#case-0"
    assert browser.evaluate("document.querySelector('#case-0 tr.check-row.failed td:nth-child(2)').textContent") in (
        "MaxToolCalls", "TrajectoryMatch"
    )  # fmt: skip


@needs_chromium
def test_repeated_runs_show_pass_at_k_rates_and_flaky_checks(browser: Browser, tmp_path: Path) -> None:
    from tracegrade.reporting import CheckRecord, RunRecord, TurnRecord

    def run(i: int, ok: bool) -> RunRecord:
        checks = [
            CheckRecord("Tools", "passed" if ok else "failed"),
            CheckRecord("Budget", "failed", informational=True),
        ]
        return RunRecord(i, ok, [TurnRecord(0, ok, checks)])

    case = CaseRecord("t.py::test_refund", True, [run(0, True), run(1, False), run(2, True)], threshold=0.6)
    page = tmp_path / "stats.html"
    page.write_text(write_html(Report([case])))
    browser.open(page.as_uri())
    browser.evaluate("document.querySelector('#case-0').open = true")
    assert browser.evaluate("document.querySelector('#case-0 .pass-k').textContent") == (
        "pass@1 0.67, pass@3 1.00, pass^3 0.00"
    )
    rows = browser.evaluate(
        "[...document.querySelectorAll('#case-0 tr.stat-row')].map(r => [...r.cells].map(c => c.textContent))"
    )
    assert rows == [
        ["Tools", "2/3", "0.67", "0.21–0.94", "0", "flaky"],
        ["Budget", "0/3", "0.00", "0.00–0.56", "0", "informational"],
    ]
    assert browser.evaluate("document.querySelector('#case-0 summary .badge.flaky').textContent") == "flaky: Tools"


# --- The expected-vs-observed diff agrees with TrajectoryMatch's verdict (failed attempts, optional steps) ----------

GENAI = Path(__file__).resolve().parent.parent / "fixtures" / "dialects" / "genai.json"
"""search(q='order 1234') fails, search(q='order #1234') succeeds, then get_order(id=1234)."""


def _diff_rows(page: str) -> tuple[str, list[dict[str, object]]]:
    import json
    import re

    found = re.search(r'id="report-data">(.*?)</script>', page, re.S)
    assert found is not None
    [case] = json.loads(found.group(1))["cases"]
    [run] = case["runs"]
    return case["verdict"], run["diff"]


@pytest.mark.parametrize(
    "spec",
    [
        "[search, {tool: audit, optional: true}, get_order], order: strict",
        "[search, {tool: audit, optional: true}, get_order], order: strict, include_failed: true",
        "[search, search, get_order], order: strict, include_failed: true",
        "[search, search, get_order], order: strict",
        "[search, {tool: search, optional: true}, get_order], order: strict, include_failed: true",
        "[{tool: search, args: {q: 'order #1234'}}, get_order], order: in_order",
        "[{tool: search, args: {q: 'order 1234'}}, get_order], order: in_order",
        "[get_order, search], order: strict",
        "[{tool: get_order, optional: true}, search, get_order], order: exact",
    ],
)
def test_the_diff_shows_a_miss_or_an_extra_call_exactly_when_the_trajectory_check_fails(
    spec: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "spec.yaml").write_text(f"evaluators:\n  - TrajectoryMatch: {{expected_trajectory: {spec}}}\n")
    main(["grade", str(GENAI), "--spec", str(tmp_path / "spec.yaml"), "--format", "html", "-o", str(tmp_path / "r.html")])
    verdict, rows = _diff_rows((tmp_path / "r.html").read_text())
    faults = [r for r in rows if r["mark"] not in ("match", "optional", "ignored")]
    assert (verdict == "passed") == (not faults), (verdict, rows)
    capsys.readouterr()


def test_failed_attempts_align_only_when_the_check_counts_them_and_absent_optional_steps_are_not_missing() -> None:
    calls = [
        {"name": "search", "args": {"q": "1"}, "state": "failed"},
        {"name": "search", "args": {"q": "2"}, "state": "executed"},
        {"name": "notify", "args": {}, "state": "deferred"},
        {"name": "get_order", "args": {"id": 1}, "state": "executed"},
        {"name": "log", "args": {}, "state": "failed"},
    ]
    steps = [{"tool": "search"}, {"tool": "audit", "optional": True}, {"tool": "get_order"}]
    rows = trajectory_diff(steps, calls)
    assert [(r["mark"], r["observed"], r.get("failed", False)) for r in rows] == [
        ("ignored", "search(q='1')", True), ("match", "search(q='2')", False), ("ignored", "notify()", False),
        ("optional", None, False), ("match", "get_order(id=1)", False), ("ignored", "log()", True),
    ]  # fmt: skip
    assert rows[0]["detail"] == "not counted: the check leaves failed attempts out (include_failed)"
    assert rows[2]["detail"] == "not counted: deferred" and rows[3]["expected"] == "audit?"
    counted = trajectory_diff([{**s, "include_failed": True} for s in steps], calls)
    assert [(r["mark"], r["observed"], r.get("failed", False)) for r in counted] == [
        ("match", "search(q='1')", True), ("optional", None, False), ("extra", "search(q='2')", False),
        ("ignored", "notify()", False), ("match", "get_order(id=1)", False), ("extra", "log()", True),
    ]  # fmt: skip
    # a step with arguments takes the call whose arguments agree; a required step wins over an optional one
    rows = trajectory_diff([{"tool": "search", "optional": True}, {"tool": "search", "args": {"q": "2"}}], calls[:2])
    assert [r["mark"] for r in rows] == ["ignored", "optional", "match"]
    rows = trajectory_diff([{"tool": "search", "args": {"q": "2"}}], [{**calls[1], "args": {"q": "1"}}, calls[1]])
    assert [r["mark"] for r in rows] == ["extra", "match"]


@needs_chromium
def test_the_page_marks_optional_steps_and_calls_the_check_leaves_out(browser: Browser, tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - TrajectoryMatch: {expected_trajectory: [search, {tool: audit, optional: true}, "
                    "get_order], order: strict}\n")  # fmt: skip
    assert main(["grade", str(GENAI), "--spec", str(spec), "--format", "html", "-o", str(tmp_path / "r.html")]) == 0
    browser.open((tmp_path / "r.html").as_uri())
    browser.evaluate("document.querySelector('#case-0').open = true")
    rows = browser.evaluate(
        "[...document.querySelectorAll('#case-0 tr.diff-row')].map(r => [r.dataset.mark, r.cells[0].textContent, "
        "r.cells[3].textContent])"
    )
    assert rows == [
        ["ignored", "\u00b7", "not counted: the check leaves failed attempts out (include_failed) (call failed)"],
        ["match", "=", ""], ["optional", "\u25cb", "optional, not called"], ["match", "=", ""],
    ]  # fmt: skip


# --- Bidi overrides and control characters in recorded text are shown as escapes, never drawn ---------------------

SPOOF = "get_\u202erehtaew"
"""Drawn right to left after the override: reads `get_weather`."""
_DRAWN = "/[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]/"
"""What the page must never hand the browser to draw (newlines and tabs aside)."""


def _open_everything(b: Browser) -> str:
    """The page's whole text once every case is open and every span shows its attributes."""
    b.evaluate("document.querySelectorAll('details.case').forEach(d => { d.open = true; })")
    b.evaluate("document.querySelectorAll('.span-row').forEach(r => r.click())")
    return str(b.evaluate("document.body.textContent"))


@needs_chromium
def test_bidi_overrides_and_control_characters_render_as_escapes_in_every_page(
    browser: Browser, tmp_path: Path
) -> None:
    from tracegrade.reporting import CheckRecord, RunRecord, TurnRecord

    # the grade page: a real trace whose tool name and argument carry overrides, and a reply on two lines
    cap = run_captured([(SPOOF, {"city": "Paris\u2066\x1b[31m"})], reply="first line\nsecond \u202eline")
    write_otlp_json(cap, tmp_path / "t.json")
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - TrajectoryMatch: {expected_trajectory: [get_weather]}\n")
    assert main(["grade", str(tmp_path / "t.json"), "--spec", str(spec), "--format", "html",
                 "-o", str(tmp_path / "r.html")]) == 1  # fmt: skip
    browser.open((tmp_path / "r.html").as_uri())
    text = _open_everything(browser)
    assert browser.exceptions == [] and not browser.evaluate(f"{_DRAWN}.test(document.body.textContent)")
    observed = browser.evaluate("[...document.querySelectorAll('#case-0 tr.diff-row td:nth-child(3)')]"
                                ".map(e => e.textContent).filter(t => t)")  # fmt: skip
    assert observed == ["get_\\u202erehtaew(city='Paris\\u2066\\x1b[31m')"]
    names = browser.evaluate("[...document.querySelectorAll('#case-0 .span-name > span:nth-child(2)')]"
                             ".map(e => e.textContent)")  # fmt: skip
    assert "execute_tool get_\\u202erehtaew" in names
    assert "first line\nsecond \\u202eline" in text  # multi-line text keeps its newlines

    # the batch page: the worst traces' reasons and labels
    page = tmp_path / "batch.html"
    assert main(["batch", str(tmp_path / "t.json"), "--spec", str(spec), "--workers", "1", "--html", str(page)]) == 1
    browser.open(page.as_uri())
    text = _open_everything(browser)
    assert not browser.evaluate(f"{_DRAWN}.test(document.body.textContent)") and "get_\\u202erehtaew" in text

    # the pytest page's data: user messages, replies, errors, check names and reasons, case ids
    turns = [
        TurnRecord(0, True, [CheckRecord("Check\u202e", "passed", "called get_\u202erehtaew\nthen replied")],
                   user="book \u2067it\u2069", reply="done\n\u202eok", tool_calls=[f"{SPOOF}(x=1)"]),
        TurnRecord(1, False, user="again", reply="no", error="boom\x1b[2J"),
    ]  # fmt: skip
    case = CaseRecord("t.py::test_\u202eevil", False, [RunRecord(0, False, turns, label="run \u202e1")], tags=["\u202et"])
    page.write_text(write_html(Report([case], title="LLM Eval Report \u202e")))
    browser.open(page.as_uri())
    text = _open_everything(browser)
    assert not browser.evaluate(f"{_DRAWN}.test(document.body.textContent + document.title)")
    for shown in ("test_\\u202eevil", "Check\\u202e", "called get_\\u202erehtaew\nthen replied", "book \\u2067it\\u2069",
                  "done\n\\u202eok", "boom\\x1b[2J", "run \\u202e1", "\\u202et", "get_\\u202erehtaew(x=1)"):  # fmt: skip
        assert shown in text, shown
    assert browser.evaluate("document.title").startswith("LLM Eval Report \\u202e")
