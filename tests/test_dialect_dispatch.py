"""One dispatch per span: each built-in dialect declares a `Gate` (what a span must carry for its
`classify` to recognize it); `extract` offers a span only to the dialects whose gate admits it. The gates
are exact (a dialect never recognizes a span its gate refuses: on the whole recorded corpus and on
generated spans), extraction reads the same trajectories as asking every dialect about every span, and a
registered dialect whose gate a span does not pass is never asked about it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from test_dialect_classify import _comparable, _slow, nodes  # noqa: F401  (nodes: the fixture, every recorded span)
from test_frameworks import RUNS, tree_of
from tracegrade.dialects import DIALECTS, NO_STEP, Dialect, Gate, classify, extract, register_dialect
from tracegrade.dialects._dispatch import Dispatch
from tracegrade.spans import Span
from tracegrade.trajectory import ToolCall, Trajectory
from tracegrade.tree import SpanNode, SpanTree


def _corpus_trees() -> list[SpanTree]:
    return [tree_of(run) for run in RUNS]


class _Ungated:
    """A dialect as it is, less its gate: asked about every span."""

    def __init__(self, dialect: Dialect) -> None:
        self._dialect = dialect

    def __getattr__(self, key: str) -> Any:
        if key == "GATE":
            raise AttributeError(key)
        return getattr(self._dialect, key)


def _summary(traj: Trajectory) -> Any:
    calls = [(c.name, c.args_text, c.args_source, c.call_id, c.executed, c.status, c.dialect, c.agent) for c in traj.all_calls]
    requests = [(r.model, r.dialect, r.agent, r.input_tokens, r.output_tokens) for r in traj.model_requests]
    runs = [(r.name, r.dialect, r.run_id) for r in traj.agent_runs]
    return calls, requests, runs, traj.recognized_spans, sorted(traj.missing.items()), traj.incomplete


def _walk(tree: SpanTree) -> Iterator[SpanNode]:
    stack = list(tree.roots)
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
def test_a_gate_refuses_only_spans_its_dialect_does_not_recognize(dialect: Dialect, nodes: list[SpanNode]) -> None:  # noqa: F811
    gate = getattr(dialect, "GATE")  # noqa: B009
    assert isinstance(gate, Gate)
    refused = [n for n in nodes if not gate.admits(n)]
    admitted = len(nodes) - len(refused)
    assert refused and admitted  # the corpus exercises both sides of every gate
    wrong = [(n.name, n.scope_name) for n in refused if dialect.classify(n) is not False or dialect.recognizes(n)]
    assert not wrong, wrong[:5]


def test_the_dispatch_asks_exactly_the_admitting_dialects_in_order(nodes: list[SpanNode]) -> None:  # noqa: F811
    dispatch = Dispatch(DIALECTS)
    asked_none = 0
    for node in nodes:
        expected = [d.name for d in DIALECTS if d.GATE.admits(node)]  # type: ignore[attr-defined]
        got = [name for name, _ in dispatch.classifiers(node)]
        assert got == expected, (node.name, node.scope_name, got, expected)
        asked_none += not got
    assert asked_none  # spans no dialect reads (HTTP, framework internals) cost no classify call


def test_extraction_reads_what_asking_every_dialect_reads_on_the_whole_corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    trees = _corpus_trees()
    assert len(trees) > 150
    gated_explain: dict[int, str] = {}
    gated = [_summary(extract(t, explain=gated_explain)) for t in trees]
    monkeypatch.setattr("tracegrade.dialects.DIALECTS", [_Ungated(d) for d in DIALECTS])
    import tracegrade.dialects as dialects_module

    everyone_explain: dict[int, str] = {}
    everyone = [_summary(extract(t, explain=everyone_explain)) for t in trees]
    assert dialects_module._dispatch().always == (1 << len(DIALECTS)) - 1  # really asked every dialect
    assert gated == everyone
    assert gated_explain == everyone_explain
    assert sum(len(s[0]) for s in gated) > 500  # the corpus's calls were read


def _counting(name: str, gate: Gate | None, counter: list[int]) -> Any:
    class Counted:
        GATE = gate

        def __init__(self) -> None:
            self.name = name

        def classify(self, node: SpanNode) -> object:
            counter[0] += 1
            if "acme.tool" in node.attributes:
                return ToolCall(str(node.attributes["acme.tool"]), {}, span=node, dialect=name)
            return False

        def recognizes(self, node: SpanNode) -> bool:
            return "acme.tool" in node.attributes

        def agent_run(self, node: SpanNode) -> None:
            return None

        def tool_call(self, node: SpanNode) -> ToolCall | None:
            found = self.classify(node)
            return found if isinstance(found, ToolCall) else None

        def model_request(self, node: SpanNode) -> None:
            return None

    if gate is None:
        del Counted.GATE
    return Counted()


def test_dialects_whose_gate_a_span_does_not_pass_are_never_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tracegrade.dialects.DIALECTS", list(DIALECTS))
    trees = _corpus_trees()
    spans = sum(1 for t in trees for _ in _walk(t))
    before = [_summary(extract(t)) for t in trees]
    counters = [[0] for _ in range(20)]
    for i, counter in enumerate(counters):  # first in the order: each would be asked before the built-ins
        register_dialect(_counting(f"gated{i}", Gate(keys=frozenset({f"acme{i}.kind"})), counter), first=True)
    ungated = [0]
    register_dialect(_counting("ungated", None, ungated), first=True)
    assert [_summary(extract(t)) for t in trees] == before
    assert [c[0] for c in counters] == [0] * 20
    pending = sum(1 for t in trees for n in _walk(t) if n.attributes.get("logfire.span_type") == "pending_span")
    assert ungated[0] == spans - pending  # a dialect without a gate is asked about every span


def test_a_registered_gated_dialect_reads_the_spans_its_gate_admits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tracegrade.dialects.DIALECTS", list(DIALECTS))
    counter = [0]
    register_dialect(_counting("acme", Gate(keys=frozenset({"acme.tool"})), counter), first=True)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("acme.agents")
    with tracer.start_as_current_span("agent"):
        with tracer.start_as_current_span("step", attributes={"acme.tool": "search"}):
            pass
        with tracer.start_as_current_span("http GET"):
            pass
    provider.shutdown()
    traj = extract(SpanTree.from_readable_spans(exporter.get_finished_spans()))
    assert [(c.name, c.dialect) for c in traj.all_calls] == [("search", "acme")]
    assert counter[0] == 1  # asked about the one span carrying its key, not about "agent" or "http GET"


def test_a_dialect_that_claims_a_span_as_no_step_keeps_the_others_from_reading_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """True lets the next dialects look; NO_STEP does not: a registered dialect claims the chat span its own
    instrumentation emits beside the one that records the request, and the GenAI reader no longer counts it."""
    monkeypatch.setattr("tracegrade.dialects.DIALECTS", list(DIALECTS))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("acme.client")
    with tracer.start_as_current_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}):
        for opening in (True, False):
            attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "acme.opening": opening}
            with tracer.start_as_current_span("chat m", attributes=attrs):
                pass
    provider.shutdown()
    tree = SpanTree.from_readable_spans(exporter.get_finished_spans())
    assert len(extract(tree).model_requests) == 2  # the GenAI reader counts both

    class Acme:
        name = "acme"
        GATE = Gate(keys=frozenset({"acme.opening"}))

        def classify(self, node: SpanNode) -> object:
            return NO_STEP if self.claims(node) else False

        def claims(self, node: SpanNode) -> bool:
            return node.attributes.get("acme.opening") is True

        def recognizes(self, node: SpanNode) -> bool:
            return self.claims(node)

        agent_run = tool_call = model_request = staticmethod(lambda node: None)

    acme = Acme()
    register_dialect(acme, first=True)  # type: ignore[arg-type]
    explain: dict[int, str] = {}
    traj = extract(tree, explain=explain)
    opening = next(n for n in tree if n.attributes.get("acme.opening") is True)
    assert len(traj.model_requests) == 1 and traj.model_requests[0].span is not opening
    assert explain[id(opening)] == "acme: recognized, not a step for any dialect (the others were not asked)"
    assert classify(opening) is True  # the public answer stays False / True / the step
    assert all(_comparable(acme.classify(n)) == _comparable(_slow(acme, n)) for n in tree)  # type: ignore[arg-type]


def test_a_gate_that_is_not_a_gate_is_refused_at_registration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tracegrade.dialects.DIALECTS", list(DIALECTS))
    bad = _counting("bad", None, [0])
    bad.GATE = {"keys": ["acme.tool"]}
    with pytest.raises(TypeError, match=r"dialect 'bad': GATE must be a tracegrade.dialects.Gate, not dict"):
        register_dialect(bad)


# What the dialects read, listed here rather than taken from the gates under test.
_VALUES: dict[str, list[Any]] = {
    "logfire.msg": ["running tool: search", "running output function: final", "invalid tool call: x", "chat gpt-4o"],
    "logfire.msg_template": ["Agent run: {name!r}", "Function: {name}", "Chat completion with {model!r}",
                             "Chat Completion with {request_data[model]!r}",
                             "streaming response from {request_data[model]!r} took {duration:.2f}s"],
    "request_data": ['{"model": "gpt-4o"}', '{"messages": [{"role": "tool", "tool_call_id": "call_1", "content": "ok"}]}'],
    "response_data": ['{"message": {"tool_calls": [{"id": "call_1", "function": {"name": "search", "arguments": "{}"}}]}}',
                      '{"combined_chunk_content": "", "chunk_count": 0}'],
    "gen_ai.response.id": ["resp_1"],
    "events": ['[{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [{"id": "call_1", '
               '"function": {"name": "search", "arguments": "{}"}}]}]'],
    "logfire.span_type": ["span", "log"],
    "openinference.span.kind": ["TOOL", "LLM", "AGENT", "CHAIN"],
    "traceloop.span.kind": ["tool", "agent", "task", "workflow", "handoff"],
    "traceloop.workflow.name": ["flow"],
    "llm.request.type": ["chat", "completion"],
    "gen_ai.operation.name": ["chat", "execute_tool", "invoke_agent", "invoke_workflow", "embeddings"],
    "gen_ai.agent.handoff.target.name": ["b"],
    "gen_ai.agent.handoff.source.name": ["a"],
    "gen_ai.transfer.target.name": ["b"],
    "ai.operationId": ["ai.toolCall", "ai.generateText", "ai.generateText.doGenerate", "ai.embed"],
    "mcp.method.name": ["tools/call", "tools/list"],
    "mcp.method": ["call_tool", "list_tools", "send_request"],  # OpenLIT's MCP spans
    "mcp.tool.name": ["search", ""],
    "mcp.tool.arguments": ['{"q": "x"}'],
    "mcp.response.payload": ['{"isError": true, "structuredContent": null}', '{"type": "mcp_coroutine"}',
                             '{"isError": false, "structuredContent": {"result": "ok"}, "meta": {"fastmcp": {"wrap_result": true}}}'],
    "rpc.method": ["tools/call"],
    "gen_ai.tool.name": ["search"],
    "gen_ai.request.model": ["gpt-4o"],
    "gen_ai.agent.call.id": ["r1"],
    "gen_ai.agent.name": ["a"],
    "tool.name": ["search"],
    "name": ["search"],
    "langfuse.observation.type": ["tool", "generation", "agent", "chain", "span", "event"],
    "langfuse.trace.metadata.ls_integration": ['"langgraph"', '"langchain_chat_model"'],
    "langfuse.observation.metadata.tool_call_id": ['"call_1"'],
    "langfuse.observation.input": ['{"args": [], "kwargs": {"city": "Paris"}}', '{"args": ["Paris"], "kwargs": {}}',
                                   "[REDACTED]"],
    "langfuse.observation.level": ["ERROR", "DEFAULT"],
    "langsmith.span.kind": ["tool", "llm", "chain", "retriever", "prompt"],
    "langsmith.metadata.ls_integration": ["langgraph", "langchain_chat_model", "openai-agents-sdk"],
    "langsmith.metadata.ls_method": ["traceable", "trace"],
    "langsmith.metadata.output_type": ["str"],
    "langsmith.metadata.usage_metadata": ['{"input_tokens": 3, "output_tokens": 1}', "{}"],
    "gen_ai.system": ["openai", "langchain"],
    "langsmith.metadata.langgraph_node": ["agent"],
    "langsmith.trace.name": ["support", "search"],
    "gen_ai.prompt": ['{"q": "x"}', "{}"],
    "gen_ai.tool.call.id": ["call_1", "call_1, call_2"],
    "gen_ai.tool.args": ['{"q": "x"}', '{"q": "x"}, {"id": 1}'],
    "gen_ai.agent.message_type": ["send", "receive", "generate_reply"],  # OpenLIT's AG2 message spans
    "gen_ai.usage.cost": [0.01],
    "langfuse.observation.output": ['{"role": "assistant", "content": "hi"}', '{"messages": [{"content": "hi"}]}',
                                    '{"content": "ok", "type": "tool", "tool_call_id": "call_1"}'],
    "haystack.tool.name": ["search", ""],
    "haystack.tool.error": [True, False],
    "haystack.agent.step.tool.input": ['{"q": "x"}'],
    "haystack.agent.step.tool.output": ['{"error": "boom"}', "ok"],
    "haystack.agent.step.llm.output": ['{"replies": [{"meta": {"model": "gpt-4o", "usage": {"prompt_tokens": 3}}}]}'],
    "mlflow.spanType": ['"TOOL"', '"CHAT_MODEL"', '"LLM"', '"AGENT"', '"CHAIN"', '"RETRIEVER"', "TOOL"],
    "mlflow.spanInputs": ['{"city": "Paris"}', '{"messages": [{"role": "tool", "tool_call_id": "call_1", "content": "ok"}]}'],
    "mlflow.spanOutputs": ['"sunny"', '{"content": "ok", "type": "tool", "tool_call_id": "call_1"}',
                           '{"messages": [{"type": "ai", "content": "done"}]}'],
    "mlflow.llm.model": ['"gpt-4o"'],
    "mlflow.chat.tokenUsage": ['{"input_tokens": 3, "output_tokens": 1}'],
    "metadata": ['{"ls_integration": "langgraph"}', '{"ls_integration": "langgraph", "langgraph_node": "agent"}'],
    "tool_call_id": ['"call_1"'],
    "traceloop.entity.input": ['{"args": ["{\\"city\\":\\"Paris\\"}"]}', '{"args": [], "kwargs": {"city": "Paris"}}'],
    "traceloop.entity.output": ['{"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", "ToolMessage"], '
                                '"kwargs": {"status": "success", "content": "ok", "tool_call_id": "call_1", "name": "search"}}',
                                '{"lc": 1, "id": ["langchain_core", "messages", "ToolMessage"], "kwargs": {"content": "ok"}}',
                                '{"output": "ok", "kwargs": {}}'],
}
_ANY_VALUE = ["search", "gpt-4o", 1, True]
_WORDS = ["chat", "chat.completions", "execute_tool", "invoke_agent", "invoke_workflow", "handle_conversation_turn",
          "generate_content", "text_completion", "call_llm", "running", "tool", "tools", "output", "function", "agent",
          "run", "MCP", "request:", "send", "server", "handle", "tools/call", "search", "gpt-4o", "http", "handoff",
          "workflow"]  # fmt: skip
_HEADS = ["chat", "execute_tool", "invoke_agent", "running", "agent", "MCP", "tools/call", "http", "call_llm",
          "FunctionAgent", "FunctionTool", "haystack.agent", "haystack.agent.step"]  # fmt: skip
_SUFFIXES = ["", ".chat", ".completion", ".response", ".agent", ".tool", ".task", ".workflow", ".run", ".acall", ".llm"]
_SCOPES = ["", "pydantic-ai", "logfire.openai_agents", "logfire", "openinference.instrumentation.openai_agents",
           "opentelemetry.instrumentation.openai_agents", "opentelemetry.instrumentation.httpx", "agent_framework",
           "langfuse-sdk", "llamaindex.opentelemetry.tracer", "logfire.openai", "logfire.anthropic",
           "@traceloop/instrumentation-langchain"]  # fmt: skip


@st.composite
def _spans(draw: st.DrawFn) -> Span:
    words = [draw(st.sampled_from(_HEADS)), *draw(st.lists(st.sampled_from(_WORDS), max_size=2))]
    name = " ".join(words) + draw(st.sampled_from(_SUFFIXES))
    keys = draw(st.lists(st.sampled_from(sorted(_VALUES)), max_size=4, unique=True))
    attrs = {k: draw(st.sampled_from(_VALUES.get(k, []) + _ANY_VALUE)) for k in keys}
    return Span(1, 2, None, name, 0, 10, attrs, scope_name=draw(st.sampled_from(_SCOPES)))


def _examples(scale: str) -> settings:
    """1,000 spans, the same ones every run, for CI; 50,000 random ones under `--faults-full`."""
    full = scale == "full"
    return settings(max_examples=50_000 if full else 1_000, derandomize=not full, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))  # fmt: skip


def test_gates_are_exact_on_generated_spans(fault_scale: str) -> None:
    @_examples(fault_scale)
    @given(span=_spans())
    def check(span: Span) -> None:
        (node,) = SpanTree.from_spans([span])
        for dialect in DIALECTS:
            if not dialect.GATE.admits(node):  # type: ignore[attr-defined]
                assert dialect.classify(node) is False, (dialect.name, span.name, dict(span.attributes), span.scope_name)
                assert not dialect.recognizes(node), (dialect.name, span.name)

    check()


def test_classify_equals_the_readable_spec_on_generated_spans(fault_scale: str) -> None:
    @_examples(fault_scale)
    @given(span=_spans())
    def check(span: Span) -> None:
        (node,) = SpanTree.from_spans([span])
        for dialect in DIALECTS:
            fast, slow = _comparable(dialect.classify(node)), _comparable(_slow(dialect, node))
            assert fast == slow, (dialect.name, span.name, dict(span.attributes), span.scope_name)

    check()


def test_splitting_a_trace_into_agent_runs_reads_its_roots_as_extraction_does() -> None:
    from tracegrade.dialects import classify
    from tracegrade.ingest import split_agent_runs

    # a root the LangSmith dialect recognizes without finding a run in it (a chain that is not a LangGraph
    # graph), which the GenAI dialect reads as an agent run (invoke_agent): extraction reads a run
    def root(span_id: int, agent: str) -> Span:
        attrs = {"langsmith.span.kind": "chain", "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}
        return Span(7, span_id, None, f"invoke_agent {agent}", span_id * 10, span_id * 10 + 5, attrs, scope_name="x")

    spans = [root(1, "a"), Span(7, 2, 1, "step", 11, 12), root(3, "b"), Span(7, 4, 3, "step", 31, 32)]
    roots = list(SpanTree.from_spans(spans).roots)
    assert [type(classify(n)).__name__ for n in roots] == ["AgentRun", "AgentRun"]
    assert [r.name for r in extract(SpanTree.from_spans(spans)).agent_runs] == ["a", "b"]
    assert [[s.span_id for s in part] for part in split_agent_runs(spans)] == [[1, 2], [3, 4]]


def test_a_gate_takes_collections_of_strings_and_refuses_a_bare_string() -> None:
    gate = Gate(keys={"acme.kind"}, prefixes=["acme "])  # type: ignore[arg-type]
    assert gate.keys == frozenset({"acme.kind"}) and gate.prefixes == ("acme ",)
    (node,) = SpanTree.from_spans([Span(1, 2, None, "acme step", 0, 1, {})])
    assert gate.admits(node)
    with pytest.raises(TypeError, match=r"Gate\(keys=\.\.\.\) takes a collection of non-empty strings, got 'acme.kind'"):
        Gate(keys="acme.kind")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Gate\(scopes=\.\.\.\)"):
        Gate(scopes=frozenset({""}))
