"""OTLP/JSON write → read round trip, grading files, and the `grade` / `show` commands."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from _agents import run_captured
from tracegrade import grade
from tracegrade.cli import main
from tracegrade.evaluators import ArgumentCorrectness, MaxToolCalls, ToolCorrectness
from tracegrade.ingest import TraceFormatError, load_traces, read_spans, write_otlp_json


@pytest.fixture(scope="module")
def cap():  # type: ignore[no-untyped-def]
    return run_captured([("search", {"q": "x"}), ("answer", {"text": "hi"})], fail=[0])


def test_round_trip_is_exact(cap, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = write_otlp_json(cap, tmp_path / "run.json")
    original = sorted((n.span for n in cap.tree), key=lambda s: s.span_id)
    back = sorted(read_spans(path), key=lambda s: s.span_id)
    assert back == original


@pytest.mark.parametrize("lines", [False, True])
def test_files_grade_like_the_live_capture(cap, tmp_path: Path, lines: bool) -> None:  # type: ignore[no-untyped-def]
    path = write_otlp_json(cap, tmp_path / "run.jsonl", lines=lines)
    evs = [ToolCorrectness(["search", "answer"]), ArgumentCorrectness("search", {"q": "x"}), MaxToolCalls(2)]
    live = [(r.outcome, r.reasoning) for r in grade(cap, evs)]
    assert [(r.outcome, r.reasoning) for r in grade(path, evs)] == live
    [tree] = load_traces(path)
    assert [(r.outcome, r.reasoning) for r in grade(tree, evs)] == live


def test_gzip_is_read(cap, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    raw = write_otlp_json(cap, tmp_path / "run.json").read_bytes()
    gz = tmp_path / "run.json.gz"
    gz.write_bytes(gzip.compress(raw))
    assert len(list(read_spans(gz))) == len(cap.spans)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"resourceSpans": [', "bad.json:1: column 20: invalid JSON"),
        ('{"foo": 1}', "not OTLP/JSON traces"),
        (
            '{"resourceSpans": [{"scopeSpans": [{"spans": 3}]}]}',
            "resourceSpans[0].scopeSpans[0].spans: expected a list",
        ),
        ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x"}]}]}]}', "missing trace or span id"),
        (
            '{{"resourceSpans": [{{"scopeSpans": [{{"spans": [{{"traceId": "{}", "spanId": "{}", "startTimeUnixNano": "x"}}]}}]}}]}}'.format(
                "a" * 32, "b" * 16
            ),
            "startTimeUnixNano: expected an integer",
        ),
    ],  # fmt: skip
)
def test_bad_input_names_file_and_location(tmp_path: Path, content: str, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(TraceFormatError) as e:
        list(read_spans(bad))
    assert message in str(e.value) and "bad.json" in str(e.value)


def test_duplicate_span_ids_are_an_error(cap, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    doc = json.loads(write_otlp_json(cap, tmp_path / "a.json").read_text())
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans.append(dict(spans[0]))
    (tmp_path / "a.json").write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError, match="duplicate span id"):
        list(read_spans(tmp_path / "a.json"))


def test_grade_command_exit_codes_and_formats(cap, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    trace = write_otlp_json(cap, tmp_path / "traces" / "run.json")
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text("evaluators:\n  - ToolCorrectness: {expected_tools: [search, answer]}\n")
    bad.write_text("evaluators:\n  - MaxToolCalls: 1\n")
    assert main(["grade", str(trace.parent), "--spec", str(good)]) == 0
    assert "1 trace(s): 1 passed, 0 failed" in capsys.readouterr().out
    assert main(["grade", str(trace), "--spec", str(bad), "--format", "json"]) == 1
    [doc] = json.loads(capsys.readouterr().out)
    assert doc["passed"] is False and doc["results"][0]["reason"] == "3 tool call(s), budget=1"
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
    assert main(["show", str(tmp_path / "missing.json")]) == 2
