"""Fault suite for `capture()`: under concurrency and injected faults, every span lands in exactly
the captures that should hold it (0 mis-attributed, 0 lost), and memory stays flat over many runs.

Ground truth comes from a second span processor (`Truth`), independent of the recorder: a span
belongs to the capture path marked in the context it started in (`owned()` marks it with the
capture), else to its parent span's. A capture should hold the spans of its own path and of the
captures nested in it.

- concurrency: `asyncio.gather` of captured Pydantic AI runs (nested captures, exceptions, captures
  exited in another task); threads starting children of ended spans with an explicit parent context;
- faults: exporters that raise (simple and batch processors) and processors that raise beside the
  recorder; captures exited in other threads;
- memory: thousands of captured agent runs in a time- and memory-bounded child, RSS at checkpoints.

`--faults-full` runs each at a larger scale.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace import Span as SDKSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter, SpanExportResult

from _agents import scripted_agent
from tracegrade import Capture, capture
from tracegrade.capture import ensure_recorder

from ._bounded import run_bounded

Path = tuple[str, ...]
_OWNER: ContextVar[Path] = ContextVar("truth_owner", default=())


class Truth(SpanProcessor):
    """Records, for every span, the capture path that should own it (see the module docstring)."""

    def __init__(self) -> None:
        self.owner: dict[int, Path] = {}

    def on_start(self, span: SDKSpan, parent_context: Context | None = None) -> None:
        owner = _OWNER.get()
        if not owner and span.parent is not None:
            owner = self.owner.get(span.parent.span_id, ())
        if owner:
            self.owner[span.get_span_context().span_id] = owner

    def on_end(self, span: ReadableSpan) -> None:
        pass


@dataclass
class Audit:
    """The captures of one scenario, by path, checked against the truth."""

    truth: Truth
    captures: list[tuple[Path, Capture]] = field(default_factory=list)

    @contextmanager
    def owned(self, provider: TracerProvider, label: str) -> Iterator[Capture]:
        """A capture, with the context marked as its owner for the truth."""
        path = (*_OWNER.get(), label)
        token = _OWNER.set(path)
        try:
            with capture(provider=provider) as cap:
                self.captures.append((path, cap))
                yield cap
        finally:
            _OWNER.reset(token)

    def count(self) -> tuple[int, int, int]:
        """(spans that should be captured, mis-attributed, lost) over all captures. A span a capture
        reports as still open at exit (`open_spans`) is not lost: it is reported."""
        wrong = lost = 0
        for path, cap in self.captures:
            got = {s.context.span_id for s in cap.spans if s.context is not None}
            reported = {s.context.span_id for s in cap.open_spans if s.context is not None}
            want = {sid for sid, owner in self.truth.owner.items() if owner[: len(path)] == path}
            wrong += len((got | reported) - want)
            lost += len(want - got - reported)
        return len(self.truth.owner), wrong, lost


def truth_provider(*processors: SpanProcessor, recorder_last: bool = False) -> tuple[TracerProvider, Truth]:
    provider = TracerProvider()
    truth = Truth()
    provider.add_span_processor(truth)
    if not recorder_last:
        ensure_recorder(provider)
    for p in processors:
        provider.add_span_processor(p)
    if recorder_last:
        ensure_recorder(provider)
    return provider, truth


@contextmanager
def fast_switching() -> Iterator[None]:
    """Threads interleave every few spans instead of every few hundred."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


SCALE = {"ci": {"runs": 40, "owners": 2, "workers": 8, "per_worker": 400, "rounds": 1},
         "full": {"runs": 400, "owners": 6, "workers": 8, "per_worker": 1200, "rounds": 3}}  # fmt: skip


# --- concurrency -----------------------------------------------------------------------------------------


