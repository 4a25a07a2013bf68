"""`capture()` and `_SpanRecorder` (tracegrade.capture): providers, attribution, isolation, failure safety.

In-process tests use the global SDK provider (installed by the first capture when nothing set one) or
private providers; set-ups that configure the process-wide provider run in a subprocess, since OpenTelemetry
lets the global provider be set only once per process.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import json
import logging
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import INVALID_SPAN, NoOpTracerProvider, StatusCode, Tracer
from pydantic_ai import Agent, InstrumentationSettings
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tracegrade import capture
from tracegrade.capture import _RECORDER, _SpanRecorder, ensure_recorder

capture_module = importlib.import_module("tracegrade.capture")  # the package attribute is the class


def names(spans: Iterable[ReadableSpan]) -> list[str]:
    return [s.name for s in spans]


def run_python(code: str, cwd: Path) -> dict[str, Any]:
    """Run `code` in a fresh interpreter; it prints one JSON object as its last line."""
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, cwd=cwd
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture
def tracer() -> Tracer:
    """A tracer of the global provider, with the recorder attached to it."""
    ensure_recorder()
    return trace.get_tracer("tests.capture")


@pytest.fixture
def fresh_owner(monkeypatch: pytest.MonkeyPatch) -> dict[Any, None]:
    """An empty table of open captures for this test, so its assertions do not depend on other tests."""
    captures: dict[Any, None] = {}
    monkeypatch.setattr(_RECORDER, "_captures", captures)
    return captures


@pytest.fixture
def memory() -> tuple[TracerProvider, InMemorySpanExporter]:
    """A private (non-global) SDK provider exporting to memory, as an application would configure it."""
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


# --- which provider capture() attaches to ----------------------------------------------------------------


def test_capture_attaches_to_the_global_sdk_provider_the_application_set(tmp_path: Path) -> None:
    result = run_python(
        """
        import json
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from tracegrade import capture
        from tracegrade.capture import _SpanRecorder

        provider = TracerProvider()
        exporter = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        tracer = trace.get_tracer("app")
        with capture() as cap, tracer.start_as_current_span("outer"), tracer.start_as_current_span("inner"):
            pass
        print(json.dumps({
            "captured": [s.name for s in cap.spans],
            "exported": [s.name for s in exporter.get_finished_spans()],
            "still_global": trace.get_tracer_provider() is provider,
            "recorders": sum(isinstance(p, _SpanRecorder) for p in provider._active_span_processor._span_processors),
        }))
        """,
        tmp_path,
    )
    assert result == {
        "captured": ["inner", "outer"],
        "exported": ["inner", "outer"],
        "still_global": True,
        "recorders": 1,
    }


def test_capture_records_logfire_spans_through_its_proxy_provider(tmp_path: Path) -> None:
    result = run_python(
        """
        import json
        import logfire
        from opentelemetry import trace
        from pydantic_ai import Agent, InstrumentationSettings
        from pydantic_ai.models.test import TestModel
        from tracegrade import capture
        from tracegrade.capture import _RECORDER

        logfire.configure(send_to_logfire=False, console=False)
        agent = Agent(TestModel(), name="helper")
        agent.instrument = InstrumentationSettings(include_content=True)

        @agent.tool_plain
        def lookup(key: str) -> str:
            return key

        with capture() as cap:
            with logfire.span("handle {user}", user={"id": 3}):
                logfire.info("hello")
            agent.run_sync("go")
        proxy = trace.get_tracer_provider()
        [handle] = cap.tree.find({"name_equals": "handle {user}"})
        print(json.dumps({
            "proxy": type(proxy).__module__.startswith("logfire"),
            "attached": _RECORDER in proxy.provider._active_span_processor._span_processors,
            "has_user": handle.matches({"has_attributes": {"user": {"id": 3}}}),
            "hello": cap.tree.any({"has_attributes": {"logfire.msg": "hello"}}),
            "tools": [[c.name, c.args] for c in cap.trajectory.tool_calls],
        }))
        """,
        tmp_path,
    )
    assert result == {
        "proxy": True,
        "attached": True,
        "has_user": True,
        "hello": True,
        "tools": [["lookup", {"key": "a"}]],
    }


def test_capture_without_a_configured_provider_installs_an_sdk_provider(tmp_path: Path) -> None:
    result = run_python(
        """
        import json
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from tracegrade import capture

        from pydantic_ai import Agent
        from pydantic_ai.models.test import TestModel

        early = trace.get_tracer("imported before any provider")  # a proxy tracer, as at module import
        before = type(trace.get_tracer_provider()).__name__
        with capture() as cap, early.start_as_current_span("work"):
            pass
        agent = Agent(TestModel(), name="a")
        agent.instrument = True  # the global provider, which capture() installed

        @agent.tool_plain
        def lookup(k: str) -> str:
            return k

        with capture() as run:
            agent.run_sync("go")
        print(json.dumps({
            "before": before,
            "now_sdk": isinstance(trace.get_tracer_provider(), TracerProvider),
            "captured": [s.name for s in cap.spans],
            "tools": run.trajectory.tool_names,
        }))
        """,
        tmp_path,
    )
    assert result == {"before": "ProxyTracerProvider", "now_sdk": True, "captured": ["work"], "tools": ["lookup"]}


def test_recorder_is_attached_once_to_the_global_provider(tracer: Tracer) -> None:
    for _ in range(2):
        with capture(), tracer.start_as_current_span("s"):
            pass
    provider = ensure_recorder()
    assert provider is trace.get_tracer_provider()
    assert sum(isinstance(p, _SpanRecorder) for p in provider._active_span_processor._span_processors) == 1


def test_recorder_is_attached_once_to_an_explicit_provider(memory: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, _ = memory
    for _ in range(2):
        with capture(provider=provider):
            pass
    assert sum(isinstance(p, _SpanRecorder) for p in provider._active_span_processor._span_processors) == 1


def test_capture_with_an_explicit_provider_records_an_agent_instrumented_with_it(
    memory: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, _ = memory
    assert provider is not trace.get_tracer_provider()
    agent = Agent(FunctionModel(lookup_once), name="private")
    agent.instrument = InstrumentationSettings(tracer_provider=provider, include_content=True)
    agent.tool_plain(lookup)
    with capture(provider=provider) as cap:
        agent.run_sync("go")
    assert [(c.name, c.args) for c in cap.trajectory.tool_calls] == [("lookup", {"key": "k"})]


def test_non_sdk_provider_is_a_type_error_saying_what_is_needed() -> None:
    provider = NoOpTracerProvider()
    with pytest.raises(TypeError) as err, capture(provider=provider):
        pass
    assert str(err.value) == f"capture(provider=...) needs an OpenTelemetry SDK TracerProvider, got {provider!r}"


def test_shutting_down_another_provider_keeps_an_active_captures_spans(tracer: Tracer) -> None:
    # The recorder is one processor shared by every provider it is attached to, so any provider's shutdown()
    # (a test fixture's teardown, logfire reconfiguring) reaches _SpanRecorder.shutdown().
    other = TracerProvider()
    ensure_recorder(other)
    with capture() as cap:
        span = tracer.start_span("in flight")
        other.shutdown()
        span.end()
    assert names(cap.spans) == ["in flight"]


# --- attribution -------------------------------------------------------------------------------------------


def test_spans_outside_every_capture_are_not_retained(tracer: Tracer, fresh_owner: dict[Any, None]) -> None:
    with capture() as finished:
        pass
    elsewhere = contextvars.copy_context()  # a capture open in another context the whole time
    other_block = capture()
    other = elsewhere.run(other_block.__enter__)
    for _ in range(5000):
        with tracer.start_as_current_span("outside"):
            tracer.start_span("outside child").end()  # parent lookups as well as context lookups
    elsewhere.run(other_block.__exit__, None, None, None)
    assert fresh_owner == {}
    assert finished.spans == [] and other.spans == [] and other.open_spans == []


def test_inner_capture_sees_only_its_own_spans(tracer: Tracer) -> None:
    with capture(), tracer.start_as_current_span("outer span"):
        with capture() as inner, tracer.start_as_current_span("inner span"):
            tracer.start_span("inner child").end()
        tracer.start_span("after inner").end()
    assert names(inner.spans) == ["inner child", "inner span"]


def test_outer_capture_sees_its_own_and_the_inner_captures_spans(tracer: Tracer) -> None:
    with capture() as outer:
        tracer.start_span("before inner").end()
        with capture(), tracer.start_as_current_span("inner span"):
            pass
        tracer.start_span("after inner").end()
    assert names(outer.spans) == ["before inner", "inner span", "after inner"]


def test_span_open_when_the_inner_capture_exits_is_kept_by_the_outer_one(tracer: Tracer) -> None:
    # It started inside both blocks and ended inside the outer one; today it is in neither capture's
    # spans nor in the outer capture's open_spans: it vanishes from the outer capture.
    with capture() as outer:
        with capture() as inner:
            span = tracer.start_span("straddles the inner exit")
        span.end()
    assert names(inner.open_spans) == ["straddles the inner exit"]
    assert names(outer.spans) == ["straddles the inner exit"]


TOOLS = ("search", "fetch", "rank", "store")


def plan(run: int) -> list[tuple[str, dict[str, int]]]:
    """Run `run`'s tool calls: 1-4 calls whose names and arguments depend on the run index."""
    return [(TOOLS[(run + k * (run % 3 + 1)) % 4], {"run": run, "step": k}) for k in range(1 + run % 4)]


