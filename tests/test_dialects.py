"""One agent run graded the same whatever instrumentation recorded it, and the extraction pipeline's
cross-dialect behaviour: explicit dialect choice, mixed conventions in one trace, the same step
recorded by two instrumentations counted once, spans of no convention ignored.

Spans are made with the real OpenTelemetry SDK (`_dialect_spans`); each dialect's own reading is
tested in `test_dialect_<name>.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.trace import SpanKind

from _dialect_spans import (
    FLAVOR_IDS,
    FLAVORS,
    Node,
    Recorder,
    SpanSpec,
    genai_chat,
    genai_tool,
    leaf,
    oi_tool,
    scenario_spans,
    scenario_tree,
    spans_of,
)
from tracegrade import NOT_RECORDED, grade, load_traces, write_otlp_json
from tracegrade.dialects import extract
from tracegrade.evaluators import (
    ArgumentCorrectness,
    HasMatchingSpan,
    MaxModelRequests,
    MaxToolCalls,
    ToolCorrectness,
    TrajectoryMatch,
)
from tracegrade.spans import Span
from tracegrade.tree import SpanTree

# --- one run, the same verdicts in every dialect ----------------------------------------------------

P, F, N = "passed", "failed", "not_evaluated"


# fmt: off
EXPECTED: list[tuple[object, str, str, float | None]] = [
    # evaluator                                                                  content on, off, score
    (ToolCorrectness(["search", "search", "answer"]),                                     P, P, None),
    (ToolCorrectness(["search", "answer"]),                                               F, F, None),
    (ToolCorrectness(["search", "answer"], allow_extra=True),                             P, P, None),
    (ToolCorrectness(["search", "search", "search", "answer"], include_failed=True),      P, P, None),
    (TrajectoryMatch(["search", "search", "answer"], order="exact"),                      P, P, 1.0),
    (TrajectoryMatch(["search", "answer"], order="exact"),                                F, F, 0.0),
    (TrajectoryMatch(["search", "search", "search", "answer"], "exact", include_failed=True), P, P, 1.0),
    (TrajectoryMatch(["search", "answer"], order="in_order"),                             F, F, 0.8),
    (TrajectoryMatch(["search", "answer"], order="in_order", threshold=0.8),              P, P, 0.8),
    (TrajectoryMatch(["answer", "search"], order="in_order", threshold=0.5),              F, F, 0.4),
    (TrajectoryMatch(["answer", "search", "search"], order="any_order"),                  P, P, 1.0),
    (ArgumentCorrectness("search", {"q": "x"}),                                           P, N, None),
    (ArgumentCorrectness("search", {"q": "y"}, occurrence="last"),                        P, N, None),
    (ArgumentCorrectness("search", {"q": "z"}, occurrence=1),                             F, N, None),
    (ArgumentCorrectness("search", {"q": "y"}, occurrence=1, include_failed=True),        P, N, None),
    (ArgumentCorrectness("answer", {"text": "final"}, match_mode="exact"),                P, N, None),
    (ArgumentCorrectness("lookup", {"q": "x"}),                                           F, F, None),
    (MaxToolCalls(4),                                                                     P, P, None),
    (MaxToolCalls(3),                                                                     F, F, None),
    (MaxToolCalls(3, include_failed=False),                                               P, P, None),
    (MaxToolCalls(2, include_failed=False),                                               F, F, None),
    (MaxModelRequests(3),                                                                 P, P, None),
    (MaxModelRequests(2),                                                                 F, F, None),
    (HasMatchingSpan({"name_contains": "search", "has_status": "error"}),                 P, P, None),
    (HasMatchingSpan({"name_contains": "delete"}),                                        F, F, None),
]
# fmt: on


def verdicts(source: Any) -> list[tuple[bool, str, float | None]]:
    results = grade(source, [e for e, *_ in EXPECTED])
    return [(r.passed, r.outcome, None if r.score is None else round(r.score, 9)) for r in results]


def reasons(source: Any) -> list[str]:
    """What each evaluator says, but HasMatchingSpan (it names the matching span, named per dialect)."""
    evaluators = [e for e, *_ in EXPECTED if not isinstance(e, HasMatchingSpan)]
    return [r.reasoning for r in grade(source, evaluators)]


def expected_verdicts(content: bool) -> list[tuple[bool, str, float | None]]:
    return [((on if content else off) == "passed", on if content else off, s) for _, on, off, s in EXPECTED]


@pytest.mark.parametrize("content", [True, False], ids=["content-on", "content-off"])
@pytest.mark.parametrize("nested", [False, True], ids=["flat", "nested"])
def test_every_evaluator_gives_the_same_verdicts_in_every_dialect(nested: bool, content: bool) -> None:
    got = {label: verdicts(scenario_tree(label, nested, content)) for label in FLAVOR_IDS}
    assert got == {label: expected_verdicts(content) for label in FLAVOR_IDS}
    said = {label: reasons(scenario_tree(label, nested, content)) for label in FLAVOR_IDS}
    # the same words, but where arguments were not recorded: that names each instrumentation's setting
    same = {label: [r.split(" were not recorded by ")[0] for r in rs] for label, rs in said.items()}
    assert all(r == same["pydantic_ai"] for r in same.values())
    if not content:
        settings = {label: " ".join(rs) for label, rs in said.items()}
        assert "include_content=True" in settings["pydantic_ai"]
        assert "OPENINFERENCE_HIDE_INPUTS=false" in settings["openinference"]
        assert "TRACELOOP_TRACE_CONTENT=true" in settings["openllmetry-langchain"]


@pytest.mark.parametrize("label", FLAVOR_IDS)
def test_the_trajectory_is_the_same_in_every_dialect(label: str) -> None:
    flavor = next(f for f in FLAVORS if f.label == label)
    traj = extract(scenario_tree(label))
    attempts = traj.calls(include_failed=True)
    assert [(c.name, c.args, c.status) for c in attempts] == [
        ("search", {"q": "x"}, "ok"),
        ("search", {"q": "y"}, "error"),
        ("search", {"q": "y"}, "ok"),
        ("answer", {"text": "final"}, "ok"),
    ]
    assert all(c.args_source == "span" for c in attempts)
    assert [(r.model, r.input_tokens, r.output_tokens) for r in traj.model_requests] == [
        ("gpt-4o", 100, 10),
        ("gpt-4o", 200, 20),
        ("gpt-4o", 300, 30),
    ]
    # ADK's root `invoke_workflow` span is a run too (2026 conventions), around the agent's
    assert [r.name for r in traj.agent_runs if r.operation != "invoke_workflow"] == ["main"]
    assert {c.agent for c in attempts} | {r.agent for r in traj.model_requests} == {"main"}
    steps = [*attempts, *traj.model_requests, *traj.agent_runs]
    assert {s.dialect for s in steps} == {flavor.dialect}
    assert traj.recognized_spans == len(steps)


@pytest.mark.parametrize("label", FLAVOR_IDS)
def test_nested_agents_get_their_own_calls_and_requests(label: str) -> None:
    traj = extract(scenario_tree(label, nested=True))
    assert [(c.name, c.agent) for c in traj.calls(include_failed=True)] == [
        ("search", "main"),
        ("search", "main"),
        ("search", "main"),
        ("answer", "writer"),
    ]
    assert [r.agent for r in traj.model_requests] == ["main", "main", "writer"]
    runs = {r.name: r for r in traj.agent_runs if r.operation != "invoke_workflow"}
    assert runs.keys() == {"main", "writer"}
    outer = runs["main"].parent
    assert runs["writer"].parent is runs["main"]
    assert outer is None or (outer.operation == "invoke_workflow" and outer.parent is None)
    assert [c.name for c in traj.calls(agent="writer")] == ["answer"]


@pytest.mark.parametrize("label", FLAVOR_IDS)
def test_without_content_arguments_are_not_recorded_and_the_check_says_so(label: str) -> None:
    tree = scenario_tree(label, nested=True, content=False)
    traj = extract(tree)
    assert traj.tool_names == ["search", "search", "answer"]
    assert all(c.args is NOT_RECORDED and c.args_text is None for c in traj.all_calls)
    [result] = grade(tree, [ArgumentCorrectness("answer", {"text": "final"})])
    assert result.outcome == "not_evaluated"
    assert "not recorded" in result.reasoning and "'writer'" in result.reasoning
    assert "mismatch" not in result.reasoning


def test_call_ids_as_each_instrumentation_records_them() -> None:
    ids = {label: [c.call_id for c in extract(scenario_tree(label)).tool_calls] for label in FLAVOR_IDS}
    assert ids == {
        "pydantic_ai": ["c1", "c3", "c4"],
        "genai-latest": ["c1", "c3", "c4"],
        "genai-legacy": ["tooluse_c1", "tooluse_c3", "tooluse_c4"],
        "genai-adk": [None, None, None],  # "<not specified>" is no id
        "openinference": [None, None, None],  # the openai-agents instrumentor records none
        "openllmetry-decorators": [None, None, None],
        "openllmetry-langchain": [None, None, None],
    }


def test_tool_results_are_unwrapped_where_the_convention_wraps_them() -> None:
    results = {label: extract(scenario_tree(label)).tool_calls[0].result for label in FLAVOR_IDS}
    assert results == {
        "pydantic_ai": "rx",
        "genai-latest": "rx",
        "genai-legacy": json.dumps([{"text": "rx"}]),
        "genai-adk": json.dumps({"result": "rx"}),
        "openinference": "rx",
        "openllmetry-decorators": "rx",  # JSON of the return value, decoded
        "openllmetry-langchain": "content='rx' name='search' tool_call_id='c1'",
    }


def test_failed_attempts_keep_the_error() -> None:
    errors = {
        label: [c.error for c in extract(scenario_tree(label)).calls(include_failed=True) if c.failed]
        for label in FLAVOR_IDS
    }
    assert errors["genai-latest"] == ["timed out"]
    assert errors["genai-adk"] == ["ConnectionError"]  # no status description: error.type
    assert errors["genai-legacy"] == ["search timed out"]
    assert errors["openinference"] == ["Error running tool: timed out"]
    assert all(len(e) == 1 and e[0] for e in errors.values())


def test_agent_span_usage_is_the_runs_total_not_a_model_request() -> None:
    for label in ("genai-latest", "genai-legacy"):
        traj = extract(scenario_tree(label, nested=True))
        runs = {r.name: (r.input_tokens, r.output_tokens) for r in traj.agent_runs}
        assert runs == {"main": (300, 30), "writer": (300, 30)}
        assert sum(r.input_tokens or 0 for r in traj.model_requests) == 600
        assert len(traj.model_requests) == 3


# --- the same files, written as OTLP/JSON and read back ------------------------------------------


@pytest.mark.parametrize("content", [True, False], ids=["content-on", "content-off"])
@pytest.mark.parametrize("nested", [False, True], ids=["flat", "nested"])
def test_otlp_json_files_of_every_dialect_give_the_same_verdicts(tmp_path: Any, nested: bool, content: bool) -> None:
    write = write_otlp_json
    for label in FLAVOR_IDS:
        path = tmp_path / f"{label}.json"
        write([Span.from_readable(s) for s in scenario_spans(label, nested, content)], path)
        assert verdicts(path) == expected_verdicts(content), label
        assert verdicts(load_traces(path)) == expected_verdicts(content), label
        assert reasons(path) == reasons(scenario_tree(label, nested, content)), label


def test_otlp_json_keeps_structured_arguments(tmp_path: Any) -> None:
    write = write_otlp_json
    path = tmp_path / "structured.json"
    rec = Recorder()
    rec.leaf(genai_tool("search", {"q": "x", "n": 2}).spec, "test", None)
    write([Span.from_readable(s) for s in rec.spans], path)
    [result] = grade(path, [ArgumentCorrectness("search", {"q": "x", "n": 2}, match_mode="exact")])
    assert result.passed, result.reasoning


# --- explicit dialect choice, mixed and doubled instrumentation ------------------------------------


def test_explicit_dialect_reads_only_that_convention() -> None:
    tree = scenario_tree("genai-latest")
    auto, forced = extract(tree), extract(tree, dialect="genai")
    assert forced.tool_names == auto.tool_names == ["search", "search", "answer"]
    assert [c.args for c in forced.all_calls] == [c.args for c in auto.all_calls]
    assert len(forced.model_requests) == 3 and [r.name for r in forced.agent_runs] == ["main"]

    none = extract(tree, dialect="openinference")
    assert none.is_empty and none.model_requests == []
    [result] = grade(none, [ToolCorrectness(["search"])])
    assert result.outcome == "not_evaluated"


def test_mixed_dialects_genai_tools_under_an_openinference_agent() -> None:
    agent = Node(
        SpanSpec("planner", {"openinference.span.kind": "AGENT", "agent.name": "planner"}, status="ok"),
        [
            genai_chat(5, 1),
            genai_tool("search", json.dumps({"q": "x"}), {"gen_ai.tool.call.id": "t1"}),
            oi_tool("answer", {"input.value": json.dumps({"text": "t"})}),
        ],
    )
    traj = extract(spans_of(agent))
    assert [(c.name, c.args, c.agent, c.dialect) for c in traj.tool_calls] == [
        ("search", {"q": "x"}, "planner", "genai"),
        ("answer", {"text": "t"}, "planner", "openinference"),
    ]
    assert [(r.model, r.agent, r.dialect) for r in traj.model_requests] == [("gpt-4o", "planner", "genai")]
    assert [(r.name, r.dialect) for r in traj.agent_runs] == [("planner", "openinference")]
    results = grade(traj, [TrajectoryMatch(["search", "answer"], order="exact"), MaxModelRequests(1)])
    assert [r.passed for r in results] == [True, True]


def test_the_same_step_recorded_by_two_instrumentations_counts_once() -> None:
    mcp_attrs = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search",
        "mcp.method.name": "x",
    }
    mcp = leaf("tools/call search", mcp_attrs)
    framework_tool = Node(genai_tool("search", '{"q": "x"}').spec, [mcp])
    provider_chat = genai_chat(7, 2)  # e.g. the OpenAI instrumentation inside a framework's chat span
    framework_chat = genai_chat(7, 2, provider_chat)
    llm = {"openinference.span.kind": "LLM", "llm.token_count.prompt": 7}
    oi_llm = Node(SpanSpec("ChatOpenAI", llm), [Node(SpanSpec("ChatCompletion", llm))])
    traj = extract(spans_of(framework_tool, framework_chat, oi_llm))
    assert [(c.name, c.args) for c in traj.all_calls] == [("search", {"q": "x"})]
    assert [r.input_tokens for r in traj.model_requests] == [7, 7]


# The MCP spans of one `tools/call`, as recorded in the corpus (fixtures/frameworks/pydantic-ai--mcp-*): FastMCP's
# client span, Logfire's `instrument_mcp()` client and server spans (mcp 1.x), the MCP SDK's client span (mcp 2.x).
_MCP_REQUEST = json.dumps({"method": "tools/call", "params": {
    "task": None, "meta": {"progressToken": None, "traceparent": "00-01a2-45504eefc14cbfe3-01"},
    "name": "search_kb", "arguments": {"query": "refund policy"}}})  # fmt: skip
_MCP_FAILED = json.dumps({"meta": None, "content": [{"type": "text", "text": "Error calling tool 'search_kb': "
    "knowledge base unavailable", "annotations": None, "meta": None}], "structuredContent": None, "isError": True})  # fmt: skip
_MCP_OK = json.dumps({"meta": None, "content": [{"type": "text", "text": "Refunds take 5 days."}],
                      "structuredContent": {"result": "Refunds take 5 days."}, "isError": False})  # fmt: skip


def _mcp_spans(response: str) -> Node:
    """FastMCP's client span > Logfire's MCP client span and (in the server process) its server span > FastMCP's."""
    logfire = {"rpc.system": "jsonrpc", "rpc.method": "tools/call", "request": _MCP_REQUEST, "response": response}
    server = {"request": _MCP_REQUEST, "response": response}
    fastmcp = {"mcp.method.name": "tools/call", "gen_ai.tool.name": "search_kb", "fastmcp.component.key": "search_kb"}
    return Node(SpanSpec("tools/call search_kb", fastmcp, SpanKind.CLIENT), [
        leaf("MCP request: tools/call search_kb", logfire),
        Node(SpanSpec("MCP server handle request: tools/call", server), [
            Node(SpanSpec("tools/call search_kb", fastmcp | {"fastmcp.server.name": "support-tools"}, SpanKind.SERVER)),
        ]),
    ])  # fmt: skip


