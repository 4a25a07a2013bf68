#!/usr/bin/env python
"""Core performance targets of tracegrade, measured side by side with pydantic-evals in one run.

    python benchmarks/bench_core.py            # full run (< 3 minutes on 2 busy cores)
    python benchmarks/bench_core.py --quick    # fewer repeats, for a smoke check
    python benchmarks/bench_core.py --full     # also runs pydantic-evals' O(n*m) LCS at 10,000 once

Prints a markdown table (times, ratios, PASS/FAIL per target) and writes benchmarks/results_core.json.
Always exits 0: a missed target is reported (FAIL), not raised. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import pydantic_evals.evaluators as pe_ev
import pydantic_evals.evaluators.agentic as pe_agentic
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_evals.evaluators import EvaluatorContext
from pydantic_evals.otel import SpanTree as PeSpanTree
from pydantic_evals.otel._context_in_memory_span_exporter import _context_subtree_spans
from pydantic_evals.otel._context_subtree import context_subtree

import tracegrade
import tracegrade.evaluators as tg_ev
from tracegrade import grade
from tracegrade.matching import lcs_length
from tracegrade.tree import SpanTree as TgSpanTree

pe_lcs = pe_agentic._longest_common_subsequence_length

TOOLS = [f"t{i}" for i in range(7)]
SIZES = (1_000, 10_000)


# --------------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------------
@dataclass
class Variant:
    """One side of a comparison: `run(prepare())` is timed; `prepare` (untimed) builds fresh inputs."""

    name: str
    run: Callable[[Any], Any]
    prepare: Callable[[], Any] = lambda: None
    repeats: int | None = None  # override (e.g. a slow O(n*m) reference)
    warmup: int = 1
    check: Callable[[Any], None] | None = None  # sanity check on the warm-up result
    samples: list[float] = field(default_factory=list)
    cpu_samples: list[float] = field(default_factory=list)  # this thread's CPU time, same samples

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def min(self) -> float:
        return min(self.samples)


def measure(variants: Sequence[Variant], repeats: int) -> None:
    """Interleave the variants round by round (rotating who goes first), gc.collect() before each sample.

    The garbage collector stays enabled while timing: collections triggered by allocation are part
    of the real cost of building many objects.
    """
    for v in variants:
        for _ in range(v.warmup):
            result = v.run(v.prepare())
            if v.check is not None:
                v.check(result)
    rounds = max(v.repeats or repeats for v in variants)
    for r in range(rounds):
        order = list(variants[r % len(variants) :]) + list(variants[: r % len(variants)])
        for v in order:
            if len(v.samples) >= (v.repeats or repeats):
                continue
            arg = v.prepare()
            gc.collect()
            c0, t0 = time.thread_time(), time.perf_counter()
            result = v.run(arg)
            t1, c1 = time.perf_counter(), time.thread_time()
            v.samples.append(t1 - t0)
            v.cpu_samples.append(c1 - c0)
            if v.check is not None and not v.warmup and len(v.samples) == 1:
                v.check(result)
            del result


def paired_ratio(num: Variant, den: Variant, *, cpu: bool = False) -> float:
    """Median of per-round ratios num/den (drift between rounds cancels out)."""
    a, b = (num.cpu_samples, den.cpu_samples) if cpu else (num.samples, den.samples)
    k = min(len(a), len(b))
    return statistics.median(a[i] / b[i] for i in range(k))


# --------------------------------------------------------------------------------------------
# synthetic pydantic-ai v5 trace, as real SDK ReadableSpans
# --------------------------------------------------------------------------------------------
class _Collect(SpanProcessor):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


def synthetic_trace(n: int) -> list[ReadableSpan]:
    """1 `invoke_agent agent` span + n `chat model` spans + n `execute_tool t{i%7}` spans (siblings,
    children of the agent span, as pydantic-ai v5 records them), in end order as a processor sees them."""
    provider = TracerProvider()
    collect = _Collect()
    provider.add_span_processor(collect)
    tracer = provider.get_tracer("pydantic-ai", "2.62.0")
    agent_attrs = {
        "model_name": "model",
        "agent_name": "agent",
        "gen_ai.agent.name": "agent",
        "gen_ai.agent.call.id": "0198c3f2-0000-7000-8000-000000000000",
        "gen_ai.operation.name": "invoke_agent",
        "logfire.msg": "agent run",
    }
    with tracer.start_as_current_span("invoke_agent agent", attributes=agent_attrs) as agent:
        for i in range(n):
            with tracer.start_as_current_span(
                "chat model",
                kind=trace.SpanKind.CLIENT,
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "test",
                    "gen_ai.system": "test",
                    "gen_ai.request.model": "model",
                    "gen_ai.agent.name": "agent",
                },
            ) as chat:
                chat.set_attributes(
                    {
                        "gen_ai.response.model": "model",
                        "gen_ai.usage.input_tokens": 50 + i,
                        "gen_ai.usage.output_tokens": 10,
                    }
                )
            tool = TOOLS[i % 7]
            with tracer.start_as_current_span(
                f"execute_tool {tool}",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": tool,
                    "gen_ai.tool.call.id": f"call_{i}",
                    "gen_ai.tool.call.arguments": json.dumps({"q": f"query {i}", "n": i}),
                    "logfire.msg": f"running tool: {tool}",
                    "gen_ai.agent.name": "agent",
                },
            ) as span:
                span.set_attribute("gen_ai.tool.call.result", f"{tool} ok")
        agent.set_attributes(
            {
                "final_result": "done",
                "gen_ai.aggregated_usage.input_tokens": 50 * n,
                "gen_ai.aggregated_usage.output_tokens": 10 * n,
            }
        )
    provider.shutdown()
    assert len(collect.spans) == 2 * n + 1
    return collect.spans


def tool_sequence(n: int) -> list[str]:
    return [TOOLS[i % 7] for i in range(n)]


# --------------------------------------------------------------------------------------------
# 1. tree build
# --------------------------------------------------------------------------------------------
def bench_tree(spans: list[ReadableSpan], repeats: int) -> tuple[Variant, Variant]:
    def pe_build(_: Any) -> PeSpanTree:
        tree = PeSpanTree()
        tree.add_readable_spans(spans)
        return tree

    tg = Variant("tracegrade SpanTree.from_readable_spans", lambda _: TgSpanTree.from_readable_spans(spans))
    pe = Variant("pydantic-evals SpanTree().add_readable_spans", pe_build)
    measure([tg, pe], repeats)
    a, b = TgSpanTree.from_readable_spans(spans), pe_build(None)
    assert len(a) == len(list(b)) == len(spans) and len(a.roots) == len(b.roots) == 1
    return tg, pe


# --------------------------------------------------------------------------------------------
# 2. five agentic evaluators on one run
# --------------------------------------------------------------------------------------------
def evaluator_params(n: int) -> dict[str, dict[str, Any]]:
    seq = tool_sequence(n)
    return {
        "ToolCorrectness": {"expected_tools": seq},
        "TrajectoryMatch": {"expected_trajectory": seq, "order": "in_order"},
        "ArgumentCorrectness": {"tool_name": "t3", "expected_arguments": {"q": "query 3", "n": 3}},
        "MaxToolCalls": {"max_calls": n},
        "MaxModelRequests": {"max_requests": n},
    }


def build_evaluators(module: Any, n: int, names: Sequence[str]) -> list[Any]:
    params = evaluator_params(n)
    return [getattr(module, name)(**params[name]) for name in names]


def pe_context(tree: PeSpanTree) -> EvaluatorContext[object, object, object]:
    return EvaluatorContext(
        name="bench", inputs=None, metadata=None, expected_output=None, output=None, duration=0.0,
        _span_tree=tree, attributes={}, metrics={},
    )  # fmt: skip


def pe_values(evaluators: Sequence[Any], ctx: Any) -> list[Any]:
    return [ev.evaluate(ctx).value for ev in evaluators]


ALL5 = ("ToolCorrectness", "TrajectoryMatch", "ArgumentCorrectness", "MaxToolCalls", "MaxModelRequests")
NO_TM = tuple(n for n in ALL5 if n != "TrajectoryMatch")


@dataclass
class EvalBench:
    tg: Variant
    pe: Variant
    pe_estimated: bool = False
    pe_estimate_s: float | None = None  # total pydantic-evals estimate (measured part + LCS estimate)
    lcs_estimate_s: float | None = None
    tg4: Variant | None = None
    pe4: Variant | None = None


def bench_evaluators(
    spans: list[ReadableSpan], n: int, repeats: int, *, dp_seconds_1k: float | None, run_pe_dp: bool
) -> EvalBench:
    tg_tree = TgSpanTree.from_readable_spans(spans)
    pe_tree = PeSpanTree()
    pe_tree.add_readable_spans(spans)
    ctx = pe_context(pe_tree)
    tg5, pe5 = build_evaluators(tg_ev, n, ALL5), build_evaluators(pe_ev, n, ALL5)
    tg4, pe4 = build_evaluators(tg_ev, n, NO_TM), build_evaluators(pe_ev, n, NO_TM)

    # Same verdicts on both sides (so the work compared is the same work).
    tg_results = grade(tg_tree, tg5)
    assert [r.outcome for r in tg_results] == ["passed"] * 5, [(r.name, r.reasoning[:200]) for r in tg_results]
    seq = tool_sequence(n)
    lcs_value = lcs_length(seq, seq)

    estimated = n > 1_000 and not run_pe_dp
    saved = pe_agentic._longest_common_subsequence_length
    if estimated:  # pydantic-evals' DP at 10k x 10k takes about a minute: time everything else, add an estimate
        pe_agentic._longest_common_subsequence_length = lambda a, b: lcs_value
    try:
        assert pe_values(pe5, ctx) == [True, 1.0, True, True, True]
        # both already ran once above (the verdict checks): that was their warm-up
        v_tg = Variant("tracegrade grade(SpanTree, 5 evaluators)", lambda _: grade(tg_tree, tg5), warmup=0)
        v_pe = Variant(
            "pydantic-evals 5 evaluators" + (" (LCS DP stubbed)" if estimated else ""),
            lambda _: pe_values(pe5, ctx),
            repeats=1 if (n > 1_000 and run_pe_dp) else 3 if n <= 1_000 else None,
            warmup=0,
        )
        v_tg4 = Variant("tracegrade grade(SpanTree, 4 evaluators, no TrajectoryMatch)", lambda _: grade(tg_tree, tg4))
        v_pe4 = Variant("pydantic-evals 4 evaluators, no TrajectoryMatch", lambda _: pe_values(pe4, ctx))
        measure([v_tg, v_pe, v_tg4, v_pe4], repeats)
    finally:
        pe_agentic._longest_common_subsequence_length = saved
    bench = EvalBench(v_tg, v_pe, tg4=v_tg4, pe4=v_pe4)
    if estimated:
        assert dp_seconds_1k is not None
        bench.pe_estimated = True
        bench.lcs_estimate_s = dp_seconds_1k * (n / 1_000) ** 2
        bench.pe_estimate_s = v_pe.median + bench.lcs_estimate_s
    return bench


# --------------------------------------------------------------------------------------------
# 0. end to end from SDK ReadableSpans: tree build + extraction + evaluators
# --------------------------------------------------------------------------------------------
@dataclass
class EndToEnd:
    tg: Variant
    pe: Variant
    pe_estimate_s: float | None = None  # when pydantic-evals' 10k x 10k LCS DP is estimated, not run
    lcs_estimate_s: float | None = None


def bench_end_to_end(
    spans: list[ReadableSpan], n: int, names: Sequence[str], repeats: int, *, dp_seconds_1k: float, run_pe_dp: bool
) -> EndToEnd:
    """A list of spans in, verdicts out: each side builds its tree, reads the run and runs `names`."""
    tg_evs, pe_evs = build_evaluators(tg_ev, n, names), build_evaluators(pe_ev, n, names)

    def tg_run(_: Any) -> list[Any]:
        return grade(TgSpanTree.from_readable_spans(spans), tg_evs)

    def pe_run(_: Any) -> list[Any]:
        tree = PeSpanTree()
        tree.add_readable_spans(spans)
        return pe_values(pe_evs, pe_context(tree))

    assert [r.outcome for r in tg_run(None)] == ["passed"] * len(names)
    seq = tool_sequence(n)
    lcs_value = lcs_length(seq, seq)
    estimated = n > 1_000 and not run_pe_dp and "TrajectoryMatch" in names
    saved = pe_agentic._longest_common_subsequence_length
    if estimated:
        pe_agentic._longest_common_subsequence_length = lambda a, b: lcs_value
    try:
        assert all(v in (True, 1.0) for v in pe_run(None))
        v_tg = Variant(f"tracegrade from_readable_spans + grade ({len(names)})", tg_run, warmup=0)
        v_pe = Variant(
            f"pydantic-evals add_readable_spans + {len(names)} evaluators" + (" (LCS DP stubbed)" if estimated else ""),
            pe_run,
            repeats=3 if "TrajectoryMatch" in names and n <= 1_000 else None,
            warmup=0,
        )
        measure([v_tg, v_pe], repeats)
    finally:
        pe_agentic._longest_common_subsequence_length = saved
    out = EndToEnd(v_tg, v_pe)
    if estimated:
        out.lcs_estimate_s = dp_seconds_1k * (n / 1_000) ** 2
        out.pe_estimate_s = v_pe.median + out.lcs_estimate_s
    return out


def end_to_end_row(target: str, e: EndToEnd, n: int, goal: float) -> Row:
    if e.pe_estimate_s is None:
        return speedup_row(target, n, e.tg, e.pe, goal)
    assert e.lcs_estimate_s is not None
    r = e.pe_estimate_s / e.tg.median
    return Row(
        target, f"{n:,}", fmt_v(e.tg),
        f"~{fmt_t(e.pe_estimate_s)} est. ({fmt_v(e.pe)} measured with the LCS stubbed + ~{fmt_t(e.lcs_estimate_s)} LCS DP)",
        f"~{r:,.0f}× (est., vs tracegrade median)", f"≥ {goal:g}×", r >= goal,
        {"ours": summary(e.tg), "theirs_measured_without_lcs": summary(e.pe), "theirs_lcs_estimate_s": e.lcs_estimate_s,
         "theirs_estimate_s": e.pe_estimate_s, "ratio_estimated": r, "goal": f">= {goal}x", "passed": r >= goal,
         "estimated": True},
    )  # fmt: skip


def corpus_trees() -> list[Any]:
    """Every run of the committed framework corpus (fixtures/frameworks), as trees with their logs."""
    from tracegrade.ingest import read_logs, read_spans

    corpus = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"
    trees = []
    for entry in json.loads((corpus / "manifest.json").read_text())["runs"]:
        tree = TgSpanTree.from_spans(read_spans(corpus / entry["traces"]))
        if entry.get("logs"):
            tree.attach_logs(read_logs(corpus / entry["logs"]))
        trees.append(tree)
    return trees


class _Other:
    """A dialect no span of the corpus belongs to: `classify` looks for its own marker attribute."""

    def __init__(self, i: int, gated: bool) -> None:
        from tracegrade.dialects import Gate

        self.name, self.key = f"other{i}{'' if gated else '-ungated'}", f"other{i}.span.kind"
        if gated:
            self.GATE = Gate(keys=frozenset({self.key}))

    def classify(self, node: Any) -> object:
        return self.key in node.attributes

    def recognizes(self, node: Any) -> bool:
        return self.key in node.attributes

    def agent_run(self, node: Any) -> None:
        return None

    tool_call = model_request = agent_run


def bench_corpus_extraction(repeats: int) -> tuple[Variant, Variant, Variant, int, int]:
    """`dialects.extract` over every tree of the corpus (the whole corpus once per sample), with the
    built-in dialects, then with 20 more registered ahead of them: gated (each declares the attribute
    its spans carry), and without gates (each asked about every span)."""
    from tracegrade import dialects
    from tracegrade.dialects import extract

    trees = corpus_trees()
    builtin = list(dialects.DIALECTS)

    def with_dialects(added: list[Any]) -> Callable[[Any], Any]:
        def run(_: Any) -> Any:
            dialects.DIALECTS[:] = [*added, *builtin]
            try:
                return [extract(t) for t in trees]
            finally:
                dialects.DIALECTS[:] = builtin

        return run

    v = Variant("tracegrade dialects.extract, whole corpus", with_dialects([]))
    v20 = Variant(
        "the same, 20 more gated dialects registered first", with_dialects([_Other(i, True) for i in range(20)])
    )
    v20u = Variant("the same, 20 more dialects without gates", with_dialects([_Other(i, False) for i in range(20)]))
    measure([v, v20, v20u], repeats)
    return v, v20, v20u, len(trees), sum(len(t) for t in trees)


# --------------------------------------------------------------------------------------------
# 3. LCS (TrajectoryMatch in_order)
# --------------------------------------------------------------------------------------------
def lcs_inputs(n: int) -> tuple[list[str], list[str]]:
    rng = random.Random(n)
    return tool_sequence(n), rng.choices(TOOLS, k=n)


def bench_lcs(repeats: int, pe_repeats: int) -> tuple[Variant, Variant, Variant]:
    a, b = lcs_inputs(1_000)
    assert lcs_length(a, b) == pe_lcs(a, b)
    tg1 = Variant("tracegrade lcs_length 1k x 1k", lambda _: lcs_length(a, b))
    pe1 = Variant("pydantic-evals DP 1k x 1k", lambda _: pe_lcs(a, b), repeats=pe_repeats, warmup=0)
    measure([tg1, pe1], repeats)
    a10, b10 = lcs_inputs(10_000)
    tg10 = Variant("tracegrade lcs_length 10k x 10k", lambda _: lcs_length(a10, b10))
    measure([tg10], repeats)
    return tg1, pe1, tg10


# --------------------------------------------------------------------------------------------
# 4. capture overhead
# --------------------------------------------------------------------------------------------
def span_attributes(n: int) -> list[dict[str, Any]]:
    """~6 attributes per span, built before timing so only span creation is measured."""
    return [
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": TOOLS[i % 7],
            "gen_ai.tool.call.id": f"call_{i}",
            "gen_ai.tool.call.arguments": '{"q": "x"}',
            "index": i,
            "ok": True,
        }
        for i in range(n)
    ]


def make_workload(provider: TracerProvider, attrs: list[dict[str, Any]]) -> Callable[[], None]:
    tracer = provider.get_tracer("bench")

    def workload() -> None:
        with tracer.start_as_current_span("parent"):
            for a in attrs:
                with tracer.start_as_current_span("child", attributes=a):
                    pass

    return workload


def without_gc(fn: Callable[[], Any]) -> Any:
    gc.disable()
    try:
        return fn()
    finally:
        gc.enable()


@dataclass
class CaptureProviders:
    none: TracerProvider
    tracegrade: TracerProvider
    tracegrade_tree: TracerProvider
    sdk: TracerProvider
    sdk_exporter: InMemorySpanExporter
    pe: TracerProvider  # the global provider: context_subtree() only uses the global one


def capture_providers() -> CaptureProviders:
    exporter = InMemorySpanExporter()
    sdk = TracerProvider()
    sdk.add_span_processor(SimpleSpanProcessor(exporter))
    pe = TracerProvider()
    trace.set_tracer_provider(pe)
    assert trace.get_tracer_provider() is pe, "another global tracer provider was already set"
    return CaptureProviders(TracerProvider(), TracerProvider(), TracerProvider(), sdk, exporter, pe)


def bench_capture(
    providers: CaptureProviders, n: int, repeats: int, *, warmup: int, with_tree: bool
) -> dict[str, Variant]:
    attrs = span_attributes(n)
    w_none = make_workload(providers.none, attrs)
    w_tg = make_workload(providers.tracegrade, attrs)
    w_tgt = make_workload(providers.tracegrade_tree, attrs)
    w_sdk = make_workload(providers.sdk, attrs)
    w_pe = make_workload(providers.pe, attrs)

    def run_tg(_: Any) -> tracegrade.Capture:
        with tracegrade.capture(provider=providers.tracegrade) as cap:
            w_tg()
        return cap

    def run_tg_tree(_: Any) -> TgSpanTree:
        with tracegrade.capture(provider=providers.tracegrade_tree) as cap:
            w_tgt()
        return cap.tree

    def run_pe(_: Any) -> Any:
        with context_subtree() as tree:
            w_pe()
        return tree

    def run_pe_spans(_: Any) -> Any:
        with _context_subtree_spans() as spans:
            w_pe()
        return spans

    def count_is(expected: int, size: Callable[[Any], int]) -> Callable[[Any], None]:
        def check(result: Any) -> None:  # every recorder saw the n + 1 spans (checked on the warm-up run)
            assert size(result) == expected, (size(result), expected)

        return check

    k = n + 1
    variants = {
        "none": Variant("no span processor", lambda _: w_none()),
        "tracegrade": Variant("tracegrade.capture()", run_tg, check=count_is(k, lambda c: len(c.spans))),
        "sdk": Variant(
            "SimpleSpanProcessor(InMemorySpanExporter())", lambda _: w_sdk(), providers.sdk_exporter.clear,
            check=lambda _: count_is(k, len)(providers.sdk_exporter.get_finished_spans()),
        ),
        "pe": Variant("pydantic-evals context_subtree() (builds its tree at exit)", run_pe,
                      check=count_is(k, lambda t: len(list(t)))),
        "pe_spans": Variant("pydantic-evals _context_subtree_spans() (spans only)", run_pe_spans,
                            check=count_is(k, len)),
        # diagnostic pair: the same two with the cyclic GC off inside the timed block, to split the
        # recorder's own per-span work from the collector's cost of tracking the retained spans
        "none_nogc": Variant("no span processor, GC off", lambda _: without_gc(w_none)),
        "tracegrade_nogc": Variant("tracegrade.capture(), GC off", lambda _: without_gc(lambda: run_tg(None))),
    }  # fmt: skip
    if with_tree:
        variants["tracegrade_tree"] = Variant("tracegrade.capture() + cap.tree", run_tg_tree, check=count_is(k, len))
    for v in variants.values():
        v.warmup = warmup
    measure(list(variants.values()), repeats)
    providers.sdk_exporter.clear()
    return variants


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------
def fmt_t(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} µs"


def fmt_v(v: Variant) -> str:
    if len(v.samples) == 1:
        return f"{fmt_t(v.samples[0])} (1 run)"
    return f"{fmt_t(v.median)} / {fmt_t(v.min)}"


@dataclass
class Row:
    target: str
    n: str
    ours: str
    theirs: str
    ratio: str
    goal: str
    passed: bool | None  # None: reference row, no target
    data: dict[str, Any]

    def cells(self) -> list[str]:
        verdict = "—" if self.passed is None else ("PASS" if self.passed else "**FAIL**")
        return [self.target, self.n, self.ours, self.theirs, self.ratio, self.goal, verdict]


def speedup_row(target: str, n: int, ours: Variant, theirs: Variant, goal: float, **extra: Any) -> Row:
    r_pair, r_med, r_min = paired_ratio(theirs, ours), theirs.median / ours.median, theirs.min / ours.min
    return Row(
        target, f"{n:,}", fmt_v(ours), fmt_v(theirs), f"{r_pair:,.1f}× · {r_med:,.1f}× · {r_min:,.1f}×",
        f"≥ {goal:g}×", r_pair >= goal,
        {"ours": summary(ours), "theirs": summary(theirs), "ratio_paired": r_pair, "ratio_median": r_med,
         "ratio_min": r_min, "goal": f">= {goal}x", "passed": r_pair >= goal, **extra},
    )  # fmt: skip


def summary(v: Variant) -> dict[str, Any]:
    return {"name": v.name, "median_s": v.median, "min_s": v.min, "samples_s": v.samples,
            "cpu_samples_s": v.cpu_samples}  # fmt: skip


def capture_rows_for(cv: dict[str, Variant], n: int) -> list[Row]:
    rows: list[Row] = []
    keys = ["tracegrade", "tracegrade_tree", "sdk", "pe_spans", "pe", "tracegrade_nogc"]
    for key in (k for k in keys if k in cv):
        v = cv[key]
        base = cv["none_nogc"] if key.endswith("_nogc") else cv["none"]
        r_pair, r_med, r_min = paired_ratio(v, base), v.median / base.median, v.min / base.min
        r_cpu = paired_ratio(v, base, cpu=True)
        target = key == "tracegrade"
        passed = r_pair <= 1.10 if target else None
        rows.append(Row(
            "4. capture overhead vs no processor" if target else f"   ref: {v.name}", f"{n:,}",
            fmt_v(v), fmt_v(base) + f" ({base.name})",
            f"{r_pair:.2f}× · {r_med:.2f}× · {r_min:.2f}× (CPU {r_cpu:.2f}×)",
            "≤ 1.10×" if target else "(info)", passed,
            {"variant": summary(v), "baseline": summary(base), "ratio_paired": r_pair, "ratio_median": r_med,
             "ratio_min": r_min, "ratio_cpu_paired": r_cpu, "goal": "<= 1.10x" if target else None,
             "passed": passed},
        ))  # fmt: skip
    return rows


TARGET_2 = "2. five agentic evaluators (grade incl. trajectory extraction)"


def evaluator_rows(eb: EvalBench, n: int) -> list[Row]:
    if eb.pe_estimated:
        assert eb.pe_estimate_s is not None and eb.lcs_estimate_s is not None
        r = eb.pe_estimate_s / eb.tg.median
        row = Row(
            TARGET_2, f"{n:,}", fmt_v(eb.tg),
            f"~{fmt_t(eb.pe_estimate_s)} est. ({fmt_v(eb.pe)} measured with the LCS stubbed "
            f"+ ~{fmt_t(eb.lcs_estimate_s)} LCS DP = 1k DP min × 100)",
            f"~{r:,.0f}× (est., vs tracegrade median)", "≥ 10×", r >= 10,
            {"ours": summary(eb.tg), "theirs_measured_without_lcs": summary(eb.pe),
             "theirs_lcs_estimate_s": eb.lcs_estimate_s, "theirs_estimate_s": eb.pe_estimate_s,
             "ratio_estimated": r, "goal": ">= 10x", "passed": r >= 10, "estimated": True},
        )  # fmt: skip
    else:
        row = speedup_row(TARGET_2, n, eb.tg, eb.pe, 10)
    assert eb.tg4 is not None and eb.pe4 is not None
    ref = speedup_row("   ref: same minus TrajectoryMatch (4 evaluators)", n, eb.tg4, eb.pe4, 10)
    ref.passed, ref.goal, ref.data["goal"], ref.data["passed"] = None, "(info)", None, None
    return [row, ref]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (noisier), for a smoke check")
    parser.add_argument("--full", action="store_true", help="run pydantic-evals' LCS DP at 10k once (+~1-2 min)")
    parser.add_argument("--json", type=Path, default=Path(__file__).with_name("results_core.json"))
    args = parser.parse_args(argv)

    q = args.quick
    reps = {1_000: 3 if q else 9, 10_000: 3 if q else 5}  # targets 1-2
    reps_lcs, reps_dp = (3, 2) if q else (9, 3)
    reps_capture = {1_000: 5 if q else 15, 10_000: 3 if q else 11}
    t_start = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t_start:6.1f}s] {msg}", file=sys.stderr, flush=True)

    providers = capture_providers()  # first: the global provider must be ours before anything sets one

    # 4 first, on the process's ordinary heap (before the large trace fixtures exist); listed last.
    capture_rows: list[Row] = []
    for n in SIZES:
        log(f"4. capture overhead, N={n:,}")
        small = n <= 1_000  # the 1k round warms every code path up; 10k skips warm-up and the +tree variant
        cv = bench_capture(providers, n, reps_capture[n], warmup=1 if small else 0, with_tree=small)
        capture_rows += capture_rows_for(cv, n)

    log("building synthetic traces")
    traces = {n: synthetic_trace(n) for n in SIZES}
    # The fixtures (40k+ SDK spans) stay alive for the rest of the run: move them out of the
    # collector's sight, so that collections triggered inside a timed region do not rescan them
    # (that would tax whichever side allocates more, i.e. pydantic-evals).
    gc.collect()
    gc.freeze()

    log("3. LCS")  # first: its 1k DP time feeds the 10k evaluator estimate
    lcs_tg1, lcs_pe1, lcs_tg10 = bench_lcs(reps_lcs, pe_repeats=reps_dp)
    dp_1k = lcs_pe1.min  # the conservative (smallest) pydantic-evals time for the extrapolations

    rows: list[Row] = []
    trees: dict[int, Variant] = {}
    for n in SIZES:
        log(f"1. tree build, N={n:,}")
        tg, pe = bench_tree(traces[n], reps[n])
        trees[n] = tg
        rows.append(speedup_row("1. tree build from ReadableSpans", n, tg, pe, 5, spans=len(traces[n])))

    for n in SIZES:
        log(f"2. five evaluators, N={n:,}")
        rows += evaluator_rows(bench_evaluators(traces[n], n, reps[n], dp_seconds_1k=dp_1k, run_pe_dp=args.full), n)

    e2e_rows: list[Row] = []
    for n in SIZES:
        log(f"0. end to end (tree + extraction + five evaluators), N={n:,}")
        e2e = bench_end_to_end(traces[n], n, ALL5, reps[n], dp_seconds_1k=dp_1k, run_pe_dp=args.full)
        e2e_rows.append(end_to_end_row("0. end to end from ReadableSpans: tree + extraction + 5 evaluators", e2e, n, 5))
    log("0. end to end TrajectoryMatch in_order, 1k x 1k")
    e2e_tm = bench_end_to_end(traces[1_000], 1_000, ("TrajectoryMatch",), reps[1_000], dp_seconds_1k=dp_1k,
                              run_pe_dp=True)  # fmt: skip
    e2e_rows.append(end_to_end_row("0. end to end TrajectoryMatch in_order 1k × 1k", e2e_tm, 1_000, 100))
    budget, tree_1k = e2e_tm.pe.median / 100, trees[1_000]
    e2e_rows.append(Row(  # what the 100× goal leaves for the whole job, against the tree build it includes
        "   info: the in_order 100× budget against the tree build it counts", "1,000",
        f"{fmt_v(tree_1k)} (tree build alone)", f"{fmt_t(budget)} (pydantic-evals median ÷ 100)",
        f"tree build = {tree_1k.median / budget:.2f}× the budget", "(info)", None,
        {"tree": summary(tree_1k), "budget_s": budget, "tree_over_budget": tree_1k.median / budget},
    ))  # fmt: skip
    rows[:0] = e2e_rows
    log("0. extraction over the framework corpus")
    corpus_v, corpus_v20, corpus_v20u, corpus_runs, corpus_spans = bench_corpus_extraction(reps[1_000])
    us = corpus_v.median / corpus_spans * 1e6
    rows.append(Row(
        "   info: extraction over the framework corpus", f"{corpus_spans:,} spans", fmt_v(corpus_v),
        f"{corpus_runs} runs", f"{us:.2f} µs per span (median)", "(info)", None,
        {"ours": summary(corpus_v), "runs": corpus_runs, "spans": corpus_spans, "us_per_span": us},
    ))  # fmt: skip
    added, added_u = paired_ratio(corpus_v20, corpus_v), paired_ratio(corpus_v20u, corpus_v)
    from tracegrade.dialects import DIALECTS

    builtin = len(DIALECTS)
    rows.append(Row(
        f"0. detection as dialects are added: corpus extraction, 20 more gated dialects / the built-in {builtin}",
        f"{corpus_spans:,} spans", fmt_v(corpus_v20), f"{fmt_v(corpus_v)} (built-in only)",
        f"{added:.3f}× (20 without gates: {added_u:.3f}×)", "≤ 1.05×", added <= 1.05,
        {"ours": summary(corpus_v20), "builtin": summary(corpus_v), "ungated": summary(corpus_v20u),
         "ratio": added, "ratio_ungated": added_u, "goal": "<= 1.05x", "passed": added <= 1.05},
    ))  # fmt: skip
    rows.append(speedup_row("3. LCS in_order, 1k × 1k", 1_000, lcs_tg1, lcs_pe1, 100))
    est10 = dp_1k * 100
    passed10 = lcs_tg10.median < 1.0
    rows.append(Row(
        "3. LCS in_order, 10k × 10k (absolute)", "10,000", fmt_v(lcs_tg10), f"~{fmt_t(est10)} est. (1k DP min × 100)",
        f"~{est10 / lcs_tg10.median:,.0f}× (est.)", "< 1 s", passed10,
        {"ours": summary(lcs_tg10), "theirs_estimate_s": est10, "goal": "< 1 s (tracegrade median)",
         "passed": passed10},
    ))  # fmt: skip
    rows += capture_rows

    elapsed = time.perf_counter() - t_start
    header = ["target", "N", "tracegrade median / min", "reference median / min",
              "ratio: paired · medians · mins", "goal", "result"]  # fmt: skip
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r.cells()) + " |" for r in rows]
    verdicts = [r for r in rows if r.passed is not None]
    failed = [r for r in verdicts if not r.passed]
    env = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg_at_end": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "packages": {p: _version(p) for p in ("tracegrade", "pydantic-evals", "opentelemetry-sdk", "logfire")},
        "mode": "quick" if q else "full" if args.full else "default",
        "repeats": {"trees_evaluators": reps, "lcs": reps_lcs, "pe_dp": reps_dp, "capture": reps_capture},
        "elapsed_s": elapsed,
    }
    print(f"\n## tracegrade core benchmarks ({env['mode']} mode, {elapsed:.0f} s, python {env['python']}, "
          f"pydantic-evals {env['packages']['pydantic-evals']}, load average {env['loadavg_at_end']})\n")  # fmt: skip
    print(
        "Times: median / min of the samples. Ratios: reference ÷ tracegrade (targets 1–3) or variant ÷ "
        "no-processor baseline (target 4); 'paired' is the median of per-round ratios (adjacent samples, "
        "robust to drift on a shared machine) and decides PASS/FAIL; then ratio of medians, ratio of mins. "
        "Target 4 also shows the paired ratio of this thread's CPU time (time.thread_time), which other "
        "processes on the machine do not inflate.\n"
    )
    print("\n".join(lines))
    print()
    for r in verdicts:
        print(f"{'PASS' if r.passed else 'FAIL'}: {r.target.strip()} N={r.n}  {r.ratio}  goal {r.goal}")
    print(
        f"\n{len(verdicts) - len(failed)}/{len(verdicts)} targets met" + (f"; {len(failed)} FAILED" if failed else "")
    )
    payload = {"environment": env, "rows": [{"target": r.target.strip(), "n": r.n, **r.data} for r in rows]}
    args.json.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    print(f"results written to {args.json}")
    return 0


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    sys.exit(main())
