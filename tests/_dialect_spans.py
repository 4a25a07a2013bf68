"""Spans as each instrumentation emits them, made with the real OpenTelemetry SDK, for the dialect tests.

One logical agent run (`scenario`) recorded in every convention (`FLAVORS`: the names, kinds, statuses,
attributes and events each instrumentation emits, shared/reference/conventions.md §1-§5, including the
error, retry, redacted and content-off variants), and small trees for single behaviours (`spans_of`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal, Protocol

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from tracegrade import ToolCall
from tracegrade.dialects import extract
from tracegrade.tree import SpanTree


@dataclass(frozen=True)
class Chat:
    input_tokens: int
    output_tokens: int
    model: str = "gpt-4o"


@dataclass(frozen=True)
class Tool:
    name: str
    args: dict[str, Any]
    call_id: str
    result: str | None = None
    failed: bool = False


@dataclass(frozen=True)
class Agent:
    name: str
    steps: tuple[Chat | Tool | Agent, ...]

    @property
    def usage(self) -> tuple[int, int]:
        """The run's own token usage (what agent spans report, and must not be counted again)."""
        chats = [s for s in self.steps if isinstance(s, Chat)]
        return sum(c.input_tokens for c in chats), sum(c.output_tokens for c in chats)


def scenario(nested: bool) -> Agent:
    """search(q=x); search(q=y) fails and is retried; answer(text=final); 3 model requests.

    Nested: the last model request and `answer` belong to a sub-agent `writer` inside `main`.
    """
    head = (
        Chat(100, 10),
        Tool("search", {"q": "x"}, "c1", "rx"),
        Chat(200, 20),
        Tool("search", {"q": "y"}, "c2", failed=True),
        Tool("search", {"q": "y"}, "c3", "ry"),
    )
    tail = (Chat(300, 30), Tool("answer", {"text": "final"}, "c4", "done"))
    return Agent("main", head + ((Agent("writer", tail),) if nested else tail))


Status_ = Literal["unset", "ok", "error"]


@dataclass
class SpanSpec:
    name: str
    attributes: dict[str, Any]
    kind: SpanKind = SpanKind.INTERNAL
    status: Status_ = "unset"
    description: str | None = None
    exception: BaseException | None = None
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    scope: str | None = None


class Flavor(Protocol):
    label: str
    dialect: str
    scope: str

    def root(self, content: bool) -> SpanSpec | None: ...
    def agent(self, agent: Agent, content: bool) -> SpanSpec: ...
    def chat(self, chat: Chat, agent: str, content: bool) -> SpanSpec: ...
    def tool(self, tool: Tool, agent: str, content: bool) -> SpanSpec: ...


SCHEMAS = {
    "search": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    "answer": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}


