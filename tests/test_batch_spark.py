"""The Spark engine (local mode) yields the local engine's rows: OTLP files, Parquet and Delta,
grouped by trace or by conversation. One SparkSession for the whole test session."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _batch_data import SPEC, record_runs, write_files
from tracegrade.batch import grade_traces, write_span_parquet
from tracegrade.errors import BatchInputError
from tracegrade.ingest import read_spans
from tracegrade.spans import Span

pytestmark = pytest.mark.skipif(
    shutil.which("java") is None and not os.environ.get("JAVA_HOME"),
    reason="the Spark engine tests need a JVM (no java on PATH and JAVA_HOME unset)",
)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark", reason="pyspark is not installed (the spark extra)")
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]").appName("tracegrade-tests")
        .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )  # fmt: skip
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("spark")
    spans = record_runs(8)
    for steps in ([("search", {"q": "a"})], [("get_order", {"id": 1234})]):
        from _agents import scripted_agent
        from tracegrade import capture

        with capture() as cap:
            scripted_agent(steps, name="support").run_sync("turn", conversation_id="conv-1")
        spans.extend(Span.from_readable(s) for s in cap.spans)
    files = write_files(spans, d, files=3)
    parquet = write_span_parquet(list(read_spans(files)), d / "spans.parquet")
    return {"files": files, "parquet": parquet, "dir": d}


def test_spark_gives_the_local_rows_for_files_tables_and_delta(spark: Any, sources: dict[str, Any]) -> None:
    import pyarrow.parquet as pq
    from deltalake import write_deltalake

    write_deltalake(str(sources["dir"] / "delta"), pq.read_table(sources["parquet"]))
    all_sources = [*sources["files"], sources["parquet"], sources["dir"] / "delta"]
    options: dict[str, Any] = {"sample": 0.8, "where": ["SpanKind in internal,client"]}
    local = grade_traces(all_sources, SPEC, workers=1, **options).rows()
    on_spark = grade_traces(all_sources, SPEC, engine="spark", spark=spark, **options).rows()
    assert on_spark == local
    assert len({r["trace_id"] for r in local}) >= 3


def test_spark_gives_the_local_rows_for_conversations(spark: Any, sources: dict[str, Any]) -> None:
    spec = [{"TrajectoryMatch": {"expected_trajectory": ["search", "get_order"], "order": "exact"}}]
    for src in (sources["files"], [sources["parquet"]]):
        local = grade_traces(src, spec, workers=1, group_by="conversation").rows()
        on_spark = grade_traces(src, spec, engine="spark", spark=spark, group_by="conversation").rows()
        assert on_spark == local
        conv = [r for r in local if r["conversation_id"] == "conv-1"]
        assert len(conv) == 1 and conv[0]["outcome"] == "passed"


def test_spark_grades_a_table_in_trace_id_ranges_with_the_local_rows(
    spark: Any, sources: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracegrade.batch import _spark

    local = grade_traces([sources["parquet"]], SPEC, workers=1).rows()
    monkeypatch.setattr(_spark, "SPANS_PER_JOB", 40)  # the table's ~80 spans: two jobs, one per id range
    jobs = spark.sparkContext.statusTracker()
    before = len(jobs.getJobIdsForGroup(None))
    on_spark = grade_traces([sources["parquet"]], SPEC, engine="spark", spark=spark).rows()
    assert on_spark == local and len(local) == 10 * 5
    assert len(jobs.getJobIdsForGroup(None)) - before >= 2


def test_spark_gives_the_local_rows_with_a_case_id_column_and_redacted_reasons(spark: Any, tmp_path: Path) -> None:
    from _batch_data import CARD_ID, record_cases

    files = write_files(record_cases(), tmp_path, files=2)
    options: dict[str, Any] = {"case_attribute": "eval.case", "redact": ["id"]}
    local = grade_traces(files, SPEC, workers=1, **options)
    on_spark = grade_traces(files, SPEC, engine="spark", spark=spark, **options)
    assert on_spark.rows() == local.rows()
    assert {r["case_id"] for r in local.rows()} == {"refund", "hello", None}
    assert not any(str(CARD_ID) in r["reason"] for r in local.rows())
    assert on_spark.summary.to_dict()["case_runs"] == local.summary.to_dict()["case_runs"]


def test_spark_attaches_log_records_as_the_local_engine_does(spark: Any, tmp_path: Path) -> None:
    corpus = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"
    for logs in sorted(corpus.glob("openai--otel-genai--*.logs.json")):  # content only in log records
        stem = logs.name.removesuffix(".logs.json")
        (tmp_path / logs.name).write_bytes(logs.read_bytes())
        (tmp_path / f"{stem}.traces.json").write_bytes((corpus / f"{stem}.traces.json").read_bytes())
    spec: list[Any] = [{"MaxToolCalls": 10}, {"ToolCallEvaluator": {"must_include": ["get_weather"]}}]
    for group_by in ("trace", "conversation"):
        local = grade_traces([tmp_path], spec, workers=1, group_by=group_by).rows()  # type: ignore[arg-type]
        on_spark = grade_traces([tmp_path], spec, engine="spark", spark=spark, group_by=group_by).rows()  # type: ignore[arg-type]
        assert on_spark == local
        assert any(r["outcome"] == "passed" for r in local if r["evaluator"] == "MaxToolCalls")


def test_spark_and_local_group_and_order_traces_whose_ids_mix_letter_case(
    spark: Any, sources: dict[str, Any], tmp_path: Path
) -> None:
    """Every other span's TraceId in upper case: each trace is still one unit, and both engines give
    the traces in trace-id order."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(sources["parquet"])
    ids = table.column("TraceId").to_pylist()
    mixed = [i.upper() if k % 2 else i for k, i in enumerate(ids)]
    assert mixed != ids
    table = table.set_column(table.schema.get_field_index("TraceId"), "TraceId", pa.array(mixed, pa.string()))
    path = tmp_path / "mixed.parquet"
    pq.write_table(table.take(pc.sort_indices(table, [("SpanId", "descending")])), path)  # rows out of order
    reference = grade_traces([sources["parquet"]], SPEC, workers=1).rows()
    local = grade_traces([path], SPEC, workers=1).rows()
    on_spark = grade_traces([path], SPEC, engine="spark", spark=spark).rows()
    assert on_spark == local == reference
    traces = [r["trace_id"] for r in local[:: len(SPEC)]]
    assert traces == sorted(traces) and len(traces) == len(set(ids))