def _mcp_session_spans() -> list[Node]:
    """The MCP requests of a session that are no tool call (Logfire's and the MCP SDK's spans)."""
    return [
        leaf("MCP request: initialize", {"rpc.method": "initialize", "request": '{"method":"initialize"}'}),
        leaf("MCP send tools/list", {"mcp.method.name": "tools/list", "jsonrpc.request.id": "2"}),
        leaf("tools/list", {"mcp.method.name": "tools/list", "fastmcp.component.key": ""}),
    ]


@pytest.mark.parametrize("failed", [False, True], ids=["ok", "failed"])
def test_a_framework_tool_span_takes_the_arguments_and_result_its_mcp_client_and_server_spans_recorded(
    failed: bool,
) -> None:
    framework = Node(
        genai_tool("search_kb", attrs={"gen_ai.tool.call.id": "call_s1"}).spec,
        [_mcp_spans(_MCP_FAILED if failed else _MCP_OK)],
    )  # content off: no arguments, no result
    agent = Node(SpanSpec("invoke_agent support", {"gen_ai.operation.name": "invoke_agent",
                                                   "gen_ai.agent.name": "support"}), [*_mcp_session_spans(), framework])  # fmt: skip
    traj = extract(spans_of(agent))
    [call] = traj.calls(include_failed=True)
    assert (call.name, call.call_id, call.args, call.args_source, call.failed, call.agent) == (
        "search_kb", "call_s1", {"query": "refund policy"}, "span", failed, "support")  # fmt: skip
    assert call.result == ("Error calling tool 'search_kb': knowledge base unavailable" if failed else
                           "Refunds take 5 days.")  # fmt: skip
    assert traj.model_requests == [] and [r.name for r in traj.agent_runs] == ["support"]
    checks = [ArgumentCorrectness("search_kb", {"query": "refund policy"}, include_failed=True), MaxToolCalls(1)]
    assert [r.outcome for r in grade(traj, checks)] == ["passed", "passed"]