class PydanticAIv5:
    """Pydantic AI instrumentation version 5 (§2.4, §2.5, §2.8)."""

    label = dialect = "pydantic_ai"
    scope = "pydantic-ai"

    def root(self, content: bool) -> SpanSpec | None:
        return None

    def agent(self, agent: Agent, content: bool) -> SpanSpec:
        attrs: dict[str, Any] = {
            "model_name": "gpt-4o",
            "agent_name": agent.name,
            "gen_ai.agent.name": agent.name,
            "gen_ai.agent.call.id": f"run-{agent.name}",
            "gen_ai.conversation.id": "conv-1",
            "gen_ai.operation.name": "invoke_agent",
            "logfire.msg": f"{agent.name} run",
            "gen_ai.aggregated_usage.input_tokens": agent.usage[0],
            "gen_ai.aggregated_usage.output_tokens": agent.usage[1],
        }
        if content:
            attrs["final_result"] = "done"
        return SpanSpec(f"invoke_agent {agent.name}", attrs)

    def chat(self, chat: Chat, agent: str, content: bool) -> SpanSpec:
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.system": "openai",
            "gen_ai.request.model": chat.model,
            "server.address": "api.openai.com",
            "gen_ai.tool.definitions": json.dumps([{"type": "function", "name": n} for n in SCHEMAS]),
            "gen_ai.agent.name": agent,
            "gen_ai.agent.call.id": f"run-{agent}",
            "gen_ai.response.model": f"{chat.model}-2024-08-06",
            "gen_ai.usage.input_tokens": chat.input_tokens,
            "gen_ai.usage.output_tokens": chat.output_tokens,
        }
        return SpanSpec(f"chat {chat.model}", attrs, SpanKind.CLIENT)

    def tool(self, tool: Tool, agent: str, content: bool) -> SpanSpec:
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool.name,
            "gen_ai.tool.call.id": tool.call_id,
            "gen_ai.agent.name": agent,
            "gen_ai.agent.call.id": f"run-{agent}",
            "logfire.msg": f"running tool: {tool.name}",
        }
        if content:
            attrs["gen_ai.tool.call.arguments"] = json.dumps(tool.args)
        if not tool.failed:
            if content:
                attrs["gen_ai.tool.call.result"] = tool.result
            return SpanSpec(f"execute_tool {tool.name}", attrs)
        attrs |= {
            "pydantic_ai.tool.retry.cause": "model_retry",
            "pydantic_ai.tool.retry.attempt": 1,
            "pydantic_ai.tool.retry.max_retries": 1,
        }
        exception = {"exception.type": "pydantic_ai.exceptions.ToolRetryError", "exception.escaped": "True"}
        if content:
            attrs["gen_ai.tool.call.result"] = "search failed, try again"
            exception["exception.message"] = "search failed, try again"
        return SpanSpec(f"execute_tool {tool.name}", attrs, status="error", events=[("exception", exception)])


class GenAILatest:
    """OTel GenAI semantic conventions, latest (`gen_ai_latest_experimental`, §1.3-§1.6, §1.10)."""

    label = "genai-latest"
    dialect = "genai"
    scope = "opentelemetry.instrumentation.genai"

    def root(self, content: bool) -> SpanSpec | None:
        return None

    def agent(self, agent: Agent, content: bool) -> SpanSpec:
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": "openai",
            "gen_ai.agent.name": agent.name,
            "gen_ai.agent.id": f"agent-{agent.name}",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.usage.input_tokens": agent.usage[0],  # the run's total: must not count as a request
            "gen_ai.usage.output_tokens": agent.usage[1],
        }
        return SpanSpec(f"invoke_agent {agent.name}", attrs)

    def chat(self, chat: Chat, agent: str, content: bool) -> SpanSpec:
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": chat.model,
            "gen_ai.response.model": f"{chat.model}-2024-08-06",
            "gen_ai.response.finish_reasons": ("tool_call",),
            "gen_ai.usage.input_tokens": chat.input_tokens,
            "gen_ai.usage.output_tokens": chat.output_tokens,
            "gen_ai.agent.name": agent,  # propagated: does not make this an agent span
            "server.address": "api.openai.com",
        }
        if content:
            attrs["gen_ai.input.messages"] = json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "go"}]}]
            )
        return SpanSpec(f"chat {chat.model}", attrs, SpanKind.CLIENT)

    def tool(self, tool: Tool, agent: str, content: bool) -> SpanSpec:
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool.name,
            "gen_ai.tool.call.id": tool.call_id,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.description": f"the {tool.name} tool",
        }
        if content:
            attrs["gen_ai.tool.call.arguments"] = json.dumps(tool.args)
        if not tool.failed:
            if content:
                attrs["gen_ai.tool.call.result"] = tool.result
            return SpanSpec(f"execute_tool {tool.name}", attrs)
        attrs["error.type"] = "TimeoutError"
        name, error = f"execute_tool {tool.name}", TimeoutError("timed out")
        return SpanSpec(name, attrs, status="error", description="timed out", exception=error)


