"""The 2026 OTel GenAI conventions (shared/reference/genai-2026.md), read from spans and log records made by
the real OTel SDK and graded with the real evaluators: turn / workflow / invocation anchors, the agent named
on a tool span, transfers as handoffs, `gen_ai.tool.call.decision` states, `gen_ai.usage.cost.*`, external
content references and generic message parts."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import SpanKind, Status, StatusCode

from tracegrade import capture, grade, write_otlp_json
from tracegrade.cli import main
from tracegrade.dialects import extract
from tracegrade.evaluators import (
    ArgumentCorrectness,
    MaxToolCalls,
    ToolCallArgsEvaluator,
    ToolCorrectness,
    TrajectoryMatch,
)
from tracegrade.trajectory import NOT_RECORDED, Cost, Handoff, Trajectory

MODEL = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o"}
OUT_REF = "file:///var/genai-content/0af7651916cd43dd8448eb211c80319c/output.json"


@pytest.fixture
def providers() -> Iterator[tuple[TracerProvider, LoggerProvider]]:
    tp, lp = TracerProvider(), LoggerProvider(shutdown_on_exit=False)
    yield tp, lp
    lp.shutdown()
    tp.shutdown()


Run = Callable[[Callable[[Any, Any], None]], Trajectory]


@pytest.fixture
def run(providers: tuple[TracerProvider, LoggerProvider]) -> Run:
    """Run `body(tracer, logger)` inside a capture and return the capture's trajectory."""
    tp, lp = providers

    def go(body: Callable[[Any, Any], None]) -> Trajectory:
        with capture(provider=tp, logger_provider=lp) as cap:
            body(tp.get_tracer("agent.framework"), lp.get_logger("agent.framework"))
        return cap.trajectory

    return go


def _messages(*parts: dict[str, Any], finish: str = "tool_calls") -> str:
    return json.dumps([{"role": "assistant", "parts": list(parts), "finish_reason": finish}])


def _call(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": args}


def chat(tracer: Any, *parts: dict[str, Any], **attrs: Any) -> None:
    attributes = {**MODEL, "gen_ai.response.finish_reasons": ("tool_calls" if parts else "stop",), **attrs}
    if parts:
        attributes.setdefault("gen_ai.output.messages", _messages(*parts))
    with tracer.start_as_current_span("chat gpt-4o", kind=SpanKind.CLIENT, attributes=attributes):
        pass


def tool(tracer: Any, name: str, call_id: str, args: dict[str, Any] | None = None, **attrs: Any) -> None:
    attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                  "gen_ai.tool.call.id": call_id, **attrs}  # fmt: skip
    if args is not None:
        attributes["gen_ai.tool.call.arguments"] = json.dumps(args)
    with tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes):
        pass


def agent(tracer: Any, name: str, **attrs: Any) -> Any:
    return tracer.start_as_current_span(
        f"invoke_agent {name}", kind=SpanKind.INTERNAL,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, **attrs},
    )  # fmt: skip


# --- anchors --------------------------------------------------------------------------------------


def _runner_turn(tracer: Any, logger: Any) -> None:
    """An OpenAI-Agents-style runner: a conversation turn, a triage agent that transfers to billing."""
    turn = {"gen_ai.operation.name": "handle_conversation_turn", "gen_ai.provider.name": "openai"}
    with tracer.start_as_current_span("handle_conversation_turn", attributes=turn), agent(tracer, "triage"):
        chat(tracer, _call("lookup_order", "call_1", order_id=42))
        tool(tracer, "lookup_order", "call_1", {"order_id": 42}, **{"gen_ai.agent.name": "triage"})
        chat(tracer, _call("transfer_to_billing", "call_2"))
        transfer = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "transfer_to_billing",
                    "gen_ai.tool.call.id": "call_2", "gen_ai.agent.name": "triage",
                    "gen_ai.transfer.target.name": "billing"}  # fmt: skip
        with (
            tracer.start_as_current_span("execute_tool transfer_to_billing billing", attributes=transfer),
            agent(tracer, "billing", **{"gen_ai.invocation.is_nested": True}),
        ):
            chat(tracer, _call("refund", "call_3", order_id=42, amount=10))
            tool(tracer, "refund", "call_3", {"order_id": 42, "amount": 10}, **{"gen_ai.agent.name": "billing"})
            chat(tracer)


