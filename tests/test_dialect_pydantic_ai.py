"""The Pydantic AI dialect on real agent runs, instrumentation versions 2-6, content on and off."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent, CallDeferred, DeferredToolRequests, InstrumentationSettings, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tracegrade import NOT_RECORDED, Trajectory, capture, grade
from tracegrade.dialects import extract
from tracegrade.evaluators import ArgumentCorrectness, MaxModelRequests, MaxToolCalls, ToolCorrectness
from tracegrade.spans import Span
from tracegrade.tree import SpanNode, SpanTree

VERSIONS = [2, 3, 4, 5, 6]


def _script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    step = sum(isinstance(m, ModelResponse) for m in messages)
    if step == 0:  # two parallel calls of the same tool with different arguments
        return ModelResponse(
            parts=[ToolCallPart("search", {"q": "x"}, tool_call_id="s1"), ToolCallPart("search", {"q": "y"}, "s2")]
        )
    if step == 1:  # a retry requested by the tool, and an argument-validation failure
        return ModelResponse(
            parts=[ToolCallPart("flaky", {"n": 1}, tool_call_id="f1"), ToolCallPart("add", {"x": "nan"}, "a1")]
        )
    if step == 2:
        return ModelResponse(
            parts=[ToolCallPart("flaky", {"n": 2}, tool_call_id="f2"), ToolCallPart("add", {"x": 1}, "a2")]
        )
    if step == 3:
        return ModelResponse(parts=[ToolCallPart("later", {"job": 7}, tool_call_id="d1")])
    return ModelResponse(parts=[TextPart("done")])


def _agent(tp: TracerProvider, version: int, include_content: bool) -> Agent[None, str | DeferredToolRequests]:
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(_script), name="main", output_type=[str, DeferredToolRequests]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # versions 2-4 are deprecated upstream
        agent.instrument = InstrumentationSettings(
            tracer_provider=tp,
            version=version,
            include_content=include_content,  # type: ignore[arg-type]
        )

    @agent.tool_plain
    def search(q: str) -> str:
        return f"results for {q}"

    @agent.tool_plain
    def flaky(n: int) -> str:
        if n == 1:
            raise ModelRetry("try again")
        return "ok"

    @agent.tool_plain
    def add(x: int) -> int:
        return x + 1

    @agent.tool_plain
    def later(job: int) -> str:
        raise CallDeferred(metadata={"job": job})

    return agent


def _run(version: int, include_content: bool) -> tuple[Trajectory, list[ReadableSpan]]:
    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    with capture(provider=tp) as cap:
        _agent(tp, version, include_content).run_sync("go")
    assert len(cap.spans) == len(exporter.get_finished_spans())
    return cap.trajectory, list(cap.spans)


@pytest.fixture(
    scope="module", params=[(v, c) for v in VERSIONS for c in (True, False)], ids=lambda p: f"v{p[0]}-content-{p[1]}"
)
def run(request: pytest.FixtureRequest) -> tuple[Trajectory, list[ReadableSpan], bool]:
    version, content = request.param
    traj, spans = _run(version, content)
    return traj, spans, content


def test_successful_calls_in_start_order(run: tuple[Trajectory, list[ReadableSpan], bool]) -> None:
    traj, _, _ = run
    assert traj.tool_names == ["search", "search", "flaky", "add"]


def test_failed_attempts_are_excluded_by_default(run: tuple[Trajectory, list[ReadableSpan], bool]) -> None:
    traj, _, _ = run
    failed = [c for c in traj.calls(include_failed=True) if c.failed]
    # validation runs before execution, so the order of these two parallel attempts is not fixed
    assert sorted((c.name, c.retry_cause) for c in failed) == [("add", "validation_error"), ("flaky", "model_retry")]
    assert all(c.status == "error" for c in failed)


def test_deferred_calls_are_never_tool_calls(run: tuple[Trajectory, list[ReadableSpan], bool]) -> None:
    traj, _, _ = run
    assert "later" not in traj.calls(include_failed=True)
    deferred = traj.calls(include_deferred=True, include_failed=True)
    assert [c.deferred for c in deferred if c.name == "later"] == ["CallDeferred"]


def test_call_ids_are_kept(run: tuple[Trajectory, list[ReadableSpan], bool]) -> None:
    traj, _, _ = run
    assert [c.call_id for c in traj.tool_calls] == ["s1", "s2", "f2", "a2"]


def test_arguments_parsed_or_not_recorded(run: tuple[Trajectory, list[ReadableSpan], bool]) -> None:
    traj, _, content = run
    if content:
        assert [c.args for c in traj.tool_calls] == [{"q": "x"}, {"q": "y"}, {"n": 2}, {"x": 1}]
        assert traj.tool_calls[0].result == "results for x"
        assert all(c.args_source == "span" for c in traj.tool_calls)
    else:
        assert all(c.args is NOT_RECORDED for c in traj.tool_calls)
        assert all(c.args_text is None for c in traj.tool_calls)


def test_model_requests_with_token_usage(run: tuple[Trajectory, list[ReadableSpan], bool]) -> None:
    traj, _, _ = run
    assert len(traj.model_requests) == 4  # the deferral ends the run: no fifth request
    assert all(r.model == "function:_script:" for r in traj.model_requests)
    assert all(isinstance(r.input_tokens, int) and r.input_tokens > 0 for r in traj.model_requests)
    assert all(r.agent == "main" for r in traj.model_requests)


def test_agent_run_and_attribution(run: tuple[Trajectory, list[ReadableSpan], bool]) -> None:
    traj, _, _ = run
    assert [r.name for r in traj.agent_runs] == ["main"]
    assert {c.agent for c in traj.all_calls} == {"main"}


def test_budgets_and_names_work_without_content(run: tuple[Trajectory, list[ReadableSpan], bool]) -> None:
    traj, _, _ = run
    results = grade(
        traj,
        [
            ToolCorrectness(["search", "search", "flaky", "add"]),
            MaxToolCalls(max_calls=6),
            MaxToolCalls(max_calls=5),
            MaxToolCalls(max_calls=4, include_failed=False),
            MaxModelRequests(max_requests=4),
        ],
    )
    assert [r.passed for r in results] == [True, True, False, True, True]
    assert results[2].reasoning == "6 tool call(s), budget=5"


def test_argument_check_says_not_recorded_instead_of_mismatch(
    run: tuple[Trajectory, list[ReadableSpan], bool],
) -> None:
    traj, _, content = run
    [result] = grade(traj, [ArgumentCorrectness("search", {"q": "y"}, occurrence=1)])
    if content:
        assert result.outcome == "passed"
    else:
        assert result.outcome == "not_evaluated"
        assert "not recorded" in result.reasoning and "'main'" in result.reasoning
        assert "mismatch" not in result.reasoning


def test_same_trajectory_from_span_records(run: tuple[Trajectory, list[ReadableSpan], bool]) -> None:
    traj, spans, _ = run
    again = extract(SpanTree.from_spans([Span.from_readable(s) for s in spans]))
    assert again.tool_names == traj.tool_names
    assert [c.args for c in again.all_calls] == [c.args for c in traj.all_calls]


# --- shapes not covered by the scenario --------------------------------------------------------------


def _output_function_run(version: int) -> Trajectory:
    def final(answer: str) -> str:
        return answer.upper()

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("lookup", {"k": "a"}, tool_call_id="l1")])
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"answer": "yes"}, "o1")])

    tp = TracerProvider()
    agent: Agent[None, str] = Agent(FunctionModel(script), name="out", output_type=final)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent.instrument = InstrumentationSettings(tracer_provider=tp, version=version)  # type: ignore[arg-type]

    @agent.tool_plain
    def lookup(k: str) -> str:
        return k

    with capture(provider=tp) as cap:
        assert agent.run_sync("q").output == "YES"
    return cap.trajectory


@pytest.mark.parametrize("version", VERSIONS)
def test_output_functions_are_not_tool_calls(version: int) -> None:
    traj = _output_function_run(version)
    assert traj.tool_names == ["lookup"]
    outputs = [c for c in traj.calls(include_output_functions=True) if c.output_function]
    assert len(outputs) == 1


@pytest.mark.parametrize("version", [2, 5])
def test_nested_agent_calls_are_tagged_with_their_agent(version: int) -> None:
    tp = TracerProvider()
    settings: Any
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        settings = InstrumentationSettings(tracer_provider=tp, version=version)  # type: ignore[arg-type]

    def child_script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("lookup", {"k": "z"}, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart("child done")])

    def parent_script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("delegate", {"task": "t"}, tool_call_id="p1")])
        return ModelResponse(parts=[TextPart("parent done")])

    child: Agent[None, str] = Agent(FunctionModel(child_script), name="child")
    child.instrument = settings
    parent: Agent[None, str] = Agent(FunctionModel(parent_script), name="parent")
    parent.instrument = settings

    @child.tool_plain
    def lookup(k: str) -> str:
        return k

    @parent.tool_plain
    async def delegate(task: str) -> str:
        return (await child.run(task)).output

    with capture(provider=tp) as cap:
        parent.run_sync("go")
    traj = cap.trajectory
    assert [(c.name, c.agent) for c in traj.tool_calls] == [("delegate", "parent"), ("lookup", "child")]
    runs = {r.name: r for r in traj.agent_runs}
    assert runs["child"].parent is not None and runs["child"].parent.name == "parent"
    assert traj.final_output == "parent done"
    assert [r.agent for r in traj.model_requests] == ["parent", "child", "child", "parent"]


def test_logfire_pending_spans_do_not_count_twice() -> None:
    base = {"gen_ai.tool.name": "search", "gen_ai.tool.call.id": "c1", "logfire.msg": "running tool: search"}
    real = Span(1, 10, None, "execute_tool search", 100, 200, base, scope_name="pydantic-ai")
    pending = Span(
        1, 11, 10, "execute_tool search", 100, 100, {**base, "logfire.span_type": "pending_span"},
        scope_name="pydantic-ai",
    )  # fmt: skip
    traj = extract(SpanTree.from_spans([real, pending]))
    assert traj.tool_names == ["search"]


def test_running_tools_parent_span_is_not_a_call() -> None:
    parent = Span(1, 1, None, "running tools", 0, 10, {"tools": ("a",), "logfire.msg": "running 1 tool"})
    child = Span(1, 2, 1, "running tool", 1, 9, {"gen_ai.tool.name": "a", "tool_arguments": '{"v": 1}'})
    traj = extract(SpanTree.from_spans([parent, child]))
    assert [(c.name, c.args) for c in traj.all_calls] == [("a", {"v": 1})]


def test_pre_v5_deferral_error_span_is_a_deferral_not_a_failure() -> None:
    from tracegrade.spans import SpanEvent

    span = Span(
        1, 1, None, "execute_tool later", 0, 5, {"gen_ai.tool.name": "later"}, status="error",
        events=(SpanEvent("exception", 3, {"exception.type": "pydantic_ai.exceptions.ApprovalRequired"}),),
        scope_name="pydantic-ai",
    )  # fmt: skip
    [call] = extract(SpanTree([SpanNode.from_span(span)])).all_calls
    assert call.deferred == "ApprovalRequired" and not call.failed
