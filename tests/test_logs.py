"""OTel log records: read from OTLP/JSON logs files, attached to the spans they name, and read by
the reading layer (the GenAI instrumentations put message content in events, not on spans)."""

from __future__ import annotations

import gzip
import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

from tracegrade import grade, load_traces
from tracegrade.dialects import extract
from tracegrade.errors import TraceFormatError
from tracegrade.evaluators import ArgumentCorrectness, ToolCorrectness
from tracegrade.ingest import iter_traces, read_logs, read_tree

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
    calls = [c for t in load_traces([traces, logs]) for c in extract(t).tool_calls]
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
    turns = [case["runs"][0]["turns"][0] for case in json.loads(capsys.readouterr().out)["cases"]]
    assert len(turns) == 4 and [t["checks"][0]["outcome"] for t in turns] == ["passed"] * 4
    assert turns[0]["tool_calls"] == ["get_weather(city='Paris')", "get_order(order_id=1234)"]


# --- protobuf logs files, written by the SDK's own OTLP encoder from real SDK records ---------------


def _replay(tmp_path: Path) -> tuple[Path, Path]:
    """The corpus run emitted again through a real `TracerProvider` and `LoggerProvider` (its chat
    spans, and its events inside them), written with the OTLP exporter's protobuf encoders."""
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    records = read_logs(CORPUS / f"{RUN}.logs.json")
    for tree in load_traces(CORPUS / f"{RUN}.traces.json"):
        [chat] = list(tree)
        logger = logger_provider.get_logger(chat.scope_name)
        tracer = tracer_provider.get_tracer(chat.scope_name)
        with tracer.start_as_current_span(chat.name, attributes=dict(chat.attributes)):
            for r in records:
                if r.span_id == chat.span_id:
                    logger.emit(event_name=r.event_name, body=r.body, attributes=dict(r.attributes))
    traces_pb, logs_pb = tmp_path / "run.traces.pb", tmp_path / "run.logs.binpb"
    traces_pb.write_bytes(encode_spans(spans.get_finished_spans()).SerializeToString())
    logs_pb.write_bytes(encode_logs(logs.get_finished_logs()).SerializeToString())
    return traces_pb, logs_pb


def _logs_message(path: Path) -> Any:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    return ExportLogsServiceRequest.FromString(path.read_bytes())


def test_protobuf_logs_decode_to_the_records_that_were_emitted(tmp_path: Path) -> None:
    _, logs_pb = _replay(tmp_path)
    emitted = read_logs(CORPUS / f"{RUN}.logs.json")
    decoded = read_logs(logs_pb)
    assert [(r.event_name, r.body, dict(r.attributes)) for r in decoded] == [
        (r.event_name, r.body, dict(r.attributes)) for r in emitted
    ]
    assert all(r.trace_id and r.span_id and r.time_ns for r in decoded)
    assert {r.scope_name for r in decoded} == {"opentelemetry.instrumentation.openai_v2"}


def test_load_traces_attaches_protobuf_logs_given_beside_the_traces_or_in_their_directory(tmp_path: Path) -> None:
    traces_pb, logs_pb = _replay(tmp_path)
    for source in ([traces_pb, logs_pb], tmp_path):
        trees = load_traces(source)
        assert len(trees) == 4 and all(n.logs for t in trees for n in t)
        calls = [c for t in trees for c in extract(t).tool_calls]
        assert [c.name for c in calls] == ["get_weather", "get_order", "search_kb", "search_kb"]
        assert calls[1].args == {"order_id": 1234}
    [first, *_] = load_traces([traces_pb, logs_pb])
    ok, args = grade(first, [ToolCorrectness(expected_tools=["get_weather", "get_order"]),
                             ArgumentCorrectness("get_order", {"order_id": 1234})])  # fmt: skip
    assert ok.passed and args.passed, (ok.reasoning, args.reasoning)