def test_a_conversation_turn_and_its_agents_are_runs_and_the_transfer_is_a_handoff(run: Run) -> None:
    traj = run(_runner_turn)
    assert [(r.name, r.operation) for r in traj.agent_runs] == [
        (None, "handle_conversation_turn"),
        ("triage", "invoke_agent"),
        ("billing", "invoke_agent"),
    ]
    assert traj.agent_runs[1].parent is traj.agent_runs[0] and traj.agent_runs[2].parent is traj.agent_runs[1]
    assert traj.tool_names == ["lookup_order", "refund"]  # the transfer is not a tool call...
    [handoff] = traj.handoffs  # ...it is a handoff, and the model's request for it is that handoff too
    assert handoff == Handoff(source="triage", target="billing", tool="transfer_to_billing", call_id="call_2",
                              agent="triage", dialect="genai")  # fmt: skip
    assert not traj.calls(include_unexecuted=True, include_blocked=True, include_failed=True)[2:]
    results = grade(traj, [
        TrajectoryMatch(expected_trajectory=["lookup_order", "refund"], order="exact"),
        MaxToolCalls(max_calls=2),
        ToolCorrectness(expected_tools=["refund"], agent="billing"),
        ToolCorrectness(expected_tools=["lookup_order"], agent="triage"),
    ])  # fmt: skip
    assert [r.outcome for r in results] == ["passed"] * 4, [r.reasoning for r in results]
    wrong = grade(traj, [TrajectoryMatch(expected_trajectory=["lookup_order", "transfer_to_billing", "refund"],
                                         order="exact")])  # fmt: skip
    assert wrong[0].outcome == "failed"


def test_invoke_workflow_is_a_run_anchor(run: Run) -> None:
    def body(tracer: Any, logger: Any) -> None:
        workflow = {"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": "support_flow"}
        with tracer.start_as_current_span("invoke_workflow support_flow", attributes=workflow):
            chat(tracer, _call("search", "c1", q="x"))
            tool(tracer, "search", "c1", {"q": "x"})

    traj = run(body)
    assert [(r.name, r.operation) for r in traj.agent_runs] == [("support_flow", "invoke_workflow")]
    assert traj.tool_calls[0].agent == "support_flow" and traj.tool_calls[0].run is traj.agent_runs[0]


def test_the_agent_named_on_an_execute_tool_span_is_the_agent_of_the_call(run: Run) -> None:
    def body(tracer: Any, logger: Any) -> None:
        with agent(tracer, "planner"):  # an agent used as a tool: its tool spans sit in the caller's run
            chat(tracer, _call("search", "c1", q="x"))
            tool(tracer, "search", "c1", {"q": "x"}, **{"gen_ai.agent.name": "researcher"})
            tool(tracer, "summarize", "c2", {"n": 1})

    traj = run(body)
    assert [(c.name, c.agent) for c in traj.tool_calls] == [("search", "researcher"), ("summarize", "planner")]
    assert traj.tool_calls[0].run is traj.agent_runs[0]  # the enclosing run is still the span's run
    scoped = grade(traj, [ToolCorrectness(expected_tools=["search"], agent="researcher"),
                          TrajectoryMatch(expected_trajectory=["summarize"], agent="planner", order="exact")])  # fmt: skip
    assert [r.outcome for r in scoped] == ["passed", "passed"], [r.reasoning for r in scoped]


def test_handoff_source_and_target_attributes_make_a_handoff(run: Run) -> None:
    def body(tracer: Any, logger: Any) -> None:
        with agent(tracer, "triage"):
            attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "transfer_to_es",
                     "gen_ai.agent.handoff.source.name": "triage", "gen_ai.agent.handoff.target.name": "spanish"}  # fmt: skip
            with tracer.start_as_current_span("execute_tool transfer_to_es", attributes=attrs):
                pass

    traj = run(body)
    assert traj.all_calls == [] and [(h.source, h.target, h.tool) for h in traj.handoffs] == [
        ("triage", "spanish", "transfer_to_es")
    ]
    assert "tool_calls" not in traj.missing


# --- decisions ------------------------------------------------------------------------------------


def _decision(logger: Any, outcome: str, tool_name: str, call_id: str | None) -> None:
    """The `gen_ai.tool.call.decision` event as the reference scenarios emit it (the Logs API)."""
    attrs = {"gen_ai.tool.call.decision.outcome": outcome, "gen_ai.tool.name": tool_name}
    if call_id is not None:
        attrs["gen_ai.tool.call.id"] = call_id
    logger.emit(event_name="gen_ai.tool.call.decision", body="tool call decision", attributes=attrs)


def _guarded(outcome: str, *, execute: bool = False, allow_after: bool = False) -> Callable[[Any, Any], None]:
    def body(tracer: Any, logger: Any) -> None:
        with agent(tracer, "ops"):
            chat(tracer, _call("lookup_order", "c1", order_id=1), _call("delete_account", "c2", user="u1"))
            tool(tracer, "lookup_order", "c1", {"order_id": 1})
            _decision(logger, outcome, "delete_account", "c2")
            if allow_after:
                _decision(logger, "allow", "delete_account", "c2")
            if execute:
                tool(tracer, "delete_account", "c2", {"user": "u1"})
            chat(tracer)

    return body