def test_the_mcp_sdk_client_span_is_the_same_call_and_its_json_rpc_id_is_no_call_id() -> None:
    sdk = {"mcp.method.name": "tools/call", "jsonrpc.request.id": "5"}
    server = {"mcp.method.name": "tools/call", "jsonrpc.request.id": "5", "mcp.protocol.version": "2026-07-28",
              "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_kb", "error.type": "tool_error"}  # fmt: skip
    client = Node(SpanSpec("MCP send tools/call search_kb", sdk, SpanKind.CLIENT),
                  [Node(SpanSpec("tools/call search_kb", server, SpanKind.SERVER, status="error"))])  # fmt: skip
    [call] = extract(spans_of(client, *_mcp_session_spans())).calls(include_failed=True)
    assert (call.name, call.call_id, call.args, call.failed, call.span.name) == (
        "search_kb", None, NOT_RECORDED, True, "MCP send tools/call search_kb")  # fmt: skip


def test_an_mcp_servers_own_trace_is_its_calls() -> None:
    server = {"request": _MCP_REQUEST, "response": _MCP_FAILED}
    no_args = {"request": json.dumps({"method": "tools/call", "params": {"name": "ping"}}), "response": _MCP_OK}
    traj = extract(spans_of(leaf("MCP server handle request: tools/call", server), *_mcp_session_spans(),
                            leaf("MCP server handle request: tools/call", no_args)))  # fmt: skip
    assert [(c.name, c.args, c.failed, c.dialect) for c in traj.calls(include_failed=True)] == [
        ("search_kb", {"query": "refund policy"}, True, "mcp"),
        ("ping", {}, False, "mcp"),  # a recorded request without arguments: the tool was given none
    ]


