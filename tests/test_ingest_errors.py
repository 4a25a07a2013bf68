"""Bad trace files raise `TraceFormatError` naming the file, the line or JSON path, and the problem."""

from __future__ import annotations

import copy
import gzip
import json
import math
import pickle
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracegrade import grade, load_traces
from tracegrade.cli import main as cli_main
from tracegrade.errors import TraceFormatError
from tracegrade.evaluators import ToolCorrectness
from tracegrade.ingest import read_spans

TRACE = "0af7651916cd43dd8448eb211c80319c"
SPANS = "resourceSpans[0].scopeSpans[0].spans"


def span(span_id: str = "00000000000000a1", parent: str | None = None, **extra: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"traceId": TRACE, "spanId": span_id, "name": "s", "startTimeUnixNano": "1",
                         "endTimeUnixNano": "2"}  # fmt: skip
    if parent:
        s["parentSpanId"] = parent
    return {**s, **extra}


def doc(*spans: Any) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "x"}, "spans": list(spans)}]}]}


def bad(tmp_path: Path, content: Any, name: str = "bad.json", **kwargs: Any) -> TraceFormatError:
    """Read a file that must fail; return the error."""
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(TraceFormatError) as info:
        list(read_spans(path, **kwargs))
    err = info.value
    assert err.path == str(path) and str(err).startswith(str(path))
    return err


def test_error_is_a_value_error_with_its_parts_and_pickles() -> None:
    err = TraceFormatError("broken", "f.json", 3, "spans[0]")
    assert isinstance(err, ValueError) and str(err) == "f.json:3: spans[0]: broken"
    assert (err.path, err.line, err.location, err.problem) == ("f.json", 3, "spans[0]", "broken")
    assert str(pickle.loads(pickle.dumps(err))) == str(err)


