"""tracegrade.ingest: reading every supported trace format, and the OTLP/JSON writer round trip."""

from __future__ import annotations

import base64
import gzip
import importlib.util
import json
import math
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from _agents import run_captured, scripted_agent
from tracegrade import capture, grade, load_traces, write_otlp_json
from tracegrade.errors import TraceFormatError
from tracegrade.evaluators import ToolCorrectness
from tracegrade.ingest import TraceFileWarning, dump_otlp_json, iter_traces, read_spans
from tracegrade.spans import Span, SpanEvent
from tracegrade.tree import SpanTree

FIXTURES = Path(__file__).parent.parent / "fixtures"


def _load_fixture_script() -> Any:
    spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_fixtures"] = module
    spec.loader.exec_module(module)
    return module


mf = _load_fixture_script()
T0 = 1_796_287_842_677_904_475


def sdk_spans() -> list[Any]:
    """Real SDK spans: nested, every kind, status with message, events, typed and sequence attributes."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "svc", "deployment.environment": "test"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("my.scope", "1.2.3")
    other = provider.get_tracer("other.scope", attributes={"scope.kind": "library", "scope.n": 2})
    with tracer.start_as_current_span("root", kind=SpanKind.SERVER, attributes={"n": 1, "f": 0.5, "b": True}) as root:
        root.add_event("started", {"k": "v", "list": [1, 2]})
        with tracer.start_as_current_span("client", kind=SpanKind.CLIENT) as child:
            child.set_attribute("tags", ["a", "b"])
            child.set_attribute("flags", [True, False])
            child.set_attribute("floats", [1.5, -2.0])
            child.set_status(Status(StatusCode.ERROR, "boom"))
        with other.start_as_current_span("produce", kind=SpanKind.PRODUCER):
            pass
        with tracer.start_as_current_span("consume", kind=SpanKind.CONSUMER) as ok:
            ok.set_status(Status(StatusCode.OK))
            ok.set_attribute("big", 2**62 + 7)
    provider.shutdown()
    return list(exporter.get_finished_spans())


def by_id(spans: Any) -> list[Span]:
    """Spans in id order: the writer groups spans by resource and scope, which can reorder them."""
    return sorted(spans, key=lambda s: (s.trace_id, s.span_id))


def write(tmp_path: Path, name: str, content: Any) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content)
    else:
        path.write_text(json.dumps(content))
    return path


def otlp_doc(spans: list[dict[str, Any]], resource: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {"attributes": resource or []},
                               "scopeSpans": [{"scope": {"name": "s"}, "spans": spans}]}]}  # fmt: skip


def raw_span(span_id: str, parent: str | None = None, trace: str = "0af7651916cd43dd8448eb211c80319c",
             **extra: Any) -> dict[str, Any]:  # fmt: skip
    s: dict[str, Any] = {"traceId": trace, "spanId": span_id, "name": f"span {span_id}",
                         "startTimeUnixNano": "1000", "endTimeUnixNano": "2000"}  # fmt: skip
    if parent is not None:
        s["parentSpanId"] = parent
    s.update(extra)
    return s


# --- writer → reader round trips --------------------------------------------------------------------


def test_sdk_spans_round_trip_exactly(tmp_path: Path) -> None:
    readable = sdk_spans()
    path = tmp_path / "sdk.json"
    write_otlp_json(readable, path)
    back = list(read_spans(path))
    assert by_id(back) == by_id(Span.from_readable(s) for s in readable)
    by_name = {s.name: s for s in back}
    assert by_name["root"].kind == "server" and by_name["client"].kind == "client"
    assert by_name["produce"].kind == "producer" and by_name["consume"].kind == "consumer"
    assert (by_name["client"].status, by_name["client"].status_message) == ("error", "boom")
    assert by_name["client"].attributes["tags"] == ("a", "b")
    assert by_name["consume"].attributes["big"] == 2**62 + 7
    assert by_name["root"].events[0] == SpanEvent(
        "started", by_name["root"].events[0].time_ns, {"k": "v", "list": (1, 2)}
    )
    assert (by_name["root"].scope_name, by_name["root"].scope_version) == ("my.scope", "1.2.3")
    assert by_name["produce"].scope_name == "other.scope"
    assert by_name["produce"].scope_attributes == {"scope.kind": "library", "scope.n": 2}
    assert by_name["root"].scope_attributes == {}
    assert by_name["root"].resource["service.name"] == "svc"


def test_scope_attributes_are_read_from_json_and_protobuf(tmp_path: Path) -> None:
    scope = {"name": "lib", "version": "2", "attributes": [{"key": "lib.mode", "value": {"stringValue": "fast"}}]}
    doc = {"resourceSpans": [{"scopeSpans": [{"scope": scope, "spans": [raw_span("00f067aa0ba902b7")]}]}]}
    (tmp_path / "s.json").write_text(json.dumps(doc))
    [span] = read_spans(tmp_path / "s.json")
    assert (span.scope_name, span.scope_version, span.scope_attributes) == ("lib", "2", {"lib.mode": "fast"})
    pytest.importorskip("opentelemetry.proto")
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    proto_doc = json.loads((tmp_path / "s.json").read_text())
    raw = proto_doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    for key in ("traceId", "spanId"):  # the protobuf JSON mapping has base64 ids
        raw[key] = base64.b64encode(bytes.fromhex(raw[key])).decode()
    message = json_format.ParseDict(proto_doc, ExportTraceServiceRequest())
    (tmp_path / "s.pb").write_bytes(message.SerializeToString())
    [pb_span] = read_spans(tmp_path / "s.pb")
    assert pb_span.scope_attributes == {"lib.mode": "fast"}
    scope["attributes"] = [{"key": "lib.mode", "value": {"intValue": "x"}}]
    (tmp_path / "s.json").write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError, match=r"scopeSpans\[0\]\.scope\.attributes\[0\]\.value"):
        list(read_spans(tmp_path / "s.json"))


def test_writer_groups_by_resource_and_scope_and_uses_spec_encoding() -> None:
    doc = dump_otlp_json(sdk_spans())
    [rs] = doc["resourceSpans"]
    assert {kv["key"] for kv in rs["resource"]["attributes"]} >= {"service.name", "deployment.environment"}
    scopes = [ss["scope"] for ss in rs["scopeSpans"]]
    other = {"name": "other.scope", "attributes": [{"key": "scope.kind", "value": {"stringValue": "library"}},
                                                   {"key": "scope.n", "value": {"intValue": "2"}}]}  # fmt: skip
    assert scopes == [{"name": "my.scope", "version": "1.2.3"}, other]
    span = next(s for ss in rs["scopeSpans"] for s in ss["spans"] if s["name"] == "consume")
    assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16 and len(span["parentSpanId"]) == 16
    int(span["traceId"], 16)
    assert span["kind"] == 5 and span["status"] == {"code": 1}
    assert isinstance(span["startTimeUnixNano"], str) and isinstance(span["endTimeUnixNano"], str)
    assert {"key": "big", "value": {"intValue": str(2**62 + 7)}} in span["attributes"]
    root = next(s for ss in rs["scopeSpans"] for s in ss["spans"] if s["name"] == "root")
    assert "parentSpanId" not in root and root["kind"] == 2


def test_resource_dict_is_shared_by_the_spans_of_a_block(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_otlp_json(sdk_spans(), path)
    spans = list(read_spans(path))
    assert len({id(s.resource) for s in spans}) == 1


@pytest.mark.parametrize("name, kwargs", [("a.json", {}), ("a.jsonl", {"lines": True, "batch_size": 2}),
                                          ("a.json.gz", {"indent": 2}), ("a.jsonl.gz", {"lines": True})])  # fmt: skip
def test_every_written_variant_reads_back(tmp_path: Path, name: str, kwargs: dict[str, Any]) -> None:
    readable = sdk_spans()
    write_otlp_json(readable, tmp_path / name, **kwargs)
    assert by_id(read_spans(tmp_path / name)) == by_id(Span.from_readable(s) for s in readable)
    raw = (tmp_path / name).read_bytes()
    assert raw[:2] == b"\x1f\x8b" if name.endswith(".gz") else raw[:1] == b"{"
    if kwargs.get("lines") and not name.endswith(".gz"):
        assert len(raw.splitlines()) == 2  # 4 spans, 2 per line


def test_writer_accepts_a_span_tree_and_records(tmp_path: Path) -> None:
    records = [Span.from_readable(s) for s in sdk_spans()]
    write_otlp_json(SpanTree.from_spans(records), tmp_path / "tree.json")
    assert by_id(read_spans(tmp_path / "tree.json")) == by_id(records)
    one_scope = [s for s in records if s.scope_name == "my.scope"]
    write_otlp_json(one_scope, tmp_path / "records.json")
    assert list(read_spans(tmp_path / "records.json")) == one_scope  # order kept within a resource and scope


def test_open_span_and_none_attribute_round_trip(tmp_path: Path) -> None:
    span = Span(1, 2, None, "open", T0, None, {"empty": None, "bytes": b"\x00\xff", "kv": {"a": {"b": (1, "x")}}})
    write_otlp_json([span], tmp_path / "open.json")
    assert list(read_spans(tmp_path / "open.json")) == [span]


def test_writer_rejects_values_otlp_cannot_hold() -> None:
    with pytest.raises(ValueError, match="'x'.*int64"):
        dump_otlp_json([Span(1, 2, None, "s", 0, 1, {"x": 2**64})])
    with pytest.raises(ValueError, match="'o'.*object"):
        dump_otlp_json([Span(1, 2, None, "s", 0, 1, {"o": object()})])


# --- a real Pydantic AI run ---------------------------------------------------------------------------


def test_pydantic_ai_run_written_and_read_back_grades_the_same(tmp_path: Path) -> None:
    agent = scripted_agent([("search", {"q": "order 1234"}), ("get_order", {"id": 1234})], fail=[0])
    with capture() as cap:
        agent.run_sync("where is my order?")
    path = tmp_path / "run.json"
    write_otlp_json(cap, path)
    assert list(read_spans(path)) == [Span.from_readable(s) for s in cap.spans]
    for expected in (["search", "get_order"], ["get_order"], ["search", "refund"]):
        evaluators = [ToolCorrectness(expected_tools=expected)]
        live, recorded = grade(cap, evaluators)[0], grade(path, evaluators)[0]
        assert (recorded.passed, recorded.outcome, recorded.reasoning) == (live.passed, live.outcome, live.reasoning)
    assert grade(path, [ToolCorrectness(expected_tools=["search", "get_order"])])[0].passed
    [tree] = load_traces(path)
    assert grade(tree, [ToolCorrectness(expected_tools=["search", "get_order"])])[0].passed


def test_capture_with_lines_and_gzip_grades_the_same(tmp_path: Path) -> None:
    cap = run_captured([("search", {"q": "x"}), ("answer", {"text": "y"})])
    path = tmp_path / "run.jsonl.gz"
    write_otlp_json(cap, path, lines=True, batch_size=2)
    evaluators = [ToolCorrectness(expected_tools=["search", "answer"])]
    assert grade(path, evaluators)[0].passed == grade(cap, evaluators)[0].passed is True


# --- property: attribute values round trip ----------------------------------------------------------

scalars = (
    st.text(max_size=20)
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.binary(max_size=16)
)
values = st.recursive(
    scalars | st.none(),
    lambda inner: st.lists(inner, max_size=4).map(tuple) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def same(a: Any, b: Any) -> bool:
    """Equality where NaN equals NaN (and the types must match)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(attrs=st.dictionaries(st.text(max_size=12), values, max_size=6), lines=st.booleans())
