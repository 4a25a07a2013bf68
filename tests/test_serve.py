"""`tracegrade serve`: a real subprocess on port 0, real OTLP from instrumented Pydantic AI agents."""

from __future__ import annotations

import gzip
import http.server
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import TraceIdRatioBased

from _agents import scripted_agent
from tracegrade.cli import main
from tracegrade.receiver import OTLPReceiver
from tracegrade.receiver._serve import sampled

SPEC = "evaluators:\n  - ToolCorrectness: {expected_tools: [search]}\n  - MaxToolCalls: 1\n"
MARKUP = "[bold red]agent[/bold red]"


class _Served:
    def __init__(self, proc: subprocess.Popen[str], endpoint: str) -> None:
        self.proc, self.endpoint = proc, endpoint
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, predicate_text: str, count: int = 1, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while sum(predicate_text in line for line in self.lines) < count:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                pytest.fail(f"no {count} line(s) with {predicate_text!r} in:\n" + "\n".join(self.lines))
            time.sleep(0.05)

    def interrupt(self, sig: int = signal.SIGINT) -> tuple[int, str]:
        self.proc.send_signal(sig)
        rc = self.proc.wait(20)
        self._reader.join(5)
        return rc, "\n".join(self.lines)


@contextmanager
def serve(tmp_path: Path, *extra: str, spec: str = SPEC) -> Iterator[_Served]:
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(spec)
    ready = tmp_path / "ready.json"
    cmd = [sys.executable, "-m", "tracegrade", "serve", "--spec", str(spec_file), "--port", "0",
           "--ready-file", str(ready), "--settle", "0.2", *extra]  # fmt: skip
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                out = proc.stdout.read() if proc.stdout and proc.poll() is not None else ""
                pytest.fail(f"tracegrade serve did not start (rc={proc.poll()}):\n{out}")
            time.sleep(0.05)
        yield _Served(proc, json.loads(ready.read_text())["endpoint"])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _run_agents(endpoint: str, runs: list[list[tuple[str, dict[str, str]]]], **exporter: object) -> list[int]:
    """Run one scripted agent per item, exporting to `endpoint`; returns the trace ids."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    otlp = OTLPSpanExporter(endpoint=endpoint + "/v1/traces", **exporter)  # type: ignore[arg-type]
    provider.add_span_processor(BatchSpanProcessor(otlp, schedule_delay_millis=50))
    for steps in runs:
        scripted_agent(steps, tracer_provider=provider, name=MARKUP).run_sync("go")
    provider.shutdown()
    roots = [s for s in memory.get_finished_spans() if s.parent is None]
    return [s.context.trace_id for s in roots if s.context is not None]


def test_serve_grades_each_run_live_and_prints_a_summary_on_sigint(tmp_path: Path) -> None:
    with serve(tmp_path) as served:
        _run_agents(
            served.endpoint, [[("search", {"q": "a"})], [("search", {"q": "b"})], [("search", {}), ("search", {})]]
        )
        served.wait_for("checks passed", 3)
        rc, out = served.interrupt()
    assert rc == 0
    assert out.count("PASS ") == 2 and out.count("FAIL ") == 1
    assert f"'invoke_agent {MARKUP}'" in out  # trace text printed literally, never as markup
    assert "pass rate per evaluator" in out and "interrupted: stopping" in out
    cells = [[c.strip() for c in line.strip("│").split("│")] for line in out.splitlines() if line.startswith("│ ")]
    rows = {row[0]: row[1:] for row in cells}  # passed, failed, not evaluated, errors, pass rate
    assert rows["MaxToolCalls"] == ["2", "1", "0", "0", "66.7%"]
    assert rows["ToolCorrectness"][0] == "2"
    assert "3 trace(s) graded: 2 passed, 1 failed; 0 sampled out; 0 pending" in out


class _Recorder(http.server.BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[str, dict[str, str], bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, dict(self.headers), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_serve_forwards_requests_unchanged_and_emits_results_as_log_records(tmp_path: Path) -> None:
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    _Recorder.received = []
    try:
        with OTLPReceiver(port=0) as results_rx, serve(
            tmp_path, "--forward", f"http://127.0.0.1:{upstream.server_port}", "--emit-results", results_rx.endpoint
        ) as served:  # fmt: skip
            [trace_id] = _run_agents(served.endpoint, [[("search", {"q": "a"})]], compression=Compression.Gzip)
            served.wait_for("checks passed")
            request = ExportTraceServiceRequest()
            s = request.resource_spans.add().scope_spans.add().spans.add(trace_id=b"\x05" * 16, span_id=b"\x06" * 8)
            s.start_time_unix_nano, s.end_time_unix_nano, s.name = 1, 2, "raw"
            raw = gzip.compress(request.SerializeToString())
            import urllib.request

            headers = {"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"}
            urllib.request.urlopen(urllib.request.Request(served.endpoint + "/v1/traces", raw, headers), timeout=5)
            served.wait_for("checks passed", 2)
            rc, out = served.interrupt()
            [emitted] = [t for t in results_rx.take_settled(0, 0) if t.trace_id == trace_id]
        assert rc == 0
        assert ("/v1/traces", "gzip", raw) in [(p, h.get("Content-Encoding"), b) for p, h, b in _Recorder.received]
        forwarded = [(p, h.get("Content-Encoding")) for p, h, _b in _Recorder.received]
        assert forwarded.count(("/v1/traces", "gzip")) == len(forwarded) >= 2
        assert f"{len(forwarded)} request(s) forwarded, 0 failed" in out
        records = {r.attributes["gen_ai.evaluation.name"]: r for r in emitted.logs}
        assert set(records) == {"ToolCorrectness", "MaxToolCalls"}
        tc = records["ToolCorrectness"]
        assert tc.event_name == "gen_ai.evaluation.result" and tc.trace_id == trace_id and tc.span_id != 0
        assert tc.attributes["gen_ai.evaluation.score.label"] == "passed"
        assert tc.attributes["gen_ai.evaluation.evaluator.id"].startswith("ToolCorrectness/")
        assert "gen_ai.evaluation.evaluator.version" in tc.attributes
        assert "4 result(s) emitted, 0 failed" in out  # 2 evaluators x 2 traces
    finally:
        upstream.shutdown()


def _raw_trace(trace_id: int, with_root: bool = True) -> bytes:
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add()
    root = spans.spans.add(trace_id=trace_id.to_bytes(16, "big"), span_id=b"\x01" * 8, name="root")
    if not with_root:
        root.parent_span_id = b"\x09" * 8
    root.start_time_unix_nano, root.end_time_unix_nano = 1, 2
    return request.SerializeToString()


def test_serve_samples_by_trace_id_grades_incomplete_traces_as_such_and_stops_on_sigterm(tmp_path: Path) -> None:
    import urllib.request

    kept, dropped, orphan = (1 << 64) + 5, (1 << 64) - 1, 7  # low 64 bits: tiny, huge, tiny
    with serve(tmp_path, "--sample", "0.5", "--give-up", "0.5", "--not-evaluated", "skip") as served:
        for tid, whole in ((kept, True), (dropped, True), (orphan, False)):
            body = _raw_trace(tid, whole)
            req = urllib.request.Request(
                served.endpoint + "/v1/traces", body, {"Content-Type": "application/x-protobuf"}
            )
            urllib.request.urlopen(req, timeout=5)
        served.wait_for("checks passed", 2)
        rc, out = served.interrupt(signal.SIGTERM)
    assert rc == 0 and "stopping" in out and "interrupted" not in out
    assert f"{kept:032x}" in out and f"{dropped:032x}" not in out
    [orphan_line] = [line for line in out.splitlines() if f"{orphan:032x}" in line]
    assert "incomplete" in orphan_line and "0909090909090909" in orphan_line
    assert f"PASS {kept:032x}" in out  # no tool data: not evaluated, which --not-evaluated skip lets pass
    assert "2 trace(s) graded" in out and "1 sampled out" in out


def test_sampling_matches_opentelemetrys_trace_id_ratio_sampler() -> None:
    rng = random.Random(17)
    ids = [rng.getrandbits(128) for _ in range(2000)]
    for rate in (0.0, 0.1, 0.5, 1.0):
        sampler = TraceIdRatioBased(rate)
        ours = [sampled(t, rate) for t in ids]
        assert ours == [sampler.should_sample(None, t, "x").decision.is_sampled() for t in ids]
        assert ours == [sampled(t, rate) for t in ids]  # deterministic
    assert 900 < sum(sampled(t, 0.5) for t in ids) < 1100


def test_serve_with_a_bad_spec_exits_2_naming_the_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - ToolCorectness: {expected_tools: [a]}\n")
    assert main(["serve", "--spec", str(spec), "--port", "0"]) == 2
    assert "did you mean 'ToolCorrectness'" in capsys.readouterr().out


def test_serve_refuses_a_non_loopback_host_without_allow_remote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    assert main(["serve", "--spec", str(spec), "--port", "0", "--host", "0.0.0.0"]) == 2
    assert "allow_remote" in capsys.readouterr().out


def test_live_view_prints_trace_text_literally_in_a_terminal() -> None:
    from io import StringIO

    from rich.console import Console

    from tracegrade.receiver._cli import _live_view
    from tracegrade.receiver._serve import OnlineGrader
    from tracegrade.receiver._store import AssembledTrace
    from tracegrade.spans import Span
    from tracegrade.spec import build_evaluators

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    scripted_agent([("search", {"q": "[/x]"})], tracer_provider=provider, name=MARKUP).run_sync("go")
    spans = [Span.from_readable(s) for s in memory.get_finished_spans()]
    grader = OnlineGrader(build_evaluators([{"ToolCorrectness": {"expected_tools": ["search"]}}]))
    graded = grader.process(AssembledTrace(spans[0].trace_id, spans, [], ["a [red]note[/red]"]))
    assert graded is not None and graded.passed and grader.per_evaluator["ToolCorrectness"].pass_rate == 1.0
    out = StringIO()
    with OTLPReceiver(port=0) as rx:
        Console(file=out, force_terminal=True, width=200, color_system=None).print(_live_view(grader, rx))
    text = out.getvalue()
    assert f"invoke_agent {MARKUP}" in text and "(incomplete)" in text and "100.0%" in text
    assert "1 trace(s) graded: 1 passed, 0 failed (1 incomplete)" in text


# --- bug: serve graded the spans of a trace without its log records ---------------------------


def _openai_run_with_content_as_logs(endpoint: str, tool: str, late_logs_trace: int | None = None) -> int:
    """One `chat` span whose tool call is only in a `gen_ai.choice` log record (as
    opentelemetry-instrumentation-openai-v2 sends content), through the real OTLP span and log
    exporters; with `late_logs_trace`, one more record naming that trace, which has no spans."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

    scope = "opentelemetry.instrumentation.openai_v2"
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint + "/v1/traces")))
    lp = LoggerProvider(shutdown_on_exit=False)
    lp.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(endpoint=endpoint + "/v1/logs")))
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o"}
    call = {"id": "call_1", "type": "function", "function": {"name": tool, "arguments": '{"city": "Paris"}'}}
    body = {"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": [call]}}
    with tp.get_tracer(scope).start_as_current_span("chat gpt-4o", attributes=attrs) as span:
        lp.get_logger(scope).emit(event_name="gen_ai.choice", body=body, attributes={"gen_ai.system": "openai"})
        trace_id = span.get_span_context().trace_id
    if late_logs_trace is not None:
        ctx = trace.set_span_in_context(
            trace.NonRecordingSpan(trace.SpanContext(late_logs_trace, 0x0A, False, trace.TraceFlags(1)))
        )
        lp.get_logger(scope).emit(event_name="gen_ai.choice", body=body, context=ctx)
    tp.shutdown()
    lp.shutdown()
    return trace_id