def test_a_denied_call_has_its_own_state_and_is_not_counted_as_executed(run: Run) -> None:
    traj = run(_guarded("deny"))
    assert traj.tool_names == ["lookup_order"]
    [denied] = [c for c in traj.calls(include_blocked=True, include_unexecuted=True) if c.name == "delete_account"]
    assert (denied.name, denied.decision, denied.blocked, denied.state) == (
        "delete_account",
        "deny",
        "denied",
        "denied",
    )
    assert denied.args == {"user": "u1"} and not denied.failed and denied.executed is False
    results = grade(traj, [
        ToolCorrectness(expected_tools=["lookup_order"]),
        TrajectoryMatch(expected_trajectory=["lookup_order"], order="exact"),
        MaxToolCalls(max_calls=1),
        ToolCorrectness(expected_tools=["delete_account"]),
    ])  # fmt: skip
    assert [r.outcome for r in results] == ["passed", "passed", "passed", "failed"], [r.reasoning for r in results]


def test_a_call_that_requires_approval_and_never_ran_is_awaiting_approval(run: Run) -> None:
    traj = run(_guarded("require_approval"))
    [pending] = [c for c in traj.calls(include_blocked=True, include_unexecuted=True) if c.name == "delete_account"]
    assert (pending.blocked, pending.state) == ("awaiting_approval", "awaiting_approval")
    assert traj.tool_names == ["lookup_order"]
    assert grade(traj, [MaxToolCalls(max_calls=1)])[0].passed


def test_an_approved_call_that_ran_is_an_ordinary_executed_call(run: Run) -> None:
    for body in (_guarded("require_approval", allow_after=True, execute=True), _guarded("allow", execute=True)):
        traj = run(body)
        [call] = [c for c in traj.tool_calls if c.name == "delete_account"]
        assert (call.decision, call.blocked, call.state) == ("allow", None, "executed")
    approved_without_event = run(_guarded("require_approval", execute=True))  # the tool span shows it ran
    assert approved_without_event.tool_names == ["lookup_order", "delete_account"]


def test_a_decision_recorded_as_a_span_event_is_read_too(run: Run) -> None:
    def body(tracer: Any, logger: Any) -> None:
        with agent(tracer, "ops") as span:
            chat(tracer, _call("wire_money", "c9", amount=5))
            span.add_event("gen_ai.tool.call.decision", {"gen_ai.tool.call.decision.outcome": "deny",
                                                         "gen_ai.tool.name": "wire_money", "gen_ai.tool.call.id": "c9"})  # fmt: skip
            chat(tracer)

    traj = run(body)  # no tool spans at all: the requested calls form the trajectory, but this one was denied
    assert traj.tool_calls == [] and [c.state for c in traj.calls(include_blocked=True)] == ["denied"]
    assert grade(traj, [MaxToolCalls(max_calls=0)])[0].passed


def test_a_denied_call_seen_only_in_its_decision_event_is_still_visible(run: Run) -> None:
    def body(tracer: Any, logger: Any) -> None:
        with agent(tracer, "ops"):
            chat(tracer)
            _decision(logger, "deny", "rm_rf", "c7")

    traj = run(body)
    [call] = traj.calls(include_blocked=True, include_unexecuted=True)
    assert (call.name, call.call_id, call.state, call.agent) == ("rm_rf", "c7", "denied", "ops")
    assert call.args is NOT_RECORDED and traj.tool_calls == []


# --- cost -----------------------------------------------------------------------------------------


def test_cost_attributes_are_read_onto_the_model_request(run: Run) -> None:
    def body(tracer: Any, logger: Any) -> None:
        with agent(tracer, "a"):
            chat(tracer, **{"gen_ai.usage.cost.amount": 0.0042, "gen_ai.usage.cost.currency": "USD",
                            "gen_ai.usage.cost.source": "provider"})  # fmt: skip
            chat(tracer, **{"gen_ai.usage.cost.amount": 3, "gen_ai.usage.cost.source": "local"})
            chat(tracer)

    costs = [r.cost for r in run(body).model_requests]
    assert costs == [Cost(0.0042, "USD", "provider"), Cost(3.0, None, "local"), None]


# --- external content references ------------------------------------------------------------------


def _content_uploaded(*, tool_spans: bool) -> Callable[[Any, Any], None]:
    """Content captured with an upload hook: the model's output messages are stored elsewhere and the span
    holds only `gen_ai.output.messages_ref`; the tool span records no arguments."""

    def body(tracer: Any, logger: Any) -> None:
        with agent(tracer, "a"):
            chat(tracer, **{"gen_ai.output.messages_ref": OUT_REF, "gen_ai.response.finish_reasons": ("tool_calls",)})
            if tool_spans:
                tool(tracer, "get_weather", "call_1")
            chat(tracer)

    return body