def test_attribute_values_round_trip(tmp_path: Path, attrs: dict[str, Any], lines: bool) -> None:
    span = Span(7, 9, None, "s", T0, T0 + 5, attrs, events=(SpanEvent("e", T0 + 1, attrs),), resource=attrs)
    path = tmp_path / ("p.jsonl" if lines else "p.json")
    write_otlp_json([span], path, lines=lines)
    [back] = read_spans(path)
    assert same(dict(back.attributes), attrs)
    assert same(dict(back.events[0].attributes), attrs) and same(dict(back.resource), attrs)


def test_non_finite_doubles_are_written_as_proto3_json_strings(tmp_path: Path) -> None:
    span = Span(1, 2, None, "s", 0, 1, {"nan": math.nan, "inf": math.inf, "ninf": -math.inf})
    values = {
        kv["key"]: kv["value"]
        for kv in dump_otlp_json([span])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
    }
    assert values == {"nan": {"doubleValue": "NaN"}, "inf": {"doubleValue": "Infinity"},
                      "ninf": {"doubleValue": "-Infinity"}}  # fmt: skip
    write_otlp_json([span], tmp_path / "d.json")
    [back] = read_spans(tmp_path / "d.json")
    assert math.isnan(back.attributes["nan"]) and back.attributes["inf"] == math.inf == -back.attributes["ninf"]