@pytest.mark.parametrize("with_client", [True, False], ids=["client-and-server", "server-alone"])
def test_mcp_spans_of_the_conventions_give_the_arguments_and_result_the_server_span_records(with_client: bool) -> None:
    # the MCP semantic conventions without the optional gen_ai.operation.name: content on the server span (2026)
    mcp = {"mcp.method.name": "tools/call", "gen_ai.tool.name": "search", "jsonrpc.request.id": "1"}
    content = {"gen_ai.tool.call.arguments": '{"q": "paris"}', "gen_ai.tool.call.result": "sunny"}
    server = Node(SpanSpec("tools/call search", mcp | content, SpanKind.SERVER))
    root = Node(SpanSpec("tools/call search", mcp, SpanKind.CLIENT), [server]) if with_client else server
    traj = extract(spans_of(root))
    [call] = traj.tool_calls
    assert (call.name, call.args, call.args_source, call.result, call.call_id) == (
        "search", {"q": "paris"}, "span", "sunny", None)  # fmt: skip
    assert grade(traj, [ArgumentCorrectness("search", {"q": "paris"})])[0].outcome == "passed"
    [no_content] = extract(spans_of(Node(SpanSpec("tools/call search", mcp, SpanKind.SERVER)))).tool_calls
    assert no_content.args is NOT_RECORDED and no_content.result is None