def test_protobuf_logs_may_be_gzip_or_a_length_prefixed_stream(tmp_path: Path) -> None:
    _, logs_pb = _replay(tmp_path)
    msg = _logs_message(logs_pb)
    stream = tmp_path / "stream.logs.pb"  # the collector file exporter's framing, one message per resource
    with stream.open("wb") as f:
        for rl in msg.resource_logs:
            part = type(msg)(resource_logs=[rl]).SerializeToString()
            f.write(len(part).to_bytes(4, "big") + part)
    packed = tmp_path / "run.logs.pb.gz"
    packed.write_bytes(gzip.compress(logs_pb.read_bytes()))
    expected = read_logs(logs_pb)
    assert read_logs(stream) == read_logs(packed) == expected
    traces_pb = tmp_path / "run.traces.pb"
    names = [c.name for t in load_traces([traces_pb, packed]) for c in extract(t).tool_calls]
    assert names == ["get_weather", "get_order", "search_kb", "search_kb"]


def test_a_bad_protobuf_logs_record_names_the_file_and_the_field(tmp_path: Path) -> None:
    _, logs_pb = _replay(tmp_path)
    msg = _logs_message(logs_pb)
    msg.resource_logs[0].scope_logs[0].log_records[2].span_id = b"\x01\x02\x03"
    bad = tmp_path / "bad.logs.pb"
    bad.write_bytes(msg.SerializeToString())
    with pytest.raises(TraceFormatError) as e:
        read_logs(bad)
    assert e.value.path == str(bad)
    assert e.value.location == "resource_logs[0].scope_logs[0].log_records[2].span_id"
    assert "8-byte id" in e.value.problem
    with pytest.raises(TraceFormatError) as e:  # the same through load_traces
        load_traces([tmp_path / "run.traces.pb", bad])
    assert e.value.path == str(bad) and "log_records[2]" in str(e.value)


def test_a_truncated_protobuf_logs_stream_names_the_message(tmp_path: Path) -> None:
    _, logs_pb = _replay(tmp_path)
    body = logs_pb.read_bytes()
    cut = tmp_path / "cut.logs.pb"
    cut.write_bytes(len(body).to_bytes(4, "big") + body + (len(body) + 10).to_bytes(4, "big") + body)
    with pytest.raises(TraceFormatError) as e:
        read_logs(cut)
    assert e.value.path == str(cut) and e.value.location == "message 1" and "truncated" in e.value.problem


def test_protobuf_traces_and_logs_are_told_apart_and_never_read_as_each_other(tmp_path: Path) -> None:
    from tracegrade.ingest import read_spans
    from tracegrade.ingest._logs import is_logs_file
    from tracegrade.ingest._protobuf import signal_of
    from tracegrade.ingest._read import read_batches

    traces_pb, logs_pb = _replay(tmp_path)
    assert signal_of(traces_pb.read_bytes()) == "traces" and signal_of(logs_pb.read_bytes()) == "logs"
    assert signal_of(logs_pb.read_bytes()[:400]) == "logs"  # the head of a message is enough
    assert signal_of(b"") is None
    assert is_logs_file(logs_pb) and not is_logs_file(traces_pb)
    assert list(read_spans(logs_pb)) == []  # a logs file among the inputs holds no spans
    with pytest.raises(TraceFormatError, match="holds OTLP logs, not traces"):  # the trace reader itself
        list(read_batches(logs_pb, 1 << 20))
    with pytest.raises(TraceFormatError, match="holds OTLP traces, not logs"):
        read_logs(traces_pb)