# --- shipped fixtures ------------------------------------------------------------------------------------

OTLP_FIXTURES = sorted(p.name for p in (FIXTURES / "otlp").iterdir() if p.name.startswith("agent_run"))


def test_every_format_has_a_fixture() -> None:
    assert OTLP_FIXTURES == [
        "agent_run.json", "agent_run.json.gz", "agent_run.jsonl", "agent_run.jsonl.gz", "agent_run.pb",
        "agent_run.protojson.json", "agent_run.snake.json", "agent_run.stream.pb",
    ]  # fmt: skip


@pytest.mark.parametrize("name", OTLP_FIXTURES)
def test_shipped_otlp_fixtures_parse_to_the_same_spans(name: str) -> None:
    path = FIXTURES / "otlp" / name
    assert list(read_spans(path)) == mf.SPANS
    [tree] = load_traces(path)
    assert len(tree) == len(mf.SPANS) and tree.roots[0].name == "invoke_agent support"
    [result] = grade(path, [ToolCorrectness(expected_tools=mf.EXPECTED_TOOLS)])
    assert result.passed, result.reasoning


def test_shipped_fixtures_use_the_variant_their_name_says() -> None:
    proto_json = json.loads((FIXTURES / "otlp" / "agent_run.protojson.json").read_text())
    span = proto_json["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert span["traceId"].endswith("==") and span["spanId"].endswith("=") and span["kind"] == "SPAN_KIND_CLIENT"
    snake = json.loads((FIXTURES / "otlp" / "agent_run.snake.json").read_text())
    assert "scope_spans" in snake["resource_spans"][0]
    assert "start_time_unix_nano" in snake["resource_spans"][0]["scope_spans"][0]["spans"][0]
    stream = (FIXTURES / "otlp" / "agent_run.stream.pb").read_bytes()
    first = int.from_bytes(stream[:4], "big")
    assert stream[4] == 0x0A and int.from_bytes(stream[4 + first : 8 + first], "big") == len(stream) - 8 - first
    assert len((FIXTURES / "otlp" / "agent_run.jsonl").read_text().splitlines()) == 3


def test_shipped_jaeger_fixture_maps_back_to_otel() -> None:
    spans = list(read_spans(FIXTURES / "jaeger" / "agent_run.json"))
    run = [s for s in spans if s.trace_id == mf.TRACE]
    expected = [
        Span(s.trace_id, s.span_id, s.parent_id, s.name, s.start_ns, s.end_ns, mf.jaeger_attributes(dict(s.attributes)),
             s.status, s.status_message, s.kind, s.events, s.resource, s.scope_name, s.scope_version)
        for s in mf.SPANS
    ]  # fmt: skip
    assert run == expected
    assert len({id(s.resource) for s in run}) == 1  # one resource dict per Jaeger process
    [result] = grade(FIXTURES / "jaeger" / "agent_run.json", [ToolCorrectness(expected_tools=mf.EXPECTED_TOOLS)])
    assert result.passed, result.reasoning


def test_jaeger_example_span_reads_like_its_otlp_original() -> None:
    """conventions §7.11 is §7.1's span translated to Jaeger: the same span, at µs precision."""
    [otlp] = read_spans(FIXTURES / "otlp" / "conventions_example.json")
    [jaeger] = [s for s in read_spans(FIXTURES / "jaeger" / "agent_run.json") if s.trace_id == mf.CONVENTIONS_TRACE]
    assert (jaeger.trace_id, jaeger.span_id, jaeger.parent_id) == (otlp.trace_id, otlp.span_id, otlp.parent_id)
    assert jaeger.parent_id == 0x24912C4C1ED4FEFD
    assert (jaeger.name, jaeger.kind, jaeger.status, jaeger.scope_name) == (
        otlp.name,
        "internal",
        "error",
        "pydantic-ai",
    )
    assert jaeger.start_ns == otlp.start_ns // 1000 * 1000 == 1_796_287_842_677_904_000
    assert jaeger.end_ns == jaeger.start_ns + 5_031_000
    assert jaeger.events == (SpanEvent("exception", 1_796_287_842_682_901_000,
                                       {"exception.type": "pydantic_ai.exceptions.ToolRetryError"}),)  # fmt: skip
    assert jaeger.resource == otlp.resource == {"service.name": "unknown_service:python"}
    shared = {k: v for k, v in otlp.attributes.items() if k in jaeger.attributes}
    assert shared == jaeger.attributes and jaeger.attributes["pydantic_ai.tool.retry.attempt"] == 1
    assert otlp.attributes["pydantic_ai.tool.retry.attempt"] == 1 and otlp.end_ns == 1_796_287_842_682_935_492


def test_make_fixtures_is_deterministic(tmp_path: Path) -> None:
    written = mf.write_all(tmp_path)
    assert written
    for path in written:
        rel = path.relative_to(tmp_path)
        assert path.read_bytes() == (FIXTURES / rel).read_bytes(), f"{rel} differs: run fixtures/make_fixtures.py"


# --- protobuf ------------------------------------------------------------------------------------------


def test_protobuf_single_message_stream_and_gzip(tmp_path: Path) -> None:
    message = mf.request(mf.SPANS)
    raw = message.SerializeToString()
    write(tmp_path, "one.otlp", raw)
    write(tmp_path, "stream.bin.pb", b"".join(len(r).to_bytes(4, "big") + r for r in
                                              (mf.request([s]).SerializeToString() for s in mf.SPANS)))  # fmt: skip
    write(tmp_path, "one.pb.gz", gzip.compress(raw))
    for name in ("one.otlp", "stream.bin.pb", "one.pb.gz"):
        assert list(read_spans(tmp_path / name)) == mf.SPANS, name


def test_protobuf_without_opentelemetry_proto_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracegrade.errors import TraceFormatError

    monkeypatch.setitem(sys.modules, "opentelemetry.proto.collector.trace.v1.trace_service_pb2", None)
    with pytest.raises(TraceFormatError, match=r"pip install tracegrade\[proto\]") as info:
        list(read_spans(FIXTURES / "otlp" / "agent_run.pb"))
    assert info.value.path == str(FIXTURES / "otlp" / "agent_run.pb")


def test_protobuf_json_with_base64_ids_and_enum_names(tmp_path: Path) -> None:
    doc = json_format.MessageToDict(mf.request(mf.SPANS[:2]))
    assert doc["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["status"] == {"code": "STATUS_CODE_ERROR",
                                                                               "message": "try again"}  # fmt: skip
    assert list(read_spans(write(tmp_path, "pj.json", doc))) == mf.SPANS[:2]


# --- lenient reading ------------------------------------------------------------------------------------


def test_lenient_shapes_of_real_files(tmp_path: Path) -> None:
    big = 1_796_287_842_677_904_475  # > 2**53: must not go through float
    spans = [
        raw_span("00000000000000a1", "0000000000000000", kind="SPAN_KIND_SERVER", status={"code": "STATUS_CODE_OK"},
                 startTimeUnixNano=big, endTimeUnixNano=str(big + 1)),
        raw_span("0x00000000000000a2"[2:], "00000000000000a1", kind=3, status={"code": 2, "message": "m"}),
        raw_span("00000000000000a3", "", kind="client", startTimeUnixNano="5", endTimeUnixNano=9.0),
        {**raw_span("0x00000000000000a4", "0X00000000000000A1"), "traceId": "0x0AF7651916CD43DD8448EB211C80319C"},
        raw_span("00000000000000a5", kind=0, attributes=[
            {"key": "s", "value": {"stringValue": "x"}}, {"key": "i", "value": {"intValue": 5}},
            {"key": "is", "value": {"intValue": "-9223372036854775808"}}, {"key": "d", "value": {"doubleValue": 1}},
            {"key": "dn", "value": {"doubleValue": "-Infinity"}}, {"key": "b", "value": {"boolValue": False}},
            {"key": "by", "value": {"bytesValue": "AAEC"}}, {"key": "e", "value": {}}, {"key": "n"},
            {"key": "a", "value": {"arrayValue": {"values": [{"intValue": "1"}, {"arrayValue": {}}]}}},
            {"key": "kv", "value": {"kvlistValue": {"values": [{"key": "x", "value": {"string_value": "y"}}]}}},
            {"key": "s", "value": {"stringValue": "last wins"}},
        ]),
    ]  # fmt: skip
    out = {s.span_id: s for s in read_spans(write(tmp_path, "lenient.json", otlp_doc(spans)))}
    assert out[0xA1].parent_id is None and out[0xA1].kind == "server" and out[0xA1].status == "ok"
    assert (out[0xA1].start_ns, out[0xA1].end_ns) == (big, big + 1)
    assert out[0xA2].parent_id == 0xA1 and (out[0xA2].kind, out[0xA2].status, out[0xA2].status_message) == (
        "client", "error", "m")  # fmt: skip
    assert out[0xA3].parent_id is None and (out[0xA3].start_ns, out[0xA3].end_ns) == (5, 9)
    assert out[0xA4].trace_id == 0x0AF7651916CD43DD8448EB211C80319C and out[0xA4].parent_id == 0xA1
    assert dict(out[0xA5].attributes) == {
        "s": "last wins", "i": 5, "is": -(2**63), "d": 1.0, "dn": -math.inf, "b": False, "by": b"\x00\x01\x02",
        "e": None, "n": None, "a": (1, ()), "kv": {"x": "y"},
    }  # fmt: skip
    assert type(out[0xA5].attributes["d"]) is float and out[0xA5].kind == "internal"


def test_snake_case_and_instrumentation_library_spans(tmp_path: Path) -> None:
    doc = {"resource_spans": [{"resource": {"attributes": [{"key": "service.name", "value": {"string_value": "s"}}]},
                               "instrumentation_library_spans": [{"instrumentation_library": {"name": "old", "version": "1"},
                                                                  "spans": [{"trace_id": "0af7651916cd43dd8448eb211c80319c",
                                                                             "span_id": "00000000000000b1", "name": "x",
                                                                             "start_time_unix_nano": "1",
                                                                             "end_time_unix_nano": "2", "kind": 2,
                                                                             "attributes": [{"key": "k", "value": {"int_value": "3"}}],
                                                                             "events": [{"time_unix_nano": "1", "name": "ev"}]}]}]}]}  # fmt: skip
    [span] = read_spans(write(tmp_path, "snake.json", doc))
    assert (span.scope_name, span.scope_version, span.resource) == ("old", "1", {"service.name": "s"})
    assert (span.attributes, span.kind, span.events) == ({"k": 3}, "server", (SpanEvent("ev", 1, {}),))
    camel_old = {"resourceSpans": [{"instrumentationLibrarySpans": [{"instrumentationLibrary": {"name": "lib"},
                                                                      "spans": [raw_span("00000000000000b2")]}]}]}  # fmt: skip
    [old] = read_spans(write(tmp_path, "old.json", camel_old))
    assert old.scope_name == "lib"


def test_wrapped_documents_tempo_and_jaeger_v3(tmp_path: Path) -> None:
    doc = otlp_doc([raw_span("00000000000000c1")])
    for name, wrapped in (("tempo1.json", {"batches": doc["resourceSpans"]}), ("tempo2.json", {"trace": doc}),
                          ("jaeger3.json", {"result": doc})):  # fmt: skip
        [span] = read_spans(write(tmp_path, name, wrapped))
        assert span.span_id == 0xC1, name


def test_pretty_printed_documents_and_json_lines_are_told_apart(tmp_path: Path) -> None:
    doc = otlp_doc([raw_span("00000000000000d1")])
    pretty = write(tmp_path, "pretty.json", "\n\n" + json.dumps(doc, indent=2))
    lines = write(tmp_path, "lines.txt", "\n".join(json.dumps(otlp_doc([raw_span(f"00000000000000d{i}")]))
                                                   for i in range(1, 4)) + "\n\n")  # fmt: skip
    assert [s.span_id for s in read_spans(pretty)] == [0xD1]
    assert [s.span_id for s in read_spans(lines)] == [0xD1, 0xD2, 0xD3]
    assert list(read_spans(write(tmp_path, "empty.jsonl", ""))) == []
    assert list(read_spans(write(tmp_path, "bom.json", "\ufeff" + json.dumps(doc)))) != []


def test_metrics_and_logs_lines_are_skipped_with_a_warning(tmp_path: Path) -> None:
    lines = [otlp_doc([raw_span("00000000000000e1")]), {"resourceMetrics": []}, {"resourceLogs": []}, {}]
    path = write(tmp_path, "mixed.jsonl", "\n".join(json.dumps(line) for line in lines))
    with pytest.warns(TraceFileWarning) as record:
        spans = list(read_spans(path))
    assert [s.span_id for s in spans] == [0xE1]
    assert [str(w.message) for w in record] == [f"{path}:2: skipped a line of OTLP metrics (not traces)",
                                                f"{path}:3: skipped a line of OTLP logs (not traces)"]  # fmt: skip


def test_logfire_pending_spans_are_kept_and_not_counted(tmp_path: Path) -> None:
    cap = run_captured([("search", {"q": "x"})])
    records = [Span.from_readable(s) for s in cap.spans]
    tool = next(s for s in records if s.name.startswith("execute_tool"))
    pending = Span(tool.trace_id, 0xFEED, tool.span_id, tool.name, tool.start_ns, tool.start_ns,
                   {**tool.attributes, "logfire.span_type": "pending_span",
                    "logfire.pending_parent_id": f"{tool.parent_id:016x}"}, kind=tool.kind)  # fmt: skip
    path = tmp_path / "pending.jsonl"
    write_otlp_json([pending, *records], path, lines=True, batch_size=1)
    spans = list(read_spans(path))
    assert pending in spans and len(spans) == len(records) + 1
    [tree] = load_traces(path)
    assert grade(tree, [ToolCorrectness(expected_tools=["search"])])[0].passed


# --- traces: grouping, agent runs, streaming ---------------------------------------------------------


def _run(trace: int, root: int, name: str = "invoke_agent a", start: int = 0, parent: int | None = None) -> list[Span]:
    attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name.split()[-1]}
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search", "gen_ai.tool.call.arguments": "{}"}
    return [Span(trace, root + 1, root, "execute_tool search", start + 10, start + 20, tool),
            Span(trace, root, parent, name, start, start + 100, attrs)]  # fmt: skip


