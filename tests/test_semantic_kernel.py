"""Semantic Kernel's own OTel GenAI diagnostics, read by the genai dialect: from the committed corpus runs
(fixtures/frameworks/semantic-kernel--native--*).

SK names a kernel function `plugin-function` to the model and on its `execute_tool` spans (with the call id, and
arguments and result only when SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE is on). Its
message content is Python logging turned into OTel log records: the event name is an `event.name` attribute (no
`eventName` field) and the body is the message as JSON text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracegrade import grade
from tracegrade.dialects import content_setting, extract
from tracegrade.dialects._messages import event_name, logs_requested, logs_results
from tracegrade.evaluators import ArgumentCorrectness, MaxModelRequests, ToolCorrectness
from tracegrade.ingest import read_logs, read_spans
from tracegrade.spans import LogRecord
from tracegrade.trajectory import Trajectory
from tracegrade.tree import SpanTree

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"
NAMES = ["tools-get_weather", "tools-get_order", "tools-search_kb", "tools-search_kb"]
ARGS = [{"city": "Paris"}, {"order_id": 1234}, {"query": "refund policy"}, {"query": "refund policy"}]
IDS = ["call_w1", "call_o1", "call_s1", "call_s2"]
SENSITIVE = "SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE=true"


def _tree(run: str, *, drop_tool_spans: bool = False) -> SpanTree:
    entry = json.loads((CORPUS / "entries" / f"{run}.json").read_text())
    spans = read_spans(CORPUS / entry["traces"])
    if drop_tool_spans:
        spans = [s for s in spans if not s.name.startswith("execute_tool")]
    tree = SpanTree.from_spans(spans)
    if entry.get("logs"):
        tree.attach_logs(read_logs(CORPUS / entry["logs"]))
    return tree


def _run(run: str, *, drop_tool_spans: bool = False) -> Trajectory:
    return extract(_tree(run, drop_tool_spans=drop_tool_spans))


@pytest.mark.parametrize("stream", ["", "--stream"])
@pytest.mark.parametrize("content", ["on", "off"])
def test_execute_tool_spans_give_the_calls_by_plugin_function_name_and_call_id(content: str, stream: str) -> None:
    traj = _run(f"semantic-kernel--native--content-{content}{stream}")
    calls = traj.all_calls
    assert [c.name for c in calls] == NAMES
    assert [c.call_id for c in calls] == IDS
    assert [c.status for c in calls] == ["ok", "ok", "error", "ok"]
    assert {c.agent for c in calls} == {"support"}
    assert len(traj.model_requests) == 4
    if content == "on":
        assert [c.args for c in calls] == ARGS and {c.args_source for c in calls} == {"span"}
        assert calls[0].result == "sunny, 21C"


def test_content_off_argument_check_names_the_sensitive_switch() -> None:
    traj = _run("semantic-kernel--native--content-off")
    check, budget = grade(
        traj, [ArgumentCorrectness("tools-get_order", {"order_id": 1234}), MaxModelRequests(max_requests=4)]
    )
    assert check.outcome == "not_evaluated" and SENSITIVE in check.reasoning, check.reasoning
    assert budget.outcome == "passed"
    node = next(n for n in _tree("semantic-kernel--native--content-off") if n.name.startswith("execute_tool"))
    assert SENSITIVE in content_setting(node)


def test_message_events_named_by_attribute_with_json_text_bodies_give_requests_and_results() -> None:
    """SK's gen_ai.choice / gen_ai.tool.message records (event.name attribute, JSON-text body) are read:
    without the execute_tool spans the model's requested calls still form the trajectory, with their results."""
    records = read_logs(CORPUS / "semantic-kernel--native--content-on.logs.json")
    assert all(r.event_name == "" for r in records)  # SK's records carry no eventName field
    requested = logs_requested(records)
    assert [(r.name, r.call_id) for r in requested] == list(zip(NAMES, IDS, strict=True))
    assert [json.loads(r.arguments) for r in requested] == ARGS
    results = logs_results(records)
    assert results["call_w1"] == "sunny, 21C" and results["call_o1"] == "order 1234: shipped"

    traj = _run("semantic-kernel--native--content-on", drop_tool_spans=True)
    assert [c.name for c in traj.all_calls] == NAMES
    assert [c.call_id for c in traj.all_calls] == IDS
    assert [c.args for c in traj.all_calls] == ARGS
    assert traj.all_calls[0].result == "sunny, 21C"
    assert grade(traj, [ToolCorrectness(expected_tools=NAMES)])[0].outcome == "passed"


def test_event_name_field_wins_over_the_attribute_and_other_bodies_are_kept() -> None:
    record = LogRecord(1, 1, 0, "gen_ai.choice", "not json", {"event.name": "gen_ai.user.message"})
    assert event_name(record) == "gen_ai.choice"
    assert logs_requested([record]) == []
    unnamed = LogRecord(1, 1, 0, "", '{"message": {}}', {"event.name": 7})
    assert event_name(unnamed) == ""