def _hybrid_spans(scope: str, tool_msg: bool) -> SpanTree:
    """A Pydantic AI run post-processed by OpenInference's span processor: both conventions on each span."""
    tool_attrs: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search", "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.call.arguments": '{"q": "x"}', "gen_ai.tool.call.result": "rx",
        "openinference.span.kind": "TOOL", "tool.name": "search", "tool_call.id": "c1",
        "tool.parameters": '{"q": "x"}', "input.value": '{"q": "x"}', "output.value": "rx",
    }  # fmt: skip
    retry_attrs = tool_attrs | {"pydantic_ai.tool.retry.cause": "model_retry"}
    retry_attrs["gen_ai.tool.call.id"] = retry_attrs["tool_call.id"] = "c0"
    if tool_msg:
        tool_attrs["logfire.msg"] = retry_attrs["logfire.msg"] = "running tool: search"
    chat = {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 2, "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o",
        "llm.token_count.prompt": 10, "llm.token_count.completion": 2,
    }  # fmt: skip
    agent = {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "main", "agent_name": "main",
        "gen_ai.aggregated_usage.input_tokens": 20, "gen_ai.aggregated_usage.output_tokens": 4,
        "openinference.span.kind": "AGENT", "logfire.msg": "main run",
    }  # fmt: skip
    root = Node(SpanSpec("invoke_agent main", agent, status="ok"), [
        Node(SpanSpec("chat gpt-4o", chat, SpanKind.CLIENT, status="ok")),
        Node(SpanSpec("execute_tool search", retry_attrs, status="error")),
        Node(SpanSpec("chat gpt-4o", chat, SpanKind.CLIENT, status="ok")),
        Node(SpanSpec("execute_tool search", tool_attrs, status="ok")),
    ])  # fmt: skip
    return spans_of(root, scope=scope)


