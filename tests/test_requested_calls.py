"""Tool calls a model requested (model-request spans) merged with the calls tool spans executed.

The spans are real OTel SDK spans shaped as each instrumentation records them (see
shared/reference/conventions.md §1.7, §3, §4): a hand-written agent loop where only the LLM client
is instrumented has no tool spans at all, and the trajectory comes from the model's requests.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel
from pydantic_ai import Agent, InstrumentationSettings
from pydantic_ai.models.test import TestModel

from tracegrade import TurnContext, capture, grade
from tracegrade.dialects import extract
from tracegrade.evaluators import (
    ArgumentCorrectness,
    MaxModelRequests,
    MaxToolCalls,
    ToolCallEvaluator,
    ToolCorrectness,
    TrajectoryMatch,
)
from tracegrade.trajectory import NOT_RECORDED, Trajectory
from tracegrade.tree import SpanTree

# The scenario: parallel get_weather + get_order, then search_kb, then the final answer.
STEPS: list[list[tuple[str, str, dict[str, Any]]]] = [
    [("get_weather", "call_w1", {"city": "Paris"}), ("get_order", "call_o1", {"order_id": 1234})],
    [("search_kb", "call_s1", {"query": "refund policy"})],
    [],
]
RESULTS = {"call_w1": "sunny, 21C", "call_o1": "order 1234: shipped", "call_s1": "Refunds take 5 days."}


@contextmanager
def _tracer(scope: str = "test") -> Iterator[tuple[Any, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer(scope), exporter
    provider.shutdown()


def _otel_chat_attrs(step: int) -> dict[str, Any]:
    """A GenAI chat span (latest conventions, content on): output tool_call parts, earlier results as input."""
    inputs: list[dict[str, Any]] = [{"role": "user", "parts": [{"type": "text", "content": "help"}]}]
    for earlier in STEPS[:step]:
        inputs.append({"role": "assistant", "parts": [
            {"type": "tool_call", "id": cid, "name": n, "arguments": a} for n, cid, a in earlier]})  # fmt: skip
        inputs += [{"role": "tool", "parts": [{"type": "tool_call_response", "id": cid, "result": RESULTS[cid]}]}
                   for _, cid, _ in earlier]  # fmt: skip
    calls = STEPS[step]
    parts = [{"type": "tool_call", "id": cid, "name": n, "arguments": a} for n, cid, a in calls] or [
        {"type": "text", "content": "Done."}
    ]
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 5,
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}]),
    }


def _openinference_llm_attrs(step: int) -> dict[str, Any]:
    attrs: dict[str, Any] = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o"}
    i = 0
    attrs[f"llm.input_messages.{i}.message.role"] = "user"
    for earlier in STEPS[:step]:
        for _, cid, _ in earlier:
            i += 1
            attrs[f"llm.input_messages.{i}.message.role"] = "tool"
            attrs[f"llm.input_messages.{i}.message.tool_call_id"] = cid
            attrs[f"llm.input_messages.{i}.message.content"] = RESULTS[cid]
    for j, (n, cid, a) in enumerate(STEPS[step]):
        prefix = f"llm.output_messages.0.message.tool_calls.{j}.tool_call."
        attrs[prefix + "id"] = cid
        attrs[prefix + "function.name"] = n
        attrs[prefix + "function.arguments"] = json.dumps(a)
    return attrs


def _openllmetry_chat_attrs(step: int) -> dict[str, Any]:
    attrs: dict[str, Any] = {"llm.request.type": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o"}
    attrs["gen_ai.prompt.0.role"] = "user"
    i = 0
    for earlier in STEPS[:step]:
        for _, cid, _ in earlier:
            i += 1
            attrs[f"gen_ai.prompt.{i}.role"] = "tool"
            attrs[f"gen_ai.prompt.{i}.tool_call_id"] = cid
            attrs[f"gen_ai.prompt.{i}.content"] = RESULTS[cid]
    for j, (n, cid, a) in enumerate(STEPS[step]):
        attrs[f"gen_ai.completion.0.tool_calls.{j}.id"] = cid
        attrs[f"gen_ai.completion.0.tool_calls.{j}.name"] = n
        attrs[f"gen_ai.completion.0.tool_calls.{j}.arguments"] = json.dumps(a)
    return attrs


SHAPES = {
    "genai": ("chat gpt-4o", _otel_chat_attrs),
    "openinference": ("ChatCompletion", _openinference_llm_attrs),
    "openllmetry": ("openai.chat", _openllmetry_chat_attrs),
}


def _hand_written_loop(shape: str, *, root: str | None = "my_loop") -> Trajectory:
    """Only the LLM client is instrumented: one model span per step, no tool spans."""
    name, attrs = SHAPES[shape]
    with _tracer() as (tracer, exporter):
        if root is not None:
            with tracer.start_as_current_span(root):
                for step in range(len(STEPS)):
                    with tracer.start_as_current_span(name, attributes=attrs(step)):
                        pass
        else:
            for step in range(len(STEPS)):
                with tracer.start_as_current_span(name, attributes=attrs(step)):
                    pass
    return extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_without_tool_spans_the_requested_calls_form_the_trajectory(shape: str) -> None:
    traj = _hand_written_loop(shape)
    calls = traj.tool_calls
    assert [(c.name, c.args, c.call_id) for c in calls] == [
        ("get_weather", {"city": "Paris"}, "call_w1"),
        ("get_order", {"order_id": 1234}, "call_o1"),
        ("search_kb", {"query": "refund policy"}, "call_s1"),
    ]
    assert all(c.executed is None and c.args_source == "messages" for c in calls)
    assert [c.result for c in calls] == ["sunny, 21C", "order 1234: shipped", "Refunds take 5 days."]
    assert traj.steps(calls) == [1, 1, 2]  # the first two were requested together, in parallel
    assert len(traj.model_requests) == 3
    results = grade(
        traj,
        [
            ToolCorrectness(expected_tools=["get_weather", "get_order", "search_kb"]),
            TrajectoryMatch(expected_trajectory=["get_order", "get_weather", "search_kb"], order="in_order", parallel="unordered"),
            ArgumentCorrectness("get_order", {"order_id": 1234}),
            MaxToolCalls(max_calls=3),
        ],
    )
    assert [r.outcome for r in results] == ["passed"] * 4, [r.reasoning for r in results]
    [wrong] = grade(traj, [ArgumentCorrectness("get_weather", {"city": "Rome"})])
    assert wrong.outcome == "failed"


def test_requested_calls_need_no_enclosing_span() -> None:
    traj = _hand_written_loop("genai", root=None)
    assert traj.tool_names == ["get_weather", "get_order", "search_kb"]


def _executed_and_requested(
    tool_attrs: dict[str, dict[str, Any]], *, skip: tuple[str, ...] = (), agent: bool = False
) -> Trajectory:
    """Chat spans with output messages, and a tool span per requested call (but those in `skip`), with
    `tool_attrs[call_id]` as its attributes; under an agent span only when `agent`."""
    root = "invoke_agent support" if agent else "handler"
    root_attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support"} if agent else {}
    with _tracer() as (tracer, exporter), tracer.start_as_current_span(root, attributes=root_attrs):
        for step, calls in enumerate(STEPS):
            with tracer.start_as_current_span("chat gpt-4o", attributes=_otel_chat_attrs(step)):
                pass
            for _, cid, _ in calls:
                if cid in skip:
                    continue
                with tracer.start_as_current_span(f"execute_tool {cid}", attributes=tool_attrs[cid]):
                    pass
    return extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))


def _tool(name: str, cid: str | None, args: Any = None) -> dict[str, Any]:
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
    if cid is not None:
        attrs["gen_ai.tool.call.id"] = cid
    if args is not None:
        attrs["gen_ai.tool.call.arguments"] = json.dumps(args)
    return attrs


def test_arguments_are_recovered_by_call_id_without_an_agent_run() -> None:
    traj = _executed_and_requested({cid: _tool(n, cid) for step in STEPS for n, cid, _ in step})
    assert [(c.name, c.args, c.args_source, c.executed) for c in traj.tool_calls] == [
        ("get_weather", {"city": "Paris"}, "messages", True),
        ("get_order", {"order_id": 1234}, "messages", True),
        ("search_kb", {"query": "refund policy"}, "messages", True),
    ]
    assert all(c.span is not None and c.span.name.startswith("execute_tool") for c in traj.tool_calls)


def test_tool_spans_without_call_ids_are_matched_in_order_within_the_response() -> None:
    traj = _executed_and_requested({cid: _tool(n, None) for step in STEPS for n, cid, _ in step}, agent=True)
    assert [(c.name, c.args, c.call_id) for c in traj.tool_calls] == [  # each takes the model's call id
        ("get_weather", {"city": "Paris"}, STEPS[0][0][1]),
        ("get_order", {"order_id": 1234}, STEPS[0][1][1]),
        ("search_kb", {"query": "refund policy"}, STEPS[1][0][1]),
    ]
    assert len(traj.all_calls) == 3  # matched, not added twice


def test_a_framework_wrapper_on_the_tool_span_gives_way_to_the_model_s_arguments() -> None:
    wrapped = {  # what OpenInference records for smolagents: the tool wrapper's own arguments
        cid: {"openinference.span.kind": "TOOL", "tool.name": n,
              "input.value": json.dumps({"args": [], "sanitize_inputs_outputs": True, "kwargs": a})}
        for step in STEPS for n, cid, a in step
    }  # fmt: skip
    traj = _executed_and_requested(wrapped)
    call = traj.tool_calls[0]
    assert (call.args, call.args_source) == ({"city": "Paris"}, "messages")


def test_span_arguments_equal_to_the_request_stay_the_span_s() -> None:
    traj = _executed_and_requested({cid: _tool(n, cid, a) for step in STEPS for n, cid, a in step})
    assert {c.args_source for c in traj.tool_calls} == {"span"}


def test_a_requested_call_that_never_executed_is_visible_but_not_counted() -> None:
    traj = _executed_and_requested({cid: _tool(n, cid) for step in STEPS for n, cid, _ in step}, skip=("call_o1",))
    assert traj.tool_names == ["get_weather", "search_kb"]
    [never] = [c for c in traj.calls(include_unexecuted=True) if c.executed is False]
    assert (never.name, never.args, never.call_id) == ("get_order", {"order_id": 1234}, "call_o1")
    assert grade(traj, [ToolCorrectness(expected_tools=["get_order"])])[0].outcome == "failed"


def test_a_requested_call_without_a_recorded_name_is_reported_not_guessed() -> None:
    attrs = _otel_chat_attrs(0)
    out = json.loads(attrs["gen_ai.output.messages"])
    del out[0]["parts"][0]["name"]
    attrs["gen_ai.output.messages"] = json.dumps(out)
    with _tracer() as (tracer, exporter), tracer.start_as_current_span("chat gpt-4o", attributes=attrs):
        pass
    traj = extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))
    assert traj.tool_names == ["get_order"]
    assert any("name was not recorded" in note for note in traj.incomplete)


def test_structured_output_is_not_a_tool_call() -> None:
    class Out(BaseModel):
        x: int

    agent = Agent(TestModel(), output_type=Out)
    agent.instrument = InstrumentationSettings()
    with capture() as cap:
        agent.run_sync("hi")
    assert cap.trajectory.tool_calls == []
    [final] = cap.trajectory.calls(include_output_functions=True)
    assert final.name == "final_result" and final.output_function


def test_content_off_requests_leave_arguments_not_recorded() -> None:
    attrs = _otel_chat_attrs(0)
    out = json.loads(attrs["gen_ai.output.messages"])
    for part in out[0]["parts"]:
        del part["arguments"]
    attrs["gen_ai.output.messages"] = json.dumps(out)
    with _tracer() as (tracer, exporter), tracer.start_as_current_span("chat gpt-4o", attributes=attrs):
        pass
    traj = extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))
    assert [(c.name, c.args) for c in traj.tool_calls] == [("get_weather", NOT_RECORDED), ("get_order", NOT_RECORDED)]
    assert grade(traj, [ArgumentCorrectness("get_order", {"order_id": 1234})])[0].outcome == "not_evaluated"


# --- what the telemetry does not hold ---------------------------------------------------------------


def _chat_only(attrs: dict[str, Any], scope: str = "opentelemetry.instrumentation.openai_v2") -> Trajectory:
    with _tracer(scope) as (tracer, exporter), tracer.start_as_current_span("chat gpt-4o", attributes=attrs):
        pass
    return extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))


CONTENT_OFF = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.system": "openai"}
TOOL_CHECKS = [
    ToolCorrectness(expected_tools=[]),
    TrajectoryMatch(expected_trajectory=[]),
    MaxToolCalls(max_calls=0),
    ToolCallEvaluator(must_exclude=["delete_account"]),
]


def test_a_request_that_ended_for_tool_calls_nobody_recorded_leaves_tool_checks_not_evaluated() -> None:
    traj = _chat_only({**CONTENT_OFF, "gen_ai.response.finish_reasons": ("tool_calls",)})
    results = grade(traj, [*TOOL_CHECKS, MaxModelRequests(max_requests=1)])
    assert [r.outcome for r in results] == ["not_evaluated"] * 4 + ["passed"]
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true" in results[0].reasoning  # this instrumentation's switch
    assert "include_content" not in results[0].reasoning


def test_a_request_that_ended_without_tool_calls_is_evidence_that_none_were_made() -> None:
    traj = _chat_only({**CONTENT_OFF, "gen_ai.response.finish_reasons": ("stop",)})
    assert [r.outcome for r in grade(traj, TOOL_CHECKS)] == ["passed"] * 4


def test_a_request_that_recorded_nothing_about_its_output_leaves_tool_checks_not_evaluated() -> None:
    traj = _chat_only(CONTENT_OFF, scope="openinference.instrumentation.openai")
    [result] = grade(traj, [MaxToolCalls(max_calls=0)])
    assert result.outcome == "not_evaluated" and "OPENINFERENCE_HIDE_OUTPUTS=false" in result.reasoning


def test_agent_and_tool_spans_without_model_spans_cannot_bound_requests() -> None:
    with _tracer("autogen-core") as (tracer, exporter), tracer.start_as_current_span(
        "invoke_agent support", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support"}
    ), tracer.start_as_current_span("execute_tool search", attributes=_tool("search", "c1")):
        pass
    traj = extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))
    budget, tools = grade(traj, [MaxModelRequests(max_requests=10), ToolCorrectness(expected_tools=["search"])])
    assert budget.outcome == "not_evaluated" and "no model-request span" in budget.reasoning
    assert tools.outcome == "passed"


def test_only_agent_spans_say_nothing_about_tools() -> None:
    with _tracer("autogen-core") as (tracer, exporter), tracer.start_as_current_span(
        "invoke_agent support", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support"}
    ):
        pass
    traj = extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))
    assert {r.outcome for r in grade(traj, TOOL_CHECKS)} == {"not_evaluated"}


def test_must_exclude_without_any_tool_evidence_is_not_a_pass() -> None:
    ctx = TurnContext(user="u", reply="done", tool_calls=[], tool_calls_source="none")
    result = asyncio.run(ToolCallEvaluator(must_exclude=["delete_account"]).evaluate(ctx))
    assert result.outcome == "not_evaluated" and "nothing tells which tools were called" in result.reasoning


# --- bug: requested calls cut by a value-length limit were graded (failed, or "no tool called") ---------------


def _limited_loop(shape: str, limit: int) -> Any:
    """`_hand_written_loop` recorded by a capture under `SpanLimits(max_span_attribute_length=limit)`."""
    from opentelemetry.sdk.trace import SpanLimits

    name, attrs = SHAPES[shape]
    provider = TracerProvider(span_limits=SpanLimits(max_span_attribute_length=limit))
    tracer = provider.get_tracer("test")
    with capture(provider=provider) as cap, tracer.start_as_current_span("my_loop"):
        for step in range(len(STEPS)):
            with tracer.start_as_current_span(name, attributes=attrs(step)):
                pass
    return cap


CUT_AT = {  # where a limit of 22 cuts each shape (search_kb's arguments are 26 characters: the others fit)
    "genai": "attribute 'gen_ai.output.messages' is exactly 22 characters",
    "openinference": "attribute 'llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments' is exactly 22",
    "openllmetry": "attribute 'gen_ai.completion.0.tool_calls.0.arguments' is exactly 22 characters",
}
CUT_IN_FILE = {
    "genai": "'gen_ai.output.messages' is JSON that stops mid-way after 22 characters",
    "openinference": "'llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments' stops mid-way",
    "openllmetry": "'gen_ai.completion.0.tool_calls.0.arguments' stops mid-way",
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_requested_calls_cut_by_a_value_length_limit_are_not_evaluated_naming_the_cut(
    shape: str, tmp_path: Any
) -> None:
    from tracegrade import write_otlp_json
    from tracegrade.evaluators import ToolCallArgsEvaluator

    cap = _limited_loop(shape, 22)
    checks = [
        ToolCorrectness(expected_tools=["get_weather", "get_order", "search_kb"]),
        MaxToolCalls(max_calls=0),
        ArgumentCorrectness("search_kb", {"query": "refund policy"}),
        ToolCallArgsEvaluator(tool="search_kb", args={"query": "refund policy"}),
    ]
    # before: the OTel output, unreadable, was no call (ToolCorrectness failed, MaxToolCalls passed); the flattened
    # arguments, cut, failed "could not be parsed as JSON"
    for source, cut in ((cap, CUT_AT[shape]), (write_otlp_json(cap, tmp_path / "cut.json"), CUT_IN_FILE[shape])):
        for r in grade(source, checks):
            assert r.outcome == "not_evaluated", r.reason
            assert cut in r.reason and "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT" in r.reason, r.reason


def test_an_executed_call_given_cut_requested_arguments_names_the_request_s_attribute() -> None:
    from opentelemetry.sdk.trace import SpanLimits

    provider = TracerProvider(span_limits=SpanLimits(max_span_attribute_length=22))
    tracer = provider.get_tracer("openinference.instrumentation.openai")
    with capture(provider=provider) as cap, tracer.start_as_current_span("loop"):
        with tracer.start_as_current_span("ChatCompletion", attributes=_openinference_llm_attrs(1)):
            pass
        tool = {"openinference.span.kind": "TOOL", "tool.name": "search_kb", "tool_call.id": "call_s1"}
        with tracer.start_as_current_span("search_kb", attributes=tool):
            pass
    [call] = cap.trajectory.tool_calls
    assert (call.name, call.args_source, call.executed) == ("search_kb", "messages", True)
    [r] = grade(cap, [ArgumentCorrectness("search_kb", {"query": "refund policy"})])
    assert r.outcome == "not_evaluated", r.reason  # before: failed, "could not be parsed as JSON"
    assert ("attribute 'llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments' of span "
            "'ChatCompletion' is exactly 22 characters") in r.reason  # fmt: skip