async def planned_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    prompt = next(p.content for p in messages[0].parts if isinstance(p, UserPromptPart))
    run = int(str(prompt).removeprefix("run "))
    done = sum(isinstance(m, ModelResponse) for m in messages)
    await asyncio.sleep(0)  # let the other runs interleave
    steps = plan(run)
    if done < len(steps):
        tool, args = steps[done]
        return ModelResponse(parts=[ToolCallPart(tool, args, tool_call_id=f"call-{run}-{done}")])
    return ModelResponse(parts=[TextPart(f"run {run} done")])


def planned_agent(name: str) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(FunctionModel(planned_model), name=name)
    agent.instrument = InstrumentationSettings(include_content=True)  # the global provider
    for name in TOOLS:

        async def tool(run: int, step: int, _name: str = name) -> str:
            await asyncio.sleep(0)
            return f"{_name} {run}.{step}"

        agent.tool_plain(name=name)(tool)
    return agent


def test_concurrent_agent_runs_each_capture_exactly_their_own_tool_calls(tracer: Tracer) -> None:
    agents = [planned_agent(f"planner{k}") for k in range(5)]  # each agent runs ten times at once

    async def one(run: int) -> tuple[list[tuple[str, Any, str | None]], int]:
        async with capture() as cap:
            await agents[run % 5].run(f"run {run}")
        return [(c.name, c.args, c.agent) for c in cap.trajectory.tool_calls], len(cap.tree.trace_ids)

    async def all_runs() -> list[tuple[list[tuple[str, Any, str | None]], int]]:
        return await asyncio.gather(*(one(i) for i in range(50)))

    results = asyncio.run(all_runs())
    assert [calls for calls, _ in results] == [[(*step, f"planner{i % 5}") for step in plan(i)] for i in range(50)]
    assert {traces for _, traces in results} == {1}  # no span of another run's trace got in


def test_span_started_in_a_worker_thread_with_the_parent_context_is_attributed(tracer: Tracer) -> None:
    def work(parent_context: Context) -> bool:
        inherited = trace.get_current_span() is not INVALID_SPAN
        tracer.start_span("in thread", context=parent_context).end()
        return inherited

    with capture() as cap, tracer.start_as_current_span("parent") as parent, ThreadPoolExecutor(1) as pool:
        inherited = pool.submit(work, trace.set_span_in_context(parent)).result()
    assert not inherited  # the worker had no context of its own: only the explicit parent links it
    [child] = cap.tree.find({"name_equals": "in thread"})
    assert child.parent is not None and child.parent.name == "parent"


def test_span_started_in_a_thread_without_the_captures_context_is_not_retained(tracer: Tracer) -> None:
    with capture() as cap, tracer.start_as_current_span("parent"), ThreadPoolExecutor(1) as pool:
        pool.submit(lambda: tracer.start_span("unrelated").end()).result()
    assert names(cap.spans) == ["parent"]