@pytest.mark.parametrize(
    ("scope", "tool_msg", "dialects"),
    [
        ("pydantic-ai", True, {"pydantic_ai"}),
        ("converted", True, {"pydantic_ai", "openinference"}),  # scope lost: tool spans keep logfire.msg
        ("converted", False, {"openinference"}),
    ],
    ids=["scope", "no-scope", "no-scope-no-msg"],
)
def test_pydantic_ai_with_openinference_processor_is_counted_once(
    scope: str, tool_msg: bool, dialects: set[str]
) -> None:
    traj = extract(_hybrid_spans(scope, tool_msg))
    attempts = traj.calls(include_failed=True)
    assert [(c.name, c.args, c.call_id, c.failed) for c in attempts] == [
        ("search", {"q": "x"}, "c0", True),
        ("search", {"q": "x"}, "c1", False),
    ]
    assert attempts[0].retry_cause == "model_retry"
    assert [(r.model, r.input_tokens, r.output_tokens) for r in traj.model_requests] == [("gpt-4o", 10, 2)] * 2
    assert [(r.name, r.input_tokens) for r in traj.agent_runs] == [("main", 20)]
    assert {s.dialect for s in [*attempts, *traj.model_requests, *traj.agent_runs]} == dialects
    assert traj.recognized_spans == 5


