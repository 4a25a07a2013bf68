"""OpenTelemetry GenAI semantic conventions, latest and <= 1.36 (shared/reference/conventions.md §1, §5.4-5).

The role comes from `gen_ai.operation.name`: `execute_tool` (tool call), `chat` / `generate_content` /
`text_completion` (model request), `invoke_agent`, `invoke_workflow` and `handle_conversation_turn` (agent
runs: the `gen_ai.invocation.internal` span and the runners' turn span, 2026); without it, from the span-name
formats `execute_tool {tool}` (with `gen_ai.tool.name`), `invoke_agent {agent}`, `{op} {model}`.
`gen_ai.agent.name` alone never makes an agent span (it is propagated to children; on a tool span it names
the agent that ran the call), and an agent span's `gen_ai.usage.*` is the run's total, never a model request.

(A span under a span of the same role — an MCP client span inside the framework's tool span, a provider
instrumentation's chat span inside a framework's — is the same step recorded twice: `dialects.extract`
merges it into the outer one.)

2026 additions: an `execute_tool` span with `gen_ai.transfer.*` (the `gen_ai.execute_tool.transfer.internal`
refinement), or a span with `gen_ai.agent.handoff.{source,target}.name`, is a `Handoff`, not a tool call;
`gen_ai.usage.cost.{amount,currency,source}` is a model request's `Cost` (OpenLIT's plain
`gen_ai.usage.cost` too, in USD, `OPENLIT_COST`, whose integer 0 means not priced); `gen_ai.tool.call.decision` events
(`DECISION_EVENT`) and the `gen_ai.output.messages_ref` content reference (`OUTPUT_REF`) are read by
`dialects.extract`.

Vendor shapes: OpenLIT's AG2 message spans (`OPENLIT_AG2_MESSAGE`), agent runs despite their `chat` operation;
OpenLIT's summary of a response's tool calls on its model span (`gen_ai.tool.name`,
`gen_ai.tool.call.id`, `gen_ai.tool.args`, each joined with `", "`; recorded whatever the content setting),
read when the output messages hold no calls (`requested_calls`), its Pydantic AI spans
(`OPENLIT_PYDANTIC_AI_SCOPE`: `execute_task {agent}` is the agent's run, the graph step `execute_tool {model}` no
tool call), its CrewAI Flow methods' `invoke_agent` spans (`OPENLIT_CREWAI_SCOPE`: no agent runs), its
framework component spans (`OPENLIT_COMPONENT`: the name of Haystack's `chat openai_chat_generator` gives no model),
its LangChain tool span's `gen_ai.tool.call.id`, which stays LangChain's run id (a UUID, `OPENLIT_LANGCHAIN_SCOPE`)
when the tool raised, and its smolagents tool span's, a UUID of its own making (`OPENLIT_SMOLAGENTS_SCOPE`); a tool
that raised under OpenLIT's smolagents instrumentation leaves a span with its name and `error.type` only (read by
its name), and its smolagents step spans are no agent runs (`OPENLIT_SMOLAGENTS_STEP`);
OpenLLMetry-JS's LangChain tool span `execute_tool {class}` (`TRACELOOP_JS_LANGCHAIN_SCOPE`: its name is the tool's
class, not the tool); Google ADK's call id `"<not specified>"` and `(merged tools)` summary span; Strands'
`gen_ai.tool.status` and its legacy `gen_ai.tool.message` / `gen_ai.choice` events holding args / result;
a span OpenLLMetry marks `traceloop.span.kind` = `workflow` / `task` is no agent run whatever its operation,
(a LangSmith `prompt` run and the span opening a request Logfire streams are claimed, as no step, by the
`langsmith` and `logfire` dialects ahead of this one);
the contrib OpenAI Agents instrumentation's placeholder `gen_ai.agent.name` (`LABEL_AGENT_SCOPES`). A run span
named otherwise than `{operation} {name}` (an SDK trace span named after its workflow) has no name unless an
attribute gives one.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..trajectory import AgentRun, Cost, Handoff, ModelRequest, ToolCall
from ._common import cost_of, first_int, first_str
from ._dispatch import Gate
from ._messages import REDACTED as REDACTED  # re-exported: defined beside the message readers
from ._messages import SUMMARY_IDS, Requested, event_name, otel_requests, summary_requests

if TYPE_CHECKING:
    from ..tree import SpanNode

__all__ = ["agent_run", "classify", "handoff", "model_request", "name", "recognizes", "requested_calls", "tool_call"]

name = "genai"
MESSAGE_SHAPES = ("otel",)
"""Where this convention records a model's requested tool calls and the results it was given
(`_messages.requested` / `_messages.results`)."""

OPERATION = "gen_ai.operation.name"
MODEL_OPERATIONS = ("chat", "generate_content", "text_completion")
RUN_OPERATIONS = frozenset({"invoke_agent", "invoke_workflow", "handle_conversation_turn"})
"""Operations that anchor an agent run: an agent, a workflow, or a runner's conversation turn."""
TRANSFER_KEYS = ("gen_ai.transfer.target.name", "gen_ai.transfer.mode")
HANDOFF_SOURCE, HANDOFF_TARGET = "gen_ai.agent.handoff.source.name", "gen_ai.agent.handoff.target.name"
DECISION_EVENT = "gen_ai.tool.call.decision"
"""Event (span event or log record) for a pre-execution decision about a tool call."""
DECISION_OUTCOME = "gen_ai.tool.call.decision.outcome"
DECISIONS = frozenset({"allow", "deny", "require_approval"})
OUTPUT_REF = "gen_ai.output.messages_ref"
"""Where a model's output messages were stored instead of on the span (the external content reference)."""
OUTPUT_MESSAGES = "gen_ai.output.messages"
NO_CALL_ID = "<not specified>"  # Google ADK, when the function call had no id
_ADK_MERGED = "(merged tools)"  # Google ADK's summary span after parallel calls (each has its own span)
ADK_SCOPE = "gcp.vertex.agent"
_ADK_ARGS, _ADK_RESULT = "gcp.vertex.agent.tool_call_args", "gcp.vertex.agent.tool_response"
TRACELOOP_KIND = "traceloop.span.kind"
NOT_RUNS = ("workflow", "task")
"""`traceloop.span.kind` values that are no agent run even with an agent-run operation (OpenLLMetry's CrewAI
instrumentation writes `invoke_agent` on its task span, its LangChain one on the graph's workflow span)."""
"""The LangSmith SDK's run type: it exports a `prompt` run (a prompt template's formatting) with operation
`chat`, and that is no model request."""
OPENLIT_COST = "gen_ai.usage.cost"
"""OpenLIT's cost of a model request, in USD (its pricing table's unit); read when `gen_ai.usage.cost.amount` is not."""
OPENLIT_LANGCHAIN_SCOPE = "openlit.instrumentation.langchain"
"""OpenLIT's LangChain callback: a tool span's `gen_ai.tool.call.id` is LangChain's run id until the tool returns
a message naming the model's call id (so it stays the run id when the tool raised)."""
TRACELOOP_JS_LANGCHAIN_SCOPE = "@traceloop/instrumentation-langchain"
"""OpenLLMetry-JS's LangChain instrumentation: its `execute_tool {class}` span names the LangChain tool class, not
the tool (read by the `openllmetry` dialect, never by its span name here)."""
OPENLIT_SMOLAGENTS_SCOPE = "openlit.instrumentation.smolagents"
"""OpenLIT's smolagents instrumentation: its tool span's `gen_ai.tool.call.id` is a UUID it makes up (smolagents'
`execute_tool_call` is given the tool's name and arguments, not the model's call id), so the call is matched to the
model's request by name and order; the span of a tool that raised holds `error.type` and no `gen_ai.*` attribute."""
OPENLIT_SMOLAGENTS_STEP = "gen_ai.smolagents.step_number"
"""On OpenLIT's `invoke_agent {agent} step_{n}` span: one step of the agent's run (its model request and the calls it
made), no agent run of its own."""
RUN_ID_SCOPES = frozenset({OPENLIT_LANGCHAIN_SCOPE, OPENLIT_SMOLAGENTS_SCOPE})
"""Scopes whose tool spans' UUID `gen_ai.tool.call.id` is the instrumentation's own id, not the model's call id."""
OPENLIT_AG2_MESSAGE = "gen_ai.agent.message_type"
"""OpenLIT's AG2 instrumentation: an agent's `send` / `receive` / `generate_reply` span (`execute_task {agent}`),
written with operation `chat` and request model `unknown`, is that agent's turn (the model's own chat span, if
any, lies beneath): read as an agent run, never a model request."""
OPENLIT_PYDANTIC_AI_SCOPE = "openlit.instrumentation.pydantic_ai"
"""OpenLIT's Pydantic AI instrumentation: its `execute_tool {model}` span (no `gen_ai.tool.name`) is a run of the
agent graph's tool-calling step (`CallToolsNode`, also run after the final answer), not a tool call; the calls
are the ones its `chat` spans' summaries request. Its `execute_task {agent}` span (`Agent.run`, enclosing the
model requests) is the agent's run."""
OPENLIT_CREWAI_SCOPE = "openlit.instrumentation.crewai"
"""OpenLIT's CrewAI instrumentation: it writes an `invoke_agent {method}` span for each method of a CrewAI Flow
(the agent executor's `generate_plan`, `call_llm_native_tools`, ...), without `gen_ai.agent.name`: a flow step,
no agent run. Its agent spans carry `gen_ai.agent.name`."""
OPENLIT_COMPONENT = "gen_ai.framework.component.name"
"""OpenLIT's framework component spans (its Haystack instrumentation's `chat openai_chat_generator`, one per chat
generator run, enclosing the provider's `chat gpt-4o`): the span name's suffix is this component's name, not a model."""
LABEL_AGENT_SCOPES = frozenset({"opentelemetry.instrumentation.openai_agents"})
"""Scopes whose `gen_ai.agent.name` on tool, model and task spans is the instrumentor's configured label
(opentelemetry-instrumentation-openai-agents-v2 writes its `agent_name`, default `OpenAI Agent`, on every span),
not the agent that ran the call: there the enclosing agent run names it."""
_NAME_PREFIXES = (
    "execute_tool", "invoke_agent", "invoke_workflow", "handle_conversation_turn", "chat", "generate_content",
    "text_completion", "call_llm",
)  # fmt: skip
GATE = Gate(keys=frozenset({OPERATION, HANDOFF_TARGET}), prefixes=_NAME_PREFIXES)


