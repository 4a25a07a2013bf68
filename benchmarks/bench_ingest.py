#!/usr/bin/env python
"""Ingest performance targets.

    python benchmarks/bench_ingest.py           # full run: 100k-span file, 1x/10x streaming memory
    python benchmarks/bench_ingest.py --quick   # 20k spans, fewer repeats (a smoke check)

1. Parse speed: `load_traces` of a 100,000-span OTLP/JSON file (pydantic-ai-like attributes, as
   `write_otlp_json` writes it) against plain `json.loads` of the same file (both include reading
   it). Target: ratio <= 2.0. Also reported: `orjson.loads` of the file (the decoder `load_traces`
   uses), and CPU times (`time.process_time`), steadier than wall time on a shared machine.
2. Streaming memory: peak RSS (`resource.getrusage` maxrss, each run in a fresh subprocess) of
   grading every trace of a collector-style JSON lines file with `iter_traces`, for a 1x and a 10x
   file. Target: 10x / 1x <= 1.5. The interpreter's baseline after imports is reported too.

Prints a markdown table and writes benchmarks/results_ingest.json. Always exits 0: a missed
target is reported (FAIL), not raised.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from tracegrade import load_traces, write_otlp_json
from tracegrade.spans import Span

RESOURCE = {
    "telemetry.sdk.language": "python",
    "telemetry.sdk.name": "opentelemetry",
    "telemetry.sdk.version": "1.45.2",
    "service.instance.id": "5a1f1f5e-6a3b-4a8e-9c1e-6f0f3c1f2b7d",
    "service.name": "support-agent",
}
TOOLS = ["search_docs", "get_order", "refund", "send_email", "lookup_user"]
TOOL_DEFS = json.dumps(
    [
        {"type": "function", "name": t, "parameters": {"properties": {"q": {"type": "string"}}, "type": "object"}}
        for t in TOOLS
    ]
)
REQUEST_PARAMS = json.dumps(
    {
        "function_tools": [
            {"name": t, "parameters_json_schema": {"properties": {"q": {"type": "string"}}}} for t in TOOLS
        ],
        "output_mode": "text",
        "allow_text_output": True,
    }
)
CHAT_SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {k: {"type": "array"} for k in ("gen_ai.input.messages", "gen_ai.output.messages")},
    }
)
TOOL_SCHEMA = json.dumps(
    {"type": "object", "properties": {"gen_ai.tool.call.arguments": {"type": "object"}, "gen_ai.tool.call.result": {}}}
)


def agent_trace(rng: random.Random, trace_id: int, t0: int, steps: int) -> list[Span]:
    """One pydantic-ai v5 agent run: invoke_agent → (chat → execute_tool) * steps → chat."""
    ids = iter(rng.getrandbits(64) | 1 for _ in range(2 * steps + 2))
    root = next(ids)
    common = {"gen_ai.agent.name": "support", "gen_ai.agent.call.id": f"{trace_id:032x}"[:26],
              "gen_ai.conversation.id": f"{trace_id:032x}"[6:]}  # fmt: skip
    messages: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"type": "text", "content": "Where is my order 1234?"}]}
    ]
    spans: list[Span] = []
    t = t0 + 1_000
    for step in range(steps + 1):
        last = step == steps
        tool = TOOLS[rng.randrange(len(TOOLS))]
        call_id = f"call_{rng.getrandbits(48):012x}"
        out = (
            [{"role": "assistant", "parts": [{"type": "text", "content": "Your order ships tomorrow. " * 3}]}]
            if last
            else [
                {
                    "role": "assistant",
                    "parts": [
                        {
                            "type": "tool_call",
                            "id": call_id,
                            "name": tool,
                            "arguments": {"q": f"order {rng.randrange(10_000)}"},
                        }
                    ],
                }
            ]
        )
        chat_attrs = {
            "gen_ai.provider.name": "openai", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
            "model_request_parameters": REQUEST_PARAMS, "gen_ai.tool.definitions": TOOL_DEFS,
            "gen_ai.operation.name": "chat", **common, "gen_ai.input.messages": json.dumps(messages),
            "gen_ai.output.messages": json.dumps(out), "logfire.json_schema": CHAT_SCHEMA,
            "gen_ai.usage.input_tokens": 200 + 40 * step, "gen_ai.usage.output_tokens": rng.randrange(5, 60),
            "gen_ai.response.model": "gpt-4o-2024-08-06", "gen_ai.response.finish_reasons": ("stop",),
        }  # fmt: skip
        spans.append(Span(trace_id, next(ids), root, "chat gpt-4o", t, t + 800_000, chat_attrs, kind="client",
                          resource=RESOURCE, scope_name="pydantic-ai", scope_version="2.62.0"))  # fmt: skip
        t += 900_000
        messages += out
        if last:
            break
        args = json.dumps(out[0]["parts"][0]["arguments"])
        tool_attrs = {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool, "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.call.arguments": args, **common, "logfire.msg": f"running tool: {tool}",
            "logfire.json_schema": TOOL_SCHEMA, "gen_ai.tool.call.result": f"{tool}: found 3 results " * 4,
        }  # fmt: skip
        spans.append(Span(trace_id, next(ids), root, f"execute_tool {tool}", t, t + 200_000, tool_attrs,
                          resource=RESOURCE, scope_name="pydantic-ai", scope_version="2.62.0"))  # fmt: skip
        messages.append({"role": "user", "parts": [{"type": "tool_call_response", "id": call_id, "name": tool,
                                                    "result": f"{tool}: found 3 results"}]})  # fmt: skip
        t += 300_000
    root_attrs = {
        "model_name": "gpt-4o", "agent_name": "support", **common, "gen_ai.operation.name": "invoke_agent",
        "logfire.msg": "support run", "final_result": "Your order ships tomorrow.",
        "gen_ai.aggregated_usage.input_tokens": 2000, "gen_ai.aggregated_usage.output_tokens": 300,
        "pydantic_ai.all_messages": json.dumps(messages), "logfire.json_schema": CHAT_SCHEMA,
    }  # fmt: skip
    spans.append(Span(trace_id, root, None, "invoke_agent support", t0, t + 1_000, root_attrs, resource=RESOURCE,
                      scope_name="pydantic-ai", scope_version="2.62.0"))  # fmt: skip
    return spans  # children end first, as exporters write them


def traces(n_spans: int, seed: int = 7, steps: int = 4) -> Iterator[list[Span]]:
    rng = random.Random(seed)
    made, t0 = 0, 1_796_287_842_000_000_000
    while made < n_spans:
        trace = agent_trace(rng, rng.getrandbits(128) | 1, t0, steps)
        made += len(trace)
        t0 += 50_000_000
        yield trace


# --- 1. parse speed -------------------------------------------------------------------------------


def bench_speed(n_spans: int, repeats: int, workdir: Path) -> dict[str, Any]:
    path = workdir / "big.json"
    spans = [s for trace in traces(n_spans) for s in trace]
    write_otlp_json(spans, path)
    del spans
    size = path.stat().st_size

    def run_json() -> Any:
        return json.loads(path.read_bytes())

    def run_orjson() -> Any:
        return orjson.loads(path.read_bytes())

    def run_ingest() -> Any:
        return load_traces(path)

    check = run_ingest()
    n = sum(len(t) for t in check)
    del check
    ratios, t_json, t_orjson, t_ingest = [], [], [], []
    for _ in range(repeats):  # interleaved, so load on the machine affects both sides alike
        a = _timed(run_json)
        t_orjson.append(_timed(run_orjson))
        b = _timed(run_ingest)
        t_json.append(a)
        t_ingest.append(b)
        ratios.append(b[0] / a[0])
    return {
        "spans": n,
        "file_mb": round(size / 1e6, 1),
        "json_loads_s": round(min(t[0] for t in t_json), 3),
        "load_traces_s": round(min(t[0] for t in t_ingest), 3),
        "ratio_median": round(statistics.median(ratios), 3),
        "ratio_of_mins": round(min(t[0] for t in t_ingest) / min(t[0] for t in t_json), 3),
        "orjson_loads_s": round(min(t[0] for t in t_orjson), 3),
        "json_loads_cpu_s": round(min(t[1] for t in t_json), 3),
        "orjson_loads_cpu_s": round(min(t[1] for t in t_orjson), 3),
        "load_traces_cpu_s": round(min(t[1] for t in t_ingest), 3),
    }


def _timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """(wall, CPU) seconds of one call."""
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    result = fn()
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    del result
    return elapsed, cpu


# --- 2. streaming memory --------------------------------------------------------------------------

_CHILD = r"""
import resource, sys
from tracegrade import grade
from tracegrade.evaluators import MaxModelRequests, MaxToolCalls, ToolCallEvaluator
from tracegrade.ingest import iter_traces
baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
# checks every generated run passes: `passed == traces` shows each trace was read whole and graded
evaluators = [ToolCallEvaluator(must_exclude=["delete_account"]), MaxToolCalls(max_calls=4), MaxModelRequests(max_requests=5)]
traces = passed = 0
for tree in iter_traces(sys.argv[1]):
    traces += 1
    passed += all(r.passed for r in grade(tree, evaluators))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(traces, passed, baseline, peak)