class GenAILegacy:
    """OTel GenAI <= 1.36 as AWS Strands emits it by default (§1.9, §5.5): `gen_ai.system`, prompt/completion
    tokens, `gen_ai.tool.status`, tool arguments and results in span events."""

    label = "genai-legacy"
    dialect = "genai"
    scope = "strands.telemetry.tracer"

    def root(self, content: bool) -> SpanSpec | None:
        return None

    def agent(self, agent: Agent, content: bool) -> SpanSpec:
        inp, out = agent.usage
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.system": "strands-agents",
            "gen_ai.agent.name": agent.name,
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.agent.tools": json.dumps(list(SCHEMAS)),
            "gen_ai.usage.prompt_tokens": inp,
            "gen_ai.usage.completion_tokens": out,
            "gen_ai.usage.input_tokens": inp,
            "gen_ai.usage.output_tokens": out,
            "gen_ai.usage.total_tokens": inp + out,
        }
        return SpanSpec(f"invoke_agent {agent.name}", attrs)

    def chat(self, chat: Chat, agent: str, content: bool) -> SpanSpec:
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": "strands-agents",
            "gen_ai.request.model": chat.model,
            "gen_ai.usage.prompt_tokens": chat.input_tokens,
            "gen_ai.usage.completion_tokens": chat.output_tokens,
            "gen_ai.usage.total_tokens": chat.input_tokens + chat.output_tokens,
        }
        events = [("gen_ai.user.message", {"content": json.dumps([{"text": "go"}])})] if content else []
        return SpanSpec("chat", attrs, events=events)  # Strands: no model in the name

    def tool(self, tool: Tool, agent: str, content: bool) -> SpanSpec:
        call_id = f"tooluse_{tool.call_id}"
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.system": "strands-agents",
            "gen_ai.tool.name": tool.name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.status": "error" if tool.failed else "success",
        }
        events: list[tuple[str, dict[str, Any]]] = []
        if content:
            events.append(("gen_ai.tool.message", {"role": "tool", "content": json.dumps(tool.args), "id": call_id}))
            if not tool.failed:
                events.append(("gen_ai.choice", {"message": json.dumps([{"text": tool.result}]), "id": call_id}))
        if tool.failed:
            name = f"execute_tool {tool.name}"
            return SpanSpec(name, attrs, status="error", description="search timed out", events=events)
        return SpanSpec(f"execute_tool {tool.name}", attrs, events=events)


class GoogleADK:
    """Google ADK, schema version 2 (`otel_semconv_1_44`, §5.4); a missing call id is `"<not specified>"`."""

    label = "genai-adk"
    dialect = "genai"
    scope = "gcp.vertex.agent"

    def root(self, content: bool) -> SpanSpec | None:
        return SpanSpec("invoke_workflow", {"gen_ai.operation.name": "invoke_workflow"})

    def agent(self, agent: Agent, content: bool) -> SpanSpec:
        attrs = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent.name,
            "gen_ai.agent.description": f"the {agent.name} agent",
            "gen_ai.conversation.id": "session-1",
        }
        return SpanSpec(f"invoke_agent {agent.name}", attrs)

    def chat(self, chat: Chat, agent: str, content: bool) -> SpanSpec:
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "generate_content",
            "gen_ai.request.model": chat.model,
            "gen_ai.usage.input_tokens": chat.input_tokens,
            "gen_ai.usage.output_tokens": chat.output_tokens,
            "gen_ai.agent.name": agent,
            "gcp.vertex.agent.invocation_id": "inv-1",
            "gcp.vertex.agent.session_id": "session-1",
        }
        return SpanSpec(f"generate_content {chat.model}", attrs)

    def tool(self, tool: Tool, agent: str, content: bool) -> SpanSpec:
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool.name,
            "gen_ai.tool.description": f"the {tool.name} tool",
            "gen_ai.tool.type": "FunctionTool",
            "gen_ai.agent.name": agent,
            "gen_ai.tool.call.id": "<not specified>",
            "gcp.vertex.agent.event_id": f"e-{tool.call_id}",
        }
        if content:
            attrs["gen_ai.tool.call.arguments"] = json.dumps(tool.args)
        if not tool.failed:
            if content:
                attrs["gen_ai.tool.call.result"] = json.dumps({"result": tool.result})
            return SpanSpec(f"execute_tool {tool.name}", attrs)
        attrs["error.type"] = "ConnectionError"
        return SpanSpec(f"execute_tool {tool.name}", attrs, status="error", exception=ConnectionError("refused"))