def test_truncated_json_document(tmp_path: Path) -> None:
    text = json.dumps(doc(span()), indent=2)
    err = bad(tmp_path, text[: len(text) // 2])
    assert "truncated JSON" in err.problem and err.line is not None and err.location.startswith("column ")


def test_invalid_json_line_names_the_line(tmp_path: Path) -> None:
    good = json.dumps(doc(span()))
    err = bad(tmp_path, f"{good}\n\n{good[:40]}\n{good}\n", name="t.jsonl")
    assert err.line == 3 and "JSON" in err.problem and "t.jsonl:3: column" in str(err)


def test_spans_not_a_list(tmp_path: Path) -> None:
    err = bad(tmp_path, {"resourceSpans": [{"scopeSpans": [{}, {"spans": {"traceId": TRACE}}]}]})
    assert err.location == "resourceSpans[0].scopeSpans[1].spans" and "expected a list of spans" in err.problem
    assert str(err) == f"{err.path}: resourceSpans[0].scopeSpans[1].spans: expected a list of spans, got an object"


@pytest.mark.parametrize(
    "field, value, problem",
    [
        ("startTimeUnixNano", [1], "expected an integer (nanoseconds), got a list"),
        ("startTimeUnixNano", "soon", "expected an integer (nanoseconds), got a string ('soon')"),
        ("endTimeUnixNano", True, "expected an integer (nanoseconds), got a boolean"),
        ("endTimeUnixNano", 1.5, "expected an integer (nanoseconds), got a number (1.5)"),
        ("name", 7, "expected a string, got a number (7)"),
        ("kind", "SPAN_KIND_SIDEWAYS", "expected a span kind"),
        ("kind", 9, "expected a span kind"),
        ("status", "ERROR", "expected a status object"),
        ("attributes", {"k": "v"}, "expected a list of {key, value} objects, got an object"),
        ("events", [{"name": 3}], "expected a string, got a number (3)"),
        ("spanId", "xyz", "expected a 16-digit hex (or base64) id"),
        ("parentSpanId", 12.5, "expected a 16-digit hex id string"),
    ],
)  # fmt: skip
def test_wrong_types_name_the_field(tmp_path: Path, field: str, value: Any, problem: str) -> None:
    err = bad(tmp_path, doc(span(), span("00000000000000a2", **{field: value})))
    assert err.location.startswith(f"{SPANS}[1].{field}"), err.location
    assert problem in err.problem


def test_wrong_status_code_and_attribute_values(tmp_path: Path) -> None:
    err = bad(tmp_path, doc(span(status={"code": "MAYBE"})))
    assert err.location == f"{SPANS}[0].status.code"
    attrs = [{"key": "ok", "value": {"stringValue": "x"}}, {"key": "n", "value": {"intValue": "twelve"}}]
    err = bad(tmp_path, doc(span(attributes=attrs)))
    assert err.location == f"{SPANS}[0].attributes[1].value.intValue"
    assert err.problem == "attribute 'n': expected an integer (number or decimal string), got a string ('twelve')"
    nested = [{"key": "a", "value": {"arrayValue": {"values": [{"boolValue": "yes"}]}}}]
    err = bad(tmp_path, doc(span(attributes=nested)))
    assert err.location == f"{SPANS}[0].attributes[0].value.arrayValue.values[0].boolValue"
    err = bad(tmp_path, doc(span(attributes=[{"key": "u", "value": {"value": 1}}])))
    assert "unknown AnyValue field(s) 'value'" in err.problem
    err = bad(tmp_path, doc(span(attributes=[{"key": 5, "value": {}}])))
    assert err.location == f"{SPANS}[0].attributes[0].key"
    err = bad(
        tmp_path, {"resourceSpans": [{"resource": {"attributes": [{"key": "r", "value": {"doubleValue": "x"}}]}}]}
    )
    assert err.location == "resourceSpans[0].resource.attributes[0].value.doubleValue"


@pytest.mark.parametrize("field", ["traceId", "spanId"])
@pytest.mark.parametrize("value", [None, "", "0" * 32])
def test_missing_ids(tmp_path: Path, field: str, value: str | None) -> None:
    s = span()
    if value is None:
        del s[field]
    else:
        s[field] = value[: 32 if field == "traceId" else 16]
    err = bad(tmp_path, doc(span("00000000000000a0"), s))
    assert err.location == f"{SPANS}[1].{field}" and "missing" in err.problem


def test_duplicate_span_ids_in_a_document(tmp_path: Path) -> None:
    err = bad(
        tmp_path, doc(span("00000000000000a1"), span("00000000000000a2"), span("00000000000000a1", "00000000000000a2"))
    )
    assert err.location == f"{SPANS}[2]"
    assert err.problem == (
        f"duplicate span id 00000000000000a1 in trace {TRACE}: two different spans (first seen at {err.path}: "
        f"{SPANS}[0])"
    )


def test_duplicate_span_ids_across_json_lines(tmp_path: Path) -> None:
    lines = [doc(span("00000000000000a1")), doc(span("00000000000000b1")), doc(span("00000000000000a1", name="t"))]
    err = bad(tmp_path, "\n".join(map(json.dumps, lines)), name="d.jsonl")
    assert err.line == 3 and err.location == f"{SPANS}[0]"
    assert err.problem.endswith(f"(first seen at {err.path}:1: {SPANS}[0])")


def test_same_span_id_in_different_traces_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(doc(span(), {**span(), "traceId": "1" * 32})))
    assert len(list(read_spans(path))) == 2


def test_parent_cycles(tmp_path: Path) -> None:
    err = bad(tmp_path, doc(span("00000000000000a0"), span("00000000000000a1", "00000000000000a1")))
    assert err.location == f"{SPANS}[1]"
    assert err.problem == f"parent cycle in trace {TRACE}: span 00000000000000a1 → 00000000000000a1 is its own ancestor"
    loop = [span("00000000000000b1", "00000000000000b3"), span("00000000000000b2", "00000000000000b1"),
            span("00000000000000b3", "00000000000000b2"), span("00000000000000c1", "00000000000000b2")]  # fmt: skip
    err = bad(tmp_path, "\n".join(json.dumps(doc(s)) for s in loop), name="loop.jsonl")
    assert err.line == 1 and "→ 00000000000000b1 is its own ancestor" in err.problem


def test_an_attribute_over_the_size_limit(tmp_path: Path) -> None:
    huge = "x" * (50 * 1024 * 1024)
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(doc(span(attributes=[{"key": "blob", "value": {"stringValue": huge}}]))))
    del huge
    started = time.perf_counter()
    with pytest.raises(TraceFormatError) as info:
        list(read_spans(path))
    assert time.perf_counter() - started < 30
    err = info.value
    assert err.location == f"{SPANS}[0].attributes[0].value.stringValue"
    assert (
        err.problem
        == "attribute 'blob': value of 52,428,800 bytes exceeds the 10,485,760-byte limit (max_attribute_bytes)"
    )


