#!/usr/bin/env python
"""Batch grading performance targets (same-run ratios).

    python benchmarks/bench_batch.py            # 4,000 traces, 3 rounds; Spark and memory runs included
    python benchmarks/bench_batch.py --quick    # 1,000 traces, 1 round
    python benchmarks/bench_batch.py --no-spark

Input: one real Pydantic AI agent run (FunctionModel: search → get_order → answer, messages
recorded) captured with `tracegrade.capture`, cloned with fresh trace and span ids into N traces,
written by `write_otlp_json(lines=True)` as collector-style JSON lines (4 files, one request per
trace) and by `write_span_parquet` as a ClickHouse-layout Parquet file.

1. End to end, one core: `grade_traces(files, five evaluators, workers=1, out=results.parquet)`
   (read, tree, extract, grade, write) against bare `json.loads` of every line of the same files
   (reading included). Target: ratio <= 1.0.
2. Parquet source: traces/s of the same job on the Parquet file vs the OTLP files. Target >= 3.
3. Local engine, 2 workers vs 1 (traces/s, pool start-up included). Target >= 1.7.
4. Spark local[2] vs local[1], the Parquet job, each in a fresh process (session start-up not
   timed: the second of two runs is). Target >= 1.5.
5. Peak RSS (VmHWM of a fresh process each) of the end-to-end job on a 1x and a 10x input. Target 10x/1x <= 1.5.

Prints a markdown table and writes benchmarks/results_batch.json. Always exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SPEC: list[Any] = [
    {"ToolCorrectness": {"expected_tools": ["search", "get_order"]}},
    {"TrajectoryMatch": {"expected_trajectory": ["search", "get_order"], "order": "in_order"}},
    {"ArgumentCorrectness": {"tool_name": "get_order", "expected_arguments": {"id": 1234}}},
    {"MaxToolCalls": 3},
    {"MaxModelRequests": 4},
]
FILES = 4


def record_run() -> list[Any]:
    """One real agent run's spans (`Span`s), content recorded."""
    from pydantic_ai import Agent, InstrumentationSettings
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from tracegrade import capture
    from tracegrade.spans import Span

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = sum(isinstance(m, ModelResponse) for m in messages)
        if done == 0:
            return ModelResponse(parts=[ToolCallPart("search", {"q": "where is order 1234"}, tool_call_id="c1")])
        if done == 1:
            return ModelResponse(parts=[ToolCallPart("get_order", {"id": 1234}, tool_call_id="c2")])
        return ModelResponse(parts=[TextPart("Order 1234 shipped yesterday and arrives on Friday. " * 4)])

    agent = Agent(FunctionModel(model), name="support", instructions="You are a support agent. " * 10)
    agent.instrument = InstrumentationSettings(include_content=True)

    @agent.tool_plain
    def search(q: str) -> str:
        return "Order 1234: status shipped, carrier UPS, tracking 1Z999. " * 5

    @agent.tool_plain
    def get_order(id: int) -> dict[str, Any]:
        return {"id": id, "status": "shipped", "items": [{"sku": f"SKU-{i}", "qty": i} for i in range(5)]}

    with capture() as cap:
        agent.run_sync("Hi, where is my order 1234? It was due last week.")
    return [Span.from_readable(s) for s in cap.spans]


def clone(run: list[Any], n: int, seed: int = 7) -> list[list[Any]]:
    """`n` copies of the run with fresh trace and span ids, shifted in time."""
    from dataclasses import replace

    rng = random.Random(seed)
    t0 = min(s.start_ns for s in run)
    out = []
    for i in range(n):
        tid = rng.getrandbits(128) | 1
        ids = {s.span_id: rng.getrandbits(64) | 1 for s in run}
        shift = i * 5_000_000_000
        out.append([
            replace(s, trace_id=tid, span_id=ids[s.span_id], parent_id=ids.get(s.parent_id) if s.parent_id else None,
                    start_ns=s.start_ns - t0 + 1_800_000_000_000_000_000 + shift,
                    end_ns=None if s.end_ns is None else s.end_ns - t0 + 1_800_000_000_000_000_000 + shift)
            for s in run
        ])  # fmt: skip
    return out


def write_inputs(traces: list[list[Any]], d: Path, files: int = FILES) -> tuple[list[Path], Path]:
    from tracegrade import write_otlp_json
    from tracegrade.batch import write_span_parquet

    d.mkdir(parents=True, exist_ok=True)
    per = len(traces[0])
    paths = []
    for k in range(files):
        spans = [s for t in traces[k::files] for s in t]
        paths.append(write_otlp_json(spans, d / f"traces-{k}.jsonl", lines=True, batch_size=per))
    parquet = write_span_parquet([s for t in traces for s in t], d / "spans.parquet")
    return paths, parquet


def timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def json_loads(files: list[Path]) -> None:
    for f in files:
        with open(f, "rb") as fh:
            for line in fh:
                json.loads(line)


def batch(sources: list[Path], out: Path, workers: int = 1) -> None:
    from tracegrade.batch import grade_traces

    grade_traces(sources, SPEC, workers=workers, out=out, progress=False)