"""


def write_jsonl(path: Path, n_spans: int, per_line: int, seed: int) -> int:
    """Collector-style JSON lines: batches of `per_line` spans, traces interleaved two at a time."""
    lines = 0
    with open(path, "w") as f:
        pending: list[Span] = []
        for trace in traces(n_spans, seed=seed):
            pending.extend(trace)
            if len(pending) >= 2 * per_line:
                random.Random(lines).shuffle(pending)  # two traces' spans mixed across lines
                pending.sort(key=lambda s: s.parent_id is None)  # roots still come last, as exported
                while len(pending) >= per_line:
                    batch, pending = pending[:per_line], pending[per_line:]
                    f.write(_line(batch))
                    lines += 1
        if pending:
            f.write(_line(pending))
            lines += 1
    return lines


def _line(batch: list[Span]) -> str:
    from tracegrade.ingest import dump_otlp_json

    return json.dumps(dump_otlp_json(batch), separators=(",", ":")) + "\n"


def bench_memory(n_spans: int, workdir: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for scale in (1, 10):
        path = workdir / f"stream_{scale}x.jsonl"
        lines = write_jsonl(path, n_spans * scale, per_line=8, seed=scale)
        # Through `sh`: Linux keeps a process's peak RSS across exec, so a child forked straight from
        # this (large) process would start at our RSS; sh's own child starts from sh's few MB.
        cmd = f"{shlex.quote(sys.executable)} -c {shlex.quote(_CHILD)} {shlex.quote(str(path))}; exit $?"
        proc = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, check=True)
        n_traces, passed, baseline, peak = map(int, proc.stdout.split())
        out[f"{scale}x"] = {"lines": lines, "file_mb": round(path.stat().st_size / 1e6, 1), "traces": n_traces,
                            "passed": passed, "baseline_mb": round(baseline / 1024, 1),
                            "peak_mb": round(peak / 1024, 1)}  # fmt: skip
        path.unlink()
    one, ten = out["1x"], out["10x"]
    out["ratio"] = round(ten["peak_mb"] / one["peak_mb"], 3)
    above = (one["peak_mb"] - one["baseline_mb"], ten["peak_mb"] - ten["baseline_mb"])
    out["ratio_above_baseline"] = round(above[1] / above[0], 3) if above[0] > 0 else None
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path, default=Path(__file__).with_name("results_ingest.json"))
    args = parser.parse_args(argv)
    n_spans, repeats, stream_spans = (20_000, 2, 5_000) if args.quick else (100_000, 5, 20_000)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        speed = bench_speed(n_spans, repeats, Path(tmp))
        memory = bench_memory(stream_spans, Path(tmp))
    rows = [
        ("1. load_traces / json.loads", f"{speed['spans']:,} spans, {speed['file_mb']} MB",
         f"{speed['load_traces_s']:.2f} s / {speed['json_loads_s']:.2f} s",
         f"{speed['ratio_median']:.2f}x (ratio of mins {speed['ratio_of_mins']:.2f}x)", "<= 2.0",
         speed["ratio_median"] <= 2.0),
        ("   CPU time: load_traces / json.loads / orjson.loads", "same file",
         f"{speed['load_traces_cpu_s']:.2f} s / {speed['json_loads_cpu_s']:.2f} s / {speed['orjson_loads_cpu_s']:.2f} s",
         f"{speed['load_traces_cpu_s'] / speed['json_loads_cpu_s']:.2f}x of json.loads", "(info)", True),
        ("2. peak RSS 10x / 1x (iter_traces + grade)",
         f"{memory['1x']['lines']:,} / {memory['10x']['lines']:,} lines",
         f"{memory['10x']['peak_mb']} MB / {memory['1x']['peak_mb']} MB (baseline {memory['1x']['baseline_mb']} MB)",
         f"{memory['ratio']:.2f}x (above baseline {memory['ratio_above_baseline']}x)", "<= 1.5",
         memory["ratio"] <= 1.5),
    ]  # fmt: skip
    print("| target | input | measured | ratio | goal | |")
    print("|---|---|---|---|---|---|")
    for target, what, measured, ratio, goal, ok in rows:
        print(f"| {target} | {what} | {measured} | {ratio} | {goal} | {'PASS' if ok else 'FAIL'} |")
    result = {
        "environment": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
                        "loadavg_at_end": list(os.getloadavg()), "mode": "quick" if args.quick else "full",
                        "elapsed_s": round(time.perf_counter() - started, 1)},
        "speed": speed,
        "memory": memory,
    }  # fmt: skip
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
