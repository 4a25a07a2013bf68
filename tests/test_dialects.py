"""The genai, openinference and openllmetry dialects, and one agent run graded the same in all four dialects.

Spans are made with the real OpenTelemetry SDK, with the names, kinds, statuses, attributes and events each
instrumentation emits (shared/reference/conventions.md §1-§5), including the error, retry, redacted and
content-off variants.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal, Protocol

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

import tracegrade.ingest
from tracegrade import NOT_RECORDED, SpanTree, ToolCall, Trajectory, grade
from tracegrade.evaluators import (
    ArgumentCorrectness,
    HasMatchingSpan,
    MaxModelRequests,
    MaxToolCalls,
    ToolCorrectness,
    TrajectoryMatch,
)
from tracegrade.spans import Span

# --- the logical scenario ---------------------------------------------------------------------------


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


# --- emitting the scenario as each instrumentation does ---------------------------------------------

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
    assert all(r == said["pydantic_ai"] for r in said.values())


@pytest.mark.parametrize("label", FLAVOR_IDS)
def test_the_trajectory_is_the_same_in_every_dialect(label: str) -> None:
    flavor = next(f for f in FLAVORS if f.label == label)
    traj = Trajectory.from_tree(scenario_tree(label))
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
    assert [r.name for r in traj.agent_runs] == ["main"]
    assert {c.agent for c in attempts} | {r.agent for r in traj.model_requests} == {"main"}
    steps = [*attempts, *traj.model_requests, *traj.agent_runs]
    assert {s.dialect for s in steps} == {flavor.dialect}
    assert traj.recognized_spans == len(steps)


@pytest.mark.parametrize("label", FLAVOR_IDS)
def test_nested_agents_get_their_own_calls_and_requests(label: str) -> None:
    traj = Trajectory.from_tree(scenario_tree(label, nested=True))
    assert [(c.name, c.agent) for c in traj.calls(include_failed=True)] == [
        ("search", "main"),
        ("search", "main"),
        ("search", "main"),
        ("answer", "writer"),
    ]
    assert [r.agent for r in traj.model_requests] == ["main", "main", "writer"]
    runs = {r.name: r for r in traj.agent_runs}
    assert runs.keys() == {"main", "writer"}
    assert runs["writer"].parent is runs["main"] and runs["main"].parent is None
    assert [c.name for c in traj.calls(agent="writer")] == ["answer"]


@pytest.mark.parametrize("label", FLAVOR_IDS)
def test_without_content_arguments_are_not_recorded_and_the_check_says_so(label: str) -> None:
    tree = scenario_tree(label, nested=True, content=False)
    traj = Trajectory.from_tree(tree)
    assert traj.tool_names == ["search", "search", "answer"]
    assert all(c.args is NOT_RECORDED and c.args_text is None for c in traj.all_calls)
    [result] = grade(tree, [ArgumentCorrectness("answer", {"text": "final"})])
    assert result.outcome == "not_evaluated"
    assert "not recorded" in result.reasoning and "'writer'" in result.reasoning
    assert "mismatch" not in result.reasoning


def test_call_ids_as_each_instrumentation_records_them() -> None:
    ids = {label: [c.call_id for c in Trajectory.from_tree(scenario_tree(label)).tool_calls] for label in FLAVOR_IDS}
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
    results = {label: Trajectory.from_tree(scenario_tree(label)).tool_calls[0].result for label in FLAVOR_IDS}
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
        label: [c.error for c in Trajectory.from_tree(scenario_tree(label)).calls(include_failed=True) if c.failed]
        for label in FLAVOR_IDS
    }
    assert errors["genai-latest"] == ["timed out"]
    assert errors["genai-adk"] == ["ConnectionError"]  # no status description: error.type
    assert errors["genai-legacy"] == ["search timed out"]
    assert errors["openinference"] == ["Error running tool: timed out"]
    assert all(len(e) == 1 and e[0] for e in errors.values())


def test_agent_span_usage_is_the_runs_total_not_a_model_request() -> None:
    for label in ("genai-latest", "genai-legacy"):
        traj = Trajectory.from_tree(scenario_tree(label, nested=True))
        runs = {r.name: (r.input_tokens, r.output_tokens) for r in traj.agent_runs}
        assert runs == {"main": (300, 30), "writer": (300, 30)}
        assert sum(r.input_tokens or 0 for r in traj.model_requests) == 600
        assert len(traj.model_requests) == 3


# --- the same files, written as OTLP/JSON and read back ------------------------------------------


@pytest.mark.parametrize("content", [True, False], ids=["content-on", "content-off"])
@pytest.mark.parametrize("nested", [False, True], ids=["flat", "nested"])
def test_otlp_json_files_of_every_dialect_give_the_same_verdicts(tmp_path: Any, nested: bool, content: bool) -> None:
    write = tracegrade.ingest.write_otlp_json
    for label in FLAVOR_IDS:
        path = tmp_path / f"{label}.json"
        write([Span.from_readable(s) for s in scenario_spans(label, nested, content)], path)
        assert verdicts(path) == expected_verdicts(content), label
        assert verdicts(tracegrade.ingest.load_traces(path)) == expected_verdicts(content), label
        assert reasons(path) == reasons(scenario_tree("pydantic_ai", nested, content)), label


def test_otlp_json_keeps_structured_arguments(tmp_path: Any) -> None:
    write = tracegrade.ingest.write_otlp_json
    path = tmp_path / "structured.json"
    rec = Recorder()
    rec.leaf(genai_tool("search", {"q": "x", "n": 2}).spec, "test", None)
    write([Span.from_readable(s) for s in rec.spans], path)
    [result] = grade(path, [ArgumentCorrectness("search", {"q": "x", "n": 2}, match_mode="exact")])
    assert result.passed, result.reasoning


# --- explicit dialect choice ------------------------------------------------------------------------


def test_explicit_dialect_reads_only_that_convention() -> None:
    tree = scenario_tree("genai-latest")
    auto, forced = Trajectory.from_tree(tree), Trajectory.from_tree(tree, dialect="genai")
    assert forced.tool_names == auto.tool_names == ["search", "search", "answer"]
    assert [c.args for c in forced.all_calls] == [c.args for c in auto.all_calls]
    assert len(forced.model_requests) == 3 and [r.name for r in forced.agent_runs] == ["main"]

    none = Trajectory.from_tree(tree, dialect="openinference")
    assert none.is_empty and none.model_requests == []
    [result] = grade(none, [ToolCorrectness(["search"])])
    assert result.outcome == "not_evaluated"


def test_pydantic_ai_spans_read_as_genai_keep_names_args_and_failures() -> None:
    traj = Trajectory.from_tree(scenario_tree("pydantic_ai"), dialect="genai")
    assert traj.tool_names == ["search", "search", "answer"]
    assert [c.status for c in traj.calls(include_failed=True)] == ["ok", "error", "ok", "ok"]
    assert [r.input_tokens for r in traj.model_requests] == [100, 200, 300]
    assert {c.dialect for c in traj.all_calls} == {"genai"}


def test_explicit_openllmetry_reads_a_langchain_trace() -> None:
    traj = Trajectory.from_tree(scenario_tree("openllmetry-langchain", nested=True), dialect="openllmetry")
    assert [(c.name, c.agent, c.args) for c in traj.tool_calls] == [
        ("search", "main", {"q": "x"}),
        ("search", "main", {"q": "y"}),
        ("answer", "writer", {"text": "final"}),
    ]


# --- small traces for single behaviours -------------------------------------------------------------


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
    return Trajectory.from_tree(tree, **kwargs).calls(include_failed=True)


def test_mixed_dialects_genai_tools_under_an_openinference_agent() -> None:
    agent = Node(
        SpanSpec("planner", {"openinference.span.kind": "AGENT", "agent.name": "planner"}, status="ok"),
        [
            genai_chat(5, 1),
            genai_tool("search", json.dumps({"q": "x"}), {"gen_ai.tool.call.id": "t1"}),
            oi_tool("answer", {"input.value": json.dumps({"text": "t"})}),
        ],
    )
    traj = Trajectory.from_tree(spans_of(agent))
    assert [(c.name, c.args, c.agent, c.dialect) for c in traj.tool_calls] == [
        ("search", {"q": "x"}, "planner", "genai"),
        ("answer", {"text": "t"}, "planner", "openinference"),
    ]
    assert [(r.model, r.agent, r.dialect) for r in traj.model_requests] == [("gpt-4o", "planner", "genai")]
    assert [(r.name, r.dialect) for r in traj.agent_runs] == [("planner", "openinference")]
    results = grade(traj, [TrajectoryMatch(["search", "answer"], order="exact"), MaxModelRequests(1)])
    assert [r.passed for r in results] == [True, True]


# --- genai ------------------------------------------------------------------------------------------


def test_genai_structured_arguments_are_used_as_they_are() -> None:
    # `gen_ai.tool.call.arguments` is `any`: an object where the SDK supports structured attributes
    [call] = calls(spans_of(genai_tool("search", {"q": "x", "n": 2})))
    assert call.args == {"q": "x", "n": 2}
    assert json.loads(call.args_text) == {"q": "x", "n": 2}


def test_genai_agent_name_on_other_spans_does_not_make_an_agent() -> None:
    tree = spans_of(
        genai_chat(1, 1, attrs={"gen_ai.agent.name": "ghost"}),
        genai_tool("t", None, {"gen_ai.agent.name": "ghost"}),
    )
    traj = Trajectory.from_tree(tree)
    assert traj.agent_runs == []
    assert [c.agent for c in traj.all_calls] == [None] and [r.agent for r in traj.model_requests] == [None]


def test_genai_operation_name_wins_over_the_span_name() -> None:
    tree = spans_of(
        leaf(
            "embeddings text-embedding-3",
            {"gen_ai.operation.name": "embeddings", "gen_ai.usage.input_tokens": 9},
        ),
        leaf("create_agent helper", {"gen_ai.operation.name": "create_agent", "gen_ai.agent.name": "helper"}),
        leaf("retrieve docs", {"gen_ai.operation.name": "retrieval"}),
        leaf("custom name", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}),
        leaf("my_llm_step", {"gen_ai.operation.name": "text_completion", "gen_ai.request.model": "m"}),
    )
    traj = Trajectory.from_tree(tree)
    assert traj.tool_names == ["lookup"]
    assert [r.model for r in traj.model_requests] == ["m"]
    assert traj.agent_runs == []


def test_genai_span_name_formats_without_an_operation_name() -> None:
    tree = spans_of(
        Node(SpanSpec("invoke_agent bot", {}), [
            leaf("chat gpt-4o", {"gen_ai.system": "openai", "gen_ai.usage.prompt_tokens": 4}),
            leaf("execute_tool search", {"gen_ai.tool.name": "search"}),
            leaf("execute_tool unnamed"),  # no gen_ai.tool.name: not enough to be a tool span
            leaf("chat with a human"),  # no gen_ai attributes
            leaf("call_llm", {"gen_ai.system": "gcp.vertex.agent", "gen_ai.request.model": "gemini"}),
        ]),
    )  # fmt: skip
    traj = Trajectory.from_tree(tree)
    assert [(c.name, c.agent) for c in traj.all_calls] == [("search", "bot")]
    assert [(r.model, r.input_tokens) for r in traj.model_requests] == [("gpt-4o", 4), ("gemini", None)]
    assert [r.name for r in traj.agent_runs] == ["bot"]


def test_strands_tool_status_error_is_a_failure_without_error_status() -> None:
    [call] = calls(spans_of(genai_tool("search", '{"q": "x"}', {"gen_ai.tool.status": "error"})))
    assert call.failed and call.status == "error"


def test_error_type_alone_is_a_failure() -> None:
    # Google ADK: the tool returned an error dict (no exception, but ERROR and error.type)
    [call] = calls(spans_of(genai_tool("fetch", None, {"error.type": "MCP_TOOL_ERROR"})))
    assert call.failed and call.error == "MCP_TOOL_ERROR"


def test_google_adk_merged_summary_span_is_not_a_call() -> None:
    parallel = [genai_tool("a", '{"i": 1}'), genai_tool("b", '{"i": 2}')]
    merged = leaf(
        "execute_tool (merged)",
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "(merged tools)"},
    )
    traj = Trajectory.from_tree(spans_of(*parallel, merged))
    assert traj.tool_names == ["a", "b"]


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
    traj = Trajectory.from_tree(spans_of(framework_tool, framework_chat, oi_llm))
    assert [(c.name, c.args) for c in traj.all_calls] == [("search", {"q": "x"})]
    assert [r.input_tokens for r in traj.model_requests] == [7, 7]


# --- openinference ----------------------------------------------------------------------------------

SCHEMA = json.dumps({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})


@pytest.mark.parametrize(
    ("attrs", "expected"),
    [
        ({"input.value": '{"q": "x"}', "tool.parameters": SCHEMA}, {"q": "x"}),  # openai-agents, smolagents
        ({"tool.parameters": SCHEMA}, NOT_RECORDED),  # the schema is not the arguments
        ({"tool.parameters": '{"q": "x"}'}, {"q": "x"}),  # pydantic-ai processor / google-adk: the arguments
        ({"tool.parameters": '{"type": "object"}'}, {"type": "object"}),  # no "properties": arguments
        ({"input.value": "__REDACTED__", "tool.parameters": SCHEMA}, NOT_RECORDED),
        ({"input.value": "__REDACTED__", "tool.parameters": '{"q": "x"}'}, {"q": "x"}),
        ({"input.value": "__REDACTED__", "tool.parameters": "__REDACTED__"}, NOT_RECORDED),
    ],
    ids=[
        "input",
        "schema",
        "params-args",
        "params-no-properties",
        "redacted",
        "redacted-params",
        "all-redacted",
    ],
)
def test_openinference_arguments_input_value_or_parameters_but_not_a_schema(
    attrs: dict[str, Any], expected: Any
) -> None:
    [call] = calls(spans_of(oi_tool("search", attrs)))
    assert call.args == expected


def test_openinference_redacted_content_is_not_recorded_for_argument_checks() -> None:
    hidden = {"input.value": "__REDACTED__", "output.value": "__REDACTED__", "tool.parameters": SCHEMA}
    agent_attrs = {"openinference.span.kind": "AGENT", "agent.name": "helper"}
    agent = Node(SpanSpec("helper", agent_attrs, status="ok"), [oi_tool("search", hidden)])
    tree = spans_of(agent)
    [call] = calls(tree)
    assert call.args is NOT_RECORDED and call.result is None and call.status == "ok"
    [result, names] = grade(tree, [ArgumentCorrectness("search", {"q": "x"}), ToolCorrectness(["search"])])
    assert result.outcome == "not_evaluated" and not result.passed
    assert "not recorded" in result.reasoning and "'helper'" in result.reasoning
    assert names.passed


def test_openinference_call_id_and_status() -> None:
    tree = spans_of(
        oi_tool("a", {"tool_call.id": "call_1", "tool.id": "other"}),
        oi_tool("b", {"tool.id": "adk-2"}),
        oi_tool("c", status="error"),
        oi_tool("d", status="unset"),
    )
    assert [(c.name, c.call_id, c.status) for c in calls(tree)] == [
        ("a", "call_1", "ok"),
        ("b", "adk-2", "ok"),
        ("c", None, "error"),
        ("d", None, "ok"),
    ]


def test_openinference_chain_and_other_kinds_are_not_steps() -> None:
    kind = "openinference.span.kind"
    steps = [
        leaf("retrieve", {kind: "RETRIEVER"}),
        leaf("embed", {kind: "EMBEDDING", "llm.model_name": "e"}),
        leaf("guard", {kind: "GUARDRAIL"}),
        leaf("FinalAnswerTool", {kind: "TOOL", "input.value": '{"answer": 1}'}),
    ]
    chain = {kind: "CHAIN", "llm.token_count.prompt": 5}  # LangChain chains aggregate their LLMs' usage
    tree = spans_of(Node(SpanSpec("Step 1", chain, status="ok"), steps))
    traj = Trajectory.from_tree(tree)
    assert traj.tool_names == ["FinalAnswerTool"]  # no tool.name: the span name
    assert traj.model_requests == [] and traj.agent_runs == []


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
    traj = Trajectory.from_tree(_hybrid_spans(scope, tool_msg))
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


# --- openllmetry ------------------------------------------------------------------------------------


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
    assert result.outcome == "failed" and "mismatch" in result.reasoning


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
    traj = Trajectory.from_tree(tree)
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
    traj = Trajectory.from_tree(spans_of(agent))
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
    traj = Trajectory.from_tree(spans_of(agent))
    assert [(c.name, c.args, c.agent, c.call_id, c.dialect) for c in traj.all_calls] == [
        ("search", {"q": "x"}, "strands", None, "genai"),
    ]
    assert [(r.name, r.dialect) for r in traj.agent_runs] == [("strands", "genai")]
    assert [r.input_tokens for r in traj.model_requests] == [4]


# --- the dialects are cheap on spans that are not theirs --------------------------------------------


def test_every_dialect_ignores_plain_spans() -> None:
    from tracegrade.dialects import genai, openinference, openllmetry

    tree = spans_of(leaf("GET /users", {"http.method": "GET"}), leaf("SELECT", {"db.system": "postgresql"}))
    for node in tree:
        assert not any(d.recognizes(node) for d in (genai, openinference, openllmetry))
    assert Trajectory.from_tree(tree).is_empty
