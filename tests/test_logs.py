"""OTel log records: read from OTLP/JSON logs files, attached to the spans they name, and read by
the reading layer (the GenAI instrumentations put message content in events, not on spans)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from tracegrade import grade, load_traces
from tracegrade.evaluators import ArgumentCorrectness, ToolCorrectness
from tracegrade.ingest import TraceFormatError, read_logs
from tracegrade.trajectory import Trajectory

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"
RUN = "openai--otel-genai--content-on--stream"  # only the OpenAI client instrumented: calls exist only in events


def _files(tmp_path: Path) -> tuple[Path, Path]:
    traces, logs = tmp_path / "run.traces.json", tmp_path / "run.logs.json"
    shutil.copy(CORPUS / f"{RUN}.traces.json", traces)
    shutil.copy(CORPUS / f"{RUN}.logs.json", logs)
    return traces, logs


def test_read_logs_decodes_every_record_with_its_ids(tmp_path: Path) -> None:
    _, logs = _files(tmp_path)
    records = read_logs(logs)
    assert len(records) == 27 and all(r.span_id and r.trace_id for r in records)
    choice = next(r for r in records if r.event_name == "gen_ai.choice")
    assert choice.body["message"]["tool_calls"][0]["function"]["name"] == "get_weather"


def test_load_traces_attaches_the_records_of_a_logs_file_among_its_inputs(tmp_path: Path) -> None:
    traces, logs = _files(tmp_path)
    for source in ([traces, logs], tmp_path):  # a list, or a directory holding both
        trees = load_traces(source)
        assert len(trees) == 4  # a hand-written loop: one trace per model request
        assert all(n.logs for t in trees for n in t if n.name.startswith("chat"))
    calls = [c for t in load_traces([traces, logs]) for c in Trajectory.from_tree(t).tool_calls]
    assert [c.name for c in calls] == ["get_weather", "get_order", "search_kb", "search_kb"]
    assert calls[1].args == {"order_id": 1234} and calls[1].executed is None


def test_without_the_logs_the_same_traces_say_the_calls_were_not_recorded(tmp_path: Path) -> None:
    traces, logs = _files(tmp_path)
    [first, *_] = load_traces(traces)
    [result] = grade(first, [ToolCorrectness(expected_tools=["get_weather", "get_order"])])
    assert result.outcome == "not_evaluated" and "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in result.reasoning
    [with_logs, *_] = load_traces([traces, logs])
    ok, args = grade(with_logs, [ToolCorrectness(expected_tools=["get_weather", "get_order"]),
                                 ArgumentCorrectness("get_weather", {"city": "Paris"})])  # fmt: skip
    assert ok.passed and args.passed, (ok.reasoning, args.reasoning)


def test_records_that_name_no_span_of_the_tree_are_returned_not_dropped(tmp_path: Path) -> None:
    traces, logs = _files(tmp_path)
    [tree, *_] = load_traces(traces)
    records = read_logs(logs)
    unattached = tree.attach_logs(records)
    attached = sum(len(n.logs) for n in tree)
    assert attached > 0 and attached + len(unattached) == len(records)
    assert [r.time_ns for n in tree for r in n.logs] == sorted(r.time_ns for n in tree for r in n.logs)


def test_logs_files_may_be_gzip_or_json_lines(tmp_path: Path) -> None:
    _, logs = _files(tmp_path)
    doc = json.loads(logs.read_text())
    lines = tmp_path / "run.logs.jsonl"
    lines.write_text("\n".join(json.dumps({"resourceLogs": [rl]}) for rl in doc["resourceLogs"]) + "\n")
    packed = tmp_path / "run.logs.json.gz"
    packed.write_bytes(gzip.compress(logs.read_bytes()))
    assert len(read_logs(lines)) == len(read_logs(packed)) == 27


def test_a_bad_logs_file_names_the_file_and_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.logs.jsonl"
    bad.write_text('{"resourceLogs": []}\n{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"traceId": "zz"}]}]}]}\n')
    with pytest.raises(TraceFormatError) as e:
        read_logs(bad)
    assert e.value.path == str(bad) and e.value.line == 2 and "traceId" in str(e.value)


def test_the_cli_grades_traces_with_the_logs_given_beside_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tracegrade.cli import main

    _files(tmp_path)
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - MaxToolCalls: 2\n")
    assert main(["grade", str(tmp_path), "--spec", str(spec), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc) == 4 and [t["results"][0]["outcome"] for t in doc] == ["passed"] * 4
    assert doc[0]["tool_calls"] == ["get_weather(city='Paris')", "get_order(order_id=1234)"]