# --- bad input on Spark: exit 1 and a JVM traceback, not the local engine's one-line error and exit 2 ---


def test_spark_reports_bad_input_with_the_local_engines_error_and_exit_code(
    spark: Any, sources: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Errors raised in Spark tasks come back as they were raised; table columns are checked before any job."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tracegrade.cli import main
    from tracegrade.errors import TraceFormatError

    table = pq.read_table(sources["parquet"])
    kinds = table.column("SpanKind").to_pylist()
    kinds[len(kinds) - 3] = "Weird"
    bad_kind = tmp_path / "badkind.parquet"
    pq.write_table(table.set_column(table.schema.get_field_index("SpanKind"), "SpanKind", pa.array(kinds)), bad_kind)
    no_duration = tmp_path / "nodur.parquet"
    pq.write_table(table.drop_columns(["Duration"]), no_duration)
    truncated = tmp_path / "truncated.json"
    truncated.write_text('{"resourceSpans": [')
    spec = tmp_path / "spec.yaml"
    spec.write_text("evaluators:\n  - MaxToolCalls: 10\n")
    cases: list[list[str]] = [
        [str(truncated)], [str(truncated), "--group-by", "conversation"], [str(bad_kind)],
        [str(bad_kind), "--group-by", "conversation"], [str(no_duration), "--where", "Duration>1ms"],
    ]  # fmt: skip
    messages = []
    for args in cases:
        errors = []
        for engine in ("local", "spark"):
            code = main(["batch", *args, "--spec", str(spec), "--engine", engine, "--workers", "1"])
            errors.append(capsys.readouterr().err)
            assert code == 2, (engine, args, errors[-1])
        assert errors[0] == errors[1] and errors[0].count("\n") == 1
        assert errors[0].startswith("tracegrade batch: error:")
        messages.append(errors[0])
    assert f"{truncated}:1: column 20: truncated JSON" in messages[0]
    assert "unknown SpanKind 'Weird'" in messages[2] and "the table has no Duration column" in messages[4]
    from tracegrade.batch._spark import TaskTraceback

    unknown_kind = r"span [0-9a-f]{16} of trace [0-9a-f]{32}: unknown SpanKind 'Weird'"  # named by its ids
    with pytest.raises(BatchInputError, match=unknown_kind) as e:
        grade_traces([bad_kind], SPEC, engine="spark", spark=spark)
    assert isinstance(e.value.__cause__, TaskTraceback) and "Traceback" in str(e.value.__cause__)
    with pytest.raises(TraceFormatError, match="truncated JSON"):
        grade_traces([truncated], SPEC, engine="spark", spark=spark)


# --- grouping by conversation on Spark split a trace whose TraceId letter case varies into two units ---


def test_spark_groups_conversations_of_traces_whose_ids_mix_letter_case_as_local(
    spark: Any, sources: dict[str, Any], tmp_path: Path
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(sources["parquet"])
    attrs = [[(k, v) for k, v in a if k != "gen_ai.conversation.id" or v == "conv-1"]
             for a in table.column("SpanAttributes").to_pylist()]  # fmt: skip
    i = table.schema.get_field_index("SpanAttributes")
    table = table.set_column(i, "SpanAttributes", pa.array(attrs, table.schema.field(i).type))  # only conv-1 names one
    plain = tmp_path / "plain.parquet"
    pq.write_table(table, plain)
    ids = table.column("TraceId").to_pylist()
    mixed = pa.array([i.upper() if k % 2 else i for k, i in enumerate(ids)], pa.string())
    path = tmp_path / "mixed.parquet"
    pq.write_table(table.set_column(table.schema.get_field_index("TraceId"), "TraceId", mixed), path)
    reference = grade_traces([plain], SPEC, workers=1, group_by="conversation").rows()
    on_spark = grade_traces([path], SPEC, engine="spark", spark=spark, group_by="conversation").rows()
    assert on_spark == grade_traces([path], SPEC, workers=1, group_by="conversation").rows() == reference
    assert len(reference) == len(SPEC) * (len(set(ids)) - 1)  # the two turns of conv-1 are one unit
    assert sum(r["conversation_id"] is None for r in reference) == len(SPEC) * (len(set(ids)) - 2)


# --- Spark read the files of a partitioned table, not its partition columns (hive, Delta) -----------


def test_spark_reads_the_partition_columns_of_hive_datasets_and_delta_tables(
    spark: Any, sources: dict[str, Any], tmp_path: Path
) -> None:
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq
    from deltalake import write_deltalake

    table = pq.read_table(sources["parquet"])
    ids = table.column("TraceId").to_pylist()
    chosen = set(sorted(set(ids))[::3])
    services = ["svc a" if i in chosen else "svc-b" for i in ids]
    resources = [[(k, svc if k == "service.name" else v) for k, v in attrs]
                 for attrs, svc in zip(table.column("ResourceAttributes").to_pylist(), services, strict=True)]  # fmt: skip
    for name, values in (("ServiceName", services), ("ResourceAttributes", resources)):
        i = table.schema.get_field_index(name)
        table = table.set_column(i, name, pa.array(values, table.schema.field(i).type))
    by_service = ds.partitioning(pa.schema([("ServiceName", pa.string())]), flavor="hive")
    ds.write_dataset(table, tmp_path / "hive", format="parquet", partitioning=by_service)
    write_deltalake(str(tmp_path / "delta"), table, partition_by=["ServiceName"])
    assert "ServiceName" not in pq.read_schema(next((tmp_path / "hive").rglob("*.parquet"))).names
    for src in ("hive", "delta"):
        options: dict[str, Any] = {"where": ["ServiceName = svc a"]}
        local = grade_traces([tmp_path / src], SPEC, workers=1, **options).rows()
        assert grade_traces([tmp_path / src], SPEC, engine="spark", spark=spark, **options).rows() == local
        assert {r["trace_id"] for r in local} == chosen


# --- Spark refused trace files and span tables together when grouping by conversation --------------


def test_spark_groups_conversations_across_trace_files_and_span_tables_as_local(spark: Any, tmp_path: Path) -> None:
    """One conversation whose first turn is in an OTLP file and second in a span table is one unit."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from _agents import scripted_agent
    from tracegrade import capture

    turns: list[list[Span]] = []
    for steps in ([("search", {"q": "a"})], [("get_order", {"id": 1234})]):
        with capture() as cap:
            scripted_agent(steps, name="support").run_sync("turn", conversation_id="conv-x")
        turns.append([Span.from_readable(s) for s in cap.spans])
    files = write_files(turns[0] + record_runs(2), tmp_path, files=2)
    table = write_span_parquet(turns[1] + record_runs(3), tmp_path / "spans.parquet")
    spec = [{"TrajectoryMatch": {"expected_trajectory": ["search", "get_order"], "order": "exact"}}]
    local = grade_traces([*files, table], spec, workers=1, group_by="conversation").rows()
    on_spark = grade_traces([*files, table], spec, engine="spark", spark=spark, group_by="conversation").rows()
    assert on_spark == local and len(local) == 6
    assert [r["outcome"] for r in local if r["conversation_id"] == "conv-x"] == ["passed"]
    rows = pq.read_table(table)
    kinds = rows.column("SpanKind").to_pylist()
    kinds[-1] = "Weird"
    pq.write_table(rows.set_column(rows.schema.get_field_index("SpanKind"), "SpanKind", pa.array(kinds)), table)
    errors = []
    for engine in ("local", "spark"):
        with pytest.raises(BatchInputError, match="unknown SpanKind 'Weird'") as e:
            grade_traces([*files, table], spec, engine=engine, spark=spark, group_by="conversation")  # type: ignore[arg-type]
        errors.append(str(e.value))
    assert errors[0] == errors[1]
