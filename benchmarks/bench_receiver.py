#!/usr/bin/env python
"""Receiver performance targets (same-run ratios).

    python benchmarks/bench_receiver.py                 # 20k spans x 5 rounds, 30 s sustained ingest
    python benchmarks/bench_receiver.py --quick         # 5k spans x 3 rounds, 5 s sustained ingest
    python benchmarks/bench_receiver.py --duration 10   # sustained-ingest length in seconds

1. CPU per span: the receiver (a separate process running `OTLPReceiver`: HTTP, protobuf decode,
   assembly into traces, and taking the settled traces out) against the OTel SDK exporting the same
   spans (`BatchSpanProcessor` + OTLP/HTTP `OTLPSpanExporter`, fed finished `ReadableSpan`s, until
   `force_flush` returns), each as process CPU time (user + system). Rounds are interleaved in one
   run. Target: receiver / SDK <= 1.
2. Sustained ingest: `--senders` processes each record 10-span traces as fast as they can into a
   `BatchSpanProcessor` + exporter for `--duration` seconds, while the receiver process hands settled
   traces to a consumer (as `tracegrade serve` does). Target: every span the exporters reported as
   exported arrived (0 lost), and no export failed. Spans an SDK's own queue dropped (it is full
   when recording outruns exporting) are reported separately: they never reached the wire. The
   receiver's CPU seconds against the wall time of the phase show whether it was the bottleneck.

Prints a markdown table and writes benchmarks/results_receiver.json. Always exits 0: a missed
target is reported (FAIL), not raised.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).with_name("results_receiver.json")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# --- the receiver process ------------------------------------------------------------------------


def child(settle: float) -> None:
    """Run a receiver; answer commands on stdin: `reset` (mark CPU), `wait N` (until N spans were
    accepted and taken out: print the CPU since `reset`), `drain` (run a consumer), `stats`, `quit`."""
    from tracegrade.receiver import OTLPReceiver

    taken = 0
    lock = threading.Lock()
    draining = threading.Event()
    with OTLPReceiver(port=0) as rx:

        def consume() -> None:
            nonlocal taken
            while True:
                draining.wait()
                got = rx.take_settled(settle, 5.0)
                with lock:
                    taken += sum(len(t.spans) for t in got)
                time.sleep(0.05)

        threading.Thread(target=consume, daemon=True).start()
        print(json.dumps({"endpoint": rx.endpoint}), flush=True)
        mark = _cpu()
        for line in sys.stdin:
            cmd, *arg = line.split()
            if cmd == "reset":
                with lock:
                    taken = 0
                mark = _cpu()
                out: dict[str, Any] = {}
            elif cmd == "wait":
                n = int(arg[0])
                draining.set()
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    with lock:
                        if taken >= n:
                            break
                    time.sleep(0.002)
                draining.clear()
                out = {"cpu": _cpu() - mark, "taken": taken}
            elif cmd == "drain":
                draining.set()
                out = {}
            elif cmd == "stats":
                s = rx.stats
                out = {"accepted": s.spans_accepted, "duplicate": s.spans_duplicate, "busy": s.refused_busy,
                       "malformed": s.refused_malformed, "pending": rx.pending_traces, "taken": taken,
                       "cpu": _cpu()}  # fmt: skip
            else:
                break
            print(json.dumps(out), flush=True)


class Child:
    def __init__(self, settle: float) -> None:
        cmd = [sys.executable, __file__, "--child", "--settle", str(settle)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.endpoint = self._read()["endpoint"]

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        return dict(json.loads(self.proc.stdout.readline()))

    def ask(self, cmd: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)


# --- spans -----------------------------------------------------------------------------------------


def _provider(endpoint: str, **bsp: Any) -> tuple[Any, Any, Any]:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

    class Counting(OTLPSpanExporter):
        exported = 0
        failed = 0

        def export(self, spans: Any) -> SpanExportResult:
            result = super().export(spans)
            if result is SpanExportResult.SUCCESS:
                Counting.exported += len(spans)
            else:
                Counting.failed += len(spans)
            return result

    Counting.exported = Counting.failed = 0
    exporter = Counting(endpoint=endpoint + "/v1/traces")
    provider = TracerProvider(resource=Resource.create({"service.name": "support-agent"}))
    processor = BatchSpanProcessor(exporter, **bsp)
    provider.add_span_processor(processor)
    return provider, processor, Counting


def record_trace(tracer: Any, i: int) -> int:
    """One pydantic-ai-like agent run: 10 spans."""
    with tracer.start_as_current_span(
        "invoke_agent support", attributes={"gen_ai.agent.name": "support", "gen_ai.operation.name": "invoke_agent"}
    ):  # fmt: skip
        for k in range(3):
            with tracer.start_as_current_span("chat gpt-4o", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 812,
                "gen_ai.usage.output_tokens": 64, "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "tool_call", "name": "search_docs",
                      "arguments": {"q": f"order {i} {k}"}, "id": f"call_{i}_{k}"}]}])}):  # fmt: skip
                pass
            with tracer.start_as_current_span("execute_tool search_docs", attributes={
                "gen_ai.tool.name": "search_docs", "gen_ai.tool.call.id": f"call_{i}_{k}",
                "gen_ai.tool.call.arguments": json.dumps({"q": f"order {i} {k}"}), "logfire.msg": "running tool"}):  # fmt: skip
                pass
            with tracer.start_as_current_span("retrieve", attributes={"db.system": "postgresql", "rows": k}):
                pass
    return 10


def finished_spans(n: int) -> list[Any]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("pydantic-ai", "1.0")
    for i in range(n // 10):
        record_trace(tracer, i)
    return list(memory.get_finished_spans())


# --- 1. CPU per span ---------------------------------------------------------------------------------


def cpu_per_span(rx: Child, n: int, rounds: int) -> dict[str, Any]:
    spans = finished_spans(n)
    sdk, recv = [], []
    for _ in range(rounds):
        rx.ask("reset")
        provider, processor, _counting = _provider(rx.endpoint, max_queue_size=len(spans) + 1,
                                                   max_export_batch_size=512, schedule_delay_millis=50)  # fmt: skip
        t0 = _cpu()
        for s in spans:
            processor.on_end(s)
        processor.force_flush(120_000)
        sdk.append((_cpu() - t0) / len(spans))
        provider.shutdown()
        done = rx.ask(f"wait {len(spans)}")
        assert done["taken"] >= len(spans), done
        recv.append(done["cpu"] / len(spans))
    ratios = [r / s for r, s in zip(recv, sdk, strict=True)]
    return {
        "spans": len(spans),
        "rounds": rounds,
        "sdk_us_per_span": statistics.median(sdk) * 1e6,
        "receiver_us_per_span": statistics.median(recv) * 1e6,
        "ratio_paired_median": statistics.median(ratios),
        "ratio_of_medians": statistics.median(recv) / statistics.median(sdk),
        "ratio_of_minimums": min(recv) / min(sdk),
        "target": 1.0,
        "ok": statistics.median(ratios) <= 1.0,
    }


# --- 2. sustained ingest ---------------------------------------------------------------------------


def sender(endpoint: str, duration: float, seed: int) -> None:
    """One sending process: record traces as fast as possible for `duration` s; print the counts."""
    provider, _processor, counting = _provider(
        endpoint, max_queue_size=20_000, max_export_batch_size=512, schedule_delay_millis=100
    )
    tracer = provider.get_tracer("pydantic-ai", "1.0")
    stop = time.monotonic() + duration
    recorded = i = 0
    while time.monotonic() < stop:
        recorded += record_trace(tracer, seed * 10_000_000 + i)
        i += 1
    provider.shutdown()  # flushes what is queued
    print(json.dumps({"recorded": recorded, "exported": counting.exported, "failed": counting.failed}), flush=True)


def sustained(rx: Child, duration: float, senders: int) -> dict[str, Any]:
    before = rx.ask("stats")
    rx.ask("drain")
    t0 = time.monotonic()
    cmd = [sys.executable, __file__, "--sender", rx.endpoint, "--duration", str(duration)]
    procs = [subprocess.Popen([*cmd, "--seed", str(k)], stdout=subprocess.PIPE, text=True) for k in range(senders)]
    sent = [json.loads(p.communicate(timeout=duration + 120)[0]) for p in procs]
    exported = sum(x["exported"] for x in sent)
    failed = sum(x["failed"] for x in sent)
    recorded = sum(x["recorded"] for x in sent)
    deadline = time.monotonic() + 30
    while True:
        after = rx.ask("stats")
        arrived = after["accepted"] - before["accepted"]  # distinct spans: a retried one is counted once
        if arrived >= exported or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    wall = time.monotonic() - t0
    lost = exported - arrived
    return {
        "duration_s": duration,
        "senders": senders,
        "recorded": recorded,
        "exported": exported,
        "export_failures": failed,
        "dropped_by_sdk_queue": recorded - exported - failed,
        "arrived": arrived,
        "lost": lost,
        "spans_per_s": arrived / duration,
        "receiver_cpu_s": after["cpu"] - before["cpu"],
        "wall_s": wall,
        "refused_busy": after["busy"] - before["busy"],
        "ok": lost == 0 and failed == 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--duration", type=float, default=None, help="sustained-ingest seconds (30; --quick: 5)")
    parser.add_argument("--senders", type=int, default=2, help="sending processes for the sustained run (2)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--sender", metavar="ENDPOINT", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--settle", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.settle)
        return
    if args.sender:
        sender(args.sender, args.duration or 5.0, args.seed)
        return
    n, rounds = (5_000, 3) if args.quick else (20_000, 5)
    duration = args.duration if args.duration is not None else (5.0 if args.quick else 30.0)
    rx = Child(settle=0.0)
    try:
        cpu = cpu_per_span(rx, n, rounds)
    finally:
        rx.close()
    rx = Child(settle=0.2)
    try:
        ingest = sustained(rx, duration, args.senders)
    finally:
        rx.close()
    doc = {"python": platform.python_version(), "cpus": os.cpu_count(), "cpu_per_span": cpu, "sustained": ingest}
    RESULTS.write_text(json.dumps(doc, indent=2) + "\n")
    ok = {True: "ok", False: "FAIL"}
    print("| target | N | receiver | baseline | ratio | goal | |")
    print("|---|---|---|---|---|---|---|")
    print(
        f"| CPU per span, protobuf body → assembled traces | {cpu['spans']:,} x {cpu['rounds']} | "
        f"{cpu['receiver_us_per_span']:.1f} µs | SDK BatchSpanProcessor + OTLP/HTTP exporter "
        f"{cpu['sdk_us_per_span']:.1f} µs | {cpu['ratio_paired_median']:.2f} · {cpu['ratio_of_medians']:.2f} · "
        f"{cpu['ratio_of_minimums']:.2f} | ≤ 1 | {ok[cpu['ok']]} |"
    )
    print(
        f"| sustained ingest, {ingest['duration_s']:g} s, {args.senders} sender processes | {ingest['exported']:,} exported "
        f"| {ingest['arrived']:,} arrived ({ingest['spans_per_s']:,.0f}/s), {ingest['lost']} lost, "
        f"{ingest['export_failures']} export failures; receiver CPU {ingest['receiver_cpu_s']:.1f} s in {ingest['wall_s']:.0f} s "
        f"| (the senders' SDK queues dropped {ingest['dropped_by_sdk_queue']:,} spans before the wire; "
        f"{ingest['refused_busy']} requests refused busy and retried) | 0 lost | {ok[ingest['ok']]} |"
    )


if __name__ == "__main__":
    main()
