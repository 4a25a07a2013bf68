"""`write_otlp_json` writes what a capture holds, log records included, so a written file grades like
the live run; recordings (`tracegrade.recording.id`) read back as one unit per recorded run. Real OTel
SDK spans and log records, real files."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracegrade import capture, grade, load_traces, write_otlp_json
from tracegrade.cli import main
from tracegrade.dialects import extract
from tracegrade.evaluators import ArgumentCorrectness, MaxToolCalls, ToolCorrectness, TrajectoryMatch
from tracegrade.ingest import iter_traces, read_logs, read_spans, split_agent_runs
from tracegrade.ingest._traces import RECORDING_ID, recording_id
from tracegrade.ingest._write import logs_path_for
from tracegrade.spans import Span

SCOPE = "opentelemetry.instrumentation.openai_v2"
CHAT = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.system": "openai"}
CALLS = [("get_weather", {"city": "Paris"}), ("get_order", {"order_id": 1234}), ("search_kb", {"q": "refund"})]
CHECKS = [
    ToolCorrectness(expected_tools=[name for name, _ in CALLS]),
    TrajectoryMatch(expected_trajectory=[name for name, _ in CALLS]),
    ArgumentCorrectness("get_order", {"order_id": 1234}),
    ArgumentCorrectness("get_order", {"order_id": 99}),  # a wrong expectation: failed, live and replayed
    MaxToolCalls(max_calls=3),
]


@pytest.fixture
def providers() -> Iterator[tuple[TracerProvider, LoggerProvider]]:
    resource = Resource({"service.name": "shop"})
    tp, lp = TracerProvider(resource=resource), LoggerProvider(resource=resource, shutdown_on_exit=False)
    yield tp, lp
    lp.shutdown()
    tp.shutdown()


def _choice(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    """A `gen_ai.choice` event body as openai-v2 emits it for a tool-calling response."""
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    return {"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": [call]}}


def _hand_written_loop(tp: TracerProvider, lp: LoggerProvider) -> None:
    """A hand-written agent loop under openai-v2: chat spans without content, the tool calls only in
    the `gen_ai.choice` log records emitted inside them (and the results in `gen_ai.tool.message`)."""
    tracer, logger = tp.get_tracer(SCOPE), lp.get_logger(SCOPE)
    with tracer.start_as_current_span("agent loop"):
        for i, (name, args) in enumerate(CALLS):
            with tracer.start_as_current_span("chat gpt-4o", kind=trace.SpanKind.CLIENT, attributes=CHAT):
                if i:
                    logger.emit(event_name="gen_ai.tool.message", body={"id": f"c{i - 1}", "content": "ok"},
                                attributes={"gen_ai.system": "openai"})  # fmt: skip
                logger.emit(event_name="gen_ai.choice", body=_choice(name, args, f"c{i}"),
                            attributes={"gen_ai.system": "openai"})  # fmt: skip


def _calls(traj: Any) -> list[tuple[str, Any, str | None]]:
    return [(c.name, c.args, c.call_id) for c in traj.tool_calls]


def test_a_captures_log_records_are_written_beside_its_spans_and_grade_back_like_the_live_run(
    providers: Any, tmp_path: Path
) -> None:
    tp, lp = providers
    with capture(provider=tp, logger_provider=lp) as cap:
        _hand_written_loop(tp, lp)
    live = grade(cap, CHECKS)
    assert [r.outcome for r in live] == ["passed", "passed", "passed", "failed", "passed"], [r.reasoning for r in live]
    assert len(cap.logs) == 5

    path = write_otlp_json(cap, tmp_path / "run.json")
    assert logs_path_for(path) == tmp_path / "run.logs.json" and (tmp_path / "run.logs.json").is_file()
    assert read_logs(tmp_path / "run.logs.json") == cap.logs  # every field, the resource and scope too
    for source in (tmp_path, [path, tmp_path / "run.logs.json"]):  # the directory, or both files listed
        [tree] = load_traces(source)
        replayed = extract(tree)
        assert _calls(replayed) == _calls(cap.trajectory) and len(replayed.tool_calls) == 3, source
        again = grade(tree, CHECKS)
        assert [(r.outcome, r.reasoning) for r in again] == [(r.outcome, r.reasoning) for r in live], source

    # what the written file graded like before: no log records, so no calls to check
    write_otlp_json(cap, tmp_path / "bare" / "run.json", logs_path=False)
    assert not (tmp_path / "bare" / "run.logs.json").exists()
    [bare] = load_traces(tmp_path / "bare" / "run.json")
    assert grade(bare, [ArgumentCorrectness("get_order", {"order_id": 1234})])[0].outcome == "not_evaluated"


def test_log_records_follow_the_traces_format_and_name(providers: Any, tmp_path: Path) -> None:
    tp, lp = providers
    with capture(provider=tp, logger_provider=lp) as cap:
        _hand_written_loop(tp, lp)
    write_otlp_json(cap, tmp_path / "a.traces.json.gz", lines=True, batch_size=2)
    logs = tmp_path / "a.logs.json.gz"
    assert len(read_logs(logs)) == 5 and len(logs.read_bytes().splitlines()) >= 1
    [tree] = load_traces([tmp_path / "a.traces.json.gz", logs])
    assert _calls(extract(tree)) == _calls(cap.trajectory)
    write_otlp_json(cap.tree, tmp_path / "from_tree.json", logs_path=tmp_path / "elsewhere.json")  # a tree's records
    assert read_logs(tmp_path / "elsewhere.json") == sorted(cap.logs, key=lambda r: r.time_ns)
    with pytest.raises(ValueError, match="is the traces file itself"):
        write_otlp_json(cap, tmp_path / "x.json", logs_path=tmp_path / "x.json")
    write_otlp_json(cap.spans, tmp_path / "spans_only.json")  # plain spans hold no records: no logs file
    assert not (tmp_path / "spans_only.logs.json").exists()


@pytest.mark.parametrize(
    ("traces", "logs"),
    [
        ("run.json", "run.logs.json"),
        ("run.traces.json", "run.logs.json"),
        ("t[1.5]-run2.json.gz", "t[1.5]-run2.logs.json.gz"),
        ("run.jsonl", "run.logs.jsonl"),
        ("run.otlp", "run.otlp.logs.json"),
    ],
)
def test_logs_path_for_puts_logs_beside_the_traces(traces: str, logs: str) -> None:
    assert logs_path_for(Path("d") / traces) == Path("d") / logs


# --- recordings: one unit per recorded run ------------------------------------------------------


def _turns(n: int, agent: str = "shop") -> list[ReadableSpan]:
    """`n` turns of a real SDK agent, each its own trace: `invoke_agent` with one `execute_tool`."""
    exporter = InMemorySpanExporter()
    tp = TracerProvider(resource=Resource({"service.name": agent}))
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = tp.get_tracer("agent")
    run = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}
    for k in range(1, n + 1):
        tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"step{k}", "gen_ai.tool.call.id": f"call{k}",
                "gen_ai.tool.call.arguments": json.dumps({"k": k})}  # fmt: skip
        with (
            tracer.start_as_current_span(f"invoke_agent {agent}", attributes=run),
            tracer.start_as_current_span(f"execute_tool step{k}", attributes=tool),
        ):
            pass
    tp.shutdown()
    return list(exporter.get_finished_spans())


def test_a_recorded_multi_turn_run_reads_back_as_one_unit_with_its_turns_in_start_order(tmp_path: Path) -> None:
    turns = _turns(3)
    spans = [Span.from_readable(s) for s in turns]
    random.Random(7).shuffle(spans)  # file order is not turn order
    write_otlp_json(spans, tmp_path / "plain.json")
    assert len(load_traces(tmp_path / "plain.json")) == 3  # not a recording: one tree per trace, as before

    path = write_otlp_json(spans, tmp_path / "rec.json", resource_attributes={RECORDING_ID: "t/test_x-run1"})
    [tree] = load_traces(path)
    assert recording_id(tree) == "t/test_x-run1" and len(tree.trace_ids) == 3
    assert extract(tree).tool_calls == ["step1", "step2", "step3"]
    assert [r.trace_id for r in tree.roots] == [s.context.trace_id for s in turns if s.parent is None]
    assert all(RECORDING_ID not in n.attributes and n.resource["service.name"] == "shop" for n in tree)
    assert list(read_spans(path)) and len(split_agent_runs(list(read_spans(path)))) == 1  # batch's `where` path
    # a recording is one unit with split_runs=False, and across files (per_file=False) too
    assert len(list(iter_traces(path, split_runs=False))) == 1
    write_otlp_json(_turns(3), tmp_path / "other.json")
    assert len(list(iter_traces([path, tmp_path / "other.json"], per_file=False))) == 1 + 3


def test_two_recordings_in_one_file_or_json_lines_stay_two_units(tmp_path: Path) -> None:
    a = [Span.from_readable(s) for s in _turns(2, "alpha")]
    b = [Span.from_readable(s) for s in _turns(3, "beta")]
    da = json.loads(json.dumps(_doc(a, "a-run1")))
    db = _doc(b, "b-run1")
    (tmp_path / "both.json").write_text(json.dumps({"resourceSpans": da["resourceSpans"] + db["resourceSpans"]}))
    lines = "".join(json.dumps(_doc([s], rid)) + "\n" for spans, rid in ((a, "a-run1"), (b, "b-run1")) for s in spans)
    (tmp_path / "both.jsonl").write_text(lines)
    for name in ("both.json", "both.jsonl"):
        trees = load_traces(tmp_path / name)
        assert sorted((recording_id(t), len(t.trace_ids)) for t in trees) == [("a-run1", 2), ("b-run1", 3)], name


def _doc(spans: list[Span], rid: str) -> dict[str, Any]:
    from tracegrade.ingest import dump_otlp_json

    return dump_otlp_json(spans, resource_attributes={RECORDING_ID: rid})


def test_the_cli_grades_a_recorded_run_once_and_show_labels_its_turns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # the heading is not cut to the terminal's width
    for rid in ("t/test_a-run1", "t/test_b-run1"):
        write_otlp_json(_turns(3), tmp_path / f"{rid}.json", resource_attributes={RECORDING_ID: rid})
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - TrajectoryMatch: {expected_trajectory: [step1, step2, step3]}\n")
    assert main(["grade", str(tmp_path / "t"), "--spec", str(spec), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["cases"]) == 2, report  # two recorded runs, not six traces
    assert main(["show", str(tmp_path / "t" / "test_a-run1.json")]) == 0
    out = capsys.readouterr().out
    assert "recording 't/test_a-run1' (3 turns)" in out
    assert out.index("[turn 1 of 3]") < out.index("[turn 2 of 3]") < out.index("[turn 3 of 3]")