def test_one_tree_per_trace(tmp_path: Path) -> None:
    path = tmp_path / "two.json"
    write_otlp_json(_run(1, 0x10) + _run(2, 0x20), path)
    trees = load_traces(path)
    assert [t.trace_ids for t in trees] == [[1], [2]]
    assert all(len(t) == 2 and len(t.roots) == 1 for t in trees)


def test_several_agent_runs_at_the_root_of_one_trace_yield_one_tree_each(tmp_path: Path) -> None:
    orphan = Span(1, 0x99, 0x77, "http request", 150, 160, {})  # parent not recorded, starts after run 1
    early = Span(1, 0x98, None, "setup", 0, 5, {})  # before any run: joins the first
    spans = [*_run(1, 0x10, "invoke_agent first", start=10), *_run(1, 0x20, "invoke_agent second", start=100), orphan,
             early]  # fmt: skip
    path = tmp_path / "runs.json"
    write_otlp_json(spans, path)
    trees = load_traces(path)
    assert [sorted(n.name for n in t.roots) for t in trees] == [
        ["invoke_agent first", "setup"], ["http request", "invoke_agent second"]
    ]  # fmt: skip
    assert [len(t) for t in trees] == [3, 3]
    [whole] = load_traces(path, split_runs=False)
    assert len(whole) == 6
    nested = _run(2, 0x30, "invoke_agent outer") + _run(2, 0x40, "invoke_agent inner", start=10, parent=0x30)
    write_otlp_json(nested, path)
    assert [len(t) for t in load_traces(path)] == [4]  # a nested run is part of its parent's tree