def test_damaged_protobuf_logs_files_raise_trace_format_errors_only(tmp_path: Path) -> None:
    """Cut and bit-flipped copies of a real logs message: records or a `TraceFormatError`, nothing else."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from tracegrade.ingest._protobuf import signal_of

    _, logs_pb = _replay(tmp_path)
    good = logs_pb.read_bytes()
    target = tmp_path / "damaged.logs.pb"

    flip = st.tuples(st.integers(0, len(good) - 1), st.integers(0, 255))

    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.integers(1, len(good)), st.lists(flip, max_size=4))
    def check(cut: int, flips: list[tuple[int, int]]) -> None:
        data = bytearray(good[:cut])
        for at, byte in flips:
            if at < len(data):
                data[at] = byte
        assert signal_of(data) in (None, "traces", "logs")
        target.write_bytes(bytes(data))
        try:
            read_logs(target)
        except TraceFormatError as e:
            assert e.path == str(target)

    check()


def test_a_protobuf_logs_file_is_recognized_behind_resource_attributes_larger_than_the_sniffed_head(
    tmp_path: Path,
) -> None:
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tracegrade import write_otlp_json

    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    tp, lp = TracerProvider(), LoggerProvider(resource=Resource({"k8s.pod.labels": "x" * 200_000}))
    tp.add_span_processor(SimpleSpanProcessor(spans))
    lp.add_log_record_processor(SimpleLogRecordProcessor(logs))
    with tp.get_tracer("t").start_as_current_span("chat gpt-4o", attributes={"gen_ai.operation.name": "chat"}):
        lp.get_logger("t").emit(event_name="gen_ai.choice", body={"index": 0, "message": {"role": "assistant"}})
    write_otlp_json(spans.get_finished_spans(), tmp_path / "run.traces.json")
    (tmp_path / "run.logs.pb").write_bytes(encode_logs(logs.get_finished_logs()).SerializeToString())
    [tree] = load_traces(tmp_path)
    assert [r.event_name for n in tree for r in n.logs] == ["gen_ai.choice"]


# --- a pretty-printed logs document is one document: errors name its field, or its line and column ---


def _pretty_logs(tmp_path: Path) -> tuple[Path, Path]:
    """The corpus run written back by `write_otlp_json(indent=2)`: traces and a pretty-printed logs file."""
    from tracegrade import write_otlp_json

    (tmp_path / "corpus").mkdir()
    traces, logs = _files(tmp_path / "corpus")
    [first, *_] = load_traces([traces, logs])  # a tree with its records attached
    out = write_otlp_json(first, tmp_path / "run.json", indent=2)
    return out, tmp_path / "run.logs.json"


def test_a_bad_field_of_a_pretty_printed_logs_document_is_named_by_its_path(tmp_path: Path) -> None:
    _, logs = _pretty_logs(tmp_path)
    text = logs.read_text()
    assert text.count("\n") > 100 and len(read_logs(logs)) > 0  # pretty-printed, and read whole
    doc = json.loads(text)
    doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"][2]["traceId"] = "not-a-trace-id"
    logs.write_text(json.dumps(doc, indent=2))
    for source in (logs, tmp_path):  # read_logs, and load_traces of the directory holding it
        with pytest.raises(TraceFormatError) as e:
            read_logs(source) if source == logs else load_traces(source)
        assert (e.value.path, e.value.line) == (str(logs), None)
        assert e.value.location == "resourceLogs[0].scopeLogs[0].logRecords[2].traceId"
        assert "expected a 32-digit hex" in e.value.problem


@pytest.mark.parametrize("packed", [False, True])
def test_a_syntax_error_in_a_pretty_printed_logs_document_names_its_line_and_column(
    tmp_path: Path, packed: bool
) -> None:
    _, logs = _pretty_logs(tmp_path)
    lines = logs.read_text().splitlines()
    k = next(i for i, line in enumerate(lines) if i > 200 and line.strip().startswith('"value": {'))
    lines[k] = lines[k].replace('"value": {', '"value" {', 1)
    target = logs.with_name("run.logs.json.gz") if packed else logs
    data = ("\n\n" + "\n".join(lines)).encode()  # two blank lines before the document
    if packed:
        logs.unlink()
        target.write_bytes(gzip.compress(data))
    else:
        target.write_bytes(data)
    with pytest.raises(TraceFormatError) as e:
        read_logs(target)
    column = lines[k].index('"value"') + len('"value" ') + 1
    assert (e.value.path, e.value.line, e.value.location) == (str(target), k + 3, f"column {column}")
    assert "delimiter" in e.value.problem


# --- one collector `file` exporter in both pipelines: a file holding trace and logs requests ---------


class _OneFile:
    """Span and log record exporters that append each export request to one file, as the collector's
    `file` exporter does when both pipelines use it: a JSON line (`json`) or a length-prefixed message
    (`proto`). The requests are the SDK's own OTLP encoding of what was exported."""

    def __init__(self, path: Path, fmt: str) -> None:
        self.path, self.fmt = path, fmt
        path.write_bytes(b"")

    def write(self, message: Any) -> None:
        from google.protobuf import json_format

        with self.path.open("ab") as f:
            if self.fmt == "json":
                f.write(json.dumps(json_format.MessageToDict(message)).encode() + b"\n")
            else:
                body = message.SerializeToString()
                f.write(len(body).to_bytes(4, "big") + body)

    def exporters(self) -> tuple[Any, Any]:
        from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
        from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

        sink = self

        class Spans(SpanExporter):
            def export(self, spans: Any) -> SpanExportResult:
                sink.write(encode_spans(spans))
                return SpanExportResult.SUCCESS

        class Logs(LogRecordExporter):
            def export(self, batch: Any) -> LogRecordExportResult:
                sink.write(encode_logs(batch))
                return LogRecordExportResult.SUCCESS

            def shutdown(self) -> None:
                pass

            def force_flush(self, timeout_millis: int = 30_000) -> bool:
                return True

        return Spans(), Logs()