def test_the_size_limit_is_configurable_and_counts_utf8_bytes_and_containers(tmp_path: Path) -> None:
    attrs = [{"key": "s", "value": {"stringValue": "é" * 60}}]  # 60 chars, 120 bytes
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc(span(attributes=attrs))))
    assert len(list(read_spans(path, max_attribute_bytes=120))) == 1
    err = bad(tmp_path, doc(span(attributes=attrs)), max_attribute_bytes=119)
    assert "120 bytes exceeds the 119-byte limit" in err.problem
    many = [{"key": "a", "value": {"arrayValue": {"values": [{"stringValue": "y" * 60}] * 3}}}]
    err = bad(tmp_path, doc(span(attributes=many)), max_attribute_bytes=100)
    assert err.location == f"{SPANS}[0].attributes[0].value.arrayValue" and "180 bytes" in err.problem
    err = bad(
        tmp_path, doc(span(attributes=[{"key": "b", "value": {"bytesValue": "QUJD" * 40}}])), max_attribute_bytes=64
    )
    assert err.location.endswith("bytesValue")


def test_unknown_formats(tmp_path: Path) -> None:
    err = bad(tmp_path, "trace_id,span_id\n1,2\n", name="spans.csv")
    assert "unknown trace format" in err.problem and "'trace_id,span_id" in err.problem
    err = bad(tmp_path, {"hello": "world"})
    assert "not a trace document (top-level keys: 'hello')" in err.problem
    err = bad(tmp_path, [{"traceId": "a" * 16, "id": "b" * 16, "name": "x"}])
    assert "Zipkin v2" in err.problem
    err = bad(tmp_path, "[1, 2]")
    assert "expected a JSON object" in err.problem
    err = bad(tmp_path, {"resourceMetrics": []})
    assert err.problem == "this file holds OTLP metrics, not traces"
    err = bad(tmp_path, bytes(range(256)) * 4, name="noise.bin")
    assert "OTLP protobuf" in err.problem or "not an OTLP trace export" in err.problem
    err = bad(tmp_path, b"\x28\xb5\x2f\xfd" + bytes(20), name="x.jsonl.zst")
    assert "zstd" in err.problem


def test_corrupt_gzip(tmp_path: Path) -> None:
    data = gzip.compress(json.dumps(doc(span())).encode())
    err = bad(tmp_path, data[: len(data) - 12], name="t.json.gz")
    assert "gzip" in err.problem or "truncated" in err.problem


def test_bad_protobuf(tmp_path: Path) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.trace.v1 import trace_pb2

    msg = ExportTraceServiceRequest(resource_spans=[trace_pb2.ResourceSpans(scope_spans=[trace_pb2.ScopeSpans(spans=[
        trace_pb2.Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="ok"),
        trace_pb2.Span(trace_id=b"\x01" * 16, span_id=b"\x03" * 5, name="short id"),
    ])])])  # fmt: skip
    err = bad(tmp_path, msg.SerializeToString(), name="t.pb")
    assert err.location == "resource_spans[0].scope_spans[0].spans[1].span_id"
    assert err.problem == "expected a 8-byte id, got 5 bytes"
    raw = msg.SerializeToString()
    stream = len(raw).to_bytes(4, "big") + raw
    err = bad(tmp_path, stream + stream, name="s.pb")
    assert err.location.startswith("message 0: resource_spans[0]")
    garbage = b"\x0a\xff\xff\xff\xff\x0f" + bytes(10)
    err = bad(tmp_path, garbage, name="g.pb")
    assert "protobuf" in err.problem