# --- the dialects are cheap on spans that are not theirs --------------------------------------------


def test_every_dialect_ignores_plain_spans() -> None:
    from tracegrade.dialects import genai, openinference, openllmetry

    tree = spans_of(leaf("GET /users", {"http.method": "GET"}), leaf("SELECT", {"db.system": "postgresql"}))
    for node in tree:
        assert not any(d.recognizes(node) for d in (genai, openinference, openllmetry))
    assert extract(tree).is_empty


# --- attribute values of any OTLP type: a structured value where a string is expected is never a crash ---
def _structured(kind: str, rnd: Any) -> dict[str, Any]:
    if kind == "kvlist":
        return {"kvlistValue": {"values": [{"key": "name", "value": {"stringValue": "x"}}]}}
    return {"arrayValue": {"values": [{"stringValue": "x"}, {"intValue": str(rnd.randint(0, 9))}]}}


@pytest.mark.parametrize("kind", ["kvlist", "array"])
def test_structured_values_in_any_attribute_of_real_telemetry_are_read_without_a_crash(
    kind: str, tmp_path: Path
) -> None:
    import random

    from tracegrade.evaluators import MaxCost, TrajectoryMatch

    corpus = Path(__file__).parent.parent / "fixtures" / "frameworks"
    firsts: dict[str, Path] = {}
    for path in sorted(corpus.glob("*.traces.json")):  # one run per framework x instrumentation
        firsts.setdefault("--".join(path.name.split("--")[:2]), path)
    rnd = random.Random(7)
    checks = [ToolCorrectness(["get_weather"]), TrajectoryMatch(["get_weather"], order="any_order"),
              ArgumentCorrectness("get_weather", {"city": "Paris"}), MaxToolCalls(3), MaxModelRequests(3), MaxCost(1.0)]  # fmt: skip
    for path in firsts.values():
        doc = json.loads(path.read_text())
        found: list[dict[str, Any]] = []
        stack: list[Any] = [doc]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                if "key" in item and isinstance(item.get("value"), dict):
                    found.append(item)
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
        for variant in range(3):  # a third of the attributes, then all of them, then each other one
            chosen = rnd.sample(found, len(found) // 3) if variant == 0 else found if variant == 1 else found[::2]
            for attribute in chosen:
                attribute["value"] = _structured(kind, rnd)
            out = tmp_path / f"{path.stem}-{variant}.json"
            out.write_text(json.dumps(doc))
            for tree in load_traces(out):
                results = grade(tree, checks)
                assert not [r for r in results if r.outcome == "error"], (path.name, variant, results)


@pytest.mark.parametrize("parts", [5, 1.5, True, None, "text", {"type": "tool_call"}])
def test_otel_messages_whose_parts_are_not_a_list_hold_no_parts(parts: Any) -> None:
    from tracegrade.dialects._messages import otel_requests, otel_results

    call = {"type": "tool_call", "id": "c1", "name": "search", "arguments": {"q": "x"}}
    response = {"type": "tool_call_response", "id": "c1", "response": "found"}
    raw = json.dumps([{"role": "assistant", "parts": parts}, {"role": "assistant", "parts": [call]},
                      {"role": "tool", "parts": parts}, {"role": "tool", "parts": [response]}])  # fmt: skip
    assert [(r.name, r.call_id) for r in otel_requests(raw)] == [("search", "c1")]
    assert otel_results(raw) == {"c1": "found"}