def recognizes(node: SpanNode) -> bool:
    attrs = node.attributes
    return OPERATION in attrs or node.name.startswith(_NAME_PREFIXES) or HANDOFF_TARGET in attrs


def classify(node: SpanNode) -> AgentRun | ToolCall | ModelRequest | Handoff | bool:
    """`recognizes` then the one reader the span's operation selects (same answers as the four readers)."""
    attrs = node.attributes
    if OPERATION in attrs:
        op = attrs[OPERATION]
        if type(op) is not str:
            op = None
        elif _openlit_agent_turn(node, op):
            op = "invoke_agent"
    elif node.name.startswith(_NAME_PREFIXES) or HANDOFF_TARGET in attrs:
        op = operation(node)
    else:
        return False
    if op == "execute_tool":
        return _tool_call(node) or handoff(node) or True
    if op in MODEL_OPERATIONS:
        return _model_request(node)
    if op in RUN_OPERATIONS:
        return _agent_run(node, op) or handoff(node) or True
    return handoff(node) or True


def operation(node: SpanNode) -> str | None:
    """`gen_ai.operation.name`, else the operation implied by a conventional span name."""
    attrs = node.attributes
    op = attrs.get(OPERATION)
    if op is not None:
        if not isinstance(op, str):
            return None
        return "invoke_agent" if _openlit_agent_turn(node, op) else op
    head = node.name.partition(" ")[0]
    if head == "execute_tool":  # (a failed OpenLIT smolagents tool span: its name and `error.type` only)
        return head if "gen_ai.tool.name" in attrs or "error.type" in attrs else None
    if head in RUN_OPERATIONS:
        return head
    if (head in MODEL_OPERATIONS or head == "call_llm") and (
        "gen_ai.request.model" in attrs or "gen_ai.system" in attrs or "gen_ai.provider.name" in attrs
    ):
        return "chat" if head == "call_llm" else head  # call_llm: Google ADK legacy
    return None