def test_protobuf_streams_are_read_message_by_message(tmp_path: Path) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.trace.v1 import trace_pb2

    from tracegrade.ingest import iter_traces

    def message(trace: int) -> bytes:
        root = trace_pb2.Span(trace_id=trace.to_bytes(16, "big"), span_id=b"\x02" * 8, name=f"run {trace}",
                              start_time_unix_nano=1, end_time_unix_nano=2)  # fmt: skip
        req = ExportTraceServiceRequest(resource_spans=[trace_pb2.ResourceSpans(scope_spans=[
            trace_pb2.ScopeSpans(spans=[root])])])  # fmt: skip
        raw = req.SerializeToString()
        return len(raw).to_bytes(4, "big") + raw

    good = message(1) + message(2)
    path = tmp_path / "s.pb"
    path.write_bytes(good + message(3)[:-3])  # the last message is cut short
    traces = iter_traces(path, idle_lines=1)
    assert next(traces).roots[0].name == "run 1"  # complete once message 1 was read: before the bad one
    with pytest.raises(TraceFormatError) as e:
        next(traces)
    assert (e.value.location, e.value.problem) == ("message 2", f"truncated message ({len(message(3)) - 7} of "
                                                                 f"{len(message(3)) - 4} bytes)")  # fmt: skip
    assert "s.pb" in str(e.value)
    path.write_bytes(good + b"\x00\x00")
    with pytest.raises(TraceFormatError, match=r"message 2: truncated length prefix \(2 of 4 bytes\)"):
        list(read_spans(path))


def test_jaeger_errors_name_their_path(tmp_path: Path) -> None:
    jspan = {"traceID": TRACE, "spanID": "00000000000000a1", "operationName": "x", "startTime": 1, "duration": 1,
             "processID": "p9", "tags": []}  # fmt: skip
    jdoc = {"data": [{"traceID": TRACE, "spans": [jspan], "processes": {"p1": {"serviceName": "s"}}}]}
    err = bad(tmp_path, jdoc)
    assert err.location == "data[0].spans[0].processID" and "'p9' is not in the trace's processes" in err.problem
    jspan.update(processID="p1", tags=[{"key": "n", "type": "int64", "value": "many"}])
    err = bad(tmp_path, jdoc)
    assert err.location == "data[0].spans[0].tags[0].value" and err.problem.startswith("tag 'n': expected a int64")
    jspan.update(tags=[], startTime="later")
    err = bad(tmp_path, jdoc)
    assert err.location == "data[0].spans[0].startTime"


def test_cli_reports_the_error_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc(span(), span("00000000000000a2", startTimeUnixNano=[1]))))
    assert cli_main(["show", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: {SPANS}[1].startTimeUnixNano: expected an integer" in err


def test_grade_of_a_bad_file_raises_the_format_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{")
    with pytest.raises(TraceFormatError):
        grade(path, [ToolCorrectness(expected_tools=[])])
    with pytest.raises(TraceFormatError):
        load_traces(path)


# --- never anything but TraceFormatError ----------------------------------------------------------------

VALID = doc(
    span("00000000000000a1", attributes=[{"key": "k", "value": {"arrayValue": {"values": [{"intValue": "1"}]}}}],
         events=[{"timeUnixNano": "1", "name": "e", "attributes": []}], status={"code": 2, "message": "m"}, kind=3),
    span("00000000000000a2", "00000000000000a1"),
)  # fmt: skip
junk = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5),
                 st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))  # fmt: skip


