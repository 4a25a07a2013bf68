"""capture(): attribution across tasks, threads and nesting; nothing outside captures is kept."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from _agents import scripted_agent
from tracegrade import capture
from tracegrade.capture import _RECORDER, Capture, _SpanRecorder


def test_fifty_concurrent_runs_each_see_only_their_own_calls() -> None:
    tp = TracerProvider()

    async def one(i: int) -> tuple[int, list[object]]:
        steps = [(f"tool_{i % 7}", {"i": i}), (f"tool_{(i + 3) % 7}", {"i": -i})]
        agent = scripted_agent(steps, tracer_provider=tp, name=f"agent{i}")
        async with capture(provider=tp) as cap:
            await agent.run(f"run {i}")
        return i, [(c.name, c.args, c.agent) for c in cap.trajectory.tool_calls]

    async def main() -> list[tuple[int, list[object]]]:
        return await asyncio.gather(*(one(i) for i in range(50)))

    for i, calls in asyncio.run(main()):
        assert calls == [(f"tool_{i % 7}", {"i": i}, f"agent{i}"), (f"tool_{(i + 3) % 7}", {"i": -i}, f"agent{i}")]


def test_spans_outside_every_capture_are_not_retained() -> None:
    tp = TracerProvider()
    tracer = tp.get_tracer("t")
    with capture(provider=tp) as cap:
        pass
    for _ in range(2000):
        with tracer.start_as_current_span("outside"):
            pass
    assert cap.spans == [] and cap not in _RECORDER._captures and not cap._open


def test_nested_captures_see_their_own_subtree() -> None:
    tp = TracerProvider()
    tracer = tp.get_tracer("t")
    with capture(provider=tp) as outer:
        with tracer.start_as_current_span("a"):
            pass
        with capture(provider=tp) as inner, tracer.start_as_current_span("b"):
            pass
    assert [s.name for s in inner.spans] == ["b"]
    assert sorted(s.name for s in outer.spans) == ["a", "b"]


def test_span_started_in_a_thread_with_the_parent_context_is_attributed() -> None:
    tp = TracerProvider()
    tracer = tp.get_tracer("t")
    with capture(provider=tp) as cap, tracer.start_as_current_span("parent") as parent:
        ctx = trace.set_span_in_context(parent)

        def work() -> None:
            with tracer.start_as_current_span("in thread", context=ctx):
                pass

        with ThreadPoolExecutor(1) as pool:
            pool.submit(work).result()
    assert sorted(s.name for s in cap.spans) == ["in thread", "parent"]


def test_span_ending_in_a_worker_thread_is_kept() -> None:
    tp = TracerProvider()
    tracer = tp.get_tracer("t")
    with capture(provider=tp) as cap:
        span = tracer.start_span("ends elsewhere")
        with ThreadPoolExecutor(1) as pool:
            pool.submit(span.end).result()
    assert [s.name for s in cap.spans] == ["ends elsewhere"]


def test_sync_tool_run_in_a_worker_thread_is_attributed() -> None:
    tp = TracerProvider()
    agent = scripted_agent([("t", {})], tracer_provider=tp)  # plain agent; tools run via anyio threads too
    with capture(provider=tp) as cap:
        agent.run_sync("go")
    assert cap.trajectory.tool_names == ["t"]


def test_recorder_errors_never_reach_the_application(monkeypatch: pytest.MonkeyPatch) -> None:
    tp = TracerProvider()
    tracer = tp.get_tracer("t")

    class Broken(dict[int, object]):
        def __setitem__(self, key: int, value: object) -> None:
            raise RuntimeError("recorder bug")

        def setdefault(self, key: int, default: object = None) -> object:
            raise RuntimeError("recorder bug")

    with capture(provider=tp) as cap:
        monkeypatch.setattr(cap, "_open", Broken())
        with tracer.start_as_current_span("still works"):
            pass
    assert isinstance(cap, Capture) and cap.spans == []


def test_recorder_is_attached_once_per_provider() -> None:
    tp = TracerProvider()
    for _ in range(3):
        with capture(provider=tp):
            pass
    processors = tp._active_span_processor._span_processors
    assert sum(isinstance(p, _SpanRecorder) for p in processors) == 1


def test_non_sdk_provider_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="SDK TracerProvider"), capture(provider=object()):
        pass


@pytest.mark.parametrize(
    "setup",
    ["", "import logfire; logfire.configure(send_to_logfire=False, console=False)"],
    ids=["no-provider-configured", "logfire"],
)
def test_capture_works_with_no_provider_and_with_logfire(setup: str) -> None:
    code = f"""
{setup}
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel
from opentelemetry import trace
from tracegrade import capture
agent = Agent(TestModel(), name="a")
agent.instrument = True
@agent.tool_plain
def lookup(k: str) -> str:
    return k
with capture() as cap:
    agent.run_sync("go")
print(cap.trajectory.tool_names, type(trace.get_tracer_provider()).__name__)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("['lookup']")
