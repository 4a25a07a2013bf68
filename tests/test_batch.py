"""Batch grading: sources (OTLP files, Parquet, Delta), grouping, sampling, filters, the size guard,
output, the summary and the CLI, on real recorded Pydantic AI runs."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from _batch_data import SPEC, record_runs, trace_ids, write_files
from tracegrade.batch import grade_traces, spans_to_table, write_span_parquet
from tracegrade.batch._arrow import SpanTableSource
from tracegrade.batch._core import parse_condition, sample_bound
from tracegrade.cli import main
from tracegrade.errors import BatchInputError, SpecError, TraceFormatError
from tracegrade.grading import grade
from tracegrade.ingest import iter_traces, read_spans
from tracegrade.spans import Span
from tracegrade.spec import build_evaluators

COLUMNS = ["trace_id", "root_span_id", "agent", "evaluator", "params_hash", "outcome", "score", "reason"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """12 recorded runs as two OTLP JSON lines files, and the same spans (read back) as Parquet."""
    d = tmp_path_factory.mktemp("batch")
    spans = record_runs(12)
    files = write_files(spans, d)
    parquet = write_span_parquet(list(read_spans(files)), d / "spans.parquet")
    return {"spans": spans, "files": files, "parquet": parquet, "dir": d}


def _by_trace(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r["trace_id"], r["root_span_id"]))  # stable: evaluator order kept


def test_otlp_files_give_one_row_per_trace_and_evaluator_as_grade_does(recorded: dict[str, Any]) -> None:
    result = grade_traces(recorded["files"], SPEC, workers=1)
    rows = result.rows()
    assert result.table.column_names == COLUMNS
    assert len(rows) == 12 * 5
    assert {r["trace_id"] for r in rows} == set(trace_ids(recorded["spans"]))
    evaluators = build_evaluators(SPEC)
    for tree in iter_traces(recorded["files"]):
        tid = f"{tree.roots[0].trace_id:032x}"
        mine = [r for r in rows if r["trace_id"] == tid]
        expected = grade(tree, evaluators)
        assert [(r["evaluator"], r["outcome"], r["score"], r["reason"]) for r in mine] == [
            (e.name, e.outcome, e.score, e.reasoning) for e in expected
        ]
        assert mine[0]["root_span_id"] == f"{tree.roots[0].span_id:016x}"
    assert {r["agent"] for r in rows} == {"support", "billing"}
    assert len({r["params_hash"] for r in rows}) == 5
    wrong = [r for r in rows if r["evaluator"] == "ArgumentCorrectness" and r["outcome"] == "failed"]
    assert sum("99" in r["reason"] for r in wrong) == 3  # the three runs that got order 99


def test_parquet_source_gives_the_rows_of_the_otlp_files_sorted_by_trace_id(recorded: dict[str, Any]) -> None:
    from_files = grade_traces(recorded["files"], SPEC, workers=1).rows()
    from_table = grade_traces([recorded["parquet"]], SPEC, workers=1).rows()
    assert from_table == _by_trace(from_files)
    assert [r["trace_id"] for r in from_table] == sorted(r["trace_id"] for r in from_table)


def test_delta_table_source_gives_the_rows_of_the_parquet_file(recorded: dict[str, Any], tmp_path: Path) -> None:
    from deltalake import write_deltalake

    table = pq.read_table(recorded["parquet"])
    write_deltalake(str(tmp_path / "delta"), table.slice(0, 40))
    write_deltalake(str(tmp_path / "delta"), table.slice(40), mode="append")  # two files, two versions
    from_delta = grade_traces([tmp_path / "delta"], SPEC, workers=1).rows()
    assert from_delta == grade_traces([recorded["parquet"]], SPEC, workers=1).rows()


def test_rows_do_not_depend_on_the_number_of_workers(recorded: dict[str, Any]) -> None:
    sources = [*recorded["files"], recorded["parquet"]]
    one = grade_traces(sources, SPEC, workers=1).rows()
    two = grade_traces(sources, SPEC, workers=2).rows()  # a process pool; the table cut into 4 id ranges
    assert one == two and len(one) == 2 * 12 * 5


def test_sampling_keeps_the_traces_of_the_trace_id_ratio_rule_in_every_source(recorded: dict[str, Any]) -> None:
    bound = sample_bound(0.5)
    kept = {t for t in trace_ids(recorded["spans"]) if int(t, 16) & ((1 << 64) - 1) < bound}
    assert 0 < len(kept) < 12
    for sources in (recorded["files"], [recorded["parquet"]]):
        rows = grade_traces(sources, SPEC, workers=1, sample=0.5).rows()
        assert {r["trace_id"] for r in rows} == kept
    assert grade_traces(recorded["files"], SPEC, workers=1, sample=0.0).summary.units == 0


def test_sampling_is_pushed_into_the_parquet_scan(recorded: dict[str, Any]) -> None:
    source = SpanTableSource(recorded["parquet"], "parquet")
    bound = sample_bound(0.5)
    table = source.scan((), bound, None)
    assert 0 < table.num_rows < pq.read_metadata(recorded["parquet"]).num_rows
    assert all(int(t, 16) & ((1 << 64) - 1) < bound for t in table.column("TraceId").to_pylist())


def test_an_oversized_trace_is_not_evaluated_and_says_how_many_spans(recorded: dict[str, Any]) -> None:
    rows = grade_traces(recorded["files"], SPEC, workers=1, max_spans=5).rows()
    sizes = {f"{t.roots[0].trace_id:032x}": len(t) for t in iter_traces(recorded["files"])}
    for r in rows:
        n = sizes[r["trace_id"]]
        if n > 5:
            assert r["outcome"] == "not_evaluated"
            assert r["reason"].startswith(f"oversized: {n} spans > limit 5")
    assert any(n > 5 for n in sizes.values())


def test_where_keeps_matching_spans_in_files_and_tables_alike(recorded: dict[str, Any]) -> None:
    spans: list[Span] = recorded["spans"]
    starts = sorted({min(s.start_ns for s in spans if s.trace_id == t) for t in {s.trace_id for s in spans}})
    cut = starts[6]  # the last six traces start at or after it
    where = [f"Timestamp >= {cut}"]
    from_files = grade_traces(recorded["files"], SPEC, workers=1, where=where).rows()
    from_table = grade_traces([recorded["parquet"]], SPEC, workers=1, where=where).rows()
    assert len({r["trace_id"] for r in from_files}) == 6
    assert from_table == _by_trace(from_files)


def test_where_on_span_kind_is_pushed_into_the_scan(recorded: dict[str, Any]) -> None:
    source = SpanTableSource(recorded["parquet"], "parquet")
    table = source.scan((parse_condition("SpanKind in client"),), 1 << 64, None)
    assert table.num_rows > 0 and set(table.column("SpanKind").to_pylist()) == {"Client"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Colour = red", "unknown field 'Colour'"),
        ("SpanKind in client,sideways", "unknown span kind 'sideways'"),
        ("Timestamp >= yesterday", "expected an ISO 8601 time"),
        ("Timestamp >= 2026-01-01T00:00:00", "give the time zone"),
        ("SpanKind < client", "supports only =, !=, in, not in"),
        ("SpanName", "expected `FIELD OP VALUE`"),
    ],
)
def test_a_bad_where_condition_is_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(BatchInputError, match=message):
        parse_condition(text)


def test_conversation_grouping_grades_turns_in_separate_traces_as_one_unit(tmp_path: Path) -> None:
    from _agents import scripted_agent
    from tracegrade import capture

    spans: list[Span] = []
    for steps in ([("search", {"q": "order"})], [("get_order", {"id": 1234})]):  # turn 1, turn 2
        with capture() as cap:
            scripted_agent(steps, name="support").run_sync("turn", conversation_id="conv-7")
        spans.extend(Span.from_readable(s) for s in cap.spans)
    spans.extend(record_runs(1))  # a lone trace of another conversation
    files = write_files(spans, tmp_path, files=2)  # the two turns land in different files
    spec = [{"TrajectoryMatch": {"expected_trajectory": ["search", "get_order"], "order": "exact"}}]
    by_trace = grade_traces(files, spec, workers=1).rows()
    assert len(by_trace) == 3 and sum(r["outcome"] == "passed" for r in by_trace) == 1  # only the lone full run
    result = grade_traces(files, spec, workers=1, group_by="conversation")
    rows = result.rows()
    assert result.table.column_names == [*COLUMNS, "conversation_id"]
    conv = [r for r in rows if r["conversation_id"] == "conv-7"]
    assert len(conv) == 1 and conv[0]["outcome"] == "passed", conv
    assert len(rows) == 2
    table = write_span_parquet(read_spans(files), tmp_path / "conv.parquet")
    assert grade_traces([table], spec, workers=2, group_by="conversation").rows() == rows


def test_parquet_and_jsonl_outputs_hold_the_same_rows(recorded: dict[str, Any], tmp_path: Path) -> None:
    as_parquet = grade_traces(recorded["files"], SPEC, workers=1, out=tmp_path / "r.parquet")
    as_jsonl = grade_traces(recorded["files"], SPEC, workers=1, out=tmp_path / "r.jsonl")
    assert pq.read_table(tmp_path / "r.parquet").to_pylist() == as_parquet.rows() == as_jsonl.rows()
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    assert len(lines) == 60 and set(json.loads(lines[0])) == set(COLUMNS)
    assert pq.read_schema(tmp_path / "r.parquet").field("score").type == pa.float64()


def test_summary_counts_pass_rates_and_worst_cohorts(recorded: dict[str, Any]) -> None:
    result = grade_traces(recorded["files"], SPEC, workers=1)
    summary = result.summary
    rows = result.rows()
    assert summary.units == 12 and summary.outcomes.total() == 60
    assert summary.units_failed == len({r["trace_id"] for r in rows if r["outcome"] != "passed"})
    assert result.exit_code == 1
    for cohort in summary.cohorts():
        mine = [r for r in rows if r["evaluator"] == cohort.evaluator and r["agent"] == cohort.agent]
        assert cohort.total == len(mine)
        assert cohort.pass_rate == sum(r["outcome"] == "passed" for r in mine) / len(mine)
    worst = summary.worst()
    assert worst and worst == sorted(worst, key=lambda k: k.pass_rate) and all(k.pass_rate < 1 for k in worst)
    assert worst[0].top_reason


def test_a_table_not_in_the_span_layout_is_a_clear_error(tmp_path: Path) -> None:
    pq.write_table(pa.table({"trace": ["a"], "name": ["x"]}), tmp_path / "other.parquet")
    with pytest.raises(
        BatchInputError, match=r"other\.parquet: not a span table .* missing column\(s\) Timestamp, TraceId"
    ):
        grade_traces([tmp_path / "other.parquet"], SPEC, workers=1)


def test_a_bad_id_in_a_table_names_the_column_and_value(recorded: dict[str, Any], tmp_path: Path) -> None:
    table = pq.read_table(recorded["parquet"])
    ids = table.column("SpanId").to_pylist()
    ids[3] = "not-hex!"
    pq.write_table(table.set_column(2, "SpanId", pa.array(ids)), tmp_path / "bad.parquet")
    with pytest.raises(BatchInputError, match="column SpanId: expected a 16-digit hex id, got 'not-hex!'"):
        grade_traces([tmp_path / "bad.parquet"], SPEC, workers=1)


def test_span_table_round_trips_spans_with_attributes_as_exported_text(recorded: dict[str, Any]) -> None:
    from tracegrade.batch._arrow import arrow_spans

    spans = list(read_spans(recorded["files"][0]))
    back = arrow_spans(spans_to_table(spans), "t")
    assert [(s.trace_id, s.span_id, s.parent_id, s.name, s.start_ns, s.end_ns, s.kind, s.status) for s in back] == [
        (s.trace_id, s.span_id, s.parent_id, s.name, s.start_ns, s.end_ns, s.kind, s.status) for s in spans
    ]
    assert all(b.attributes == {k: v if isinstance(v, str) else b.attributes[k] for k, v in s.attributes.items()}
               for b, s in zip(back, spans, strict=True))  # fmt: skip
    tokens = next(
        b.attributes["gen_ai.usage.input_tokens"] for b in back if "gen_ai.usage.input_tokens" in b.attributes
    )
    assert isinstance(tokens, str) and tokens.isdigit()  # as the ClickHouse exporter stores it


def test_import_is_light_and_names_the_extra_when_pyarrow_is_missing(tmp_path: Path) -> None:
    code = (
        "import sys\nimport tracegrade.batch as b\n"
        "assert not [m for m in sys.modules if m.startswith(('pyarrow', 'pyspark', 'deltalake'))]\n"
        "sys.modules['pyarrow'] = None\n"
        "try:\n    b.spans_to_table([])\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert 'pip install "tracegrade[batch]"' in out


# --- CLI -----------------------------------------------------------------------------------------


@pytest.fixture
def spec_file(tmp_path: Path) -> Path:
    import yaml

    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({"evaluators": SPEC}))
    return path


def test_cli_writes_results_and_exits_1_when_a_trace_fails(
    recorded: dict[str, Any], spec_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results.parquet"
    code = main(["batch", *map(str, recorded["files"]), "--spec", str(spec_file), "--out", str(out), "--workers", "1"])
    assert code == 1
    assert pq.read_table(out).num_rows == 60
    text = capsys.readouterr().out
    assert "pass rate by evaluator and agent" in text and "worst cohorts" in text
    assert "12 eval(s):" in text


def test_cli_exits_0_when_every_trace_passes(recorded: dict[str, Any], tmp_path: Path) -> None:
    spec = tmp_path / "lenient.yaml"
    spec.write_text("evaluators:\n  - MaxToolCalls: 10\n")
    assert main(["batch", str(recorded["parquet"]), "--spec", str(spec), "--workers", "1", "--summary-json"]) == 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--out", "r.csv"], "unknown suffix '.csv'"),
        (["--where", "Colour = red"], "unknown field"),
        (["--sample", "2"], "expected a rate in [0, 1]"),
        (["--sample", "0"], "no traces found"),
    ],
)
def test_cli_exits_2_on_bad_input(
    recorded: dict[str, Any], spec_file: Path, extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["batch", str(recorded["files"][0]), "--spec", str(spec_file), "--workers", "1", *extra]) == 2
    assert message in capsys.readouterr().err


def test_cli_exits_2_on_a_missing_source(spec_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["batch", "/nonexistent/traces", "--spec", str(spec_file)]) == 2
    assert "/nonexistent/traces: no such file or directory" in capsys.readouterr().err


def test_cli_prints_agent_names_and_reasons_literally(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from _agents import scripted_agent
    from tracegrade import capture, write_otlp_json

    with capture() as cap:
        scripted_agent([("search", {"q": "[bold red]x[/]"})], name="[red]evil[/red]").run_sync("go")
    path = write_otlp_json(cap, tmp_path / "t.json")
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - ToolCorrectness: {expected_tools: ['[blink]nope[/blink]']}\n")
    assert main(["batch", str(path), "--spec", str(spec), "--workers", "1"]) == 1
    out = capsys.readouterr().out
    assert "[red]evil[/red]" in out and "[blink]nope[/blink]" in out


def test_an_empty_spec_is_an_error_not_a_pass(recorded: dict[str, Any], tmp_path: Path) -> None:
    spec = tmp_path / "empty.yaml"
    spec.write_text("evaluators: []\n")
    with pytest.raises(SpecError, match="the `evaluators:` list is empty"):
        grade_traces(recorded["files"], spec, workers=1)
    with pytest.raises(BatchInputError, match="no evaluators"):
        grade_traces(recorded["files"], [], workers=1)


def test_a_time_window_on_a_microsecond_timestamp_column_compares_nanoseconds(
    recorded: dict[str, Any], tmp_path: Path
) -> None:
    table = pq.read_table(recorded["parquet"])
    micro = table.set_column(0, "Timestamp", table.column("Timestamp").cast(pa.timestamp("us", tz="UTC"), safe=False))
    pq.write_table(micro, tmp_path / "us.parquet")
    cut = sorted(table.column("Timestamp").cast(pa.int64()).to_pylist())[len(table) // 2]
    source = SpanTableSource(tmp_path / "us.parquet", "parquet")
    kept = source.scan((parse_condition(f"Timestamp >= {cut}"),), 1 << 64, None)
    assert 0 < kept.num_rows < len(table)
    assert min(kept.column("Timestamp").cast(pa.int64()).to_pylist()) * 1000 >= cut - 999


def test_progress_goes_to_stderr_only_when_asked(recorded: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    grade_traces(recorded["files"], SPEC, workers=1)
    assert capsys.readouterr().err == ""  # not a terminal: no progress display
    grade_traces(recorded["files"], SPEC, workers=1, progress=True)
    captured = capsys.readouterr()
    assert "12 unit(s)" in captured.err and captured.out == ""


def test_a_directory_mixing_parquet_and_trace_files_is_refused(recorded: dict[str, Any], tmp_path: Path) -> None:
    import shutil

    shutil.copy(recorded["parquet"], tmp_path / "spans.parquet")
    shutil.copy(recorded["files"][0], tmp_path / "traces.jsonl")
    with pytest.raises(BatchInputError, match="holds both Parquet files and trace files"):
        grade_traces([tmp_path], SPEC, workers=1)


def test_span_table_keeps_events_per_span_resources_and_empty_attribute_maps(tmp_path: Path) -> None:
    from tracegrade.batch._arrow import SpanTableSource, arrow_spans
    from tracegrade.spans import SpanEvent

    res_a, res_b = {"service.name": "a", "deployment": "prod"}, {"service.name": "b"}
    spans = [
        Span(1, 10, None, "root", 100, 200, {"k": "v", "n": "1"}, resource=res_a),
        Span(1, 11, 10, "chat", 110, 150, {}, events=(SpanEvent("gen_ai.choice", 120, {"index": "0"}),
                                                       SpanEvent("exception", 130)), resource=res_a),
        Span(2, 20, None, "other", 300, 400, {"x": "y"}, resource=res_b),
        Span(2, 21, 20, "child", 310, 320, {"k": "w"}, resource=res_a),
    ]  # fmt: skip
    write_span_parquet(spans, tmp_path / "t.parquet")
    table = SpanTableSource(tmp_path / "t.parquet", "parquet").scan((), 1 << 64, None)
    back = arrow_spans(table, "t")
    assert [s.attributes for s in back] == [s.attributes for s in spans]
    assert [s.resource for s in back] == [res_a, res_a, res_b, res_a]
    assert back[1].events == (SpanEvent("gen_ai.choice", 120, {"index": "0"}), SpanEvent("exception", 130, {}))
    assert [s.events for s in back[:1] + back[2:]] == [(), (), ()]
    no_events = table.drop_columns(["Events.Timestamp", "Events.Name", "Events.Attributes"])
    assert [s.events for s in arrow_spans(no_events, "t")] == [()] * 4
    nulls = table.set_column(
        table.schema.get_field_index("SpanAttributes"), "SpanAttributes",
        pa.array([None, [("k", "v")], None, []], table.schema.field("SpanAttributes").type),
    )  # fmt: skip
    assert [s.attributes for s in arrow_spans(nulls, "t")] == [{}, {"k": "v"}, {}, {}]


def test_the_callers_code_runs_with_the_cyclic_gc_on_between_units(recorded: dict[str, Any]) -> None:
    import gc

    from tracegrade.batch._core import GradingPlan, Options
    from tracegrade.batch._plan import OtlpTask, iter_task

    plan = GradingPlan(build_evaluators(SPEC), Options())
    assert gc.isenabled()
    seen = [gc.isenabled() for _ in iter_task(OtlpTask(str(recorded["files"][0])), plan)]
    assert seen == [True] * 6 and gc.isenabled()


def test_the_python_summary_line_is_the_one_the_cli_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parent.parent
    result = grade_traces([root / "fixtures" / "dialects"], root / "fixtures" / "spec.yaml", workers=1)
    main(["batch", str(root / "fixtures" / "dialects"), "--spec", str(root / "fixtures" / "spec.yaml"),
          "--out", str(tmp_path / "r.parquet"), "--no-progress"])  # fmt: skip
    line = result.summary.line()
    assert line == "4 eval(s): 4 passed, 0 failed; checks: 24 passed, 0 failed, 0 not evaluated, 0 errors"
    printed = capsys.readouterr()
    assert line in printed.out + printed.err


@pytest.mark.parametrize(
    "score", [0.5, None, float("nan"), float("inf"), 1], ids=["float", "none", "nan", "inf", "int"]
)
def test_result_writer_keeps_every_value_of_its_rows(tmp_path: Path, score: Any) -> None:
    from tracegrade.batch._result import ResultWriter

    cols = ("trace_id", "root_span_id", "agent", "evaluator", "params_hash", "outcome", "score", "reason")
    rows = [
        ("a" * 32, "b" * 16, None, "MaxToolCalls", "h", "passed", score, 'quote " newline \n tab \t é 😀'),
        (
            "c" * 32,
            "d" * 16,
            "agent",
            "MaxToolCalls",
            "h",
            "failed",
            0.0,
            "lone \ud800 surrogate",
        ),  # UTF-8 cannot hold it
    ]
    writer = ResultWriter(tmp_path / "r.parquet", cols)
    writer.write(rows)
    writer.close()
    got, second = pq.read_table(tmp_path / "r.parquet").to_pylist()
    assert got["reason"] == rows[0][7] and got["agent"] is None and got["outcome"] == "passed"
    assert second["reason"] == "lone \\ud800 surrogate" and second["agent"] == "agent" and second["score"] == 0.0
    if score is None:
        assert got["score"] is None
    elif score != score:
        assert got["score"] != got["score"]  # NaN stays NaN (JSON would have made it null)
    else:
        assert got["score"] == float(score)


def test_json_lines_results_keep_a_reason_utf8_cannot_hold_as_its_escape(tmp_path: Path) -> None:
    from tracegrade.batch._result import ResultWriter

    writer = ResultWriter(tmp_path / "r.jsonl", ("trace_id", "score", "reason"))
    writer.write([("a" * 32, 1.0, "ok \ud800")])
    writer.close()
    assert json.loads((tmp_path / "r.jsonl").read_text()) == {
        "trace_id": "a" * 32,
        "score": 1.0,
        "reason": "ok \\ud800",
    }


def test_writing_parquet_results_does_not_import_pandas(tmp_path: Path) -> None:
    code = (
        "import sys\nfrom tracegrade.batch._result import ResultWriter\n"
        f"w = ResultWriter({str(tmp_path / 'r.parquet')!r}, ('trace_id', 'score', 'reason'))\n"
        "w.write([('a' * 32, 1.0, 'ok')])\nw.close()\nprint('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    assert pq.read_table(tmp_path / "r.parquet").to_pylist() == [{"trace_id": "a" * 32, "score": 1.0, "reason": "ok"}]



def test_a_worker_imports_no_judge_and_the_judges_load_by_name() -> None:
    """The modules a batch worker starts with define no pydantic model (the first one loads every
    installed pydantic plugin); the judges still import by name from `tracegrade.evaluators`."""
    code = (
        "import sys\nimport tracegrade.batch._plan, tracegrade.dialects, tracegrade.ingest\n"
        "print(sorted(m for m in sys.modules if m.endswith('.judge') or m.startswith('logfire')))\n"
        "import tracegrade.evaluators as e\nfrom tracegrade.evaluators import JudgeEvaluator\n"
        "print(JudgeEvaluator.__module__, 'TrajectoryJudge' in dir(e), e.TrajectoryJudge.__name__)\n"
        "e.NoSuchEvaluator\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.stdout.splitlines() == ["[]", "tracegrade.evaluators.judge True TrajectoryJudge"]
    assert "module 'tracegrade.evaluators' has no attribute 'NoSuchEvaluator'" in proc.stderr


def test_the_workers_start_only_when_a_pool_runs(recorded: dict[str, Any], tmp_path: Path) -> None:
    """Two trace files on two workers start the workers' fork server (before the spec is read); one
    file, one task, is graded in this process and starts none."""
    tests = str(Path(__file__).resolve().parent)
    counts = []
    for files in (recorded["files"][:1], recorded["files"]):
        code = (
            f"import os, sys\nsys.path.insert(0, {tests!r})\nfrom _batch_data import SPEC\n"
            "from tracegrade.batch import grade_traces\n"
            f"r = grade_traces({[str(f) for f in files]!r}, SPEC, workers=2)\n"
            "pid = os.getpid()\nkids = open(f'/proc/{pid}/task/{pid}/children').read().split()\n"
            "print(r.summary.units, sum(b'forkserver' in open(f'/proc/{k}/cmdline', 'rb').read() for k in kids))\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        counts.append(tuple(map(int, out.split())))
    units = len(trace_ids(recorded["spans"]))
    assert counts[0] == (len(trace_ids(list(read_spans(recorded["files"][0])))), 0)
    assert counts[1] == (units, 1)  # the workers are the fork server's children


CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"
CORPUS_SPEC: list[Any] = [
    {"MaxToolCalls": 10},
    {"MaxModelRequests": 10},
    {"ToolCallEvaluator": {"must_include": ["get_weather"]}},
]


def _corpus_with_logs(tmp_path: Path) -> Path:
    """The framework runs whose message content (and so their tool calls) arrived as OTLP log records."""
    d = tmp_path / "runs"
    d.mkdir()
    for logs in sorted(CORPUS.glob("*.logs.json")):
        stem = logs.name.removesuffix(".logs.json")
        (d / logs.name).write_bytes(logs.read_bytes())
        (d / f"{stem}.traces.json").write_bytes((CORPUS / f"{stem}.traces.json").read_bytes())
    return d


def _graded_like_grade(source: Any, spec: list[Any]) -> list[tuple[str, str, str, str | None]]:
    """(trace id, evaluator, outcome, reason) as `tracegrade grade` grades `source`: every logs file
    attached to the traces of every trace file."""
    evaluators = build_evaluators(spec)
    out = []
    for tree in iter_traces(source):
        first = min(tree.roots, key=lambda r: (r.start_ns, r.span_id))
        out += [(f"{first.trace_id:032x}", e.name, e.outcome, e.reasoning) for e in grade(tree, evaluators)]
    return sorted(out)


@pytest.mark.parametrize("workers", [1, 2])
def test_log_records_among_the_sources_are_attached_as_load_traces_attaches_them(tmp_path: Path, workers: int) -> None:
    d = _corpus_with_logs(tmp_path)
    rows = grade_traces([d], CORPUS_SPEC, workers=workers).rows()
    got = sorted((r["trace_id"], r["evaluator"], r["outcome"], r["reason"]) for r in rows)
    assert got == _graded_like_grade(d, CORPUS_SPEC)
    # the logs made a difference: without them these runs' tool calls are not recorded
    without = grade_traces(sorted(d.glob("*.traces.json")), CORPUS_SPEC, workers=1).rows()
    assert sum(r["outcome"] == "not_evaluated" for r in without) > sum(r["outcome"] == "not_evaluated" for r in rows)


def test_log_records_reach_units_cut_by_where_and_by_conversation(tmp_path: Path) -> None:
    d = _corpus_with_logs(tmp_path)
    everything = sorted(
        (r["trace_id"], r["evaluator"], r["outcome"]) for r in grade_traces([d], CORPUS_SPEC, workers=1).rows()
    )
    kept_all = grade_traces([d], CORPUS_SPEC, where=["Duration >= 0"], workers=1).rows()
    assert sorted((r["trace_id"], r["evaluator"], r["outcome"]) for r in kept_all) == everything
    by_conv = grade_traces([d], CORPUS_SPEC, group_by="conversation", workers=1).rows()
    by_trace = {(r["trace_id"], r["evaluator"]): r["outcome"] for r in grade_traces([d], CORPUS_SPEC, workers=1).rows()}
    single = [r for r in by_conv if r["conversation_id"] is None]  # traces naming no conversation: their own unit
    assert single and all(by_trace[(r["trace_id"], r["evaluator"])] == r["outcome"] for r in single)


def test_a_logs_file_with_only_span_tables_is_a_clear_error(recorded: dict[str, Any]) -> None:
    logs = next(CORPUS.glob("*.logs.json"))
    with pytest.raises(BatchInputError, match="logs file attaches to the spans of OTLP trace files"):
        grade_traces([recorded["parquet"], logs], SPEC)


def test_a_logs_file_changed_between_jobs_is_read_again(tmp_path: Path) -> None:
    from tracegrade.batch import _plan

    d = _corpus_with_logs(tmp_path)
    logs = sorted(d.glob("*.logs.json"))
    first = grade_traces([d], CORPUS_SPEC, workers=1).rows()
    assert _plan._LOGS == ((), {})  # nothing is kept once the job is done
    for f in logs:  # the same files, now without records: the content they gave is gone
        f.write_text('{"resourceLogs": []}')
    second = grade_traces([d], CORPUS_SPEC, workers=1).rows()
    without = grade_traces(sorted(d.glob("*.traces.json")), CORPUS_SPEC, workers=1).rows()
    # the same verdicts; read without them, the reasons also name the logs files beside the trace files
    verdicts = [[{**r, "reason": None} for r in rows] for rows in (first, second, without)]
    assert verdicts[1] == verdicts[2] != verdicts[0]
    assert any("logs.json, beside the trace file but not given" in r["reason"] for r in without)


# --- a failed job leaves no results file: rows go to a temporary file moved into place on success ---


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
@pytest.mark.parametrize("workers", [1, 2])
def test_a_failed_job_keeps_the_previous_results_and_leaves_no_temporary_file(
    recorded: dict[str, Any], tmp_path: Path, suffix: str, workers: int
) -> None:
    out = tmp_path / "out" / f"results{suffix}"
    out.parent.mkdir()
    earlier = grade_traces(recorded["files"], SPEC, workers=1, out=out).rows()
    before = out.read_bytes()
    assert len(earlier) == 60 and sorted(p.name for p in out.parent.iterdir()) == [out.name]
    bad = tmp_path / "z-bad.json"  # read last: the rows of the good files are written before it fails
    doc = json.loads(recorded["files"][0].read_text().splitlines()[0])
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["startTimeUnixNano"] = "soon"
    bad.write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError, match="startTimeUnixNano"):
        grade_traces([*recorded["files"], bad], SPEC, workers=workers, out=out)
    assert out.read_bytes() == before  # the earlier job's results, untouched
    assert sorted(p.name for p in out.parent.iterdir()) == [out.name]  # no temporary file left behind
    out.unlink()
    with pytest.raises(TraceFormatError):
        grade_traces([*recorded["files"], bad], SPEC, workers=workers, out=out)
    assert list(out.parent.iterdir()) == []  # no results file at all, not a complete-looking partial one


def test_the_cli_batch_that_fails_exits_2_and_writes_no_results_file(
    recorded: dict[str, Any], spec_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "z-bad.json"
    bad.write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": 7}]}]}]}')
    out = tmp_path / "r.parquet"
    code = main(["batch", *map(str, recorded["files"]), str(bad), "--spec", str(spec_file), "--out", str(out),
                 "--workers", "1", "--no-progress"])  # fmt: skip
    assert code == 2 and "z-bad.json" in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.glob(".r.parquet.*"))


# --- an export request written twice (an exporter's retry) grades as if written once ---


def test_a_file_with_a_retried_request_grades_like_the_file_without_it(recorded: dict[str, Any], tmp_path: Path) -> None:
    from tracegrade.ingest import TraceFileWarning

    lines = recorded["files"][0].read_text().splitlines()
    retried = tmp_path / "retried.jsonl"
    retried.write_text("\n".join([*lines[:3], lines[1], *lines[3:]]) + "\n")  # request 2 again, after request 3
    once = grade_traces([recorded["files"][0]], SPEC, workers=1).rows()
    with pytest.warns(TraceFileWarning, match="exact duplicate span"):
        twice = grade_traces([retried], SPEC, workers=1).rows()
    assert twice == once and len(once) > 0


# --- one collector `file` exporter in both pipelines: files holding trace and logs requests ------------


def _collector_files(tmp_path: Path, logs_first: bool) -> tuple[Path, Path]:
    """The framework runs whose tool calls arrived as log records naming their traces: as a traces and a
    logs file each, and as one JSON lines file holding both signals, as the collector's `file` exporter
    writes them (per trace, its records then its spans with `logs_first`, else its spans then its records)."""
    pairs, mixed = tmp_path / "pairs", tmp_path / ("logs-first" if logs_first else "traces-first")
    pairs.mkdir()
    mixed.mkdir()
    for logs in sorted(CORPUS.glob("*.logs.json")):
        stem = logs.name.removesuffix(".logs.json")
        traces = json.loads((CORPUS / f"{stem}.traces.json").read_text())
        records = json.loads(logs.read_text())
        if not all(r.get("traceId") for rl in records["resourceLogs"] for sl in rl["scopeLogs"] for r in sl["logRecords"]):
            continue  # records naming no trace are offered to every tree of every trace file a logs file is given with
        (pairs / logs.name).write_bytes(logs.read_bytes())
        (pairs / f"{stem}.traces.json").write_bytes((CORPUS / f"{stem}.traces.json").read_bytes())
        lines = []
        for tid in dict.fromkeys(s["traceId"] for rs in traces["resourceSpans"] for ss in rs["scopeSpans"]
                                 for s in ss["spans"]):  # fmt: skip
            span_part = {"resourceSpans": [
                {**rs, "scopeSpans": [{**ss, "spans": [s for s in ss["spans"] if s["traceId"] == tid]}
                                      for ss in rs["scopeSpans"]]} for rs in traces["resourceSpans"]]}  # fmt: skip
            log_part = {"resourceLogs": [
                {**rl, "scopeLogs": [{**sl, "logRecords": [r for r in sl["logRecords"] if r["traceId"] == tid]}
                                     for sl in rl["scopeLogs"]]} for rl in records["resourceLogs"]]}  # fmt: skip
            pair = [log_part, span_part] if logs_first else [span_part, log_part]
            lines += [json.dumps(p) for p in pair]
        (mixed / f"{stem}.jsonl").write_text("\n".join(lines) + "\n")
    return pairs, mixed


@pytest.mark.parametrize("logs_first", [True, False])
@pytest.mark.parametrize("workers", [1, 2])
def test_files_holding_both_signals_grade_like_the_traces_and_logs_files(tmp_path: Path, logs_first: bool,
                                                                         workers: int) -> None:  # fmt: skip
    import warnings

    pairs, mixed = _collector_files(tmp_path, logs_first)
    assert len(list(mixed.iterdir())) > 40
    expected = sorted((r["trace_id"], r["evaluator"], r["outcome"], r["reason"])
                      for r in grade_traces([pairs], CORPUS_SPEC, workers=1).rows())  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing skipped
        rows = grade_traces([mixed], CORPUS_SPEC, workers=workers).rows()
        assert sorted((r["trace_id"], r["evaluator"], r["outcome"], r["reason"]) for r in rows) == expected
        by_conv = grade_traces([mixed], CORPUS_SPEC, workers=1, group_by="conversation").rows()
    assert by_conv == grade_traces([pairs], CORPUS_SPEC, workers=1, group_by="conversation").rows()
    one = next(mixed.glob("openai--otel-genai--content-on.jsonl"))
    rows = grade_traces([one], CORPUS_SPEC, workers=1).rows()  # a single such file is a source on its own
    assert sorted((r["trace_id"], r["evaluator"], r["outcome"]) for r in rows) == sorted(
        (r["trace_id"], r["evaluator"], r["outcome"]) for r in grade_traces(
            [CORPUS / "openai--otel-genai--content-on.traces.json", CORPUS / "openai--otel-genai--content-on.logs.json"],
            CORPUS_SPEC, workers=1).rows())  # fmt: skip


def test_a_span_table_with_a_row_written_twice_grades_like_the_table_without_it(
    recorded: dict[str, Any], tmp_path: Path
) -> None:
    from tracegrade.ingest import TraceFileWarning

    spans = list(read_spans(recorded["files"]))
    twice = write_span_parquet([*spans, spans[3], spans[7]], tmp_path / "twice.parquet")
    once = grade_traces([recorded["parquet"]], SPEC, workers=1).rows()
    with pytest.warns(TraceFileWarning, match="exact duplicate span row"):
        rows = grade_traces([twice], SPEC, workers=1).rows()
    assert _by_trace(rows) == _by_trace(once) and len(once) == 12 * 5
    changed = dataclasses.replace(spans[3], name="another span")  # two different spans with one id: not dropped
    bad = write_span_parquet([*spans, changed], tmp_path / "bad.parquet")
    with pytest.raises(Exception, match=f"duplicate span id {changed.span_id:016x}"):
        grade_traces([bad], SPEC, workers=1)

# --- the summary tables sent recorded text (agent names, case ids) to the terminal raw ---------------


def test_cli_summary_tables_write_control_characters_of_recorded_text_as_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry import trace

    from _agents import scripted_agent
    from tracegrade import capture, write_otlp_json

    case = {"eval.case": "c\x1b]0;x\x07"}
    with capture() as cap, trace.get_tracer("tests").start_as_current_span("case", attributes=case):
        scripted_agent([("search", {"q": "x"})], name="sup\x1b[2J\x1b[31mport\u202e").run_sync("go")
    path = write_otlp_json(cap, tmp_path / "t\x1b[2J.json")
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - ToolCorrectness: {expected_tools: [get_order]}\n")
    monkeypatch.setenv("COLUMNS", "400")  # no cell clipped to the width
    args = ["--workers", "1", "--case-attribute", "eval.case", "--progress"]
    assert main(["batch", str(path), "--spec", str(spec), *args]) == 1
    out, err = capsys.readouterr()
    assert not any(c in out + err for c in "\x1b\x07\u202e")
    assert out.count("sup\\x1b[2J\\x1b[31mport\\u202e") == 2  # the pass-rate and worst-cohorts tables
    assert "c\\x1b]0;x\\x07" in out  # the case table
    assert "t\\x1b[2J.json" in err  # the progress display names the file


# --- grade_traces with no unit left after sampling and filters returned exit code 0 (a pass) -------


def test_no_unit_graded_is_exit_code_2_in_python_as_in_the_cli(recorded: dict[str, Any]) -> None:
    for options in ({"sample": 0.0}, {"where": ["SpanName = no-such-span"]}):
        result = grade_traces(recorded["files"], SPEC, workers=1, **options)
        assert result.summary.units == 0 and result.exit_code == 2
    assert grade_traces(recorded["files"][:1], [{"MaxToolCalls": 10}], workers=1).exit_code == 0