def test_serve_grades_a_trace_with_the_log_records_that_name_its_spans(tmp_path: Path) -> None:
    spec = "evaluators:\n  - ToolCorrectness: {expected_tools: [get_weather]}\n"
    with serve(tmp_path, "--give-up", "0.3", spec=spec) as served:
        passing = _openai_run_with_content_as_logs(served.endpoint, "get_weather")
        failing = _openai_run_with_content_as_logs(served.endpoint, "get_order", late_logs_trace=0xAB)
        served.wait_for("checks passed", 2)
        time.sleep(1.0)  # the records-only trace is given up on after 0.3 s
        rc, out = served.interrupt(signal.SIGTERM)
    assert rc == 0
    assert f"PASS {passing:032x} 'chat gpt-4o': 1/1 checks passed" in out
    assert f"FAIL {failing:032x} 'chat gpt-4o': 0/1 checks passed" in out
    cells = [[c.strip() for c in line.strip("│").split("│")] for line in out.splitlines() if line.startswith("│ ")]
    assert {row[0]: row[1:] for row in cells}["ToolCorrectness"] == ["1", "1", "0", "0", "50.0%"]
    assert "1 log record(s) of traces with no spans, not graded" in out


# --- bug: stopping serve dropped the traces still pending -------------------------------------


