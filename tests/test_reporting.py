"""`tracegrade.reporting`: one summary for the CLI and the plugin, literal terminal text, JUnit and
JSON documents."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from _agents import run_captured
from _plugin_helpers import assert_in_order, clean_agent_eval_env, src  # noqa: F401
from tracegrade import write_otlp_json
from tracegrade.cli import main
from tracegrade.pytest_plugin import session as _session  # noqa: F401  # loaded once, outside the inner sessions
from tracegrade.reporting import (
    CaseRecord,
    CheckRecord,
    Report,
    RunRecord,
    TurnRecord,
    read_json,
    write_json,
    write_junit,
    write_markdown,
)
from tracegrade.reporting.terminal import case_lines, print_case, results_table
from tracegrade.results import EvalResult

MARKUP = "[urgent] refund [bold]now[/bold] [/x]"
SUMMARY = re.compile(r"^\d+ eval\(s\): .*errors$", re.M)

# The same two graded runs on both surfaces: `search` then `answer` (passes both checks), and
# `search` alone (misses `answer`, within the budget).
SPEC = "evaluators:\n  - ToolCorrectness: {expected_tools: [search, answer]}\n  - MaxToolCalls: 2\n"
PLUGIN_TESTS = src(
    """
    import pytest
    from tracegrade import AgentReply, Expect, Turn

    EXPECT = Expect(tool_calls_include=["search", "answer"], max_tool_calls=2)

    @pytest.mark.agent_eval
    def test_a_both(agent_eval):
        agent_eval.run_sync(agent=lambda h: AgentReply("ok", ["search", "answer"]), turns=[Turn("go", expect=EXPECT)]).assert_threshold()

    @pytest.mark.agent_eval
    def test_b_search_only(agent_eval):
        agent_eval.run_sync(agent=lambda h: AgentReply("ok", ["search"]), turns=[Turn("go", expect=EXPECT)]).assert_threshold()
    """
)


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("traces")
    write_otlp_json(run_captured([("search", {"q": "x"}), ("answer", {"text": "hi"})]), root / "a.json")
    write_otlp_json(run_captured([("search", {"q": "x"})]), root / "b.json")
    (root / "spec.yaml").write_text(SPEC)
    return root


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def test_the_cli_and_the_plugin_print_the_same_summary_for_the_same_results(
    traces: Path, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _cli(
        capsys, "grade", str(traces / "a.json"), str(traces / "b.json"), "--spec", str(traces / "spec.yaml")
    )
    assert code == 1
    [cli_line] = SUMMARY.findall(out)
    assert cli_line == "2 eval(s): 1 passed, 1 failed; checks: 3 passed, 1 failed, 0 not evaluated, 0 errors"
    pytester.makepyfile(test_evals=PLUGIN_TESTS)
    result = pytester.runpytest("--agent-eval-live", "-p", "no:asyncio", "-p", "no:anyio")
    result.assert_outcomes(passed=1, failed=1)
    assert SUMMARY.findall(result.stdout.str()) == [cli_line]


def test_the_cli_and_the_plugin_write_json_and_junit_with_the_same_totals(
    traces: Path, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    files = [str(traces / "a.json"), str(traces / "b.json")]
    spec = str(traces / "spec.yaml")
    cli_json, cli_junit = pytester.path / "cli.json", pytester.path / "cli.xml"
    assert main(["grade", *files, "--spec", spec, "--format", "json", "-o", str(cli_json)]) == 1
    assert main(["grade", *files, "--spec", spec, "--format", "junit", "-o", str(cli_junit)]) == 1
    assert "2 eval(s): 1 passed, 1 failed" in capsys.readouterr().err  # the summary goes to stderr with -o
    pytester.makepyfile(test_evals=PLUGIN_TESTS)
    result = pytester.runpytest(
        "--agent-eval-live", "--agent-eval-json", "out/r.json", "--agent-eval-junit", "out/r.xml", "-p", "no:asyncio"
    )
    result.stdout.fnmatch_lines([f"agent_eval: report written to {pytester.path / 'out' / 'r.json'}"])
    plugin_json = json.loads((pytester.path / "out" / "r.json").read_text())
    assert plugin_json["summary"] == json.loads(cli_json.read_text())["summary"]
    for xml in (cli_junit, pytester.path / "out" / "r.xml"):
        root = ET.parse(xml).getroot()
        assert (root.tag, root.get("tests"), root.get("failures"), root.get("errors")) == ("testsuites", "4", "1", "0")
        assert [s.get("failures") for s in root.iter("testsuite")] == ["0", "1"]


def test_recorded_markup_is_printed_literally_in_the_terminal_table(monkeypatch: pytest.MonkeyPatch) -> None:
    console = Console(record=True, width=300, color_system="truecolor")
    check = CheckRecord(MARKUP, "failed", f"argument note={MARKUP!r}", 0.5)
    console.print(results_table([check, EvalResult(False, MARKUP, name="[red]x[/red]")]))
    case = CaseRecord.from_results(f"trace {MARKUP}", [EvalResult(False, MARKUP, name="Check")])
    print_case(console, case)
    text = console.export_text()
    assert text.count(MARKUP) == 5 and "[red]x[/red]" in text and f"FAIL trace {MARKUP}" in text
    assert all(MARKUP in line for line in case_lines(Report([case])) if "Check [failed]" in line)


def test_the_cli_prints_a_tool_argument_with_markup_as_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    trace = write_otlp_json(run_captured([("refund", {"note": MARKUP})], reply=MARKUP), tmp_path / "t.json")
    (tmp_path / "spec.yaml").write_text("evaluators:\n  - MaxToolCalls: 0\n")
    code, out = _cli(capsys, "grade", str(trace), "--spec", str(tmp_path / "spec.yaml"))
    assert code == 1 and f"refund(note='{MARKUP}')" in out


def _sample_report() -> Report:
    turn = TurnRecord(0, False, [CheckRecord("A", "passed", "", 1.0), CheckRecord("B", "failed", "no <b>"),
                                 CheckRecord("C", "not_evaluated", "args not recorded"),
                                 CheckRecord("D", "error", "judge \x00 raised")], "u", "r", ["f(x=1)"])  # fmt: skip
    fine = TurnRecord(1, True, [CheckRecord("A", "passed")])
    return Report([
        CaseRecord("t.py::skip", False, [RunRecord(0, False, [turn, fine]), RunRecord(1, True, [fine])], 0.5, "skip"),
        CaseRecord("t.py::fail", False, [RunRecord(0, False, [turn], attempts=2, error="agent timed out")]),
        CaseRecord("t.py::none", True, [RunRecord(0, True, [TurnRecord(0, True)])]),
    ], not_live=2)  # fmt: skip


def test_junit_is_well_formed_xml_with_the_counts_of_every_outcome() -> None:
    root = ET.fromstring(write_junit(_sample_report()))
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    skip, fail = suites["t.py::skip"], suites["t.py::fail"]
    # policy "skip": the not_evaluated check is <skipped>; policy "fail": a <failure>
    assert [skip.get(k) for k in ("tests", "failures", "errors", "skipped")] == ["6", "1", "1", "1"]
    assert [fail.get(k) for k in ("tests", "failures", "errors", "skipped")] == ["5", "2", "2", "0"]
    assert [root.get(k) for k in ("tests", "failures", "errors", "skipped")] == ["11", "3", "3", "1"]
    props = {p.get("name"): p.get("value") for p in skip.iter("property")}
    assert props["runs_passed"] == "1" and props["runs_total"] == "2" and props["threshold"] == "0.5000"
    errors = [e.get("message") for e in fail.iter("error")]
    assert errors == ["agent timed out", "judge \ufffd raised"]  # a NUL cannot be in XML at all
    assert [tc.get("name") for tc in skip.iter("testcase")][:2] == ["A [run 1, turn 1]", "B [run 1, turn 1]"]


def test_a_case_without_checks_is_neither_passed_nor_failed() -> None:
    report = _sample_report()
    assert [c.verdict for c in report.cases] == ["failed", "failed", "no checks"]
    assert report.summary == (
        "3 eval(s): 0 passed, 2 failed, 1 no checks, 2 skipped (not live); "
        "checks: 4 passed, 2 failed, 2 not evaluated (1 skipped), 2 errors"
    )


def test_markdown_keeps_the_report_heading_and_makes_recorded_text_inert() -> None:
    report = _sample_report()
    report.cases[0].runs[0].turns[0].tool_calls = ["f(x='`a|b`')"]
    text = write_markdown(report)
    assert text.startswith(f"# LLM Eval Report — {report.created}\n")
    assert_in_order(text, report.summary + ".", "| `t.py::fail` | FAILED | 0.00 | 0/1 | 1.00 | 1 | 1 | 1 | 1 |",
                    "- Tool calls (spans): ``f(x='`a|b`')``", "| B | failed |  | `no <b>` |")  # fmt: skip


def test_json_round_trips_to_the_same_report() -> None:
    report = _sample_report()
    doc = write_json(report)
    assert read_json(doc) == report
    assert json.loads(doc)["summary"]["line"] == report.summary


_text = st.text(max_size=20)
_checks = st.lists(st.builds(CheckRecord, _text, st.sampled_from(["passed", "failed", "not_evaluated", "error"]),
                             _text, st.none() | st.floats(0, 1)), max_size=3)  # fmt: skip
_turns = st.lists(st.builds(TurnRecord, st.integers(0, 5), st.booleans(), _checks, _text, _text,
                            st.lists(_text, max_size=2), st.sampled_from(["spans", "returned", "none"]),
                            st.none() | _text), max_size=2)  # fmt: skip
_runs = st.lists(st.builds(RunRecord, st.integers(0, 5), st.booleans(), _turns, st.integers(1, 3), st.none() | _text),
                 max_size=2)  # fmt: skip
_steps = st.lists(
    st.fixed_dictionaries(
        {"tool": _text, "args": st.none() | st.dictionaries(_text, st.integers()), "optional": st.booleans()}
    ),
    max_size=2,
)
_cases = st.builds(
    CaseRecord,
    _text,
    st.booleans(),
    _runs,
    st.floats(0, 1),
    st.sampled_from(["fail", "skip"]),
    st.lists(_text, max_size=2),
    st.none() | _steps,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_cases, max_size=3), st.integers(0, 3))
def test_any_report_round_trips_through_json_and_its_junit_parses(cases: list[CaseRecord], not_live: int) -> None:
    report = Report(cases, not_live)
    assert read_json(write_json(report)) == report
    root = ET.fromstring(write_junit(report))
    assert int(root.get("tests", "")) == sum(sum(c.counts.values()) + sum(bool(r.error) for r in c.runs) for c in cases)


def test_a_json_document_of_another_kind_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="not a tracegrade JSON report"):
        read_json("[]")
    doc = json.loads(write_json(_sample_report()))
    doc["cases"][1]["runs"][0]["turns"][0]["checks"][0]["outcome"] = "maybe"
    with pytest.raises(ValueError, match=r"cases\[1\]: ValueError: check outcome must be one of"):
        read_json(json.dumps(doc))


def test_an_informational_evaluator_grades_under_its_name_and_never_fails_the_case() -> None:
    from tracegrade.evaluators import MaxToolCalls, TrajectoryMatch
    from tracegrade.grading import grade, informational, informational_names
    from tracegrade.reporting.trace import expected_steps

    traj = run_captured([("search", {"q": "x"}), ("answer", {"t": 1})]).trajectory
    match = TrajectoryMatch(expected_trajectory=["fetch"])
    wrapped = informational(match)
    assert informational(wrapped) is wrapped and repr(wrapped) == f"informational({match!r})"
    evaluators = [wrapped, MaxToolCalls(5)]
    results = grade(traj, evaluators)
    assert [(r.name, r.outcome) for r in results] == [("TrajectoryMatch", "failed"), ("MaxToolCalls", "passed")]
    assert results[0] == grade(traj, [match])[0]  # graded exactly as the bare evaluator
    names = informational_names(evaluators, results)
    assert names == {"TrajectoryMatch"} and expected_steps(evaluators) == [
        {"tool": "fetch", "args": None, "optional": False}
    ]  # fmt: skip
    case = CaseRecord.from_results("t", results, informational=names)
    assert case.passed and [c.informational for c in case.runs[0].checks] == [True, False]
    assert case_lines(Report([case]))[1].startswith("  informational: TrajectoryMatch [failed]: ")
    assert not CaseRecord.from_results("t", results).passed
    with pytest.raises(TypeError, match=r"informational\(\) needs an evaluator"):
        informational("TrajectoryMatch")


def test_a_pytest_case_keeps_each_turns_trajectory_diff_redacted_for_the_html_report() -> None:
    import asyncio

    from tracegrade import AgentReply, Expect, Turn
    from tracegrade.pytest_plugin.report import transcript_case
    from tracegrade.pytest_plugin.session import EvalSession

    card = "4111-1111-1111-1111"

    async def agent(history: list[dict[str, object]]) -> AgentReply:
        return AgentReply("ok", [("pay", {"card": card, "amount": 5}), ("receipt", {})])

    expect = Expect(trajectory=[{"tool": "pay", "args": {"amount": 7}}, "confirm"])
    result = asyncio.run(EvalSession().run(agent, [Turn("hi"), Turn("pay", expect=expect)]))
    first, second = result.runs[0].turn_results
    assert first.expected is None and second.expected == [
        {"tool": "pay", "args": {"amount": 7}, "optional": False}, {"tool": "confirm", "args": None, "optional": False}
    ]  # fmt: skip
    case = transcript_case("t::x", result, traces=True, redact=["card"])
    turns = case.runs[0].turns
    assert turns[0].diff is None and turns[1].diff is not None
    assert [(r["mark"], r["observed"]) for r in turns[1].diff] == [
        ("args", "pay(card='[redacted]', amount=5)"), ("missing", None), ("extra", "receipt()")
    ]  # fmt: skip
    assert card not in json.dumps(case.to_dict())
    again = CaseRecord.from_dict(json.loads(json.dumps(case.to_dict())))  # as xdist workers ship it
    assert again.runs[0].turns[1].diff == turns[1].diff
    assert transcript_case("t::x", result).runs[0].turns[1].diff is None  # only the HTML report needs it


# --- A trace none of whose checks could run is "no checks" in every format (not a pass) ---------------------------

CONTENT_OFF = Path(__file__).resolve().parent.parent / "fixtures/frameworks/openai-agents--openinference--content-off.traces.json"


def _html_data(page: str) -> dict[str, object]:
    found = re.search(r'id="report-data">(.*?)</script>', page, re.S)
    assert found is not None
    data: dict[str, object] = json.loads(found.group(1))
    return data


def test_a_trace_whose_only_check_could_not_run_is_no_checks_in_every_format_under_skip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.yaml"  # the arguments are not recorded: the check is not evaluated
    spec.write_text("evaluators:\n  - ArgumentCorrectness: {tool_name: get_weather, expected_arguments: {city: Paris}}\n")
    grade = ["grade", str(CONTENT_OFF), "--spec", str(spec), "--not-evaluated", "skip"]
    line = "1 eval(s): 0 passed, 0 failed, 1 no checks; checks: 0 passed, 0 failed, 1 not evaluated (skipped), 0 errors"
    code, out = _cli(capsys, *grade)
    assert code == 0 and "NO CHECKS " in out and "PASS" not in out and line in out
    code, out = _cli(capsys, *grade, "--format", "json")
    [case] = json.loads(out)["cases"]
    assert code == 0 and case["verdict"] == "no checks" and json.loads(out)["summary"]["line"] == line
    assert case["runs"][0]["verdict"] == case["runs"][0]["turns"][0]["verdict"] == "no checks"
    code, out = _cli(capsys, *grade, "--format", "junit")
    props = {p.get("name"): p.get("value") for p in ET.fromstring(out).iter("property")}
    assert props["verdict"] == "no checks" and ET.fromstring(out).get("skipped") == "1"
    code, out = _cli(capsys, *grade, "--format", "markdown")
    assert f"{line}." in out and "| NO CHECKS |" in out and "**NO CHECKS**" in out
    assert "#### Run 1: no checks" in out and "##### Turn 1: no checks" in out and "passed" not in out.split("##")[-1]
    code, out = _cli(capsys, *grade, "--format", "html")
    data = _html_data(out)
    assert data["cases"][0]["verdict"] == "no checks" and data["summary"]["no_checks"] == 1  # type: ignore[index]
    assert "run.verdict" in out  # the page titles each run by its verdict
    # the default policy: a check that could not run fails its trace
    code, out = _cli(capsys, *grade[:-2])
    assert code == 1 and "FAIL " in out and "1 eval(s): 0 passed, 1 failed;" in out


def test_a_check_that_ran_decides_beside_skipped_ones_and_a_run_error_is_never_no_checks() -> None:
    ne, ok = CheckRecord("A", "not_evaluated", "no args"), CheckRecord("B", "passed")
    assert CaseRecord("c", True, [RunRecord(0, True, [TurnRecord(0, True, [ne, ok])])], 1.0, "skip").verdict == "passed"
    assert CaseRecord("c", True, [RunRecord(0, True, [TurnRecord(0, True, [ne])])], 1.0, "skip").verdict == "no checks"
    info = CheckRecord("A", "not_evaluated", "no args", informational=True)  # never fails, never ran
    unrun = EvalResult(False, "x", outcome="not_evaluated", name="A")
    assert CaseRecord.from_results("c", [unrun], informational={"A"}).verdict == "no checks"
    assert TurnRecord(0, True, [info]).verdict == "no checks"
    errored = RunRecord(0, True, [TurnRecord(0, True, [ne], error="agent raised")])
    assert errored.verdict == "passed" and CaseRecord("c", True, [errored], 1.0, "skip").verdict == "passed"


# --- Control characters in recorded text are written as escapes in the terminal lines and the markdown -------------


def test_pytests_summary_lines_and_the_markdown_write_control_characters_as_escapes() -> None:
    check = EvalResult(False, "called 'x\x1b[2J'\x07", name="Check\x1b[31m")
    case = CaseRecord.from_results("t::x\u202e", [check], tool_calls=["x\x1b[2J()"], user="hi\x1b[31m")
    lines, markdown = "\n".join(case_lines(Report([case]))), write_markdown(Report([case]))
    for text in (lines, markdown):
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
        assert "called 'x\\x1b[2J'\\x07" in text and "t::x\\u202e" in text
    assert "  run 1, turn 1: 'hi\\x1b[31m'" in lines and "Check\\x1b[31m [failed]" in lines
    assert "| Check\\\\x1b\\[31m | failed |" in markdown  # the report's own words: markdown-escaped


# --- The markdown report renders no markdown from recorded text (images, links, emphasis, HTML) ---------------------

MD_ATTACK = (
    "![tracker](https://evil.example/pixel.png) [click me](https://evil.example/phish) **BOLD** _it_ ~~gone~~ "
    "<img src=x> `tick`` a\\|b | $x$ # heading"
)


def test_markdown_from_a_tool_argument_stays_text_in_every_cell_of_the_markdown_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from markdown_it import MarkdownIt

    doc = json.loads((Path(__file__).resolve().parent.parent / "fixtures/dialects/genai.json").read_text())
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for a in span.get("attributes", []):
                    if a["key"] == "gen_ai.tool.call.arguments" and '"id"' in a["value"]["stringValue"]:
                        a["value"]["stringValue"] = json.dumps({"id": 1234, "note": MD_ATTACK})
    (tmp_path / "md.json").write_text(json.dumps(doc))
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - ArgumentCorrectness: {tool_name: get_order, expected_arguments: {id: 1}}\n")
    code, out = _cli(capsys, "grade", str(tmp_path / "md.json"), "--spec", str(spec), "--format", "markdown")
    assert code == 1
    page = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(out)
    for element in ("<img", "<a ", "<em>", "<del>"):
        assert element not in page, element
    assert page.count("<h1>") == 1  # the report's title
    assert [line for line in page.splitlines() if "<strong>" in line] == [
        "<p><strong>FAILED</strong>: score 0.00 (0/1 runs passed, threshold 1.00); "
        "checks: 0 passed, 1 failed, 0 not evaluated, 0 errors.</p>"
    ]  # only the report's own emphasis
    shown = repr(MD_ATTACK).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    row = page[page.index("<td>ArgumentCorrectness</td>") :].split("</tr>")[0]
    assert row.count("<td>") == 4 and f"'note': {shown}" in row  # one cell: the pipes did not split it
    assert "get_order(id=1234, note=" in page and "<code>" in page.split("Tool calls (spans)")[1].split("\n")[0]


# --- The grade table shows informational results (with their reasons) without -v ------------------------------------


def test_the_table_shows_informational_results_that_did_not_pass_under_a_passing_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - MaxToolCalls: 1\n  - MaxModelRequests: 10\n")
    genai = Path(__file__).resolve().parent.parent / "fixtures/dialects/genai.json"
    grade = ["grade", str(genai), "--spec", str(spec), "--informational", "MaxToolCalls"]
    code, out = _cli(capsys, *grade)
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("PASS ") and lines[0].endswith(" (2 checks)")
    assert lines[1] == "  informational: MaxToolCalls [failed]: 3 tool call(s), budget=1" and len(lines) == 3
    code, out = _cli(capsys, *grade, "-v")
    rows = [[cell.strip() for cell in line.split("│")[1:3]] for line in out.splitlines() if line.startswith("│")]
    assert code == 0 and rows == [["MaxToolCalls (informational)", "failed"], ["MaxModelRequests", "passed"]]
    spec.write_text("evaluators:\n  - MaxToolCalls: 5\n")  # an informational check that passed: one line
    code, out = _cli(capsys, *grade)
    assert code == 0 and len(out.splitlines()) == 2