class OpenInferenceAgents:
    """OpenInference, as the openai-agents instrumentor emits it (§3.2-§3.5): status OK on success, the
    tool's JSON schema in `tool.parameters`, no call id; content off is `OPENINFERENCE_HIDE_INPUTS/OUTPUTS`.
    """

    label = dialect = "openinference"
    scope = "openinference.instrumentation.openai_agents"

    def root(self, content: bool) -> SpanSpec | None:
        return SpanSpec("Agent workflow", {"openinference.span.kind": "CHAIN"}, status="ok")

    def agent(self, agent: Agent, content: bool) -> SpanSpec:
        attrs = {"openinference.span.kind": "AGENT", "agent.name": agent.name, "graph.node.id": agent.name}
        return SpanSpec(agent.name, attrs, status="ok")

    def chat(self, chat: Chat, agent: str, content: bool) -> SpanSpec:
        attrs: dict[str, Any] = {
            "openinference.span.kind": "LLM",
            "llm.model_name": chat.model,
            "llm.provider": "openai",
            "llm.system": "openai",
            "llm.token_count.prompt": chat.input_tokens,
            "llm.token_count.completion": chat.output_tokens,
            "llm.token_count.total": chat.input_tokens + chat.output_tokens,
            "input.value": json.dumps([{"role": "user", "content": "go"}]) if content else "__REDACTED__",
            "input.mime_type": "application/json",
            "llm.input_messages.0.message.role": "user",
        }
        return SpanSpec("response", attrs, status="ok")

    def tool(self, tool: Tool, agent: str, content: bool) -> SpanSpec:
        attrs: dict[str, Any] = {
            "openinference.span.kind": "TOOL",
            "tool.name": tool.name,
            "tool.description": f"the {tool.name} tool",
            "tool.parameters": json.dumps(SCHEMAS[tool.name]),
            "input.value": json.dumps(tool.args) if content else "__REDACTED__",
            "input.mime_type": "application/json",
        }
        if tool.failed:
            return SpanSpec(tool.name, attrs, status="error", description="Error running tool: timed out")
        attrs["output.value"] = tool.result if content else "__REDACTED__"
        return SpanSpec(tool.name, attrs, status="ok")


