"""A real service under test: a subprocess HTTP app running an instrumented Pydantic AI agent
(FunctionModel, no network) that exports with BatchSpanProcessor + OTLP/HTTP to the receiver.
Concurrent "tests", each calling it inside `capture(receiver=rx)`, get exactly their own spans, also
when the exporter is answered 503 once."""

from __future__ import annotations

import json
import sys
import textwrap
import threading
import urllib.request
from pathlib import Path

import pytest

from tracegrade import capture, grade, trace_headers
from tracegrade.evaluators import ArgumentCorrectness, ToolCorrectness
from tracegrade.receiver import OTLPReceiver
from tracegrade.receiver._service import ServiceError, ServiceProcess

APP = textwrap.dedent(
    """
    import json, signal, sys, threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
    from pydantic_ai import Agent, InstrumentationSettings
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # endpoint, delay: environment
    tracer = provider.get_tracer("app")

    def script(messages, info):
        request = json.loads(messages[0].parts[-1].content)
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(t, {"i": request["i"]}, tool_call_id=f"c{k}")
                                        for k, t in enumerate(request["tools"])])
        return ModelResponse(parts=[TextPart(f"done {request['i']}")])

    agent = Agent(FunctionModel(script), name="support")
    agent.instrument = InstrumentationSettings(tracer_provider=provider)
    for name in ("search", "lookup", "refund"):
        def tool(i: int, _name=name) -> str:
            return f"{_name} {i}"
        agent.tool_plain(name=name)(tool)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()

        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            ctx = TraceContextTextMapPropagator().extract(self.headers)  # case-insensitive lookup
            with tracer.start_as_current_span("POST /chat", context=ctx, kind=trace.SpanKind.SERVER):
                reply = agent.run_sync(body.decode()).output
            data = json.dumps({"reply": reply}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    ThreadingHTTPServer.request_queue_size = 128  # the default backlog of 5 resets concurrent clients
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)

    def stop(*_):
        threading.Thread(target=server.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    print("listening", flush=True)
    server.serve_forever()
    provider.shutdown()
    """
)

TOOLS = [["search"], ["search", "lookup"], ["lookup", "refund"], ["refund", "search", "lookup"]]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_concurrent_requests_to_a_real_service_are_each_graded_on_their_own_spans(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text(APP)
    port = _free_port()
    outcomes: dict[int, tuple[int, list[str], list[str], list[str]]] = {}

    def one_test(i: int) -> None:  # what each test does: call the service inside capture(receiver=rx)
        tools = TOOLS[i % len(TOOLS)]
        with capture(receiver=rx, remote_timeout=15) as cap:
            body = json.dumps({"i": i, "tools": tools}).encode()
            req = urllib.request.Request(f"http://127.0.0.1:{port}/chat", body, trace_headers())
            reply = json.loads(urllib.request.urlopen(req, timeout=30).read())["reply"]
        checks = [ToolCorrectness(expected_tools=tools)]
        checks += [ArgumentCorrectness(tool_name=t, expected_arguments={"i": i}) for t in tools]
        results = grade(cap, checks)
        # spans: the server span, invoke_agent, 2 chat spans, one execute_tool per tool
        outcomes[i] = (len(cap.remote_spans) - 4 - len(tools), [r.outcome for r in results], cap.remote_incomplete,
                       [reply])  # fmt: skip

    with OTLPReceiver(port=0, retry_after=1) as rx:
        with ServiceProcess([sys.executable, str(app), str(port)], rx, ready_url=f"http://127.0.0.1:{port}/health"):
            one_test(0)  # warm up (imports, first request)
            rx.refuse_next(1, 503)  # the next export request is refused once; the exporter retries it
            one_test(1)
            threads = [threading.Thread(target=one_test, args=(i,)) for i in range(2, 21)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
        assert rx.stats.refused_busy == 1
    assert sorted(outcomes) == list(range(21))
    expected = {i: (0, ["passed"] * (1 + len(TOOLS[i % len(TOOLS)])), [], [f"done {i}"]) for i in range(21)}
    wrong = {i: o for i, o in outcomes.items() if o != expected[i]}
    assert wrong == {}  # 0 mis-attributed, 0 lost, every one complete


def test_a_service_that_dies_before_it_is_ready_fails_with_its_output(tmp_path: Path) -> None:
    app = tmp_path / "broken.py"
    app.write_text("import sys\nprint('cannot bind: port in use', flush=True)\nsys.exit(3)\n")
    with OTLPReceiver(port=0) as rx, pytest.raises(ServiceError, match="exited with code 3") as err:
        ServiceProcess([sys.executable, str(app)], rx, ready_url="http://127.0.0.1:9/health").start()
    assert "cannot bind: port in use" in str(err.value)


def test_the_service_gets_the_receiver_endpoint_in_its_environment(tmp_path: Path) -> None:
    app = tmp_path / "env.py"
    app.write_text("import os\nprint('endpoint=' + os.environ['OTEL_EXPORTER_OTLP_ENDPOINT'], flush=True)\n")
    with OTLPReceiver(port=0) as rx:
        service = ServiceProcess([sys.executable, str(app)], rx, ready_pattern=r"^endpoint=")
        with service:
            pass
        assert f"endpoint={rx.endpoint}" in service.logs()