def _one_file(tmp_path: Path, fmt: str, logs_at_end: bool) -> Path:
    """The corpus run emitted again through a real `TracerProvider` and `LoggerProvider` whose
    exporters write one file: each trace's records before its span (both exported as they end), or
    (`logs_at_end`, a batching logs processor flushed at shutdown) every record after every span."""
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, SimpleLogRecordProcessor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    path = tmp_path / ("collector.jsonl" if fmt == "json" else "collector.pb")
    span_exporter, log_exporter = _OneFile(path, fmt).exporters()
    tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    processor = BatchLogRecordProcessor(log_exporter, schedule_delay_millis=60_000) if logs_at_end else (
        SimpleLogRecordProcessor(log_exporter))  # fmt: skip
    logger_provider.add_log_record_processor(processor)
    records = read_logs(CORPUS / f"{RUN}.logs.json")
    for tree in load_traces(CORPUS / f"{RUN}.traces.json"):
        [chat] = list(tree)
        logger = logger_provider.get_logger(chat.scope_name)
        with tracer_provider.get_tracer(chat.scope_name).start_as_current_span(chat.name, attributes=dict(chat.attributes)):
            for r in records:
                if r.span_id == chat.span_id:
                    logger.emit(event_name=r.event_name, body=r.body, attributes=dict(r.attributes))
    tracer_provider.shutdown()
    logger_provider.shutdown()
    return path


def _signals(path: Path, fmt: str) -> list[str]:
    """The signal of each request of the file, in order."""
    from tracegrade.ingest._protobuf import signal_of
    from tracegrade.ingest._read import _messages

    if fmt == "json":
        return ["logs" if "resourceLogs" in json.loads(line) else "traces" for line in path.read_text().splitlines()]
    return [str(signal_of(raw)) for _, raw in _messages(str(path), False, 1 << 30)]


def _calls(trees: list[Any]) -> list[tuple[str, Any]]:
    return [(c.name, c.args) for t in trees for c in extract(t).tool_calls]


EXPECTED_CALLS = [("get_weather", {"city": "Paris"}), ("get_order", {"order_id": 1234}),
                  ("search_kb", {"query": "refund policy"}), ("search_kb", {"query": "refund policy"})]  # fmt: skip


@pytest.mark.parametrize("fmt", ["json", "proto"])
@pytest.mark.parametrize("logs_at_end", [False, True])
def test_a_file_holding_both_signals_reads_spans_and_attaches_records(tmp_path: Path, fmt: str, logs_at_end: bool) -> None:
    path = _one_file(tmp_path, fmt, logs_at_end)
    signals = _signals(path, fmt)
    assert set(signals) == {"traces", "logs"}
    assert signals[0] == ("traces" if logs_at_end else "logs")  # read as a trace file, or as a logs file first
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is skipped
        trees = load_traces(path)
        assert len(trees) == 4 and all(n.logs for t in trees for n in t)
        assert _calls(trees) == _calls(load_traces(CORPUS.glob(f"{RUN}.*.json"))) == EXPECTED_CALLS
        assert sum(t.unattached_logs for t in trees) == 0
        assert _calls(list(iter_traces(path, per_file=False))) == EXPECTED_CALLS
        tree = read_tree(path)  # grade(path) reads it so: one tree, every record attached
        assert sum(len(n.logs) for n in tree) == 27 and tree.unattached_logs == 0
        [ok] = grade(path, [ArgumentCorrectness("get_order", {"order_id": 1234})])
        assert ok.passed, ok.reasoning