def test_stopping_serve_grades_the_pending_traces_the_incomplete_ones_as_such(tmp_path: Path) -> None:
    import urllib.request

    requests = (Path(__file__).parent.parent / "fixtures" / "otlp" / "agent_run.jsonl").read_text().splitlines()
    with serve(tmp_path, "--settle", "60", "--give-up", "60") as served:
        for line in requests[:-1]:  # the last request, with the root span, never arrives
            req = urllib.request.Request(served.endpoint + "/v1/traces", line.encode(), {"Content-Type": "application/json"})
            assert urllib.request.urlopen(req, timeout=5).status == 200
        whole = _raw_trace(0x77)  # complete, but not settled yet
        req = urllib.request.Request(served.endpoint + "/v1/traces", whole, {"Content-Type": "application/x-protobuf"})
        assert urllib.request.urlopen(req, timeout=5).status == 200
        rc, out = served.interrupt(signal.SIGTERM)
    assert rc == 0
    [partial] = [line for line in out.splitlines() if "checks passed" in line and f"{0x77:032x}" not in line]
    assert "(incomplete: " in partial and "did not arrive before the receiver stopped" in partial
    assert "no root span (one without a parent) arrived before the receiver stopped" in partial
    [settled] = [line for line in out.splitlines() if f"{0x77:032x} 'root'" in line]
    assert "incomplete" not in settled
    assert "2 trace(s) graded" in out and "(1 incomplete)" in out and "0 pending" in out