def in_fresh_process(code: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


MEMORY = """
import json, sys
sys.path.insert(0, {here!r})
from bench_batch import batch
from pathlib import Path
batch([Path(p) for p in {files!r}], Path({out!r}))
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({{"maxrss_mb": hwm / 1024}}))  # VmHWM: this process's peak (ru_maxrss would carry the parent's over)
"""

SPARK = """
import json, time, sys
sys.path.insert(0, {here!r})
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[{cores}]").config("spark.ui.enabled", "false").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
from bench_batch import SPEC
from tracegrade.batch import grade_traces
times = []
for _ in range({rounds} + 1):
    t = time.perf_counter()
    r = grade_traces([{source!r}], SPEC, engine="spark", spark=spark, out={out!r}, progress=False)
    times.append(time.perf_counter() - t)
print(json.dumps({{"seconds": min(times[1:]), "units": r.summary.units}}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--traces", type=int, default=None)
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--no-memory", action="store_true")
    args = ap.parse_args()
    n = args.traces or (1000 if args.quick else 4000)
    rounds = 1 if args.quick else 3
    here = str(Path(__file__).resolve().parent)
    results: dict[str, Any] = {
        "traces": n,
        "rounds": rounds,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    run = record_run()
    results["spans_per_trace"] = len(run)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        files, parquet = write_inputs(clone(run, n), d / "x1")
        results["otlp_mb"] = round(sum(f.stat().st_size for f in files) / 1e6, 1)
        results["parquet_mb"] = round(parquet.stat().st_size / 1e6, 1)
        out = d / "results.parquet"
        batch(files[:1], out)  # warm imports
        t_json, t_otlp, t_pq, t_w1, t_w2 = [], [], [], [], []
        for _ in range(rounds):  # interleaved
            t_json.append(timed(lambda: json_loads(files)))
            t_otlp.append(timed(lambda: batch(files, out)))
            t_pq.append(timed(lambda: batch([parquet], out)))
            t_w1.append(timed(lambda: batch(files, out, workers=1)))
            t_w2.append(timed(lambda: batch(files, out, workers=2)))
        med = statistics.median
        rows = []
        ratio = med(a / b for a, b in zip(t_otlp, t_json, strict=True))
        rows.append(
            (
                "end to end (OTLP JSON lines, 1 core) / json.loads",
                f"{med(t_otlp):.2f} s / {med(t_json):.2f} s",
                ratio,
                "<= 1.0",
                ratio <= 1.0,
            )
        )
        ratio = med(a / b for a, b in zip(t_otlp, t_pq, strict=True))
        rows.append(
            (
                "Parquet traces/s / OTLP traces/s",
                f"{n / med(t_pq):,.0f} / {n / med(t_otlp):,.0f} traces/s",
                ratio,
                ">= 3",
                ratio >= 3,
            )
        )
        ratio = med(a / b for a, b in zip(t_w1, t_w2, strict=True))
        rows.append(
            (
                "local 2 workers / 1 worker (traces/s)",
                f"{n / med(t_w2):,.0f} / {n / med(t_w1):,.0f} traces/s",
                ratio,
                ">= 1.7",
                ratio >= 1.7,
            )
        )
        if not args.no_spark:
            spark = {}
            for cores in (1, 2):
                spark[cores] = in_fresh_process(
                    SPARK.format(
                        here=here, cores=cores, rounds=rounds, source=str(parquet), out=str(d / f"s{cores}.parquet")
                    )
                )
            results["spark"] = spark
            if all("seconds" in v for v in spark.values()):
                ratio = spark[1]["seconds"] / spark[2]["seconds"]
                rows.append(
                    (
                        "Spark local[2] / local[1] (traces/s, Parquet)",
                        f"{n / spark[2]['seconds']:,.0f} / {n / spark[1]['seconds']:,.0f} traces/s",
                        ratio,
                        ">= 1.5",
                        ratio >= 1.5,
                    )
                )
            else:
                rows.append(("Spark local[2] / local[1]", json.dumps(spark), float("nan"), ">= 1.5", False))
        if not args.no_memory:
            files10, _ = write_inputs(clone(run, 10 * n, seed=8), d / "x10")
            mem = {}
            for label, fs in (("1x", files), ("10x", files10)):
                mem[label] = in_fresh_process(
                    MEMORY.format(here=here, files=[str(f) for f in fs], out=str(d / "m.parquet"))
                )
            results["memory"] = mem
            if all("maxrss_mb" in v for v in mem.values()):
                ratio = mem["10x"]["maxrss_mb"] / mem["1x"]["maxrss_mb"]
                rows.append(
                    (
                        "peak RSS 10x / 1x input",
                        f"{mem['10x']['maxrss_mb']:.0f} MB / {mem['1x']['maxrss_mb']:.0f} MB",
                        ratio,
                        "<= 1.5",
                        ratio <= 1.5,
                    )
                )
        results["timings"] = {"json_loads": t_json, "otlp": t_otlp, "parquet": t_pq, "workers1": t_w1, "workers2": t_w2}
    results["targets"] = [{"target": r[0], "figures": r[1], "ratio": r[2], "goal": r[3], "met": r[4]} for r in rows]
    print(
        f"\n{n:,} traces x {results['spans_per_trace']} spans, {results['otlp_mb']} MB OTLP JSON lines, {results['parquet_mb']} MB Parquet\n"
    )
    print("| target | figures | ratio | goal | |\n|---|---|---|---|---|")
    for name, figures, ratio, goal, met in rows:
        print(f"| {name} | {figures} | {ratio:.2f} | {goal} | {'ok' if met else 'FAIL'} |")
    Path(__file__).with_name("results_batch.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