def test_span_ended_in_a_worker_thread_is_kept(tracer: Tracer) -> None:
    with capture() as cap:
        span = tracer.start_span("ends elsewhere")
        with ThreadPoolExecutor(1) as pool:
            pool.submit(span.end).result()
    assert names(cap.spans) == ["ends elsewhere"] and cap.open_spans == []


def lookup_once(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if not any(isinstance(m, ModelResponse) for m in messages):
        return ModelResponse(parts=[ToolCallPart("lookup", {"key": "k"}, tool_call_id="c1")])
    return ModelResponse(parts=[TextPart("done")])


def lookup(key: str) -> str:
    """A sync tool: Pydantic AI runs it in a worker thread."""
    return key.upper()


def test_pydantic_ai_sync_tool_running_in_a_worker_thread_is_attributed(tracer: Tracer) -> None:
    threads: list[int] = []

    def traced_lookup(key: str) -> str:
        threads.append(threading.get_ident())
        with tracer.start_as_current_span("inside tool"):
            return key.upper()

    agent = Agent(FunctionModel(lookup_once), name="sync-tools")
    agent.instrument = InstrumentationSettings(include_content=True)
    agent.tool_plain(name="lookup")(traced_lookup)
    with capture() as cap:
        agent.run_sync("go")
    assert threads and threads[0] != threading.get_ident()
    [call] = cap.trajectory.tool_calls
    assert (call.name, call.args) == ("lookup", {"key": "k"})
    [inside] = cap.tree.find({"name_equals": "inside tool"})
    assert call.span is not None and inside.parent is not None and inside.parent.span_id == call.span.span_id


def test_async_with_capture_records_the_block(tracer: Tracer) -> None:
    async def block() -> Any:
        async with capture() as cap:
            with tracer.start_as_current_span("awaited"):
                await asyncio.sleep(0)
        return cap

    cap = asyncio.run(block())
    assert names(cap.spans) == ["awaited"] and cap.closed


def test_spans_open_at_exit_are_open_spans_not_spans(tracer: Tracer) -> None:
    with capture() as cap:
        still_open = tracer.start_span("still open")
        tracer.start_span("done").end()
    assert names(cap.spans) == ["done"]
    assert cap.open_spans == [still_open]
    still_open.end()


def test_closed_capture_leaves_no_recorder_state_behind(tracer: Tracer, fresh_owner: dict[Any, None]) -> None:
    with capture():
        tracer.start_span("ended").end()
        still_open = tracer.start_span("still open")
    still_open.end()
    assert fresh_owner == {}  # nothing pins the closed capture or its spans


def test_span_ending_after_its_capture_closed_is_not_added(tracer: Tracer) -> None:
    with capture() as cap:
        span = tracer.start_span("late end")
    span.end()
    assert cap.spans == [] and names(cap.open_spans) == ["late end"]


def test_task_outliving_its_capture_does_not_leak_spans_into_it(tracer: Tracer) -> None:
    async def main() -> Any:
        release = asyncio.Event()

        async def background() -> None:
            await release.wait()
            tracer.start_span("after the block").end()

        with capture() as cap:
            tracer.start_span("in the block").end()
            task = asyncio.create_task(background())
            await asyncio.sleep(0)
        release.set()
        await task
        return cap

    cap = asyncio.run(main())
    assert names(cap.spans) == ["in the block"]


def test_task_outliving_an_inner_capture_records_into_the_open_outer_one(tracer: Tracer) -> None:
    async def main() -> tuple[Any, Any]:
        release = asyncio.Event()

        async def background() -> None:
            await release.wait()
            tracer.start_span("after inner").end()

        with capture() as outer:
            with capture() as inner:
                task = asyncio.create_task(background())
                await asyncio.sleep(0)
            release.set()
            await task
        return outer, inner

    outer, inner = asyncio.run(main())
    assert inner.spans == [] and names(outer.spans) == ["after inner"]


def test_spans_are_listed_in_the_order_they_ended(tracer: Tracer) -> None:
    with capture() as cap:
        first, second = tracer.start_span("started first"), tracer.start_span("started second")
        second.end()
        first.end()
    assert names(cap.spans) == ["started second", "started first"]


def test_tree_read_inside_the_block_is_rebuilt_on_exit(tracer: Tracer) -> None:
    with capture() as cap:
        tracer.start_span("first").end()
        assert [n.name for n in cap.tree] == ["first"]
        tracer.start_span("second").end()
    assert [n.name for n in cap.tree] == ["first", "second"]


def test_exception_in_the_block_propagates_and_the_capture_keeps_its_spans(tracer: Tracer) -> None:
    with pytest.raises(RuntimeError, match="boom"), capture() as cap, tracer.start_as_current_span("failing"):
        raise RuntimeError("boom")
    assert cap.closed and names(cap.spans) == ["failing"]
    assert cap.spans[0].status.status_code is StatusCode.ERROR


# --- a recorder failure never reaches the instrumented application ------------------------------------------


class RaisingDict(dict[int, Any]):
    def __setitem__(self, key: int, value: Any) -> None:
        raise RuntimeError("recorder bug")

    def setdefault(self, key: int, default: Any = None) -> Any:
        raise RuntimeError("recorder bug")


class RaisingList(list[ReadableSpan]):
    def append(self, span: ReadableSpan) -> None:
        raise RuntimeError("recorder bug")


class BrokenContextVar:
    """Stands in for `_ACTIVE`: reading it fails, while capture() itself can still set and reset it."""

    def __init__(self, real: contextvars.ContextVar[Any]) -> None:
        self.real = real

    def get(self) -> Any:
        raise RuntimeError("recorder bug")

    def set(self, value: Any) -> contextvars.Token[Any]:
        return self.real.set(value)

    def reset(self, token: contextvars.Token[Any]) -> None:
        self.real.reset(token)


@pytest.fixture
def recorder_log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    with caplog.at_level(logging.DEBUG, logger="tracegrade"):
        yield caplog


def test_failure_recording_a_span_start_does_not_reach_the_application(
    memory: tuple[TracerProvider, InMemorySpanExporter], fresh_owner: dict[Any, None],
    recorder_log: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    provider, exporter = memory
    ran = []
    with capture(provider=provider) as cap:
        cap._open = RaisingDict()
        with provider.get_tracer("app").start_as_current_span("app work") as span:
            ran.append(span.is_recording())
    assert "_SpanRecorder.on_start failed" in recorder_log.text  # the injected failure did happen
    assert ran == [True] and names(exporter.get_finished_spans()) == ["app work"]
    assert cap.spans == []  # the span the recorder failed on is not half-recorded


def test_failure_recording_a_span_end_does_not_reach_the_application(
    memory: tuple[TracerProvider, InMemorySpanExporter], fresh_owner: dict[Any, None],
    recorder_log: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    provider, exporter = memory
    with capture(provider=provider) as cap:
        cap._spans = RaisingList()
        with provider.get_tracer("app").start_as_current_span("app work"):
            pass
    assert "_SpanRecorder.on_end failed" in recorder_log.text
    assert names(exporter.get_finished_spans()) == ["app work"]


def test_failure_reading_the_active_capture_does_not_reach_the_application(
    memory: tuple[TracerProvider, InMemorySpanExporter], monkeypatch: pytest.MonkeyPatch,
    recorder_log: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    provider, exporter = memory
    with capture(provider=provider) as cap, monkeypatch.context() as patched:  # broken inside the block only
        patched.setattr(capture_module, "_ACTIVE", BrokenContextVar(capture_module._ACTIVE))
        with provider.get_tracer("app").start_as_current_span("app work"):
            pass
    assert "_SpanRecorder.on_start failed" in recorder_log.text
    assert names(exporter.get_finished_spans()) == ["app work"] and cap.closed


def test_failed_span_start_leaves_no_recorder_state_behind(
    memory: tuple[TracerProvider, InMemorySpanExporter],
    fresh_owner: dict[Any, None],
) -> None:
    # on_start registers the owner before the failing step; nothing releases that entry, which then pins
    # the closed Capture (and every span it recorded) for the life of the process.
    provider, _ = memory
    with capture(provider=provider) as cap:
        cap._open = RaisingDict()
        provider.get_tracer("app").start_span("app work").end()
    assert fresh_owner == {}


# --- what a capture keeps of each span -------------------------------------------------------------


def test_kept_spans_read_the_same_as_the_live_spans_for_every_processor() -> None:
    """The recorder swaps an ended span's bounded containers for what they hold (when nothing was
    dropped); every public property still reads what the live span held, for the exporter too."""
    from opentelemetry.attributes import BoundedAttributes
    from opentelemetry.sdk.trace import SpanLimits
    from opentelemetry.trace import Link, SpanKind, Status

    provider = TracerProvider(span_limits=SpanLimits(max_span_attributes=3, max_events=1))
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("lib", "1.0", attributes={"scope.attr": 1})
    live = {}
    with capture(provider=provider) as cap, tracer.start_as_current_span("root", kind=SpanKind.SERVER) as root:
        root.add_event("first", {"k": "v"})
        live["root"] = root
        link = Link(root.get_span_context(), {"why": "test"})
        with tracer.start_as_current_span("child", links=[link], attributes={f"k{i}": i for i in range(5)}) as ch:
            ch.add_event("e1")
            ch.add_event("e2")  # over the limit: the SDK drops the oldest
            ch.set_status(Status(StatusCode.ERROR, "boom"))
            live["child"] = ch
    assert [s.name for s in cap.spans] == ["child", "root"]
    assert [s.name for s in exporter.get_finished_spans()] == ["child", "root"]
    for kept, exported in zip(cap.spans, exporter.get_finished_spans(), strict=True):
        span = live[kept.name]
        assert exported is kept  # the object every processor was handed
        assert kept.context == span.get_span_context() and kept.kind == span.kind
        assert dict(kept.attributes) == dict(span.attributes)  # type: ignore[attr-defined]
        assert [(e.name, dict(e.attributes or {})) for e in kept.events] == [
            (e.name, dict(e.attributes or {}))
            for e in span.events  # type: ignore[attr-defined]
        ]
        assert [ln.context for ln in kept.links] == [ln.context for ln in span.links]  # type: ignore[attr-defined]
        assert (kept.dropped_attributes, kept.dropped_events) == (span.dropped_attributes, span.dropped_events)  # type: ignore[attr-defined]
    child, root_kept = cap.spans
    assert type(root_kept._attributes) is dict and root_kept._events == tuple(live["root"].events)  # slimmed
    assert type(child._attributes) is BoundedAttributes  # it dropped attributes: kept as the SDK made it
    assert cap.dropped == [("child", 2, 1)]
    node = cap.tree.first({"name_equals": "child"})
    assert node is not None and node.status == "error" and node.status_message == "boom"
    assert [e.name for e in node.events] == ["e2"] and node.span.scope_attributes == {"scope.attr": 1}


def test_only_the_sdks_own_readable_span_is_slimmed() -> None:
    from opentelemetry.attributes import BoundedAttributes

    from tracegrade.capture import _slim

    class Custom(ReadableSpan):
        pass

    attrs = BoundedAttributes(attributes={"a": 1}, immutable=True)
    provider = TracerProvider()
    with capture(provider=provider) as cap:
        custom = Custom("custom", provider.get_tracer("t").start_span("x").get_span_context(), attributes=attrs)
        _RECORDER.on_start(custom)  # type: ignore[arg-type]
        _RECORDER.on_end(custom)
    assert cap.spans[-1] is custom and custom._attributes is attrs
    plain = ReadableSpan("plain", attributes=BoundedAttributes(attributes={"a": 1}, immutable=True))
    _slim(plain)
    assert plain._attributes == {"a": 1} and type(plain._attributes) is dict


# --- issue 14: exits elsewhere, concurrent indexing, cut values, repeated ids, shared spans -----------------


def test_capture_exited_in_another_thread_leaves_that_threads_own_capture_active(tracer: Tracer) -> None:
    entered: dict[str, Any] = {}
    with capture() as main_cap:  # the context that will exit the other thread's capture

        def enter_elsewhere() -> None:
            with capture() as worker_outer:
                block = capture()
                entered.update(outer=worker_outer, block=block, cap=block.__enter__())
                tracer.start_span("in the block").end()

        threading.Thread(target=enter_elsewhere).start()  # exits worker_outer, not the block
        while "cap" not in entered:
            threading.Event().wait(0.001)
        entered["block"].__exit__(None, None, None)
        tracer.start_span("main after").end()
    assert names(main_cap.spans) == ["main after"]
    assert names(entered["cap"].spans) == ["in the block"] and entered["cap"].closed
    assert "main after" not in names(entered["outer"].spans)


def test_capture_exited_in_another_task_keeps_each_tasks_spans_in_its_own_capture(tracer: Tracer) -> None:
    async def main() -> tuple[list[str], list[str]]:
        handed: asyncio.Queue[Any] = asyncio.Queue()
        done = asyncio.Event()

        async def enters() -> list[str]:
            async with capture() as mine:
                block = capture()
                cap = block.__enter__()
                tracer.start_span("in the block").end()
                await handed.put((block, cap))
                await done.wait()  # the other task exits the block meanwhile
                tracer.start_span("entering task after").end()
            return names(mine.spans)

        async def exits() -> list[str]:
            async with capture() as theirs:
                block, _ = await handed.get()
                block.__exit__(None, None, None)
                for i in range(6):
                    tracer.start_span(f"exiting task {i}").end()
                done.set()
            return names(theirs.spans)

        first, second = await asyncio.gather(enters(), exits())
        return first, second

    first, second = asyncio.run(main())
    assert second == [f"exiting task {i}" for i in range(6)]  # before the fix: all 6 went elsewhere
    assert first == ["in the block", "entering task after"]


def test_exiting_the_outer_capture_releases_an_inner_one_exited_elsewhere(tracer: Tracer) -> None:
    def run() -> Any:
        outer = capture()
        outer.__enter__()
        inner = capture()
        inner_cap = inner.__enter__()
        worker = threading.Thread(target=inner.__exit__, args=(None, None, None))
        worker.start()
        worker.join()
        tracer.start_span("between").end()
        outer.__exit__(None, None, None)
        return capture_module._ACTIVE.get(), inner_cap

    active, inner_cap = contextvars.copy_context().run(run)
    assert active is None  # the context no longer holds (and keeps alive) either closed capture
    assert inner_cap.closed and names(inner_cap.spans) == []


def test_outer_capture_exited_first_leaves_the_open_inner_one_recording(tracer: Tracer) -> None:
    outer, inner = capture(), capture()
    outer_cap = outer.__enter__()
    inner_cap = inner.__enter__()
    outer.__exit__(None, None, None)  # out of order, in the same context
    tracer.start_span("after outer").end()
    inner.__exit__(None, None, None)
    tracer.start_span("after both").end()
    assert names(inner_cap.spans) == ["after outer"] and outer_cap.spans == []


class StallingSpan(ReadableSpan):
    """A recorded span whose id, the first time it is read once armed, stalls the reading thread until
    `release` is set (or 0.5 s pass): it holds the recorder's indexing of ended spans mid-way."""

    def __init__(self, name: str, context: Any) -> None:
        self.armed = False
        self.reading, self.release = threading.Event(), threading.Event()
        super().__init__(name, context)

    @property  # type: ignore[override]
    def _context(self) -> Any:
        if self.armed:
            self.armed = False
            self.reading.set()
            self.release.wait(0.5)
        return self.__dict__["ctx"]

    @_context.setter
    def _context(self, value: Any) -> None:
        self.__dict__["ctx"] = value


def test_indexing_ended_spans_from_two_threads_at_once_loses_none() -> None:
    provider = TracerProvider()
    tracer = provider.get_tracer("race")

    def child_of(parent: Any) -> threading.Thread:  # a worker thread: no capture in its context
        context = trace.set_span_in_context(trace.NonRecordingSpan(parent.get_span_context()))
        t = threading.Thread(target=lambda: tracer.start_span("child", context=context).end())
        t.start()
        return t

    with capture(provider=provider) as cap:
        ended: list[Any] = [tracer.start_span("root")]
        ended[0].end()
        stalling = StallingSpan("stalling", tracer.start_span("x").get_span_context())
        _RECORDER.on_start(stalling)  # type: ignore[arg-type]
        _RECORDER.on_end(stalling)
        stalling.armed = True
        first = child_of(ended[0])  # indexes the ended spans, and stalls mid-way
        assert stalling.reading.wait(5)
        ended.append(tracer.start_span("e1"))
        ended[-1].end()
        second = child_of(ended[-1])  # indexes them too, while the first is held
        second.join(0.2)  # (with indexing serialized, it waits for the first instead)
        stalling.release.set()
        first.join()
        second.join()
        for i in range(4):
            ended.append(tracer.start_span(f"e{i + 2}"))
            ended[-1].end()
        ended += [s for s in cap.spans if s.name == "child"]
        for t in [child_of(parent) for parent in ended]:
            t.join()
    assert sum(s.name == "child" for s in cap.spans) == 2 + len(ended)


def limited_provider(monkeypatch: pytest.MonkeyPatch, setting: str, limit: int) -> TracerProvider:
    from opentelemetry.sdk.trace import SpanLimits

    if setting == "SpanLimits":
        return TracerProvider(span_limits=SpanLimits(max_span_attribute_length=limit))
    monkeypatch.setenv(setting, str(limit))
    return TracerProvider()  # SpanLimits() reads the environment when the provider is made


CUT_SETTINGS = ["OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "SpanLimits"]


def weather_checks() -> list[Any]:
    from tracegrade.evaluators import ArgumentCorrectness, ToolCallArgsEvaluator, ToolCallEvaluator, ToolCorrectness

    return [
        ToolCorrectness(expected_tools=["get_weather_forecast"]),
        ToolCallEvaluator(must_include=["get_weather_forecast"]),
        ArgumentCorrectness(tool_name="get_weather_forecast", expected_arguments={"city": "Paris"}),
        ToolCallArgsEvaluator(tool="get_weather_forecast", args={"city": "Paris"}),
    ]


@pytest.mark.parametrize("setting", CUT_SETTINGS)
def test_tool_name_cut_by_a_value_length_limit_is_not_evaluated_naming_the_attribute_and_setting(
    monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    from _agents import scripted_agent
    from tracegrade import grade

    provider = limited_provider(monkeypatch, setting, 16)
    agent = scripted_agent([("get_weather_forecast", {"city": "Paris", "days": 3})], tracer_provider=provider)
    with capture(provider=provider) as cap:
        agent.run_sync("go")
    assert [c.name for c in cap.trajectory.all_calls] == ["get_weather_fore"]  # what the SDK left of it
    results = grade(cap, weather_checks())
    assert [r.outcome for r in results] == ["not_evaluated"] * 4, [r.reason for r in results]
    for r in results:
        assert "'gen_ai.tool.name'" in r.reason and "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT" in r.reason
    assert any("'gen_ai.tool.name'" in note for note in cap.trajectory.incomplete)


@pytest.mark.parametrize("setting", CUT_SETTINGS)
def test_arguments_cut_by_a_value_length_limit_are_not_evaluated_naming_the_attribute_and_setting(
    monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    from _agents import scripted_agent
    from tracegrade import grade
    from tracegrade.evaluators import ToolCallArgsEvaluator

    provider = limited_provider(monkeypatch, setting, 24)  # the tool name fits; its arguments do not
    agent = scripted_agent([("forecast", {"city": "Paris", "days": 3, "unit": "C"})], tracer_provider=provider)
    with capture(provider=provider) as cap:
        agent.run_sync("go")
    [call] = cap.trajectory.all_calls
    assert call.name == "forecast" and call.args_text == '{"city":"Paris","days":3'
    check = ToolCallArgsEvaluator(tool="forecast", args={"city": "Paris"})
    [result] = grade(cap, [check])
    assert result.outcome == "not_evaluated", result.reason  # before: failed, "no dict arguments were captured"
    assert "'gen_ai.tool.call.arguments'" in result.reason and "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT" in result.reason
    assert call.args_truncated is not None and call.args_truncated in cap.trajectory.incomplete


def test_values_under_the_length_limit_are_graded_as_usual(monkeypatch: pytest.MonkeyPatch) -> None:
    from _agents import scripted_agent
    from tracegrade import grade

    provider = limited_provider(monkeypatch, "SpanLimits", 4096)
    agent = scripted_agent([("get_weather_forecast", {"city": "Paris", "days": 3})], tracer_provider=provider)
    with capture(provider=provider) as cap:
        agent.run_sync("go")
    assert [r.outcome for r in grade(cap, weather_checks())] == ["passed"] * 4
    assert cap.trajectory.incomplete == []


def test_arguments_cut_short_in_a_trace_file_are_not_evaluated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from _agents import scripted_agent
    from tracegrade import grade, write_otlp_json
    from tracegrade.evaluators import ArgumentCorrectness, ToolCallArgsEvaluator, ToolCorrectness

    provider = limited_provider(monkeypatch, "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", 24)
    agent = scripted_agent([("forecast", {"city": "Paris", "days": 3, "unit": "C"})], tracer_provider=provider)
    with capture(provider=provider) as cap:
        agent.run_sync("go")
    path = write_otlp_json(cap, tmp_path / "cut.json")  # the file does not say which limit was in force
    checks = [
        ArgumentCorrectness(tool_name="forecast", expected_arguments={"city": "Paris"}),
        ToolCallArgsEvaluator(tool="forecast", args={"city": "Paris"}),
        ToolCorrectness(expected_tools=["forecast"]),
    ]
    results = grade(path, checks)
    assert [r.outcome for r in results] == ["not_evaluated"] * 3, [r.reason for r in results]
    assert all("'gen_ai.tool.call.arguments'" in r.reason and "stops mid-way" in r.reason for r in results)


def repeating_ids(every: int) -> Any:
    """An IdGenerator that hands out span id 0xABC for every `every`-th span (and fresh ids otherwise)."""
    from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator

    class Repeating(IdGenerator):
        def __init__(self) -> None:
            self.random, self.n = RandomIdGenerator(), 0

        def generate_span_id(self) -> int:
            self.n += 1
            return 0xABC if self.n % every == 0 else self.random.generate_span_id()

        def generate_trace_id(self) -> int:
            return self.random.generate_trace_id()

    return Repeating()


@pytest.mark.parametrize("overlapping", [False, True])
def test_repeated_span_ids_give_an_error_result_per_evaluator_naming_the_id(overlapping: bool) -> None:
    from tracegrade import agrade, grade
    from tracegrade.evaluators import MaxToolCalls, ToolCorrectness

    provider = TracerProvider(id_generator=repeating_ids(1 if overlapping else 2))
    tracer = provider.get_tracer("dup")
    with capture(provider=provider) as cap:
        if overlapping:  # every span has id 0xABC, the later ones open while the first still is
            with tracer.start_as_current_span("outer"), tracer.start_as_current_span("inner"):
                pass
        else:  # one after another, in one trace
            with tracer.start_as_current_span("root"):
                for i in range(4):
                    tracer.start_span(f"s{i}").end()
    expected_names = ["inner", "outer"] if overlapping else ["s0", "s1", "s2", "s3", "root"]
    assert names(cap.spans) == expected_names and cap.open_spans == []  # no span lost to the repeated id
    checks = [ToolCorrectness(expected_tools=["search"]), MaxToolCalls(max_calls=3)]
    for results in (grade(cap, checks), asyncio.run(agrade(cap, checks))):
        assert [(r.outcome, r.name) for r in results] == [("error", "ToolCorrectness"), ("error", "MaxToolCalls")]
        assert all("0000000000000abc" in r.reason and "id_generator" in r.reason for r in results)


def test_repeated_span_ids_in_a_list_of_spans_give_error_results() -> None:
    from tracegrade import grade
    from tracegrade.evaluators import ToolCorrectness

    provider = TracerProvider(id_generator=repeating_ids(1))
    with capture(provider=provider) as cap, provider.get_tracer("dup").start_as_current_span("root"):
        provider.get_tracer("dup").start_span("child").end()
    [result] = grade(list(cap.spans), [ToolCorrectness(expected_tools=["search"])])
    assert result.outcome == "error" and "duplicate span id 0000000000000abc" in result.reason


class OTLPSink:
    """A loopback OTLP/HTTP endpoint (stdlib `http.server` on 127.0.0.1) keeping every request body."""

    def __init__(self) -> None:
        import http.server

        bodies: list[bytes] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.bodies = bodies
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def exported_bytes(
    sink: OTLPSink, *, with_capture: bool, recorder_first: bool, limits: Any
) -> tuple[list[bytes], list[ReadableSpan]]:
    """Run one fixed workload (fixed ids and timestamps) on a fresh provider exporting through a
    BatchSpanProcessor + OTLP/HTTP exporter; the capture (if any) sees every span too. Returns the
    request bodies the sink received and the spans the capture kept."""
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.id_generator import IdGenerator
    from opentelemetry.trace import Link, SpanKind, Status

    class Counting(IdGenerator):
        def __init__(self) -> None:
            self.n = 0

        def generate_span_id(self) -> int:
            self.n += 1
            return 0x1000 + self.n

        def generate_trace_id(self) -> int:
            return 0xABCDEF

    provider = TracerProvider(resource=Resource({"service.name": "bytes"}), id_generator=Counting(), span_limits=limits)
    if with_capture and recorder_first:
        ensure_recorder(provider)  # the recorder sees (and slims) each span before the batch processor
    exporter = OTLPSpanExporter(endpoint=sink.endpoint, compression=Compression.NoCompression, timeout=10)
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=60_000, max_export_batch_size=512))
    tracer = provider.get_tracer("lib", "1.2", attributes={"scope.attr": "s"})
    t = 1_700_000_000_000_000_000
    values: dict[str, Any] = {"s": "text value", "b": True, "i": 42, "f": 1.5, "ss": ("a", "bb"), "ii": (1, 2),
                              "long": "x" * 40}  # fmt: skip

    def workload() -> None:
        root = tracer.start_span("root", kind=SpanKind.SERVER, attributes=values, start_time=t)
        root.add_event("started", {"k": "v", "n": 1}, timestamp=t + 1)
        ctx = trace.set_span_in_context(root)
        for k, kind in enumerate(SpanKind):
            links = [Link(root.get_span_context(), {"why": "link", "k": k}), Link(root.get_span_context())]
            child = tracer.start_span(f"child {kind.name}", ctx, kind, {**values, "k": k}, links, start_time=t + 10 * k)
            for e in range(3):
                child.add_event(f"event {e}", {"e": e, "text": "y" * 30}, timestamp=t + 10 * k + e)
            child.set_attribute("late", k)
            if k % 2:
                child.set_status(Status(StatusCode.ERROR, "boom"))
            child.end(end_time=t + 10 * k + 5)
        root.end(end_time=t + 1_000)

    kept: list[ReadableSpan] = []
    if with_capture:
        with capture(provider=provider) as cap:
            workload()
        kept = cap.spans
    else:
        workload()
    provider.force_flush()
    provider.shutdown()
    bodies, sink.bodies[:] = list(sink.bodies), []
    return bodies, kept


@pytest.mark.parametrize("recorder_first", [True, False], ids=["recorder-first", "recorder-last"])
@pytest.mark.parametrize("limited", [False, True], ids=["no-limits", "limits-drop-and-cut"])
def test_an_otlp_exporter_beside_the_capture_sends_byte_identical_data(
    monkeypatch: pytest.MonkeyPatch, recorder_first: bool, limited: bool
) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.sdk.trace import SpanLimits

    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    cut = {"max_span_attributes": 5, "max_events": 2, "max_links": 1, "max_event_attributes": 1}
    limits = SpanLimits(**cut, max_span_attribute_length=8) if limited else SpanLimits()
    sink = OTLPSink()
    try:
        plain, _ = exported_bytes(sink, with_capture=False, recorder_first=recorder_first, limits=limits)
        beside, kept = exported_bytes(sink, with_capture=True, recorder_first=recorder_first, limits=limits)
    finally:
        sink.close()
    assert len(kept) == 6  # the capture did record (and, where nothing was dropped or cut, slim) every span
    assert any(type(span._attributes) is dict for span in kept) is not limited
    assert len(plain) == 1 and beside == plain  # the same bytes on the wire, with or without tracegrade
    request = ExportTraceServiceRequest.FromString(plain[0])
    spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert len(spans) == 6 and {len(s.links) for s in spans if s.name.startswith("child")} == {1 if limited else 2}
    dropped = sum(s.dropped_attributes_count + s.dropped_events_count + s.dropped_links_count for s in spans)
    assert (dropped > 0) is limited


# --- bug: a model output cut by a value-length limit lost its requested calls (graded as "no tool called") ------

CHAT = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o"}
TWO_CALLS = json.dumps([{"role": "assistant", "finish_reason": "tool_calls", "parts": [
    {"type": "tool_call", "id": "c1", "name": "search", "arguments": {"q": "paris"}},
    {"type": "tool_call", "id": "c2", "name": "weather", "arguments": {"city": "Paris, " + "x" * 300}}]}])  # fmt: skip
ANSWER = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}])


def chat_loop(provider: TracerProvider, finish_reasons: bool, tool_spans: bool = False) -> Any:
    """A hand-written loop, only the LLM client instrumented: a response asking for two tools, then the answer;
    with `tool_spans`, tool spans that record no arguments (they are only in the model's output)."""
    tracer = provider.get_tracer("app")
    first = {**CHAT, "gen_ai.output.messages": TWO_CALLS}
    last = {**CHAT, "gen_ai.output.messages": ANSWER}
    if finish_reasons:
        first["gen_ai.response.finish_reasons"], last["gen_ai.response.finish_reasons"] = ("tool_calls",), ("stop",)
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "ops"}
    with capture(provider=provider) as cap, tracer.start_as_current_span("invoke_agent ops", attributes=agent):
        with tracer.start_as_current_span("chat gpt-4o", kind=trace.SpanKind.CLIENT, attributes=first):
            pass
        for name, cid in (("search", "c1"), ("weather", "c2")) if tool_spans else ():
            tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": cid}
            with tracer.start_as_current_span(f"execute_tool {name}", attributes=tool):
                pass
        with tracer.start_as_current_span("chat gpt-4o", kind=trace.SpanKind.CLIENT, attributes=last):
            pass
    return cap


def tool_checks() -> list[Any]:
    from tracegrade.evaluators import MaxToolCalls, ToolCallEvaluator, ToolCorrectness, TrajectoryMatch

    return [
        ToolCorrectness(expected_tools=["search", "weather"]),
        TrajectoryMatch(expected_trajectory=["search", "weather"]),
        MaxToolCalls(max_calls=0),
        ToolCallEvaluator(must_exclude=["delete_account"]),
    ]


@pytest.mark.parametrize("finish_reasons", [False, True], ids=["no-finish-reasons", "finish-reasons"])
@pytest.mark.parametrize("setting", CUT_SETTINGS)
def test_a_model_output_cut_by_a_value_length_limit_leaves_tool_checks_not_evaluated_naming_the_cut(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, setting: str, finish_reasons: bool
) -> None:
    from tracegrade import grade, write_otlp_json
    from tracegrade.evaluators import MaxModelRequests

    cap = chat_loop(limited_provider(monkeypatch, setting, 150), finish_reasons)
    assert cap.trajectory.all_calls == []  # the cut output holds no readable call
    results = grade(cap, [*tool_checks(), MaxModelRequests(max_requests=2)])
    # before: failed "missing tools: 'search' (x1), 'weather' (x1)" and MaxToolCalls(0) passed (without finish
    # reasons), or not_evaluated advising the message-content capture setting, which was on (with them)
    assert [r.outcome for r in results] == ["not_evaluated"] * 4 + ["passed"], [r.reason for r in results]
    for r in results[:4]:
        assert "model request 'chat gpt-4o' (app): attribute 'gen_ai.output.messages' is exactly 150 characters" in r.reason
        assert "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT" in r.reason and "SpanLimits(max_span_attribute_length" in r.reason
        assert "message-content capture" not in r.reason
    path = write_otlp_json(cap, tmp_path / "cut.json")  # a file does not say which limit was in force
    for r in grade(path, tool_checks()):
        assert r.outcome == "not_evaluated", r.reason
        assert "'gen_ai.output.messages' is JSON that stops mid-way after 150 characters" in r.reason


def test_arguments_only_in_a_cut_model_output_are_not_evaluated_naming_the_cut(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tracegrade import grade, write_otlp_json
    from tracegrade.evaluators import ArgumentCorrectness, ToolCallArgsEvaluator

    cap = chat_loop(limited_provider(monkeypatch, "SpanLimits", 150), finish_reasons=True, tool_spans=True)
    assert [c.name for c in cap.trajectory.tool_calls] == ["search", "weather"]
    checks = [ArgumentCorrectness("search", {"q": "paris"}), ToolCallArgsEvaluator(tool="search", args={"q": "paris"})]
    for source in (cap, write_otlp_json(cap, tmp_path / "cut.json")):
        for r in grade(source, checks):
            # before: not_evaluated advising the message-content capture setting, which was on
            assert r.outcome == "not_evaluated" and "message-content capture" not in r.reason, r.reason
            assert "tool 'search' (span 'execute_tool search') records no arguments" in r.reason
            assert "'gen_ai.output.messages'" in r.reason and "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT" in r.reason


def test_a_model_output_under_the_length_limit_is_graded_as_usual(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracegrade import grade
    from tracegrade.evaluators import ArgumentCorrectness, ToolCorrectness

    for tool_spans in (False, True):
        cap = chat_loop(limited_provider(monkeypatch, "SpanLimits", 4096), finish_reasons=False, tool_spans=tool_spans)
        checks = [ToolCorrectness(expected_tools=["search", "weather"]), ArgumentCorrectness("search", {"q": "paris"})]
        assert [r.outcome for r in grade(cap, checks)] == ["passed"] * 2
        assert cap.trajectory.incomplete == [] and cap.trajectory.missing == {}


# --- bug: a trace file read without the logs file write_otlp_json wrote beside it advised the capture setting ----


def split_capture(tmp_path: Path) -> tuple[Path, Path]:
    """A capture whose model request's output is only in a log record (`gen_ai.choice`), written by `write_otlp_json`
    as `run.json` and `run.logs.json`."""
    from opentelemetry.sdk._logs import LoggerProvider

    from tracegrade import write_otlp_json
    from tracegrade.ingest._write import logs_path_for

    provider, loggers = TracerProvider(), LoggerProvider(shutdown_on_exit=False)
    tracer, logger = provider.get_tracer("app"), loggers.get_logger("app")
    chat = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o"}
    choice = {"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]}}  # fmt: skip
    chat_span = tracer.start_as_current_span("chat gpt-4o", kind=trace.SpanKind.CLIENT, attributes=chat)
    with capture(provider=provider, logger_provider=loggers) as cap, chat_span:
        logger.emit(event_name="gen_ai.choice", body=choice)
    path = write_otlp_json(cap, tmp_path / "run.json")
    logs = logs_path_for(path)
    assert logs.is_file()
    return path, logs


def test_a_trace_file_read_alone_names_the_logs_file_beside_it(tmp_path: Path) -> None:
    from tracegrade import grade, load_traces
    from tracegrade.evaluators import ToolCorrectness

    path, logs = split_capture(tmp_path)
    check = ToolCorrectness(expected_tools=["search"])
    for source in ([next(iter(load_traces(path)))], path):  # a tree of load_traces, a path read whole
        [r] = grade(source[0] if isinstance(source, list) else source, [check])
        # before: only "to record it: the instrumentation's message-content capture setting", which was on
        assert r.outcome == "not_evaluated", r.reason
        assert f"its log records may be in {logs.name}, beside the trace file but not given: give it too" in r.reason
    for source in ([path, logs], tmp_path):  # given too: the records are read, and the run graded
        [r] = grade(source, [check])
        assert r.outcome == "passed", r.reason
        assert all(t.unread_logs == () for t in load_traces(source))
    logs.unlink()  # no logs file beside it: nothing to point at
    [r] = grade(path, [check])
    assert r.outcome == "not_evaluated" and "may be in" not in r.reason and "message-content capture" in r.reason