def _openlit_agent_turn(node: SpanNode, op: str) -> bool:
    """An OpenLIT AG2 message span (`OPENLIT_AG2_MESSAGE`) or Pydantic AI `execute_task` span: an agent run."""
    if op in MODEL_OPERATIONS:
        return OPENLIT_AG2_MESSAGE in node.attributes
    return op == "execute_task" and node.scope_name == OPENLIT_PYDANTIC_AI_SCOPE


def agent_run(node: SpanNode) -> AgentRun | None:
    op = operation(node)
    if op not in RUN_OPERATIONS:
        return None
    return _agent_run(node, op)


def _agent_run(node: SpanNode, op: str) -> AgentRun | None:
    """`agent_run` of a span whose operation is `op`, one of `RUN_OPERATIONS`; none for a span Traceloop
    marks as a workflow or task (`NOT_RUNS`), a smolagents step (`OPENLIT_SMOLAGENTS_STEP`) or a CrewAI Flow
    method's span (`OPENLIT_CREWAI_SCOPE`)."""
    attrs = node.attributes
    if attrs.get(TRACELOOP_KIND) in NOT_RUNS:
        return None
    if op == "invoke_agent" and (
        OPENLIT_SMOLAGENTS_STEP in attrs or ("gen_ai.agent.name" not in attrs and node.scope_name == OPENLIT_CREWAI_SCOPE)
    ):
        return None  # a step of the agent's run (smolagents), a CrewAI Flow method
    return AgentRun(
        name=first_str(attrs, "gen_ai.agent.name", "gen_ai.workflow.name")
        or (_name_suffix(node) if node.name.partition(" ")[0] in RUN_OPERATIONS else None),
        run_id=first_str(attrs, "gen_ai.agent.id"),
        input_tokens=first_int(attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
        output_tokens=first_int(attrs, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
        span=node,
        dialect=name,
        operation=op,
    )


def is_transfer(attrs: Any) -> bool:
    """A span recording a transfer of control to another agent (not an ordinary tool)."""
    for key in TRANSFER_KEYS:
        if key in attrs:
            return True
    return HANDOFF_TARGET in attrs


def handoff(node: SpanNode) -> Handoff | None:
    """A transfer span (`gen_ai.transfer.target.name` / `.mode` on `execute_tool`) or a span naming a
    handoff's target (`gen_ai.agent.handoff.target.name`): the source is the handoff's source agent, else
    the agent running the span (`gen_ai.agent.name`)."""
    attrs = node.attributes
    if not is_transfer(attrs):
        return None
    tool = first_str(attrs, "gen_ai.tool.name") if operation(node) == "execute_tool" else None
    call_id = first_str(attrs, "gen_ai.tool.call.id")
    error = node.status == "error" or "error.type" in attrs
    return Handoff(
        source=first_str(attrs, HANDOFF_SOURCE, "gen_ai.agent.name"),
        target=first_str(attrs, "gen_ai.transfer.target.name", HANDOFF_TARGET),
        tool=tool,
        call_id=call_id if call_id != NO_CALL_ID else None,
        mode=first_str(attrs, "gen_ai.transfer.mode"),
        status="error" if error else "ok",
        span=node,
        dialect=name,
    )


def tool_call(node: SpanNode) -> ToolCall | None:
    if operation(node) != "execute_tool":
        return None
    return _tool_call(node)


def _tool_call(node: SpanNode) -> ToolCall | None:
    """`tool_call` of a span whose operation is `execute_tool`."""
    attrs = node.attributes
    named_elsewhere = node.scope_name in (OPENLIT_PYDANTIC_AI_SCOPE, TRACELOOP_JS_LANGCHAIN_SCOPE)
    tool = first_str(attrs, "gen_ai.tool.name") or (_name_suffix(node) if not named_elsewhere else None)
    unnamed = tool is None and not named_elsewhere and not is_transfer(attrs)
    if not unnamed and (tool is None or tool == _ADK_MERGED or is_transfer(attrs)):
        return None
    raw = attrs.get("gen_ai.tool.call.arguments")
    result = attrs.get("gen_ai.tool.call.result")
    call_id = attrs.get("gen_ai.tool.call.id")
    if raw is None and node.events:  # Strands legacy mode: content in span events
        raw = event_attribute(node, "gen_ai.tool.message", "content")
        if result is None:
            result = event_attribute(node, "gen_ai.choice", "message")
        if call_id is None:
            call_id = event_attribute(node, "gen_ai.tool.message", "id")
    if raw is None and _ADK_ARGS in attrs:  # Google ADK's legacy schema; "{}" for both = content off
        raw, result = attrs[_ADK_ARGS], attrs.get(_ADK_RESULT)
        if raw == "{}" and result in (None, "{}"):
            raw = result = None
    call = new_tool_call(tool or "", raw, node, name)
    if unnamed:
        call.name_missing = (
            f"the span ({node.name!r}) records a tool execution without gen_ai.tool.name, and its name names no tool"
        )
    if call_id is not None and call_id != NO_CALL_ID and not _run_id(call_id, node):
        call.call_id = str(call_id)
    if result is not None:
        call.result = result
    set_failure(call, node)
    if call.status == "ok" and node.scope_name == ADK_SCOPE and (error := adk_error(result)) is not None:
        call.status, call.error = "error", error
    return call


def _run_id(call_id: Any, node: SpanNode) -> bool:
    """`call_id` is the instrumentation's or framework's own id, not the model's call id (OpenLIT's LangChain tool
    span of a call that raised, OpenLIT's smolagents tool spans)."""
    if node.scope_name not in RUN_ID_SCOPES:
        return False
    try:
        uuid.UUID(str(call_id))
    except ValueError:
        return False
    return True


def requested_calls(attrs: Mapping[str, Any]) -> list[Requested]:
    """The tool calls a model span records: its output messages' tool-call parts, else OpenLIT's summary. When
    both name the same tools in the same order, the summary's call ids win (for a Responses API function call,
    OpenLIT's tool-call part holds the output item's id, `fc_...`, its summary the call id)."""
    raw = attrs.get(OUTPUT_MESSAGES)
    if raw is not None and (found := otel_requests(raw)):
        if SUMMARY_IDS in attrs:
            summary = summary_requests(attrs)
            if [r.name for r in summary] == [r.name for r in found]:
                return [r._replace(call_id=s.call_id or r.call_id) for r, s in zip(found, summary, strict=True)]
        return found
    return summary_requests(attrs) if SUMMARY_IDS in attrs else []


def model_request(node: SpanNode) -> ModelRequest | None:
    if operation(node) not in MODEL_OPERATIONS:
        return None
    return _model_request(node)


def _model_request(node: SpanNode) -> ModelRequest:
    """`model_request` of a span whose operation is one of `MODEL_OPERATIONS`."""
    attrs = node.attributes
    return ModelRequest(
        model=first_str(attrs, "gen_ai.request.model", "gen_ai.response.model") or _model_in_name(node),
        input_tokens=first_int(attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
        output_tokens=first_int(attrs, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
        response_model=first_str(attrs, "gen_ai.response.model"),
        provider=first_str(attrs, "gen_ai.provider.name", "gen_ai.system"),
        cache_read_tokens=first_int(
            attrs, "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens"
        ),
        span=node,
        dialect=name,
        cost=cost_of(attrs) or _openlit_cost(attrs),
    )


def _model_in_name(node: SpanNode) -> str | None:
    """The model a `{op} {model}` span name gives, unless the suffix names an OpenLIT component (`OPENLIT_COMPONENT`)."""
    suffix = _name_suffix(node)
    return suffix if suffix is None or suffix != node.attributes.get(OPENLIT_COMPONENT) else None


def _openlit_cost(attrs: Mapping[str, Any]) -> Cost | None:
    """OpenLIT's `gen_ai.usage.cost`: a number, computed by OpenLIT from its pricing table (prices in USD).
    The integer 0 is OpenLIT's "not priced" (the model is not in its pricing table, or pricing failed): a
    computed price is a float, even when it is 0.0, so an integer 0 is no cost recorded (None), not a free call."""
    amount = attrs.get(OPENLIT_COST)
    if type(amount) is not float and type(amount) is not int:
        return None
    if type(amount) is int and amount == 0:
        return None
    return Cost(float(amount), "USD", "local")


def decisions(node: SpanNode) -> list[tuple[int, str, str | None, str | None]]:
    """`(time_ns, outcome, call_id, tool_name)` of the `gen_ai.tool.call.decision` events on the span and in
    the log records attached to it (outcomes other than allow / deny / require_approval are skipped)."""
    found = []
    if node.source.events:
        for event in node.events:
            if event.name == DECISION_EVENT:
                found.append((event.time_ns, event.attributes))
    for record in node.logs:
        if event_name(record) == DECISION_EVENT:
            found.append((record.time_ns, record.attributes))
    out = []
    for time_ns, attrs in found:
        outcome = attrs.get(DECISION_OUTCOME)
        if isinstance(outcome, str) and outcome in DECISIONS:
            out.append(
                (time_ns, outcome, first_str(attrs, "gen_ai.tool.call.id"), first_str(attrs, "gen_ai.tool.name"))
            )
    return out


def output_ref(attrs: Any) -> str | None:
    """The external reference to a model's output messages, when they were stored outside the span."""
    ref = attrs.get(OUTPUT_REF)
    return ref if isinstance(ref, str) and ref and OUTPUT_MESSAGES not in attrs else None


# --- helpers shared with the other dialect modules ---------------------------------------------------


def new_tool_call(tool: str, raw: Any, node: SpanNode, dialect: str) -> ToolCall:
    """A `ToolCall` from recorded arguments: JSON text (decoded lazily), a structured value, or None
    (also for an instrumentation's redaction marker, e.g. Strands' `[REDACTED]`)."""
    if isinstance(raw, str) and raw in REDACTED:
        raw = None
    if raw is None or isinstance(raw, str):
        return ToolCall._from_span(tool, raw, node, dialect)
    call = ToolCall._from_span(tool, json.dumps(raw, default=str), node, dialect)
    call._args = raw
    return call


def set_failure(call: ToolCall, node: SpanNode) -> None:
    """Status ERROR, `error.type` or Strands' `gen_ai.tool.status = error` make the attempt failed."""
    attrs = node.attributes
    error_type = attrs.get("error.type")
    if node.status == "error" or error_type is not None or attrs.get("gen_ai.tool.status") == "error":
        call.status = "error"
        call.error = node.status_message or (str(error_type) if error_type is not None else "error")


def adk_error(result: Any) -> str | None:
    """The error in a Google ADK tool response that reports a failed call (`error_type` and
    `error_details`, as ADK's retry plugin records them; or an `error` key), else None."""
    if isinstance(result, str) and '"error' in result:
        try:
            result = json.loads(result)
        except ValueError:
            return None
    if not isinstance(result, dict):
        return None
    if "error_type" in result:
        return f"{result['error_type']}: {result.get('error_details', '')}".rstrip(": ")
    return str(result["error"]) if result.get("error") else None


def event_attribute(node: SpanNode, event_name: str, key: str) -> Any:
    for event in node.events:
        if event.name == event_name and key in event.attributes:
            return event.attributes[key]
    return None


def _name_suffix(node: SpanNode) -> str | None:
    """`search` from `execute_tool search`, `gpt-4o` from `chat gpt-4o`."""
    return node.name.partition(" ")[2] or None
