"""Reading recorded traces, and writing OTLP/JSON (to record fixtures).

Formats, sniffed by content (not by file name):

- OTLP/JSON: one `ExportTraceServiceRequest` / `TracesData` document; also Tempo's `batches` and
  the `trace` / `result` wrappers of Tempo v2 and Jaeger v3.
- OTel Collector file-exporter JSON lines: one request per line, streamed line by line.
- OTLP protobuf: a single message or the collector's 4-byte length-prefixed stream, read message
  by message (needs the `proto` extra: `pip install tracegrade[proto]`).
- Jaeger JSON (`data[].spans`, UI download or `/api/traces`).
- OTLP logs (JSON documents, JSON lines, protobuf) among the inputs: their records are attached to
  the spans they name (`SpanNode.logs`); `read_logs` reads one such file. A JSON lines file or
  protobuf stream may hold both signals (one collector `file` exporter in both pipelines): its spans
  are read as spans, its records attached as a logs file's are.
- Any of these gzip-compressed; a compressed file may inflate to at most `max_inflated_bytes`
  (default 256 MiB), so a small file that inflates to gigabytes is an error, not a memory blow-up.

Lenient where real files differ from the spec: hex, base64 or `0x` ids, camelCase or snake_case
keys, `instrumentationLibrarySpans`, enum ints or names, int64 as strings or numbers, bare `NaN` /
`Infinity`. Strict where a value would be wrong later: times are unsigned 64-bit nanoseconds and a
span may not end before it starts; integers must fit int64; only regular files are read. Bad input
raises `tracegrade.errors.TraceFormatError` naming the file, the line or JSON path, and the problem; anything
skipped (a metrics line in a JSON lines file) is reported with a `TraceFileWarning`. A span read twice
with every field equal (an export request an exporter retried, written again) is read once, the copies
reported with a `TraceFileWarning`; two different spans with one id in a trace are an error.
"""

from ._errors import DEFAULT_MAX_ATTRIBUTE_BYTES, DEFAULT_MAX_INFLATED_BYTES
from ._logs import read_logs
from ._read import TraceFileWarning
from ._traces import DEFAULT_IDLE_LINES, iter_traces, read_spans, read_tree, split_agent_runs, trace_files
from ._write import dump_otlp_json

__all__ = [
    "DEFAULT_IDLE_LINES",
    "DEFAULT_MAX_ATTRIBUTE_BYTES",
    "DEFAULT_MAX_INFLATED_BYTES",
    "TraceFileWarning",
    "dump_otlp_json",
    "iter_traces",
    "read_logs",
    "read_spans",
    "read_tree",
    "split_agent_runs",
    "trace_files",
]