def _slots(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _slots(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _slots(v, (*path, i))
    return out


SLOTS = _slots(VALID)[1:]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.sampled_from(SLOTS), value=junk)
def test_any_mutation_is_read_or_a_trace_format_error(tmp_path: Path, where: tuple[Any, ...], value: Any) -> None:
    mutated = copy.deepcopy(VALID)
    target = mutated
    for step in where[:-1]:
        target = target[step]
    target[where[-1]] = value
    path = tmp_path / "m.json"
    path.write_text(json.dumps(mutated))
    try:
        spans = list(read_spans(path))
    except TraceFormatError as e:
        assert e.path == str(path) and e.problem
    else:
        assert all(isinstance(s.trace_id, int) and isinstance(s.name, str) for s in spans)


# --- hardening (issue 14, trace files): numbers, times, nesting, bombs, devices, orjson --------------------


def test_a_number_longer_than_python_reads_names_the_file_line_and_column(tmp_path: Path) -> None:
    text = json.dumps(doc(span(startTimeUnixNano="@"))).replace('"@"', "1" * 5000)
    err = bad(tmp_path, text)
    assert err.problem == "a number of 5,000 digits (more than the 4,300 Python reads; not a valid OTLP value)"
    assert (err.line, err.location) == (1, f"column {text.index('1' * 5000) + 1}")
    good = json.dumps(doc(span("00000000000000a2")))
    err = bad(tmp_path, f"{good}\n{good}\n{text}\n", name="t.jsonl")
    assert err.line == 3 and "5,000 digits" in err.problem


@pytest.mark.parametrize("value", ["1" * 5000, "9" * 30, 2**64])
def test_huge_decimal_strings_and_numbers_are_out_of_range_not_value_errors(tmp_path: Path, value: Any) -> None:
    err = bad(tmp_path, doc(span(endTimeUnixNano=value)))
    assert err.location == f"{SPANS}[0].endTimeUnixNano" and "time out of range" in err.problem
    attrs = [{"key": "n", "value": {"intValue": value}}]
    err = bad(tmp_path, doc(span(attributes=attrs)))
    assert err.location == f"{SPANS}[0].attributes[0].value.intValue"
    assert err.problem.startswith("attribute 'n': integer out of the int64 range")


@pytest.mark.parametrize("value", ["²", "--5", "1" * 5000, "9223372036854775808", 2**63])
def test_jaeger_process_int64_tags_that_are_not_int64(tmp_path: Path, value: Any) -> None:
    jspan = {"traceID": TRACE, "spanID": "00000000000000a1", "startTime": 1, "duration": 1, "processID": "p1"}
    tags = [{"key": "ok", "type": "int64", "value": "-5"}, {"key": "n", "type": "int64", "value": value}]
    jdoc = {"data": [{"traceID": TRACE, "spans": [jspan], "processes": {"p1": {"serviceName": "s", "tags": tags}}}]}
    err = bad(tmp_path, jdoc)
    assert err.location == "data[0].processes.p1.tags[1].value", err.location
    assert err.problem.startswith("tag 'n': "), err.problem
    tags[1]["value"] = "42"
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(jdoc))
    assert next(read_spans(path)).resource == {"service.name": "s", "ok": -5, "n": 42}


def _nested(depth: int) -> str:
    return '{"x":' * depth + "0" + "}" * depth


def test_a_deeply_nested_snake_case_document_is_copied_iteratively(tmp_path: Path) -> None:
    s = {"trace_id": TRACE, "span_id": "00000000000000a1", "name": "deep", "extra": "@"}
    text = json.dumps({"resource_spans": [{"scope_spans": [{"spans": [s]}]}]}).replace('"@"', _nested(1000))
    path = tmp_path / "snake.json"
    path.write_text(text)
    assert [sp.name for sp in read_spans(path)] == ["deep"]  # an unknown field, however deep, is ignored
    err = bad(tmp_path, text.replace(_nested(1000), _nested(1100)))
    assert err.problem == "JSON nested too deeply (more than 1,024 levels)" and err.line == 1