def test_directories_and_lists_of_files(tmp_path: Path) -> None:
    (tmp_path / "d" / "sub").mkdir(parents=True)
    write_otlp_json(_run(1, 0x10), tmp_path / "d" / "b.json")
    write_otlp_json(_run(2, 0x20), tmp_path / "d" / "a.jsonl.gz", lines=True)
    write_otlp_json(_run(3, 0x30), tmp_path / "d" / "sub" / "c.json")
    (tmp_path / "d" / "README.md").write_text("not traces")
    (tmp_path / "d" / ".hidden.json").write_text("{not json")
    with pytest.warns(TraceFileWarning, match=r"ignored 1 file\(s\) without a trace file suffix \(README.md\)"):
        trees = load_traces(tmp_path / "d")
    assert [t.trace_ids[0] for t in trees] == [2, 1, 3]  # a.jsonl.gz, b.json, sub/c.json
    assert [t.trace_ids[0] for t in load_traces([tmp_path / "d" / "b.json", str(tmp_path / "d" / "sub")])] == [1, 3]


def test_a_trace_split_across_files_is_one_trace_with_per_file_false(tmp_path: Path) -> None:
    first, second = _run(1, 0x10)
    write_otlp_json([first], tmp_path / "1.json")
    write_otlp_json([second], tmp_path / "2.json")
    assert [len(t) for t in load_traces([tmp_path / "1.json", tmp_path / "2.json"])] == [1, 1]
    assert [len(t) for t in load_traces([tmp_path / "1.json", tmp_path / "2.json"], per_file=False)] == [2]