class TraceloopDecorators:
    """OpenLLMetry: Traceloop `@workflow` / `@agent` / `@tool` decorators around the legacy OpenAI
    instrumentation (§4.1, §4.2, §4.4); content off is `TRACELOOP_TRACE_CONTENT=false`."""

    label = "openllmetry-decorators"
    dialect = "openllmetry"
    scope = "traceloop.tracer"

    def root(self, content: bool) -> SpanSpec | None:
        attrs: dict[str, Any] = {
            "traceloop.span.kind": "workflow",
            "traceloop.entity.name": "trip",
            "traceloop.workflow.name": "trip",
        }
        if content:
            attrs["traceloop.entity.input"] = json.dumps({"args": ["go"], "kwargs": {}})
        return SpanSpec("trip.workflow", attrs)

    def agent(self, agent: Agent, content: bool) -> SpanSpec:
        attrs: dict[str, Any] = {
            "traceloop.span.kind": "agent",
            "traceloop.entity.name": agent.name,
            "traceloop.workflow.name": "trip",
            "gen_ai.agent.name": agent.name,
        }
        if content:
            attrs["traceloop.entity.input"] = json.dumps({"args": [], "kwargs": {"task": "go"}})
            attrs["traceloop.entity.output"] = json.dumps("done")
        return SpanSpec(f"{agent.name}.agent", attrs)

    def chat(self, chat: Chat, agent: str, content: bool) -> SpanSpec:
        attrs: dict[str, Any] = {
            "llm.request.type": "chat",
            "gen_ai.system": "openai",
            "gen_ai.request.model": chat.model,
            "gen_ai.response.model": f"{chat.model}-2024-08-06",
            "gen_ai.usage.prompt_tokens": chat.input_tokens,
            "gen_ai.usage.completion_tokens": chat.output_tokens,
            "llm.usage.total_tokens": chat.input_tokens + chat.output_tokens,
            "traceloop.workflow.name": "trip",
            "gen_ai.agent.name": agent,  # propagated inside @agent
        }
        if content:
            attrs |= {"gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "go"}
        return SpanSpec("openai.chat", attrs, SpanKind.CLIENT, scope="opentelemetry.instrumentation.openai.v1")

    def tool(self, tool: Tool, agent: str, content: bool) -> SpanSpec:
        attrs: dict[str, Any] = {
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": tool.name,
            "traceloop.entity.path": agent,
            "traceloop.workflow.name": "trip",
            "gen_ai.tool.name": tool.name,
            "gen_ai.agent.name": agent,
        }
        if content:
            attrs["traceloop.entity.input"] = json.dumps({"args": [], "kwargs": tool.args})
        if tool.failed:
            name, error = f"{tool.name}.tool", RuntimeError("timed out")
            return SpanSpec(name, attrs, status="error", description="RuntimeError: timed out", exception=error)
        if content:
            attrs["traceloop.entity.output"] = json.dumps(tool.result)
        return SpanSpec(f"{tool.name}.tool", attrs)


class TraceloopLangChain:
    """OpenLLMetry's current LangChain instrumentation (§4.3, §4.4): `execute_tool {name}` spans whose
    arguments are LangChain's callback wrapper; chat spans with both the legacy and the new attributes."""

    label = "openllmetry-langchain"
    dialect = "openllmetry"
    scope = "opentelemetry.instrumentation.langchain"

    def root(self, content: bool) -> SpanSpec | None:
        attrs = {
            "traceloop.span.kind": "workflow",
            "traceloop.entity.name": "AgentExecutor",
            "traceloop.workflow.name": "AgentExecutor",
        }
        return SpanSpec("AgentExecutor.workflow", attrs)

    def agent(self, agent: Agent, content: bool) -> SpanSpec:
        attrs = {
            "traceloop.span.kind": "agent",
            "traceloop.entity.name": agent.name,
            "traceloop.workflow.name": "AgentExecutor",
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent.name,
            "gen_ai.agent.id": f"run-{agent.name}",
        }
        return SpanSpec(f"{agent.name}.agent", attrs)

    def chat(self, chat: Chat, agent: str, content: bool) -> SpanSpec:
        attrs: dict[str, Any] = {
            "llm.request.type": "chat",
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": chat.model,
            "gen_ai.response.model": f"{chat.model}-2024-08-06",
            "gen_ai.usage.input_tokens": chat.input_tokens,
            "gen_ai.usage.output_tokens": chat.output_tokens,
            "gen_ai.usage.total_tokens": chat.input_tokens + chat.output_tokens,
            "traceloop.workflow.name": "AgentExecutor",
            "gen_ai.agent.name": agent,
        }
        return SpanSpec("ChatOpenAI.chat", attrs, SpanKind.CLIENT)

    def tool(self, tool: Tool, agent: str, content: bool) -> SpanSpec:
        attrs: dict[str, Any] = {
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": tool.name,
            "traceloop.workflow.name": "AgentExecutor",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool.name,
            "gen_ai.tool.type": "function",
            "gen_ai.provider.name": "langchain",
            "gen_ai.agent.name": agent,
        }
        if content:
            wrapper = json.dumps(
                {"input_str": str(tool.args), "tags": [], "metadata": {}, "inputs": tool.args, "kwargs": {}}
            )
            attrs["traceloop.entity.input"] = attrs["gen_ai.tool.call.arguments"] = wrapper
        if tool.failed:
            attrs["gen_ai.task.status"] = "failure"
            return SpanSpec(f"execute_tool {tool.name}", attrs, status="error", exception=RuntimeError("timed out"))
        attrs["gen_ai.task.status"] = "success"
        if content:
            output = f"content={tool.result!r} name={tool.name!r} tool_call_id={tool.call_id!r}"
            attrs["traceloop.entity.output"] = attrs["gen_ai.tool.call.result"] = json.dumps(
                {"output": output, "kwargs": {}}
            )
        return SpanSpec(f"execute_tool {tool.name}", attrs)


FLAVORS: list[Flavor] = [
    PydanticAIv5(),
    GenAILatest(),
    GenAILegacy(),
    GoogleADK(),
    OpenInferenceAgents(),
    TraceloopDecorators(),
    TraceloopLangChain(),
]


FLAVOR_IDS = [f.label for f in FLAVORS]


class Recorder:
    """Real SDK spans on a private provider, with a deterministic clock (1 µs per start or end)."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self._clock = itertools.count(1_700_000_000_000_000_000, 1000)

    @property
    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def start(self, spec: SpanSpec, scope: str, parent: trace.Span | None) -> trace.Span:
        ctx = trace.set_span_in_context(parent) if parent is not None else None
        tracer = self.provider.get_tracer(spec.scope or scope)
        return tracer.start_span(
            spec.name, context=ctx, kind=spec.kind, attributes=spec.attributes, start_time=next(self._clock)
        )

    def end(self, span: trace.Span, spec: SpanSpec) -> None:
        for name, attrs in spec.events:
            span.add_event(name, attrs, timestamp=next(self._clock))
        if spec.exception is not None:
            span.record_exception(spec.exception, timestamp=next(self._clock))
        if spec.status == "error":
            span.set_status(Status(StatusCode.ERROR, spec.description))
        elif spec.status == "ok":
            span.set_status(Status(StatusCode.OK))
        span.end(end_time=next(self._clock))

    def leaf(self, spec: SpanSpec, scope: str, parent: trace.Span | None) -> None:
        self.end(self.start(spec, scope, parent), spec)


def record(flavor: Flavor, run: Agent, content: bool) -> list[ReadableSpan]:
    rec = Recorder()

    def walk(agent: Agent, parent: trace.Span | None) -> None:
        spec = flavor.agent(agent, content)
        span = rec.start(spec, flavor.scope, parent)
        for step in agent.steps:
            if isinstance(step, Agent):
                walk(step, span)
            elif isinstance(step, Chat):
                rec.leaf(flavor.chat(step, agent.name, content), flavor.scope, span)
            else:
                rec.leaf(flavor.tool(step, agent.name, content), flavor.scope, span)
        rec.end(span, spec)

    root_spec = flavor.root(content)
    root = rec.start(root_spec, flavor.scope, None) if root_spec is not None else None
    walk(run, root)
    if root is not None and root_spec is not None:
        rec.end(root, root_spec)
    return rec.spans


@cache
def scenario_spans(label: str, nested: bool, content: bool) -> tuple[ReadableSpan, ...]:
    flavor = next(f for f in FLAVORS if f.label == label)
    return tuple(record(flavor, scenario(nested), content))


def scenario_tree(label: str, nested: bool = False, content: bool = True) -> SpanTree:
    return SpanTree.from_readable_spans(scenario_spans(label, nested, content))


@dataclass
class Node:
    spec: SpanSpec
    children: Sequence[Node] = ()


def spans_of(*roots: Node, scope: str = "test") -> SpanTree:
    rec = Recorder()

    def walk(node: Node, parent: trace.Span | None) -> None:
        span = rec.start(node.spec, scope, parent)
        for child in node.children:
            walk(child, span)
        rec.end(span, node.spec)

    for root in roots:
        walk(root, None)
    return SpanTree.from_readable_spans(rec.spans)


def leaf(name: str, attrs: dict[str, Any] | None = None, status: Status_ = "unset") -> Node:
    return Node(SpanSpec(name, attrs or {}, status=status))


def genai_tool(tool: str, args: Any = None, attrs: dict[str, Any] | None = None) -> Node:
    base: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool}
    if args is not None:
        base["gen_ai.tool.call.arguments"] = args
    return Node(SpanSpec(f"execute_tool {tool}", base | (attrs or {})))


def genai_chat(input_tokens: int, output_tokens: int, *children: Node, attrs: dict[str, Any] | None = None) -> Node:
    base: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.usage.input_tokens": input_tokens,
        "gen_ai.usage.output_tokens": output_tokens,
    }
    return Node(SpanSpec("chat gpt-4o", base | (attrs or {}), SpanKind.CLIENT), children)


def oi_tool(tool: str, attrs: dict[str, Any] | None = None, status: Status_ = "ok") -> Node:
    base = {"openinference.span.kind": "TOOL", "tool.name": tool}
    return Node(SpanSpec(tool, base | (attrs or {}), status=status))


def calls(tree: SpanTree, **kwargs: Any) -> list[ToolCall]:
    return extract(tree, **kwargs).calls(include_failed=True)
