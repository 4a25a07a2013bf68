"""The `tracegrade grade` and `tracegrade show` commands on written trace files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _agents import run_captured
from tracegrade import write_otlp_json
from tracegrade.cli import main


@pytest.fixture(scope="module")
def cap():  # type: ignore[no-untyped-def]
    return run_captured([("search", {"q": "x"}), ("answer", {"text": "hi"})], fail=[0])


def test_grade_command_exit_codes_and_formats(cap, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    trace = write_otlp_json(cap, tmp_path / "traces" / "run.json")
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text("evaluators:\n  - ToolCorrectness: {expected_tools: [search, answer]}\n")
    bad.write_text("evaluators:\n  - MaxToolCalls: 1\n")
    assert main(["grade", str(trace.parent), "--spec", str(good)]) == 0
    assert "1 eval(s): 1 passed, 0 failed" in capsys.readouterr().out
    assert main(["grade", str(trace), "--spec", str(bad), "--format", "json"]) == 1
    [case] = json.loads(capsys.readouterr().out)["cases"]
    assert case["passed"] is False and case["runs"][0]["turns"][0]["checks"][0]["reason"] == "3 tool call(s), budget=1"
    assert main(["grade", str(trace), "--spec", str(bad), "--format", "junit"]) == 1
    assert 'failures="1"' in capsys.readouterr().out
    assert main(["grade", str(trace), "--spec", str(bad), "--format", "markdown"]) == 1
    assert "| MaxToolCalls | failed |" in capsys.readouterr().out
    typo = tmp_path / "typo.yaml"
    typo.write_text("evaluators:\n  - ToolCorectness: {expected_tools: [a]}\n")
    assert main(["grade", str(trace), "--spec", str(typo)]) == 2
    assert "did you mean 'ToolCorrectness'" in capsys.readouterr().err


def test_show_command_renders_tree_and_trajectory(cap, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    trace = write_otlp_json(cap, tmp_path / "run.json")
    assert main(["show", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "execute_tool search" in out and 'tool=search args={"q":"x"}' in out
    assert "answer(text='hi')" in out and "(failed: retry requested)" in out
    root = Path(__file__).resolve().parent.parent
    assert (
        main(["show", str(root / "fixtures/dialects/openinference.json")]) == 0
    )  # arguments as the dialect reads them
    assert 'search (0.2 ms) [error]  tool=search args={"q":"order 1234"}' in capsys.readouterr().out
    assert main(["show", str(tmp_path / "missing.json")]) == 2


def test_readme_commands_succeed_on_the_shipped_fixtures(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    section = readme[readme.index("## Recorded telemetry") :]
    commands = [line.split("#")[0].split() for line in section.splitlines() if line.startswith("tracegrade ")]
    assert [c[:2] for c in commands] == [["tracegrade", "grade"]] * 2 + [["tracegrade", "show"]] * 2
    monkeypatch.chdir(root)
    for command in commands:
        if "-o" in command:  # the report goes to a scratch directory, not into the checkout
            at = command.index("-o") + 1
            command[at] = str(tmp_path / command[at])
        assert main(command[1:]) == 0, command
    page = (tmp_path / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "5b8efff798038103d269b633813fc60c" in page
    out = capsys.readouterr().out
    assert "4 eval(s): 4 passed, 0 failed; checks: 24 passed, 0 failed, 0 not evaluated, 0 errors" in out
    for dialect in ("genai", "openinference", "openllmetry", "pydantic_ai"):
        assert f"PASS fixtures/dialects/{dialect}.json: 5b8efff798038103d269b633813fc60c" in out
    assert "search(q='order 1234') (failed)" in out and "get_order(id=1234)" in out
    assert "not recorded (tool calls)" in out  # show --explain on a content-off trace


MARKUP = "[urgent] refund [bold]now[/bold] [/x]"


def test_recorded_text_is_printed_literally_not_as_markup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # no wrapping inside the asserted lines
    cap = run_captured([("refund", {"note": MARKUP})], name="[red]agent[/red]", reply=MARKUP)
    trace = write_otlp_json(cap, tmp_path / "[b]run[/b].json")
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - ToolCorrectness: {expected_tools: [refund, '[/nope]']}\n")
    assert main(["show", str(trace)]) == 0
    out = capsys.readouterr().out
    assert f"refund(note='{MARKUP}')" in out and '"note":"[urgent] refund [bold]now[/bold] [/x]"' in out
    assert "[red]agent[/red]" in out and "[b]run[/b].json" in out
    assert main(["grade", str(trace), "--spec", str(spec), "-v"]) == 1  # fails on the missing tool, not on markup
    out = capsys.readouterr().out
    assert "[/nope]" in out and "[b]run[/b].json" in out and f"refund(note='{MARKUP}')" in out


def test_show_explain_says_what_each_span_was_read_as(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    corpus = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"
    assert main(["show", "--explain", str(corpus / "autogen--openinference--content-on.traces.json")]) == 0
    out = capsys.readouterr().out
    assert "support.get_weather (" in out and "<- openinference: tool call 'get_weather'" in out
    assert "<- genai: tool call 'get_weather', the same call as the enclosing tool span (merged into it)" in out
    assert "<- genai: recognized, not a step" in out  # create_agent
    assert main(["show", "--explain", str(corpus / "openai--otel-genai--content-off.traces.json")]) == 0
    out = capsys.readouterr().out
    assert "not recorded (tool calls): model request 'chat gpt-4o' (opentelemetry.instrumentation.openai_v2)" in out
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true" in out


def test_version_and_every_option_of_every_command_has_help_text(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from tracegrade._version import __version__
    from tracegrade.cli import build_parser, main

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"tracegrade {__version__}"
    parser = build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    undocumented = [
        f"{name} {'/'.join(action.option_strings) or action.dest}"
        for name, command in sub.choices.items()
        for action in command._actions
        if not isinstance(action, argparse._HelpAction) and not action.help
    ]
    assert not undocumented, undocumented


def test_an_unknown_dialect_is_refused_with_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    from tracegrade.cli import main

    with pytest.raises(SystemExit) as done:
        main(["show", "fixtures/dialects", "--dialect", "genia"])
    err = capsys.readouterr().err
    assert done.value.code == 2 and "invalid choice: 'genia'" in err and "'genai'" in err


def test_warnings_print_as_one_line_without_the_source_that_raised_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    shutil.copy(Path(__file__).parent.parent / "fixtures" / "dialects" / "genai.json", tmp_path)
    (tmp_path / "notes.txt").write_text("not a trace")
    assert main(["show", str(tmp_path)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [f"tracegrade show: warning: {tmp_path}: ignored 1 file(s) without a trace file suffix (notes.txt)"]


@pytest.mark.parametrize("where", ["environment", "pyproject"])
def test_grade_gives_judges_without_a_model_the_projects_judge_model(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = Path(__file__).resolve().parent.parent
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - JudgeEvaluator: {rubric: The agent looked the order up.}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENT_EVAL_MODEL", raising=False)
    monkeypatch.delenv("AGENT_EVAL_JUDGE_MODEL", raising=False)
    trace = str(root / "fixtures" / "dialects" / "pydantic_ai.json")  # a run whose spans recorded its reply
    main(["grade", trace, "--spec", str(spec), "--format", "json"])
    assert "has no model" in capsys.readouterr().out  # nothing configured: the judge says so
    if where == "environment":
        monkeypatch.setenv("AGENT_EVAL_MODEL", "test")  # pydantic-ai's TestModel: no network
    else:
        (tmp_path / "pyproject.toml").write_text('[tool.agent_eval]\njudge_model = "test"\n')
    main(["grade", trace, "--spec", str(spec), "--format", "json"])
    [case] = json.loads(capsys.readouterr().out)["cases"]
    [check] = case["runs"][0]["turns"][0]["checks"]
    assert check["outcome"] in ("passed", "failed") and "has no model" not in check["reason"], check


# --- Control characters in recorded names are printed as escapes, never sent to the terminal ------------------------

ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[31m\u202e"
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _renamed(tmp_path: Path, suffix: str) -> Path:
    """genai.json with `suffix` at the end of every span name and of the tool and agent names."""
    doc = json.loads((FIXTURES / "dialects" / "genai.json").read_text())
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                span["name"] += suffix
                for a in span.get("attributes", []):
                    if a["key"] in ("gen_ai.tool.name", "gen_ai.agent.name"):
                        a["value"]["stringValue"] += suffix
    path = tmp_path / "escapes.json"
    path.write_text(json.dumps(doc))
    return path


def test_control_characters_in_span_tool_and_agent_names_are_printed_as_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    trace = _renamed(tmp_path, ESCAPES)
    shown = "\\x1b]0;pwned\\x07\\x1b[2J\\x1b[31m\\u202e"
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - ToolCorrectness: {expected_tools: [search]}\n")
    for command in (["show", str(trace)], ["show", "--explain", str(trace)], ["grade", str(trace), "--spec", str(spec)],
                    ["grade", str(trace), "--spec", str(spec), "--format", "markdown"]):  # fmt: skip
        main(command)
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out, command
        assert f"invoke_agent support{shown}" in out or f"search{shown}" in out, command
    main(["show", str(trace)])
    out = capsys.readouterr().out
    assert f"invoke_agent support{shown} (" in out and f"  1. search{shown}(q='order 1234') (failed) support{shown}" in out
    main(["grade", str(trace), "--spec", str(spec)])
    assert f"  3. get_order{shown}(id=1234) support{shown}" in capsys.readouterr().out


def test_a_line_break_in_a_span_name_stays_on_the_spans_line(tmp_path: Path) -> None:
    from tracegrade.ingest import read_tree

    doc = json.loads((FIXTURES / "dialects" / "genai.json").read_text())
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["name"] = "fake\n  line\r\x1b[2K"
    (tmp_path / "t.json").write_text(json.dumps(doc))
    tree = read_tree(tmp_path / "t.json")
    outline = tree.render(attributes=lambda node: "\n  tail")
    assert "fake\\n  line\\r\\x1b[2K (" in outline and "\\n  tail" in outline
    assert len(outline.splitlines()) == len(list(tree))


# --- Headings keep the file and trace id at any width (a rule clipped them at 80 columns off a terminal) ------------


def test_failing_trace_headings_and_show_headings_name_the_trace_at_80_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")  # what a CI log gets
    trace = FIXTURES / "frameworks" / "openai--otel-genai--content-off.traces.json"
    spec = tmp_path / "zero.yaml"
    spec.write_text("evaluators:\n  - MaxToolCalls: 0\n")
    assert main(["grade", str(trace), "--spec", str(spec)]) == 1
    out = capsys.readouterr().out
    failing = [line for line in out.splitlines() if line.startswith("── FAIL ")]
    ids = {line.split(": ")[1].split()[0] for line in failing}
    assert len(failing) == 3 and len(ids) == 3 and all(f"FAIL {trace}: " in line for line in failing), failing
    assert "…" not in out  # nothing cut: the reasons wrap
    assert main(["show", str(trace)]) == 0
    headings = [line for line in capsys.readouterr().out.splitlines() if line.startswith("── ")]
    assert len(headings) == 4 and all(line.startswith(f"── {trace}: ") and line.endswith("'chat gpt-4o'") for line in headings)


def test_a_long_reason_wraps_without_losing_the_setting_it_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    trace = FIXTURES / "frameworks" / "openai-agents--openinference--content-off.traces.json"
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - ArgumentCorrectness: {tool_name: get_weather, expected_arguments: {city: Paris}}\n")
    assert main(["grade", str(trace), "--spec", str(spec)]) == 1
    out = capsys.readouterr().out
    cells = "".join(line.split("│")[4].strip() for line in out.splitlines() if line.count("│") == 5)
    assert "OPENINFERENCE_HIDE_INPUTS=false" in cells and "…" not in out


# --- --informational names an evaluator of the spec; a typo is an error, as in the spec -----------------------------


def test_an_informational_name_no_evaluator_has_is_an_error_with_the_closest_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - MaxToolCalls: 1\n  - ToolCorrectness: {expected_tools: [search, get_order]}\n")
    grade = ["grade", str(FIXTURES / "dialects" / "genai.json"), "--spec", str(spec)]
    assert main([*grade, "--informational", "MaxToolCall"]) == 2
    err = capsys.readouterr().err
    assert err == (f"tracegrade grade: error: --informational 'MaxToolCall': no evaluator of {spec} has that name "
                   "(did you mean 'MaxToolCalls'?)\n")  # fmt: skip
    assert main([*grade, "--informational", "Budget"]) == 2
    assert "its evaluators: MaxToolCalls, ToolCorrectness" in capsys.readouterr().err
    assert main([*grade, "--format", "json"]) == 1  # 3 calls (one failed attempt), budget 1
    capsys.readouterr()
    assert main([*grade, "--informational", "MaxToolCalls", "--format", "json"]) == 0
    [case] = json.loads(capsys.readouterr().out)["cases"]
    checks = case["runs"][0]["turns"][0]["checks"]
    assert [(c["name"], c["outcome"], c.get("informational", False)) for c in checks] == [
        ("MaxToolCalls", "failed", True), ("ToolCorrectness", "passed", False)
    ]  # fmt: skip


# --- A long recorded value is clipped the same way everywhere it is printed, saying so ------------------------------


def test_a_20000_character_argument_is_clipped_with_a_note_in_the_table_show_markdown_and_pytest_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracegrade._text import MAX_TEXT
    from tracegrade.reporting import CaseRecord, Report
    from tracegrade.reporting.terminal import case_lines
    from tracegrade.results import EvalResult

    monkeypatch.setenv("COLUMNS", "100")
    long = "A" * 20_000
    trace = write_otlp_json(run_captured([("note", {"text": long})]), tmp_path / "long.json")
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - MaxToolCalls: 0\n")
    grade = ["grade", str(trace), "--spec", str(spec)]
    described = f"note(text={long!r})"  # the call as the table and the markdown describe it
    for command, left in ((grade, len(described) - MAX_TEXT), ([*grade, "--format", "markdown"], len(described) - MAX_TEXT),
                          (["show", str(trace)], len(json.dumps({"text": long}, separators=(",", ":"))) - MAX_TEXT)):  # fmt: skip
        main(command)
        out = capsys.readouterr().out
        joined = "".join(line.rstrip() for line in out.splitlines())  # the table wraps long lines
        assert len(out) < 3_000 and f"AAAA… (clipped: {left:,} more characters)" in joined, command
    case = CaseRecord.from_results("t", [EvalResult(False, "saw " + long, name="C")], tool_calls=[f"note(text={long!r})"])
    lines = case_lines(Report([case]))
    assert all(len(line) < MAX_TEXT + 100 for line in lines)
    assert lines[2] == f"    C [failed]: saw {'A' * (MAX_TEXT - 4)}… (clipped: {20_000 - MAX_TEXT + 4:,} more characters)"


# --- Logs files alone: the error says they hold log records only and names the trace file to add --------------------


def test_a_logs_only_input_is_an_error_naming_the_trace_file_it_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    logs = FIXTURES / "frameworks" / "ag2--openlit--content-on.logs.json"
    spec = str(FIXTURES / "spec.yaml")
    assert main(["grade", str(logs), "--spec", spec]) == 2
    assert capsys.readouterr().err == (
        f"tracegrade grade: error: {logs} holds OpenTelemetry log records only, no spans: log records are read with "
        f"the spans they belong to, so pass the trace file as well (e.g. {logs.with_name(logs.name.replace('.logs.', '.traces.'))})\n"
    )
    shutil.copy(logs, tmp_path)
    assert main(["show", str(tmp_path)]) == 2  # a directory of logs files, no trace file beside them
    err = capsys.readouterr().err
    assert err.startswith(f"tracegrade show: error: {tmp_path / logs.name} holds OpenTelemetry log records only, no spans")
    assert err.endswith("so pass the trace file as well\n")
    assert main(["grade", str(logs), str(logs.with_name(logs.name.replace(".logs.", ".traces."))), "--spec", spec]) in (0, 1)


# --- A trace whose spans hold no step: grading and show --explain give one reason, naming the instrumentation -----

NO_STEP_TRACES = [
    # (file, trace id, the instrumentation named, what the reason says is recorded instead)
    ("openai--logfire--content-on--stream.traces.json", "01a2428da45f1c8e1da9e7b0b5d33e35",
     "Logfire (logfire.openai)", "opened a streamed request, and Logfire logs its response"),
    ("ag2--openlit--content-on.traces.json", "be56d133413223aed0b904b797af6c47",
     "an OpenTelemetry GenAI instrumentation (openlit.instrumentation.ag2)", "records creating agent 'unknown_agent'"),
    ("langgraph--openllmetry--content-on.traces.json", "99602f0a57050df8fe62c150fde7fdbd",
     "an OpenTelemetry GenAI instrumentation (opentelemetry.instrumentation.langchain)",
     "records creating agent 'support'"),
    ("ag2--openlit--content-on.traces.json", "8e3f935da0909eb6ca650763c113ba12",  # recognized by no dialect
     "(openlit.instrumentation.ag2) but none is an agent, model or tool span", "may be in another trace"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "trace_id", "who", "what"), NO_STEP_TRACES)
def test_grading_and_show_explain_give_one_reason_naming_the_instrumentation_of_spans_holding_no_step(
    name: str, trace_id: str, who: str, what: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("COLUMNS", "4000")
    path = str(FIXTURES / "frameworks" / name)
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - TrajectoryMatch: {expected_trajectory: [get_weather]}\n  - MaxToolCalls: 4\n"
                    "  - MaxModelRequests: 4\n  - ToolCorrectness: {expected_tools: [get_weather]}\n")  # fmt: skip
    main(["grade", path, "--spec", str(spec), "--format", "json"])
    [case] = [c for c in json.loads(capsys.readouterr().out)["cases"] if trace_id in c["id"]]
    checks = case["runs"][0]["turns"][0]["checks"]
    assert {c["outcome"] for c in checks} == {"not_evaluated"} and len({c["reason"] for c in checks}) == 1
    reason = checks[0]["reason"]
    assert who in reason and what in reason, reason
    assert "instrument_pydantic_ai" not in reason and "Agent.instrument_all" not in reason  # not a Pydantic AI trace
    assert main(["show", "--explain", path]) == 0
    shown = capsys.readouterr().out.split(f": {trace_id} ", 1)[1].split("\n── ", 1)[0].splitlines()
    assert f"  not recorded (model requests, tool calls): {reason}" in shown


def test_spans_of_no_known_instrumentation_keep_the_pydantic_ai_advice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("my-app").start_as_current_span("handle request"):
        pass
    provider.shutdown()
    path = write_otlp_json(list(exporter.get_finished_spans()), tmp_path / "app.json")
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - MaxToolCalls: 4\n")
    main(["grade", str(path), "--spec", str(spec), "--format", "json"])
    [check] = json.loads(capsys.readouterr().out)["cases"][0]["runs"][0]["turns"][0]["checks"]
    assert check["reason"] == (
        "1 span was recorded (my-app) but none is an agent, model or tool span of a known instrumentation; no agent "
        "spans were recorded: instrument the agent (Agent.instrument_all(), `agent.instrument = True`, or "
        "logfire.instrument_pydantic_ai()) and run it inside `tracegrade.capture()`"
    )