def test_gathered_agent_runs_with_nested_failing_and_foreign_exited_captures(fault_scale: str) -> None:
    provider, truth = truth_provider()
    audit = Audit(truth)
    agent = scripted_agent([("search", {"q": "x"}), [("fetch", {"n": 1}), ("fetch", {"n": 2})]],
                           tracer_provider=provider)  # fmt: skip
    tracer = provider.get_tracer("faults")
    runs = SCALE[fault_scale]["runs"]
    handoff: list[asyncio.Queue[Any]] = []

    async def one(i: int) -> None:
        with audit.owned(provider, f"run{i}"):
            await agent.run("go")
            if i % 5 == 0:  # nested
                with audit.owned(provider, "inner"):
                    await agent.run("go")
                tracer.start_span("after inner").end()
            if i % 7 == 0:  # an exception inside captured code
                with pytest.raises(RuntimeError), audit.owned(provider, "failing"):
                    await agent.run("go")
                    raise RuntimeError("boom")
            if i % 4 == 1:  # this run enters a capture and the next run's task exits it
                path = (*_OWNER.get(), "handed")
                token = _OWNER.set(path)
                block = capture(provider=provider)
                audit.captures.append((path, block.__enter__()))
                tracer.start_span("in handed block").end()
                done = asyncio.Event()
                await handoff[i + 1].put((block, done))
                await done.wait()
                _OWNER.reset(token)  # closed elsewhere: this context's spans are the run's again
                tracer.start_span("after handed block").end()
            if i % 4 == 2:
                block, done = await handoff[i].get()
                block.__exit__(None, None, None)  # exits a capture this task never entered
                tracer.start_span("after exiting another's block").end()
                await agent.run("go")
                done.set()

    async def main() -> None:
        handoff.extend(asyncio.Queue() for _ in range(runs + 2))
        await asyncio.gather(*(one(i) for i in range(runs)))

    asyncio.run(main())
    spans, wrong, lost = audit.count()
    print(f"gathered runs={runs}: spans={spans} captures={len(audit.captures)} mis-attributed={wrong} lost={lost}")
    assert spans > runs * 5 and (wrong, lost) == (0, 0)


def test_threads_starting_children_of_ended_spans_lose_and_misplace_none(fault_scale: str) -> None:
    scale = SCALE[fault_scale]
    provider, truth = truth_provider()
    tracer = provider.get_tracer("faults")
    made = wrong_total = lost_total = 0
    for _ in range(scale["rounds"]):
        audit = Audit(truth)
        truth.owner.clear()
        ready = threading.Barrier(scale["owners"])

        def owner(k: int, audit: Audit = audit, ready: threading.Barrier = ready) -> int:
            with audit.owned(provider, f"owner{k}"):
                root = tracer.start_span("root")
                root.end()
                ended: list[Any] = [root]
                ready.wait()

                def work(w: int) -> int:  # a pool thread: no capture in its context, only the explicit parent
                    rng = random.Random(k * 1000 + w)
                    for _ in range(scale["per_worker"]):
                        parent = ended[-1 - rng.randrange(min(len(ended), 16))]
                        span = tracer.start_span("child", context=trace.set_span_in_context(parent))
                        span.end()
                        ended.append(span)
                    return int(scale["per_worker"])

                with ThreadPoolExecutor(scale["workers"]) as pool:
                    return sum(pool.map(work, range(scale["workers"])))

        with fast_switching(), ThreadPoolExecutor(scale["owners"]) as owners:
            made += sum(owners.map(owner, range(scale["owners"])))
        _, wrong, lost = audit.count()
        wrong_total += wrong
        lost_total += lost
    print(f"thread children: rounds={scale['rounds']} spans={made} mis-attributed={wrong_total} lost={lost_total}")
    assert (wrong_total, lost_total) == (0, 0)


def test_captures_exited_in_other_threads_leave_every_other_context_alone(fault_scale: str) -> None:
    provider, truth = truth_provider()
    audit = Audit(truth)
    tracer = provider.get_tracer("faults")
    threads = SCALE[fault_scale]["owners"] * 2
    blocks: list[Any] = [None] * threads
    phase = threading.Barrier(threads)

    def spans(n: int) -> None:
        for _ in range(n):
            tracer.start_span("span").end()

    def thread(k: int) -> None:  # threads pair up (k, k ^ 1); each exits its partner's block
        with audit.owned(provider, f"thread{k}"):
            path = (*_OWNER.get(), "block")
            token = _OWNER.set(path)
            block = capture(provider=provider)
            audit.captures.append((path, block.__enter__()))
            spans(3)
            blocks[k] = block
            phase.wait()
            if k % 2 == 0:  # first the even threads exit their partners' blocks; their own are still open
                blocks[k ^ 1].__exit__(None, None, None)
                spans(5)  # into this thread's own block
            phase.wait()
            if k % 2:  # then the odd ones, whose own blocks were closed by their partners meanwhile
                _OWNER.reset(token)
                blocks[k ^ 1].__exit__(None, None, None)
                spans(5)  # into this thread's capture
            phase.wait()
            if k % 2 == 0:
                _OWNER.reset(token)
            spans(2)  # every block is closed: into each thread's own capture

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(thread, range(threads)))
    n, wrong, lost = audit.count()
    print(f"exits in other threads: threads={threads} spans={n} mis-attributed={wrong} lost={lost}")
    assert n == threads * 10 and (wrong, lost) == (0, 0)


# --- faults beside the recorder --------------------------------------------------------------------------


class RaisingExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        raise RuntimeError("exporter down")


