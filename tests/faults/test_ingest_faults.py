"""Fault suite for trace-file ingest: whatever the bytes, `load_traces` loads them or raises a
`TraceFormatError` naming the file; never another exception, never a hang, never unbounded memory.

- hypothesis fuzzing of each reader (OTLP/JSON, JSON lines, protobuf-JSON, snake_case, Jaeger,
  protobuf bytes, and gzip of each);
- mutations of every shipped fixture (byte flips, truncations, huge numbers, deep nesting, a wrong
  type at every JSON path);
- decompression bombs (each shape in a time- and memory-bounded child) and non-regular files.

`--faults-full` runs more examples, every (JSON path, wrong value) pair, and the 2 GB bombs.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import random
import re
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracegrade import load_traces
from tracegrade.errors import TraceFormatError
from tracegrade.ingest import DEFAULT_MAX_INFLATED_BYTES, trace_files

from ._bounded import run_bounded, time_limit

FIXTURES = Path(__file__).parents[2] / "fixtures"
HANG_SECONDS = 10


# --- the property ----------------------------------------------------------------------------------




class Tally:
    """Inputs tried by one test, and how each ended."""

    def __init__(self) -> None:
        self.loaded = self.errors = 0

    @property
    def tried(self) -> int:
        return self.loaded + self.errors

    def check(self, path: Path, **kwargs: Any) -> None:
        """Read `path`: it loads (and every tree renders) or raises `TraceFormatError` naming it."""
        with time_limit(HANG_SECONDS, "reading one input"):
            try:
                trees = load_traces(path, **kwargs)
                for tree in trees:
                    tree.render()
            except TraceFormatError as e:
                assert e.path == str(path) and str(e).startswith(str(path)) and e.problem, repr(e)
                self.errors += 1
                return
        self.loaded += 1

    def report(self, name: str, record_property: Callable[[str, object], None]) -> None:
        record_property("inputs_tried", self.tried)
        print(f"\n{name}: {self.tried} inputs tried ({self.loaded} loaded, {self.errors} TraceFormatError)")
        assert self.tried


def _examples(scale: str, ci: int, full: int) -> settings:
    return settings(
        max_examples=full if scale == "full" else ci,
        deadline=None,
        derandomize=scale == "ci",
        database=None,
        suppress_health_check=list(HealthCheck),
    )


# --- hypothesis: documents of each reader ------------------------------------------------------------

KEYS = ["resourceSpans", "scopeSpans", "spans", "resource", "scope", "attributes", "traceId", "spanId",
        "parentSpanId", "name", "kind", "startTimeUnixNano", "endTimeUnixNano", "status", "code", "message",
        "events", "timeUnixNano", "key", "value", "stringValue", "intValue", "doubleValue", "boolValue",
        "arrayValue", "kvlistValue", "bytesValue", "values", "version"]  # fmt: skip
junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
    | st.sampled_from([2**64, 2**63, -(2**63) - 1, 10**30, "1" * 25, "-", "²", "0x", "NaN", ""]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=4), inner,
                                                                max_size=3),
    max_leaves=8,
)  # fmt: skip


def _hex(width: int) -> st.SearchStrategy[Any]:
    return st.integers(0, 16**width - 1).map(lambda n: f"{n:0{width}x}")


def ids(width: int) -> st.SearchStrategy[Any]:
    base64_ids = st.binary(min_size=width // 2, max_size=width // 2).map(lambda b: base64.b64encode(b).decode())
    return _hex(width) | st.sampled_from([f"{1:0{width}x}", f"{2:0{width}x}"]) | base64_ids | junk


_time_ints = st.integers(0, 2**64 - 1) | st.integers(-(2**70), 2**70) | st.sampled_from([2**64, 10**400])
times = _time_ints.flatmap(lambda n: st.sampled_from([n, str(n)])) | junk
any_value = st.recursive(
    st.fixed_dictionaries({}, optional={"stringValue": st.text(max_size=8) | junk, "intValue": times,
                                        "doubleValue": st.floats() | st.sampled_from(["NaN", "Infinity"]) | junk,
                                        "boolValue": st.booleans() | junk, "bytesValue": st.text(max_size=8)}),
    lambda inner: st.fixed_dictionaries({"arrayValue": st.fixed_dictionaries({"values": st.lists(inner, max_size=3)})})
    | st.fixed_dictionaries({"kvlistValue": st.fixed_dictionaries(
        {"values": st.lists(st.fixed_dictionaries({"key": st.text(max_size=4), "value": inner}), max_size=3)})}),
    max_leaves=6,
) | junk  # fmt: skip
attributes = st.lists(st.fixed_dictionaries({"key": st.text(max_size=6) | junk, "value": any_value}), max_size=3) | junk
otlp_span = st.fixed_dictionaries(
    {"traceId": ids(32), "spanId": ids(16)},
    optional={"parentSpanId": ids(16), "name": st.text(max_size=8) | junk, "kind": st.integers(-1, 6) | junk,
              "startTimeUnixNano": times, "endTimeUnixNano": times, "attributes": attributes,
              "status": st.fixed_dictionaries({}, optional={"code": st.integers(-1, 3) | junk, "message": junk}),
              "events": st.lists(st.fixed_dictionaries({"name": st.text(max_size=4) | junk, "timeUnixNano": times,
                                                        "attributes": attributes}), max_size=2) | junk},
)  # fmt: skip
otlp_doc = st.fixed_dictionaries({"resourceSpans": st.lists(st.fixed_dictionaries(
    {"scopeSpans": st.lists(st.fixed_dictionaries(
        {"spans": st.lists(otlp_span | junk, max_size=4)},
        optional={"scope": st.fixed_dictionaries({}, optional={"name": junk, "version": junk, "attributes": attributes})})
        | junk, max_size=2)},
    optional={"resource": st.fixed_dictionaries({"attributes": attributes}) | junk}) | junk, max_size=2) | junk})  # fmt: skip


def _snake(value: Any) -> Any:
    if isinstance(value, dict):
        return {re.sub(r"([A-Z])", r"_\1", k).lower() if isinstance(k, str) else k: _snake(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_snake(v) for v in value]
    return value


tags = st.lists(st.fixed_dictionaries(
    {"key": st.text(max_size=6) | junk},
    optional={"type": st.sampled_from(["string", "bool", "int64", "float64", "binary"]) | junk, "value": junk}),
    max_size=3) | junk  # fmt: skip
jaeger_doc = st.fixed_dictionaries({"data": st.lists(st.fixed_dictionaries(
    {"traceID": ids(32), "spans": st.lists(st.fixed_dictionaries(
        {"spanID": ids(16)},
        optional={"traceID": ids(32), "operationName": junk, "startTime": times, "duration": times, "tags": tags,
                  "processID": st.sampled_from(["p1", "p2"]) | junk,
                  "references": st.lists(st.fixed_dictionaries(
                      {"refType": st.sampled_from(["CHILD_OF", "FOLLOWS_FROM"]) | junk, "spanID": ids(16)},
                      optional={"traceID": ids(32)}), max_size=2) | junk,
                  "logs": st.lists(st.fixed_dictionaries({"timestamp": times, "fields": tags}), max_size=2) | junk})
        | junk, max_size=4)},
    optional={"processes": st.dictionaries(st.sampled_from(["p1", "p2"]), st.fixed_dictionaries(
        {"serviceName": junk, "tags": tags}) | junk, max_size=2) | junk}), max_size=2)})  # fmt: skip


def _dumps(value: Any) -> bytes:
    return json.dumps(value).encode()  # NaN / Infinity stay bare literals, as Python writers leave them


JSON_FORMATS: dict[str, st.SearchStrategy[bytes]] = {
    "otlp_json": otlp_doc.map(_dumps),
    "otlp_pretty": otlp_doc.map(lambda d: json.dumps(d, indent=1).encode()),
    "json_lines": st.lists(otlp_doc, min_size=1, max_size=4).map(lambda ds: b"\n".join(map(_dumps, ds)) + b"\n"),
    "protobuf_json": otlp_doc.map(_dumps),  # base64 ids and enum names come from `ids` and `junk`
    "snake_case": otlp_doc.map(lambda d: _dumps(_snake(d))),
    "jaeger": jaeger_doc.map(_dumps),
}


@pytest.mark.parametrize("fmt", sorted(JSON_FORMATS))
def test_fuzzed_documents_load_or_raise_a_format_error(
    fmt: str, fault_scale: str, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    tally = Tally()

    @_examples(fault_scale, 40, 2000)
    @given(data=JSON_FORMATS[fmt], compress=st.booleans(), cut=st.none() | st.integers(0, 10_000))
    def run(data: bytes, compress: bool, cut: int | None) -> None:
        if cut is not None:  # a truncated copy too
            data = data[:cut]
        path = tmp_path / ("t.json.gz" if compress else "t.json")
        path.write_bytes(gzip.compress(data, mtime=0) if compress else data)
        tally.check(path)

    run()
    tally.report(f"fuzz {fmt}", record_property)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def test_fuzzed_protobuf_bytes_load_or_raise_a_format_error(
    fault_scale: str, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    valid = (FIXTURES / "otlp" / "agent_run.pb").read_bytes()
    tally = Tally()

    @_examples(fault_scale, 150, 5000)
    @given(
        base=st.sampled_from(["valid", "random", "stream"]),
        random_bytes=st.binary(max_size=64),
        flips=st.lists(st.tuples(st.integers(0, len(valid) - 1), st.integers(0, 255)), max_size=4),
        cut=st.none() | st.integers(0, len(valid)),
        compress=st.booleans(),
    )
    def run(base: str, random_bytes: bytes, flips: list[tuple[int, int]], cut: int | None, compress: bool) -> None:
        data = bytearray(valid if base != "random" else random_bytes)
        for at, byte in flips:
            if at < len(data):
                data[at] = byte
        if cut is not None:
            data = data[:cut]
        if base == "stream":  # the collector's framing: a 4-byte big-endian length before each message
            data = bytearray(len(data).to_bytes(4, "big") + data + len(random_bytes).to_bytes(4, "big") + random_bytes)
        path = tmp_path / ("t.pb.gz" if compress else "t.pb")
        path.write_bytes(gzip.compress(bytes(data), mtime=0) if compress else bytes(data))
        tally.check(path)

    run()
    tally.report("fuzz protobuf", record_property)


# --- mutations of the shipped fixtures -----------------------------------------------------------------

SHIPPED = trace_files([FIXTURES / "otlp", FIXTURES / "jaeger", FIXTURES / "dialects"])  # the committed fixtures
WRONG: list[Any] = [None, True, -1, 1.5, 2**64, 10**30, "x", "1" * 25, [], {}, [{}], {"a": [1]}]
HUGE = [b"1" * 5000, b"-" + b"1" * 400, b"1e400", b"18446744073709551616", b"99999999999999999999", b"NaN"]


def _slots(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _slots(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _slots(v, (*path, i))


def _set(doc: Any, where: tuple[Any, ...], value: Any) -> Any:
    if not where:
        return value
    out = json.loads(json.dumps(doc))
    target = out
    for step in where[:-1]:
        target = target[step]
    target[where[-1]] = value
    return out


def _plain(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _mutants(path: Path, scale: str) -> Iterator[tuple[str, bytes]]:
    """(kind, content) of mutated copies of one fixture (before any gzip)."""
    rng = random.Random(path.name)
    data = _plain(path)
    n = 24 if scale == "ci" else 400
    for _ in range(n):
        flipped = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            flipped[rng.randrange(len(flipped))] = rng.randrange(256)
        yield "byte flip", bytes(flipped)
    for _ in range(n // 4):
        yield "truncation", data[: rng.randrange(len(data))]
    for _ in range(n // 2):
        at = rng.randrange(len(data))
        yield "insertion", data[:at] + rng.choice(HUGE) + data[at:]
    if data[:1] not in (b"{", b"["):
        return
    lines = data.splitlines() if path.suffix in (".jsonl", ".ndjson") or ".jsonl" in path.name else [data]
    for li, line in enumerate(lines):
        doc = json.loads(line)

        def with_line(new: Any, li: int = li) -> bytes:
            return b"\n".join([*lines[:li], json.dumps(new).encode(), *lines[li + 1 :]]) + b"\n"

        slots = list(_slots(doc))[1:]
        deep_list: Any = 0
        for _ in range(1500):
            deep_list = [deep_list]
        for where in rng.sample(slots, min(len(slots), 4 if scale == "ci" else len(slots))):
            raw = with_line(_set(doc, where, "@@DEEP@@"))
            for depth in (900, 1500):
                yield "deep nesting", raw.replace(b'"@@DEEP@@"', b"[" * depth + b"0" + b"]" * depth)
                yield "deep nesting", raw.replace(b'"@@DEEP@@"', b'{"a":' * depth + b"0" + b"}" * depth)
        for where in rng.sample(slots, min(len(slots), 16)) if scale == "ci" else slots:
            values = [rng.choice(WRONG)] if scale == "ci" else WRONG
            for value in values:
                yield "wrong type", with_line(_set(doc, where, value))
            for huge in [rng.choice(HUGE)] if scale == "ci" else HUGE:
                yield "huge number", with_line(_set(doc, where, "@@HUGE@@")).replace(b'"@@HUGE@@"', huge)


@pytest.mark.parametrize("fixture", SHIPPED, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_mutated_fixtures_load_or_raise_a_format_error(
    fixture: Path, fault_scale: str, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    tally = Tally()
    tally.check(fixture)
    assert tally.loaded == 1, "the shipped fixture itself loads"
    compressed = fixture.read_bytes()[:2] == b"\x1f\x8b"
    for kind, content in _mutants(fixture, fault_scale):
        path = tmp_path / fixture.name
        path.write_bytes(gzip.compress(content, mtime=0) if compressed else content)
        try:
            tally.check(path)
        except AssertionError as e:
            raise AssertionError(f"{kind} of {fixture.name}: {e}") from None
    if compressed:  # and the gzip bytes themselves damaged
        rng = random.Random(fixture.name)
        raw = fixture.read_bytes()
        for _ in range(20 if fault_scale == "ci" else 500):
            damaged = bytearray(raw)
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
            path = tmp_path / fixture.name
            path.write_bytes(bytes(damaged[: rng.randrange(len(damaged) + 1)] if rng.random() < 0.3 else damaged))
            tally.check(path)
    tally.report(f"mutations of {fixture.relative_to(FIXTURES)}", record_property)


# --- decompression bombs -----------------------------------------------------------------------------

MiB = 1 << 20


def _member(data: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)  # one gzip member
    return c.compress(data) + c.flush()


def write_bomb(path: Path, head: bytes, fill: bytes, size: int, tail: bytes) -> int:
    """A gzip file inflating to `head`, `fill` repeated to `size` bytes (a multiple of 1 MiB), then
    `tail`: one member per MiB of fill, compressed once and repeated (a file 1/1000 of its inflated
    size). Returns the file's size."""
    assert MiB % len(fill) == 0 and size % MiB == 0
    member = _member(fill * (MiB // len(fill)))
    with open(path, "wb") as f:
        f.write(_member(head))
        for _ in range(size // MiB):
            f.write(member)
        f.write(_member(tail))
    return path.stat().st_size


def _field(number: int, length: int) -> bytes:
    """The tag and length of a length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(length)


def _pb_huge_attribute(size: int) -> tuple[bytes, int]:
    """(bytes before the value, its length): an ExportTraceServiceRequest whose one resource
    attribute is a string of `size` bytes."""
    any_value = _field(1, size)  # AnyValue.string_value
    kv = _field(1, 1) + b"k" + _field(2, len(any_value) + size)  # KeyValue{key, value}
    resource = _field(1, len(kv) + len(any_value) + size)  # Resource.attributes
    rs = _field(1, len(resource) + len(kv) + len(any_value) + size)  # ResourceSpans.resource
    request = _field(1, len(rs) + len(resource) + len(kv) + len(any_value) + size)
    head = request + rs + resource + kv + any_value
    return head, len(head) + size


SPAN = {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": "s",
        "startTimeUnixNano": "1", "endTimeUnixNano": "2"}  # fmt: skip
LINE = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [SPAN]}]}]}).encode() + b"\n"


def bomb_shapes(size: int) -> dict[str, tuple[bytes, bytes, bytes]]:
    """(head, fill, tail) of each bomb shape; the fill is repeated to `size` bytes."""
    pb_head, pb_len = _pb_huge_attribute(size)
    return {
        "json_document": (b'{\n  "resourceSpans": [\n', b" ", b"\n  ]\n}\n"),
        "json_line": (LINE + b'{"resourceSpans":[', b"0,", b"0]}\n"),
        "huge_attribute": (
            b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c",'
            b'"spanId":"eee19b7ec3c1b174","attributes":[{"key":"k","value":{"stringValue":"',
            b"a",
            b'"}}]}]}]}]}\n',
        ),
        "json_lines": (LINE, b'{"resourceSpans":[]}'.ljust(255) + b"\n", b""),  # valid lines, streamed
        "protobuf_message": (pb_head, b"a", b""),
        # a stream: message 0 (one empty ResourceSpans), then message 1 holding the huge attribute
        "protobuf_stream": ((2).to_bytes(4, "big") + b"\n\x00" + pb_len.to_bytes(4, "big") + pb_head, b"a", b""),
    }


_BOMB_CHILD = """
from tracegrade.errors import TraceFormatError
from tracegrade import load_traces
try:
    trees = load_traces({path!r}{limit})
except TraceFormatError as e:
    print("TraceFormatError:", e)
else:
    print("loaded", len(trees))
"""


def load_bounded(path: Path, limit: int | None, max_memory_mb: int, timeout: float) -> tuple[str, float]:
    """(what the child printed, its peak RSS in MB) for `load_traces(path)` in a bounded child."""
    kw = "" if limit is None else f", max_inflated_bytes={limit}"
    child = run_bounded(_BOMB_CHILD.format(path=str(path), limit=kw), timeout=timeout, max_memory_mb=max_memory_mb)
    out = child.stdout.strip() or child.stderr.strip().splitlines()[-1]
    return out, child.peak_rss_mb


@pytest.mark.parametrize("shape", sorted(bomb_shapes(MiB)))
def test_decompression_bombs_stop_at_the_inflation_limit(
    shape: str, fault_scale: str, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    if fault_scale == "full":  # the bombs: ~2 MB of gzip inflating to 2 GB, the default limit
        size, limit, rss_bound = 2048 * MiB, None, 512.0
    else:  # 256 MB bombs against an 8 MiB limit: the same code paths, in a second or two
        size, limit, rss_bound = 256 * MiB, 8 * MiB, 160.0
    path = tmp_path / f"{shape}.gz"
    head, fill, tail = bomb_shapes(size)[shape]
    compressed = write_bomb(path, head, fill, size, tail)
    out, peak = load_bounded(path, limit, max_memory_mb=1024, timeout=120 if fault_scale == "full" else 30)
    record_property("peak_rss_mb", peak)
    print(f"\nbomb {shape}: {compressed:,} bytes of gzip inflating to {size:,}: peak RSS {peak:.0f} MB; {out}")
    shown = f"{limit or DEFAULT_MAX_INFLATED_BYTES:,}"
    assert out.startswith(f"TraceFormatError: {path}: gzip data inflates to more than {shown} bytes"), out
    assert "pass a larger max_inflated_bytes" in out
    assert peak < rss_bound, f"peak RSS {peak:.0f} MB"


# --- non-regular files -------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", ["dev_zero", "fifo", "symlink_to_dev_zero"])
def test_non_regular_files_are_refused_without_reading(make: str, tmp_path: Path) -> None:
    # in a bounded child: reading /dev/zero would fill memory, opening a pipe would wait for a writer
    if make == "dev_zero":
        path = Path("/dev/zero")
    elif make == "fifo":
        path = tmp_path / "pipe.jsonl"
        os.mkfifo(path)
    else:
        path = tmp_path / "zero.jsonl"
        path.symlink_to("/dev/zero")
    out, peak = load_bounded(path, None, max_memory_mb=512, timeout=20)
    kind = "a named pipe" if make == "fifo" else "a character device"
    expected = f"TraceFormatError: {path}: not a regular file ({kind}); expected a trace file or a directory of them"
    assert out == expected and peak < 150


def test_a_directory_with_a_device_link_reads_its_regular_files(tmp_path: Path) -> None:
    (tmp_path / "zero.jsonl").symlink_to("/dev/zero")
    (tmp_path / "t.jsonl").write_bytes(LINE)
    with time_limit(5):
        trees = load_traces(tmp_path)
    assert [t.roots[0].name for t in trees] == ["s"]


# --- the generators themselves ---------------------------------------------------------------------------


def test_bomb_shapes_inflate_to_what_they_claim() -> None:
    for shape, (head, fill, tail) in bomb_shapes(2 * MiB).items():
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "b.gz"
            write_bomb(path, head, fill, 2 * MiB, tail)
            assert len(gzip.decompress(path.read_bytes())) == len(head) + 2 * MiB + len(tail), shape
    head, total = _pb_huge_attribute(1000)
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    msg = ExportTraceServiceRequest.FromString(head + b"a" * 1000)
    assert msg.resource_spans[0].resource.attributes[0].value.string_value == "a" * 1000
    assert total == len(head) + 1000
