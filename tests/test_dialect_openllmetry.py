"""The OpenLLMetry (Traceloop) dialect (`dialects/openllmetry.py`): arguments unwrapped from
`traceloop.entity.input` without guessing, workflow and task spans, agent spans and their output, other
instrumentations inside a Traceloop workflow, an explicit choice on a LangChain trace."""

from __future__ import annotations

import json
from typing import Any

import pytest

from _dialect_spans import (
    Node,
    SpanSpec,
    calls,
    genai_chat,
    genai_tool,
    leaf,
    scenario_tree,
    spans_of,
)
from tracegrade import grade
from tracegrade.dialects import extract
from tracegrade.evaluators import (
    ArgumentCorrectness,
)


def test_explicit_openllmetry_reads_a_langchain_trace() -> None:
    traj = extract(scenario_tree("openllmetry-langchain", nested=True), dialect="openllmetry")
    assert [(c.name, c.agent, c.args) for c in traj.tool_calls] == [
        ("search", "main", {"q": "x"}),
        ("search", "main", {"q": "y"}),
        ("answer", "writer", {"text": "final"}),
    ]


def ol_tool(tool: str, entity_input: Any = None, attrs: dict[str, Any] | None = None) -> Node:
    base: dict[str, Any] = {"traceloop.span.kind": "tool", "traceloop.entity.name": tool}
    if entity_input is not None:
        base["traceloop.entity.input"] = entity_input if isinstance(entity_input, str) else json.dumps(entity_input)
    return Node(SpanSpec(f"{tool}.tool", base | (attrs or {})))


@pytest.mark.parametrize(
    ("entity_input", "expected"),
    [
        ({"args": [], "kwargs": {"city": "Paris"}}, {"city": "Paris"}),
        ({"args": [], "kwargs": {}}, {}),
        ({"args": ["Paris"], "kwargs": {}}, {"args": ["Paris"], "kwargs": {}}),  # names unknown: not guessed
        ({"args": ["<Planner>"], "kwargs": {"city": "Paris"}}, {"city": "Paris"}),
        ({"input_str": "{'city': 'Paris'}", "tags": [], "inputs": {"city": "Paris"}, "kwargs": {}},
         {"city": "Paris"}),
        ({"input_str": "Paris", "tags": [], "metadata": {}, "inputs": None, "kwargs": {}},
         {"input_str": "Paris", "tags": [], "metadata": {}, "inputs": None, "kwargs": {}}),
        ({"city": "Paris"}, {"city": "Paris"}),  # not a wrapper
        ("not json", "not json"),
    ],
    ids=["kwargs", "no-args", "positional", "self-and-kwargs", "langchain", "langchain-str", "plain", "text"],
)  # fmt: skip
def test_openllmetry_arguments_are_unwrapped_without_guessing(entity_input: Any, expected: Any) -> None:
    [call] = calls(spans_of(ol_tool("weather", entity_input)))
    assert call.args == expected


def test_openllmetry_positional_arguments_fail_the_check_showing_what_was_recorded() -> None:
    tree = spans_of(ol_tool("weather", {"args": ["Paris"], "kwargs": {}}))
    [result] = grade(tree, [ArgumentCorrectness("weather", {"city": "Paris"})])
    assert result.outcome == "failed" and "do not match (subset): missing key 'city'" in result.reasoning


def test_openllmetry_workflow_task_and_propagated_agent_name_are_not_steps() -> None:
    prop = {"traceloop.workflow.name": "trip", "gen_ai.agent.name": "planner"}
    chat = {"llm.request.type": "chat", "gen_ai.request.model": "gpt-4o", **prop}
    usage = {"llm.usage.prompt_tokens": 3, "llm.usage.completion_tokens": 1}  # the oldest releases
    task = {"traceloop.span.kind": "task", "traceloop.entity.name": "plan", **prop}
    steps = [
        ol_tool("weather", {"args": [], "kwargs": {"city": "Paris"}}, prop),
        leaf("openai.chat", chat | usage),
        leaf("openai.embeddings", {"llm.request.type": "embedding", **prop}),
    ]
    workflow = {"traceloop.span.kind": "workflow", "traceloop.entity.name": "trip"}
    tree = spans_of(Node(SpanSpec("trip.workflow", workflow), [Node(SpanSpec("plan.task", task), steps)]))
    traj = extract(tree)
    assert traj.agent_runs == []
    assert [(c.name, c.agent) for c in traj.all_calls] == [("weather", None)]
    assert [(r.model, r.input_tokens, r.output_tokens, r.agent) for r in traj.model_requests] == [
        ("gpt-4o", 3, 1, None)
    ]


def test_openllmetry_agent_span_name_and_final_output() -> None:
    attrs = {
        "traceloop.span.kind": "agent",
        "traceloop.entity.name": "planner",
        "traceloop.entity.output": json.dumps({"plan": "go"}),
    }
    agent = Node(SpanSpec("planner.agent", attrs), [ol_tool("weather", {"args": [], "kwargs": {"city": "Paris"}})])
    traj = extract(spans_of(agent))
    assert [(r.name, r.final_output) for r in traj.agent_runs] == [("planner", {"plan": "go"})]
    assert traj.final_output == {"plan": "go"} and traj.tool_calls[0].agent == "planner"


def test_other_instrumentations_inside_a_traceloop_workflow_are_read_as_genai() -> None:
    prop = {"traceloop.workflow.name": "trip"}  # Traceloop's processor adds this to every span in the workflow
    agent_attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "strands", **prop}
    steps = [
        genai_chat(4, 1, attrs=prop),
        genai_tool("search", '{"q": "x"}', prop | {"gen_ai.tool.call.id": "<not specified>"}),
    ]
    agent = Node(SpanSpec("invoke_agent strands", agent_attrs | {"gen_ai.usage.input_tokens": 99}), steps)
    traj = extract(spans_of(agent))
    assert [(c.name, c.args, c.agent, c.call_id, c.dialect) for c in traj.all_calls] == [
        ("search", {"q": "x"}, "strands", None, "genai"),
    ]
    assert [(r.name, r.dialect) for r in traj.agent_runs] == [("strands", "genai")]
    assert [r.input_tokens for r in traj.model_requests] == [4]