class RaisingProcessor(SpanProcessor):
    def __init__(self, where: str) -> None:
        self.where = where

    def on_start(self, span: SDKSpan, parent_context: Context | None = None) -> None:
        if self.where == "start":
            raise RuntimeError("processor bug in on_start")

    def on_end(self, span: ReadableSpan) -> None:
        if self.where == "end":
            raise RuntimeError("processor bug in on_end")


@pytest.mark.parametrize("exporter", ["simple", "batch"])
def test_exporters_that_raise_beside_the_recorder_change_nothing(fault_scale: str, exporter: str) -> None:
    processor = (
        SimpleSpanProcessor(RaisingExporter())
        if exporter == "simple"
        else BatchSpanProcessor(RaisingExporter(), schedule_delay_millis=1, max_export_batch_size=4)
    )
    provider, truth = truth_provider(processor)
    audit = Audit(truth)
    agent = scripted_agent([("search", {"q": "x"})], tracer_provider=provider)

    async def one(i: int) -> list[str]:
        with audit.owned(provider, f"run{i}") as cap:
            await agent.run("go")
        return cap.trajectory.tool_names

    async def main() -> list[list[str]]:
        return await asyncio.gather(*(one(i) for i in range(SCALE[fault_scale]["runs"] // 2)))

    names = asyncio.run(main())
    provider.shutdown()
    spans, wrong, lost = audit.count()
    assert names == [["search"]] * len(names) and spans and (wrong, lost) == (0, 0)


@pytest.mark.parametrize("where", ["start", "end"])
def test_processor_raising_after_the_recorder_leaves_the_capture_complete(where: str) -> None:
    provider, truth = truth_provider(RaisingProcessor(where))
    audit = Audit(truth)
    tracer = provider.get_tracer("faults")
    with audit.owned(provider, "app"):
        for i in range(20):
            try:
                with tracer.start_as_current_span(f"s{i}"):
                    pass
            except RuntimeError:
                pass  # the SDK passes a processor's exception to the application; the recorder ran first
    spans, wrong, lost = audit.count()
    assert spans == 20 and (wrong, lost) == (0, 0)
    if where == "start":  # the application never got these spans back to end them: reported open
        assert len(audit.captures[0][1].open_spans) == 20


def test_processor_raising_before_the_recorder_on_end_leaves_spans_reported_open_not_lost() -> None:
    provider, truth = truth_provider(RaisingProcessor("end"), recorder_last=True)
    tracer = provider.get_tracer("faults")
    audit = Audit(truth)
    with audit.owned(provider, "app") as cap:
        for i in range(10):
            span = tracer.start_span(f"s{i}")
            with pytest.raises(RuntimeError):
                span.end()  # the recorder never hears of the end
    assert len(truth.owner) == 10 and cap.spans == []
    assert sorted(s.name for s in cap.open_spans) == sorted(f"s{i}" for i in range(10))
    assert len(cap.trajectory.incomplete) == 10  # reported: graded checks are not_evaluated, never passed


# --- memory ----------------------------------------------------------------------------------------------

SOAK = """
import gc, json, os, sys
sys.path.insert(0, {tests!r})
from _agents import scripted_agent
from opentelemetry.sdk.trace import TracerProvider
from tracegrade import capture, grade
from tracegrade.evaluators import ToolCorrectness

provider = TracerProvider()
agent = scripted_agent([("search", {{"q": "x"}}), ("fetch", {{"n": 1}})], tracer_provider=provider)
check = [ToolCorrectness(expected_tools=["search", "fetch"])]
page = os.sysconf("SC_PAGE_SIZE")

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page / 2**20

checkpoints = {checkpoints!r}
out = {{}}
for i in range(1, checkpoints[-1] + 1):
    with capture(provider=provider) as cap:
        agent.run_sync("go")
    assert grade(cap, check)[0].passed
    del cap
    if i in checkpoints:
        gc.collect()
        out[i] = round(rss_mb(), 1)
print(json.dumps(out))
"""


def test_memory_stays_flat_over_many_captured_agent_runs(fault_scale: str) -> None:
    from pathlib import Path as FilePath

    checkpoints = [60, 120, 180] if fault_scale == "ci" else [1_000, 5_000, 10_000]
    timeout = 120 if fault_scale == "ci" else 1800
    tests = str(FilePath(__file__).parents[1])
    child = run_bounded(SOAK.format(tests=tests, checkpoints=checkpoints), timeout=timeout, max_memory_mb=2048)
    assert child.returncode == 0, child.stderr
    rss = {int(k): v for k, v in json.loads(child.stdout.strip().splitlines()[-1]).items()}
    print(f"RSS MB at runs {rss} (peak {child.peak_rss_mb:.1f} MB)")
    first, last = rss[checkpoints[0]], rss[checkpoints[-1]]
    assert last <= first + 5, f"RSS grew from {first} MB to {last} MB over {checkpoints[-1]} captured runs"
