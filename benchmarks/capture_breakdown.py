"""Where the capture overhead goes: variants of the recorder, each timed against no span processor.

Diagnostic for target 4 of `bench_core.py` (same workload, same timing loop): a processor that does
nothing, one that keeps every span as the SDK hands it over, one that keeps slimmed spans, and the
real `_SpanRecorder`; then, for one run of each, the GC collections and page faults it triggered.

    python benchmarks/capture_breakdown.py [--n 10000] [--repeats 11]
"""

from __future__ import annotations

import argparse
import gc
import importlib
import resource
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace import Span as SDKSpan

from bench_core import Variant, make_workload, measure, paired_ratio, span_attributes
from tracegrade.capture import _ACTIVE, Capture, _slim, _SpanRecorder, capture

_capture: Any = importlib.import_module("tracegrade.capture")  # the module: `tracegrade.capture` is the function


class DoNothing(_SpanRecorder):
    """The SDK's dispatch to one processor, alone."""

    def on_start(self, span: SDKSpan, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        pass


class KeepAsGiven(DoNothing):
    """Keep every span as the SDK hands it over (no attribution, no slimming)."""

    def on_end(self, span: ReadableSpan) -> None:
        cap = _ACTIVE.get()
        assert cap is not None
        cap._spans.append(span)


class KeepSlimmed(DoNothing):
    """Keep every span, slimmed; no attribution bookkeeping."""

    def on_end(self, span: ReadableSpan) -> None:
        cap = _ACTIVE.get()
        assert cap is not None
        _slim(span)
        cap._spans.append(span)


def variant(recorder: _SpanRecorder, attrs: list[dict[str, Any]]) -> Callable[[Any], Capture]:
    """The benchmark's timed block, `with capture(): workload()`, with `recorder` in place of the global one."""
    provider = TracerProvider()
    workload = make_workload(provider, attrs)

    def run(_: Any) -> Capture:
        saved, _capture._RECORDER = _capture._RECORDER, recorder  # capture() attaches and registers with it
        try:
            with capture(provider=provider) as cap:
                workload()
        finally:
            _capture._RECORDER = saved
        return cap

    return run


def costs(run: Callable[[Any], Any]) -> str:
    """GC collections (per generation, with their time) and page faults of one run."""
    count: Counter[int] = Counter()
    spent: defaultdict[int, float] = defaultdict(float)
    started = [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            count[info["generation"]] += 1
            spent[info["generation"]] += time.perf_counter() - started[0]

    gc.collect()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    gc.callbacks.append(on_gc)
    try:
        result = run(None)
    finally:
        gc.callbacks.remove(on_gc)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    del result
    collections = ", ".join(f"gen{g}: {count[g]} ({spent[g] * 1e3:.1f} ms)" for g in sorted(count)) or "none"
    return f"GC collections {collections}; page faults {faults}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="child spans per run")
    parser.add_argument("--repeats", type=int, default=11)
    args = parser.parse_args(argv)
    attrs = span_attributes(args.n)
    baseline = make_workload(TracerProvider(), attrs)
    variants = [
        Variant("no span processor", lambda _: baseline()),
        Variant("processor doing nothing", variant(DoNothing(), attrs)),
        Variant("keep spans as given", variant(KeepAsGiven(), attrs)),
        Variant("keep spans, slimmed", variant(KeepSlimmed(), attrs)),
        Variant("_SpanRecorder (what capture() uses)", variant(_SpanRecorder(), attrs)),
    ]
    measure(variants, args.repeats)
    print(f"N = {args.n:,} child spans, {args.repeats} interleaved rounds; paired median ratio to no processor\n")
    for v in variants:
        ratio = paired_ratio(v, variants[0])
        print(f"{v.name:38} {v.median * 1e3:8.1f} ms  {ratio:.3f}×  {costs(v.run)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