def _lines_file(tmp_path: Path, batches: list[list[Span]], tail: str = "") -> Path:
    path = tmp_path / "stream.jsonl"
    path.write_text("".join(json.dumps(dump_otlp_json(b)) + "\n" for b in batches) + tail)
    return path


def test_json_lines_stream_emits_a_trace_once_complete(tmp_path: Path) -> None:
    a, b = _run(1, 0x10), _run(2, 0x20)
    filler = [[Span(3, 0x30 + i, 0x2F, "x", 0, 1, {})] for i in range(3)]  # trace 3: its root never comes
    path = _lines_file(tmp_path, [[a[0]], [a[1]], [b[0]], *filler, [b[1]]], tail="{truncated\n")
    traces = iter_traces(path, idle_lines=3)
    first = next(traces)  # emitted 3 lines after its root, long before the bad last line is read
    assert first.trace_ids == [1] and len(first) == 2
    with pytest.raises(ValueError, match=r"stream.jsonl:8: column 2: invalid JSON"):
        next(traces)


def test_json_lines_stream_groups_a_trace_spread_over_many_lines(tmp_path: Path) -> None:
    spans = [Span(1, 0x100 + i, 0x100, f"child {i}", i, i + 1, {}) for i in range(1, 7)]
    root = Span(1, 0x100, None, "root", 0, 10, {})
    other = [[Span(2 + i, 0x200 + i, None, "other", 0, 1, {})] for i in range(4)]
    path = _lines_file(tmp_path, [[s] for s in spans[:3]] + other + [[s] for s in spans[3:]] + [[root]])
    trees = list(iter_traces(path, idle_lines=2))
    # trace 1 had no root until the last line, so its early children waited for it
    assert sorted(len(t) for t in trees) == [1, 1, 1, 1, 7]
    assert next(t for t in trees if t.trace_ids == [1]).roots[0].name == "root"
    assert [s.trace_id for s in read_spans(path, idle_lines=2)].count(1) == 7