def test_arguments_behind_an_external_reference_are_a_third_state(run: Run) -> None:
    traj = run(_content_uploaded(tool_spans=True))
    [call] = traj.tool_calls
    assert (call.args, call.args_source, call.args_ref) == (NOT_RECORDED, "external", OUT_REF)
    assert call.describe() == f"get_weather(<args stored externally: {OUT_REF}>)"
    tools, args = grade(traj, [ToolCorrectness(expected_tools=["get_weather"]),
                               ArgumentCorrectness("get_weather", {"city": "Paris"})])  # fmt: skip
    assert tools.passed
    assert args.outcome == "not_evaluated" and OUT_REF in args.reasoning and "stored outside" in args.reasoning
    [pytest_style] = grade(traj, [ToolCallArgsEvaluator(tool="get_weather", args={"city": "Paris"})])
    assert pytest_style.outcome == "not_evaluated" and OUT_REF in pytest_style.reasoning


def test_without_tool_spans_calls_behind_an_external_reference_are_not_evaluated(run: Run) -> None:
    traj = run(_content_uploaded(tool_spans=False))
    assert OUT_REF in traj.missing["tool_calls"]
    [result] = grade(traj, [ToolCorrectness(expected_tools=["get_weather"])])
    assert result.outcome == "not_evaluated" and OUT_REF in result.reasoning


def test_arguments_on_the_span_win_over_an_external_reference(run: Run) -> None:
    def body(tracer: Any, logger: Any) -> None:
        with agent(tracer, "a"):
            chat(tracer, **{"gen_ai.output.messages_ref": OUT_REF})
            tool(tracer, "get_weather", "call_1", {"city": "Paris"})

    [call] = run(body).tool_calls
    assert (call.args, call.args_source, call.args_ref) == ({"city": "Paris"}, "span", None)


# --- generic parts --------------------------------------------------------------------------------


def test_generic_message_parts_are_read_without_error(run: Run) -> None:
    generic = {"type": "generic", "generic_type": "citation", "url": "https://example.com", "title": "t"}

    def body(tracer: Any, logger: Any) -> None:
        inputs = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "hi"}, generic]}])
        chat(tracer, generic, _call("search", "c1", q="otel"), **{"gen_ai.input.messages": inputs})
        results = json.dumps([{"role": "tool", "parts": [generic, {"type": "tool_call_response", "id": "c1",
                                                                   "response": "found"}]}])  # fmt: skip
        chat(tracer, **{"gen_ai.input.messages": results, "gen_ai.output.messages": _messages(generic, finish="stop")})

    traj = run(body)
    [call] = traj.tool_calls
    assert (call.name, call.args, call.result, call.executed) == ("search", {"q": "otel"}, "found", None)
    results = grade(traj, [ToolCorrectness(expected_tools=["search"]), ArgumentCorrectness("search", {"q": "otel"})])
    assert [r.outcome for r in results] == ["passed", "passed"]


# --- files and `show --explain` -------------------------------------------------------------------


def test_show_explain_names_turns_handoffs_and_denied_calls(
    providers: tuple[TracerProvider, LoggerProvider], tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    tp, lp = providers

    def body(tracer: Any, logger: Any) -> None:
        _runner_turn(tracer, logger)
        with agent(tracer, "ops") as span:
            chat(tracer, _call("delete_account", "c2", user="u1"))
            span.add_event("gen_ai.tool.call.decision", {"gen_ai.tool.call.decision.outcome": "deny",
                                                         "gen_ai.tool.name": "delete_account", "gen_ai.tool.call.id": "c2"})  # fmt: skip
            with tracer.start_as_current_span("failing step") as bad:
                bad.set_status(Status(StatusCode.ERROR, "boom"))

    with capture(provider=tp, logger_provider=lp) as cap, tp.get_tracer("agent.framework").start_as_current_span("s"):
        body(tp.get_tracer("agent.framework"), lp.get_logger("agent.framework"))
    path = write_otlp_json(cap, tmp_path / "turn.json")
    file_traj = extract(cap.tree)
    assert [c.state for c in file_traj.calls(include_blocked=True, include_unexecuted=True)] == [
        "executed",
        "executed",
        "denied",
    ]
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["show", "--explain", str(path)]) == 0
    out = capsys.readouterr().out
    assert "<- genai: conversation turn" in out
    assert "<- genai: handoff 'triage' -> 'billing' (a transfer of control, not a tool call)" in out
    assert "tool call 'delete_account' denied (gen_ai.tool.call.decision deny)" in out
    assert "delete_account(user='u1') (denied: not executed)" in out
    assert "handoff: triage -> billing" in out