def test_the_cli_grades_a_file_holding_both_signals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tracegrade.cli import main

    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - MaxToolCalls: 2\n")
    for logs_at_end in (False, True):
        path = _one_file(tmp_path, "json", logs_at_end)
        assert main(["grade", str(path), "--spec", str(spec), "--format", "json"]) == 0
        turns = [case["runs"][0]["turns"][0] for case in json.loads(capsys.readouterr().out)["cases"]]
        assert len(turns) == 4 and turns[0]["tool_calls"] == ["get_weather(city='Paris')", "get_order(order_id=1234)"]
        assert main(["show", str(path)]) == 0
        assert "get_order" in capsys.readouterr().out


def test_read_spans_and_read_logs_read_their_signal_of_a_file_holding_both(tmp_path: Path) -> None:
    from tracegrade.ingest import TraceFileWarning, read_spans

    path = _one_file(tmp_path, "json", logs_at_end=False)  # a logs request first
    with pytest.warns(TraceFileWarning, match="not traces"):  # its logs lines
        assert len(list(read_spans(path))) == 4  # the spans, not lost behind the first line
    with pytest.warns(TraceFileWarning, match=r"skipped 4 request\(s\) of OTLP traces \(not logs\); load_traces reads both"):
        assert len(read_logs(path)) == 27


def _corpus_lines() -> tuple[list[str], list[str]]:
    """One JSON line per trace of the corpus run, and one per trace with its records (in trace order)."""
    traces = json.loads((CORPUS / f"{RUN}.traces.json").read_text())
    logs = json.loads((CORPUS / f"{RUN}.logs.json").read_text())
    [rs], [rl] = traces["resourceSpans"], logs["resourceLogs"]
    [ss], [sl] = rs["scopeSpans"], rl["scopeLogs"]
    span_lines, log_lines = [], []
    for s in ss["spans"]:
        span_lines.append(json.dumps({"resourceSpans": [{**rs, "scopeSpans": [{**ss, "spans": [s]}]}]}))
        mine = [r for r in sl["logRecords"] if r["traceId"] == s["traceId"]]
        log_lines.append(json.dumps({"resourceLogs": [{**rl, "scopeLogs": [{**sl, "logRecords": mine}]}]}))
    return span_lines, log_lines


def test_records_that_come_after_their_trace_was_emitted_are_reported_not_dropped(tmp_path: Path) -> None:
    from tracegrade.ingest import TraceFileWarning

    spans, logs = _corpus_lines()
    path = tmp_path / "late.jsonl"
    path.write_text("\n".join([spans[0], spans[1], spans[2], logs[0], logs[1], logs[2]]) + "\n")
    with pytest.warns(TraceFileWarning) as record:
        trees = load_traces(path, idle_lines=2)  # trace 1 is emitted once two lines pass without it
    [message] = [str(w.message) for w in record]
    n = len(json.loads(logs[0])["resourceLogs"][0]["scopeLogs"][0]["logRecords"])
    tid = json.loads(spans[0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    assert message.startswith(f"{path}:4: {n} log record(s) of trace {tid} come after the trace was emitted")
    assert message.endswith("they are not attached (raise idle_lines)")
    assert [bool(t.nodes[0].logs) for t in trees] == [False, True, True]
    assert _calls(load_traces(path)) == EXPECTED_CALLS  # the default idle_lines waits long enough


def test_records_naming_a_trace_without_spans_in_the_file_are_reported(tmp_path: Path) -> None:
    from tracegrade.ingest import TraceFileWarning

    spans, logs = _corpus_lines()
    path = tmp_path / "other.jsonl"
    path.write_text("\n".join([spans[0], logs[0], logs[3]]) + "\n")
    n = len(json.loads(logs[3])["resourceLogs"][0]["scopeLogs"][0]["logRecords"])
    with pytest.warns(TraceFileWarning, match=f"{n} log record\\(s\\) name 1 trace\\(s\\) that have no spans there"):
        [tree] = load_traces(path)
    assert tree.nodes[0].logs


def test_a_bad_log_record_in_a_trace_file_names_its_line_and_field(tmp_path: Path) -> None:
    spans, logs = _corpus_lines()
    bad = json.loads(logs[1])
    bad["resourceLogs"][0]["scopeLogs"][0]["logRecords"][1]["spanId"] = "xyz"
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([spans[0], logs[0], spans[1], json.dumps(bad)]) + "\n")
    with pytest.raises(TraceFormatError) as e:
        load_traces(path)
    assert (e.value.path, e.value.line) == (str(path), 4)
    assert e.value.location == "resourceLogs[0].scopeLogs[0].logRecords[1].spanId"