def test_spans_after_their_trace_was_emitted_warn(tmp_path: Path) -> None:
    root, late = Span(1, 1, None, "root", 0, 10, {}), Span(1, 2, 1, "late", 1, 2, {})
    path = _lines_file(tmp_path, [[root], *([[Span(2, 10 + i, None, "x", 0, 1, {})] for i in range(3)]), [late]])
    with pytest.warns(
        TraceFileWarning,
        match=r"stream.jsonl:5: resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]: trace 0+1 has spans after it was emitted",
    ):
        trees = list(iter_traces(path, idle_lines=2))
    assert sum(1 for t in trees if t.trace_ids == [1]) == 2


def test_grading_a_path_reads_every_trace(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    write_otlp_json(_run(1, 0x10) + _run(2, 0x20), path, lines=True, batch_size=1)
    assert grade(path, [ToolCorrectness(expected_tools=["search", "search"])])[0].passed
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(load_traces(path)) == 2


def test_grading_a_directory_attaches_the_log_records_of_its_logs_files(tmp_path: Path) -> None:
    # OTel openai-v2 with content on: the model's tool-call arguments are only in `gen_ai.choice` log records.
    from tracegrade.evaluators import ArgumentCorrectness

    run = FIXTURES / "frameworks" / "openai--otel-genai--content-on"
    for suffix in (".traces.json", ".logs.json"):
        (tmp_path / f"run{suffix}").write_bytes(run.with_name(run.name + suffix).read_bytes())
    check = [ArgumentCorrectness("get_weather", {"city": "Paris"})]
    [with_logs] = grade(tmp_path, check)
    assert with_logs.outcome == "passed", with_logs.reasoning
    assert grade([tmp_path / "run.traces.json", tmp_path / "run.logs.json"], check)[0].outcome == "passed"
    assert grade(load_traces(tmp_path), check)[0].outcome == "passed"  # several trees, logs kept when merged
    [spans_only] = grade(tmp_path / "run.traces.json", check)
    assert spans_only.outcome == "not_evaluated", spans_only.reasoning


def test_grading_a_directory_whose_files_repeat_a_span_id_names_the_directory(tmp_path: Path) -> None:
    write_otlp_json(_run(1, 0x10), tmp_path / "a.json")
    write_otlp_json(_run(1, 0x10, "invoke_agent b"), tmp_path / "b.json")  # another span with the root's id
    with pytest.raises(TraceFormatError) as info, pytest.warns(TraceFileWarning, match="dropped 1 exact duplicate"):
        grade(tmp_path, [ToolCorrectness(expected_tools=["search"])])  # the tool span is the same in both
    assert info.value.path == str(tmp_path)
    assert "duplicate span id" in str(info.value) and "2 trace files" in str(info.value)
    assert "load_traces()" in str(info.value)
    assert len(load_traces(tmp_path)) == 2  # each file on its own reads


# --- an export request written twice (an exporter's retry): its exact duplicate spans are dropped ---

AGENT_RUN_LINES = (FIXTURES / "otlp" / "agent_run.jsonl").read_text().splitlines()


def _retried(tmp_path: Path) -> Path:
    """The collector file of the agent run with its second request written again, byte for byte."""
    lines = [*AGENT_RUN_LINES[:2], AGENT_RUN_LINES[1], *AGENT_RUN_LINES[2:]]
    return write(tmp_path, "retried.jsonl", "\n".join(lines) + "\n")


def _shape(trees: list[SpanTree]) -> list[list[tuple[int, int | None, str]]]:
    return [[(n.span_id, n.parent_span_id, n.name) for n in t] for t in trees]


def test_a_retried_request_reads_as_the_request_once_with_a_warning(tmp_path: Path) -> None:
    path = _retried(tmp_path)
    with pytest.warns(TraceFileWarning) as record:
        trees = load_traces(path)
    assert _shape(trees) == _shape(load_traces(FIXTURES / "otlp" / "agent_run.jsonl"))
    [message] = [str(w.message) for w in record]
    first = json.loads(AGENT_RUN_LINES[1])["resourceSpans"][0]["scopeSpans"][0]["spans"]
    trace = first[0]["traceId"]
    assert message.startswith(f"{path}:3: resourceSpans[0].scopeSpans[0].spans[0]: dropped {len(first)} exact "
                              f"duplicate span(s) of trace {trace}")  # fmt: skip
    assert message.endswith(f"first copy at {path}:2: resourceSpans[0].scopeSpans[0].spans[0])")
    with pytest.warns(TraceFileWarning, match="dropped 3 exact duplicate"):
        spans = [s.span_id for s in read_spans(path)]
    assert spans == [s.span_id for s in read_spans(FIXTURES / "otlp" / "agent_run.jsonl")]
    with pytest.warns(TraceFileWarning, match="dropped 3 exact duplicate"):
        [result] = grade(path, [ToolCorrectness(expected_tools=["search", "get_order"])])
    assert result.passed, result.reasoning


def test_a_retry_in_the_next_rotated_file_is_dropped_when_files_are_grouped_together(tmp_path: Path) -> None:
    write(tmp_path, "data-1.jsonl", "\n".join(AGENT_RUN_LINES[:2]) + "\n")
    write(tmp_path, "data-2.jsonl", "\n".join(AGENT_RUN_LINES[1:]) + "\n")  # the retry landed after rotation
    with pytest.warns(TraceFileWarning, match="dropped .* exact duplicate span"):
        trees = load_traces(tmp_path, per_file=False)
    assert _shape(trees) == _shape(load_traces(FIXTURES / "otlp" / "agent_run.jsonl"))
    with pytest.warns(TraceFileWarning, match=f"{tmp_path}: dropped .* that more than one of its trace files holds"):
        [result] = grade(tmp_path, [ToolCorrectness(expected_tools=["search", "get_order"])])
    assert result.passed, result.reasoning


def test_two_different_spans_with_one_id_stay_an_error_even_beside_exact_copies(tmp_path: Path) -> None:
    changed = json.loads(AGENT_RUN_LINES[1])
    changed["resourceSpans"][0]["scopeSpans"][0]["spans"][-1]["name"] = "another span"
    lines = [*AGENT_RUN_LINES[:2], AGENT_RUN_LINES[1], json.dumps(changed), *AGENT_RUN_LINES[2:]]
    path = write(tmp_path, "changed.jsonl", "\n".join(lines))
    with pytest.raises(TraceFormatError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceFileWarning)
        load_traces(path)
    index = len(changed["resourceSpans"][0]["scopeSpans"][0]["spans"]) - 1
    assert (info.value.line, info.value.location) == (4, f"resourceSpans[0].scopeSpans[0].spans[{index}]")
    assert "two different spans" in info.value.problem and f"first seen at {path}:2:" in info.value.problem


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ({"doubleValue": "NaN"}, {"doubleValue": "NaN"}, True),  # NaN != NaN, but it is the same value recorded twice
        ({"intValue": "1"}, {"doubleValue": 1.0}, False),  # 1 == 1.0 == True in Python: not the same attribute
        ({"intValue": "1"}, {"boolValue": True}, False),
        ({"arrayValue": {"values": [{"intValue": "1"}]}}, {"arrayValue": {"values": [{"doubleValue": 1}]}}, False),
        ({"kvlistValue": {"values": [{"key": "a", "value": {"stringValue": "x"}}]}},
         {"kvlistValue": {"values": [{"key": "a", "value": {"stringValue": "x"}}]}}, True),
    ],
)  # fmt: skip
def test_exact_means_equal_values_of_equal_types(tmp_path: Path, first: Any, second: Any, same: bool) -> None:
    lines = [otlp_doc([raw_span("00000000000000a1", attributes=[{"key": "x", "value": v}])]) for v in (first, second)]
    path = write(tmp_path, "twice.jsonl", "\n".join(map(json.dumps, lines)))
    if same:
        with pytest.warns(TraceFileWarning, match="dropped 1 exact duplicate"):
            assert [len(t) for t in load_traces(path)] == [1]
    else:
        with pytest.raises(TraceFormatError, match="two different spans"):
            load_traces(path)


def test_exact_duplicates_are_reported_per_trace_then_summed_up(tmp_path: Path) -> None:
    traces = [f"{i:032x}" for i in range(1, 26)]
    line = json.dumps(otlp_doc([raw_span("00000000000000a1", trace=t) for t in traces]))
    path = write(tmp_path, "twice.jsonl", f"{line}\n{line}\n")
    with pytest.warns(TraceFileWarning) as record:
        assert len(load_traces(path)) == 25
    messages = [str(w.message) for w in record]
    assert len(messages) == 21 and all("dropped 1 exact duplicate" in m for m in messages[:20])
    assert messages[20] == f"{path}: dropped 25 exact duplicate span(s) in 25 traces in all"


def test_a_file_named_twice_is_read_once(tmp_path: Path) -> None:
    from tracegrade.ingest import trace_files

    write_otlp_json(_run(1, 0x10), tmp_path / "a.json")
    write_otlp_json(_run(2, 0x20), tmp_path / "b.json")
    inside = tmp_path / "a.json"
    files = trace_files([tmp_path, inside, str(tmp_path / "." / "b.json")])
    assert files == [tmp_path / "a.json", tmp_path / "b.json"]
    assert len(load_traces([inside, tmp_path])) == 2  # not three: a.json's trace once