def test_attributes_nested_as_deep_as_json_allows_load_and_render(tmp_path: Path) -> None:
    arrays = '{"arrayValue":{"values":[' * 335 + '{"stringValue":"x"}' + "]}}" * 335  # 1,005 levels, 1,015 in all
    kvlists = '{"kvlistValue":{"values":[{"key":"k","value":' * 250 + '{"intValue":"1"}' + "}]}}" * 250
    text = json.dumps(doc(span(attributes=[{"key": "a", "value": "@a"}, {"key": "k", "value": "@k"}])))
    path = tmp_path / "deep.json"
    path.write_text(text.replace('"@a"', arrays).replace('"@k"', kvlists))
    (tree,) = load_traces(path)
    value, depth = tree.roots[0].span.attributes["a"], 0
    while isinstance(value, tuple):
        value, depth = value[0], depth + 1
    assert (value, depth) == ("x", 335) and "s" in tree.render()


def test_gzip_inflating_past_the_limit_names_the_file_and_the_limit(tmp_path: Path) -> None:
    data = gzip.compress(json.dumps(doc(span(name="x" * 5000))).encode())
    path = tmp_path / "t.json.gz"
    path.write_bytes(data)
    assert len(list(read_spans(path, max_inflated_bytes=6000))) == 1
    for kwargs in ({"max_inflated_bytes": 4000},):
        with pytest.raises(TraceFormatError) as info:
            load_traces(path, **kwargs)
        assert str(info.value) == (
            f"{path}: gzip data inflates to more than 4,000 bytes (the max_inflated_bytes limit); if the file is "
            "trusted, pass a larger max_inflated_bytes to load_traces / iter_traces / read_spans"
        )
    lines = "".join(json.dumps(doc(span(traceId=f"{i:032x}"))) + "\n" for i in range(1, 200))
    path.write_bytes(gzip.compress(lines.encode()))
    spans = read_spans(path, max_inflated_bytes=len(lines) // 2, idle_lines=1)
    assert next(spans).trace_id == 1  # JSON lines stream: traces come before the limit is reached
    with pytest.raises(TraceFormatError, match="inflates to more than"):
        list(spans)
    with pytest.raises(ValueError, match="must be positive"):
        load_traces(path, max_inflated_bytes=0)


def test_a_protobuf_length_prefix_past_the_data_is_truncation_not_an_allocation(tmp_path: Path) -> None:
    err = bad(tmp_path, (0xFFFFFFF0).to_bytes(4, "big") + b"\x0a\x00", name="s.pb")
    assert (err.location, err.problem) == ("message 0", f"truncated message (2 of {0xFFFFFFF0} bytes)")


@pytest.mark.parametrize("start, end", [(2**64, None), ("1" * 400, None), (5, 2**64), (10, 9)])
def test_times_must_be_unsigned_64_bit_nanoseconds_ending_after_the_start(tmp_path: Path, start: Any, end: Any) -> None:
    err = bad(tmp_path, doc(span(startTimeUnixNano=start, endTimeUnixNano=end)))
    field = "endTimeUnixNano" if end is not None else "startTimeUnixNano"
    assert err.location == f"{SPANS}[0].{field}"
    assert ("ends before it starts" if end == 9 else "time out of range") in err.problem


def test_the_largest_time_loads_and_renders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "late.json"
    path.write_text(json.dumps(doc(span(startTimeUnixNano=str(2**64 - 2), endTimeUnixNano=str(2**64 - 1)))))
    (tree,) = load_traces(path)
    assert tree.roots[0].span.end_ns == 2**64 - 1 and "s" in tree.render()
    assert cli_main(["show", str(path)]) == 0


def test_event_times_are_range_checked(tmp_path: Path) -> None:
    err = bad(tmp_path, doc(span(events=[{"name": "e", "timeUnixNano": str(2**64)}])))
    assert err.location == f"{SPANS}[0].events[0].timeUnixNano" and "time out of range" in err.problem


@pytest.mark.parametrize(
    "field, value, problem",
    [("startTime", 2**64 // 1000 + 1, "time out of range"), ("duration", 2**64 // 1000, "ends past the unsigned"),
     ("startTime", "9" * 5000, "time out of range (a number of 5,000 digits)")],
)  # fmt: skip
def test_jaeger_times_are_range_checked(tmp_path: Path, field: str, value: Any, problem: str) -> None:
    jspan = {"traceID": TRACE, "spanID": "00000000000000a1", "startTime": 1000, "duration": 1, field: value}
    err = bad(tmp_path, {"data": [{"traceID": TRACE, "spans": [jspan]}]})
    assert err.location == f"data[0].spans[0].{field}" and problem in err.problem


def test_a_protobuf_span_ending_before_it_starts(tmp_path: Path) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.trace.v1 import trace_pb2

    s = trace_pb2.Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, start_time_unix_nano=10, end_time_unix_nano=9)
    msg = ExportTraceServiceRequest(resource_spans=[trace_pb2.ResourceSpans(scope_spans=[trace_pb2.ScopeSpans(
        spans=[s])])])  # fmt: skip
    err = bad(tmp_path, msg.SerializeToString(), name="t.pb")
    assert err.location == "resource_spans[0].scope_spans[0].spans[0].end_time_unix_nano"
    assert err.problem == "the span ends before it starts (9 < start 10)"


# orjson decodes; where it and `json` differ, the result is a TraceFormatError or the value `json` gave.


def test_bare_nan_and_infinity_literals_read_as_doubles(tmp_path: Path) -> None:
    path = tmp_path / "nan.jsonl"
    attrs = [
        {"key": "a", "value": {"doubleValue": float("nan")}},
        {"key": "b", "value": {"doubleValue": float("-inf")}},
    ]
    path.write_text(json.dumps(doc(span(attributes=attrs))) + "\n" + json.dumps(doc(span("00000000000000a2"))) + "\n")
    assert "NaN" in path.read_text()
    first = next(read_spans(path)).attributes
    assert math.isnan(first["a"]) and first["b"] == float("-inf")


def test_integers_past_64_bits_are_not_rounded_through_float(tmp_path: Path) -> None:
    # orjson reads 2**64 and up as a float: an int64 attribute must not take that rounded value
    err = bad(tmp_path, json.dumps(doc(span(attributes=[{"key": "n", "value": {"intValue": 0}}]))).replace(
        '"intValue": 0', '"intValue": 123456789012345678901'))  # fmt: skip
    assert err.problem.startswith("attribute 'n': integer out of the int64 range")
    path = tmp_path / "max.json"
    path.write_text(json.dumps(doc(span(attributes=[{"key": "n", "value": {"intValue": 2**63 - 1}}]))))
    assert next(read_spans(path)).attributes["n"] == 2**63 - 1


def test_duplicate_keys_keep_the_last_value_like_json(tmp_path: Path) -> None:
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(doc(span(name="first"))).replace('"name": "first"', '"name": "first", "name": "last"'))
    assert next(read_spans(path)).name == "last"


def test_invalid_utf8_names_the_byte(tmp_path: Path) -> None:
    raw = json.dumps(doc(span(name="@"))).encode().replace(b"@", b"\xff")
    at = raw.index(b"\xff")
    err = bad(tmp_path, raw)
    assert err.problem == f"not UTF-8 text (invalid start byte at byte {at})"
    good = json.dumps(doc(span())).encode()
    err = bad(tmp_path, good + b"\n" + raw + b"\n", name="t.jsonl")
    assert err.line == 2 and "not UTF-8" in err.problem


def test_a_lone_surrogate_is_a_format_error_with_its_position(tmp_path: Path) -> None:
    text = json.dumps(doc(span(name="@"))).replace("@", "\\ud800")
    err = bad(tmp_path, text)
    assert err.problem.startswith("invalid JSON: ") and "lone surrogate" in err.problem
    assert (err.line, err.location) == (1, f"column {text.index('ud800')}")
