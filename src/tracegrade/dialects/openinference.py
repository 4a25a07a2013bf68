"""OpenInference (Arize / Phoenix) spans (shared/reference/conventions.md §3).

Recognized by `openinference.span.kind` (UPPERCASE): `TOOL` is a tool call, `LLM` a model request, `AGENT`
an agent run; `CHAIN`, `RETRIEVER` and the other kinds are not steps. A `TOOL` span that transfers control
(the OpenAI Agents SDK's `handoff to {agent}` span, or GenAI transfer / handoff attributes) is a `Handoff`,
not a tool call. `llm.cost.*` is the request's `Cost`, in USD. Tool arguments come from
`input.value`, else from `tool.parameters` unless that holds the tool's JSON schema (OpenAI Agents,
smolagents and CrewAI put the schema there; the Pydantic AI and Google ADK instrumentations the arguments).
DSPy's tool spans are named `{tool}.__call__` / `{tool}.acall` (no `tool.name`) and record the arguments as
`{"kwargs": {...}}`, read as the kwargs. DSPy's ReAct asks the model for the next tool as text fields it parses
itself (`next_tool_name`, `next_tool_args`), never as tool calls: the model spans hold no requested call, and
that text is not read as one — the TOOL spans are the calls.
`"__REDACTED__"` (the `OPENINFERENCE_HIDE_*` settings) means not recorded. An agent run is named by
`agent.name`, else `graph.node.name` / `graph.node.id` (CrewAI and AutoGen record the agent's role or name
there, and name the span after the method, `support._execute_core`), else by its span name. Status OK is a normal success.
Spans that also carry `gen_ai.*` (the Pydantic AI and Agent Framework processors, ADK) fall back to those attributes.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..trajectory import AgentRun, Cost, Handoff, ModelRequest, ToolCall
from ._common import COST_AMOUNT, cost_of, first_int, first_str
from ._dispatch import Gate
from ._messages import flattened_results, otel_results
from .genai import HANDOFF_SOURCE, HANDOFF_TARGET, NO_CALL_ID, adk_error, is_transfer, new_tool_call, set_failure

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..tree import SpanNode

__all__ = [
    "agent_run", "classify", "cost", "handoff", "model_request", "name", "recognizes", "tool_call", "tool_results",
]  # fmt: skip

name = "openinference"
MESSAGE_SHAPES = ("openinference", "otel")
"""Where this convention records a model's requested tool calls (`_messages.requested`); the results it was
given are read by `tool_results`."""

ARGS_MAY_BE_WRAPPED = True
"""Tool spans may record the framework's wrapper around the arguments (smolagents' `{"args", "kwargs", ...}`,
LlamaIndex's `{"kwargs"}`, LangGraph's bare string): `dialects.extract` prefers the model's requested ones."""

KIND = "openinference.span.kind"
GATE = Gate(keys=frozenset({KIND}))
_GENAI_INPUT = "gen_ai.input.messages"
REDACTED = "__REDACTED__"
_ADK_SCOPE = "openinference.instrumentation.google_adk"
_SMOLAGENTS_SCOPE = "openinference.instrumentation.smolagents"
_DSPY_SCOPE = "openinference.instrumentation.dspy"
_DSPY_TOOL_SUFFIXES = (".__call__", ".acall")
"""DSPy's instrumentor names a tool span `{tool}.__call__` / `{tool}.acall` and records no `tool.name`."""
_NOT_A_REQUEST = "._prepare_chat_with_tools"  # LlamaIndex: LLM-kind span that only builds the request
COST_TOTAL, COST_PROMPT, COST_COMPLETION = "llm.cost.total", "llm.cost.prompt", "llm.cost.completion"
HANDOFF_NAME = "handoff"
"""The OpenAI Agents SDK's handoff span, as OpenInference records it: kind TOOL, named `handoff to {agent}`
(or `handoff` without a target), no `tool.name`."""
_HANDOFF_TO = HANDOFF_NAME + " to "


def recognizes(node: SpanNode) -> bool:
    return KIND in node.attributes


def classify(node: SpanNode) -> AgentRun | ToolCall | ModelRequest | Handoff | bool:
    """The span kind selects the one reader to ask (same answers as `recognizes` and the three readers)."""
    attrs = node.attributes
    if KIND not in attrs:
        return False
    kind = attrs[KIND]
    if kind == "TOOL":
        if _is_handoff(node, attrs):
            return handoff(node) or True
        return tool_call(node) or True
    if kind == "LLM":
        return model_request(node) or True
    if kind == "AGENT":
        return agent_run(node) or True
    return True


def agent_run(node: SpanNode) -> AgentRun | None:
    attrs = node.attributes
    if attrs.get(KIND) != "AGENT":
        return None
    return AgentRun(
        name=first_str(attrs, "agent.name", "gen_ai.agent.name", "graph.node.name", "graph.node.id")
        or _agent_of_span_name(node),
        run_id=first_str(attrs, "gen_ai.agent.call.id"),
        final_output=_content(attrs, "output.value"),
        input_tokens=first_int(attrs, "llm.token_count.prompt", "gen_ai.aggregated_usage.input_tokens"),
        output_tokens=first_int(attrs, "llm.token_count.completion", "gen_ai.aggregated_usage.output_tokens"),
        span=node,
        dialect=name,
    )


def _agent_of_span_name(node: SpanNode) -> str:
    """An AGENT span's agent when no attribute names it: smolagents' instrumentation names the span
    `{agent name}.run`; the others `invoke_agent {agent}` or the agent itself."""
    span_name = node.name
    if span_name.endswith(".run") and node.scope_name == _SMOLAGENTS_SCOPE:
        return span_name.removesuffix(".run")
    return span_name.removeprefix("invoke_agent ")


def _is_handoff(node: SpanNode, attrs: Mapping[str, Any]) -> bool:
    """A TOOL span that transfers control: the OpenAI Agents SDK's handoff span, or one carrying the GenAI
    transfer / handoff attributes."""
    name_ = node.name
    if name_.startswith(HANDOFF_NAME) and (name_ == HANDOFF_NAME or name_.startswith(_HANDOFF_TO)):
        return "tool.name" not in attrs or is_transfer(attrs)
    return is_transfer(attrs)


def handoff(node: SpanNode) -> Handoff | None:
    """A TOOL span that transfers control to another agent (`_is_handoff`): the target from the GenAI
    transfer / handoff attributes, else from the span name (`handoff to {agent}`); the source from
    `gen_ai.agent.handoff.source.name` / `gen_ai.agent.name` when recorded (else `dialects.extract` takes
    the agent run the span sits in)."""
    attrs = node.attributes
    if attrs.get(KIND) != "TOOL" or not _is_handoff(node, attrs):
        return None
    call_id = first_str(attrs, "tool_call.id", "tool.id", "gen_ai.tool.call.id")
    return Handoff(
        source=first_str(attrs, HANDOFF_SOURCE, "gen_ai.agent.name"),
        target=first_str(attrs, "gen_ai.transfer.target.name", HANDOFF_TARGET)
        or (node.name[len(_HANDOFF_TO) :] or None if node.name.startswith(_HANDOFF_TO) else None),
        tool=first_str(attrs, "tool.name", "gen_ai.tool.name"),
        call_id=call_id if call_id != NO_CALL_ID else None,
        mode=first_str(attrs, "gen_ai.transfer.mode"),
        status="error" if node.status == "error" or "error.type" in attrs else "ok",
        span=node,
        dialect=name,
    )


def _tool_of_span_name(node: SpanNode) -> str:
    """The tool a TOOL span without `tool.name` calls: its span name, less DSPy's method suffix."""
    span_name = node.name
    if node.scope_name == _DSPY_SCOPE:
        for suffix in _DSPY_TOOL_SUFFIXES:
            if span_name.endswith(suffix) and len(span_name) > len(suffix):
                return span_name.removesuffix(suffix)
    return span_name


def tool_call(node: SpanNode) -> ToolCall | None:
    attrs = node.attributes
    if attrs.get(KIND) != "TOOL" or _is_handoff(node, attrs):
        return None
    tool = first_str(attrs, "tool.name", "gen_ai.tool.name") or _tool_of_span_name(node)
    raw = _content(attrs, "input.value")
    if raw is None:
        params = _content(attrs, "tool.parameters")
        raw = params if params is not None and not _is_schema(params) else None
    if raw is None:
        raw = _content(attrs, "gen_ai.tool.call.arguments")
    call = new_tool_call(tool, raw, node, name)
    if raw is not None and node.scope_name == _DSPY_SCOPE:
        args = call.args  # DSPy's `Tool.__call__(**kwargs)`, recorded as its bound arguments `{"kwargs": {...}}`
        if isinstance(args, dict) and args.keys() == {"kwargs"} and isinstance(args["kwargs"], dict):
            call._args = args["kwargs"]
    if (call_id := first_str(attrs, "tool_call.id", "tool.id", "gen_ai.tool.call.id")) is not None:
        call.call_id = call_id
    result = _content(attrs, "output.value")
    if result is None:
        result = _content(attrs, "gen_ai.tool.call.result")
    if result is not None:
        call.result = result
    set_failure(call, node)
    if call.status == "ok" and node.scope_name.startswith(_ADK_SCOPE) and isinstance(result, str):
        try:  # Google ADK reports a failed call inside the function response: {"id", "name", "response"}
            response = json.loads(result).get("response") if result.startswith("{") else None
        except (ValueError, AttributeError):
            response = None
        if (error := adk_error(response)) is not None:
            call.status, call.error = "error", error
    # A Pydantic AI span post-processed by the OpenInference processor, read without its scope:
    if (cause := attrs.get("pydantic_ai.tool.retry.cause")) is not None:
        call.retry_cause = str(cause)
    if isinstance(deferral := attrs.get("pydantic_ai.tool.deferral.name"), str):
        call.deferred = deferral
    return call


def model_request(node: SpanNode) -> ModelRequest | None:
    attrs = node.attributes
    if attrs.get(KIND) != "LLM" or node.name.endswith(_NOT_A_REQUEST):
        return None
    return ModelRequest(
        model=first_str(attrs, "llm.model_name", "llm.request.model_name", "gen_ai.request.model"),
        input_tokens=first_int(attrs, "llm.token_count.prompt", "gen_ai.usage.input_tokens"),
        output_tokens=first_int(attrs, "llm.token_count.completion", "gen_ai.usage.output_tokens"),
        response_model=first_str(attrs, "llm.response.model_name", "gen_ai.response.model"),
        provider=first_str(attrs, "llm.provider", "llm.system", "gen_ai.provider.name", "gen_ai.system"),
        cache_read_tokens=first_int(
            attrs, "llm.token_count.prompt_details.cache_read", "gen_ai.usage.cache_read.input_tokens"
        ),
        span=node,
        dialect=name,
        cost=cost(attrs)
        if COST_TOTAL in attrs or COST_PROMPT in attrs or COST_COMPLETION in attrs or COST_AMOUNT in attrs
        else None,
    )


def tool_results(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """`{call_id: result}` of the tool messages in a model-request span's input: the flattened
    `llm.input_messages.N.message.{role=tool, tool_call_id, content}`, overridden by the GenAI
    `gen_ai.input.messages` parts a converting processor keeps beside them (Agent Framework's), which hold one
    result per call id where its flattened copy joins a tool message's results under the last id."""
    found = flattened_results(attrs, "openinference")
    if (raw := attrs.get(_GENAI_INPUT)) is not None:
        found.update(otel_results(raw))
    return found


def cost(attrs: Mapping[str, Any]) -> Cost | None:
    """`llm.cost.total`, else `llm.cost.prompt` + `llm.cost.completion` (the spec's total), in USD: the
    OpenInference semantic conventions (spec/semantic_conventions.md) define every `llm.cost.*` value as
    an amount in USD. Falls back to `gen_ai.usage.cost.*` (a span carrying both conventions)."""
    total = _amount(attrs.get(COST_TOTAL))
    if total is None:
        parts = [_amount(attrs.get(key)) for key in (COST_PROMPT, COST_COMPLETION)]
        total = sum(p for p in parts if p is not None) if any(p is not None for p in parts) else None
    if total is None:
        return cost_of(attrs)
    return Cost(total, "USD")


def _amount(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _content(attrs: Mapping[str, Any], key: str) -> Any:
    """The attribute's value, None when absent or redacted."""
    value = attrs.get(key)
    return None if value == REDACTED else value


def _is_schema(value: Any) -> bool:
    """A JSON schema of the tool's parameters, not arguments: `{"type": "object", "properties": ...}`,
    or a bare properties map whose every value is a `{"type": ...}` object (smolagents)."""
    if isinstance(value, str):
        if not value.lstrip().startswith("{"):
            return False
        try:
            value = json.loads(value)
        except ValueError:
            return False
    if not isinstance(value, dict) or not value:
        return False
    if value.get("type") == "object" and "properties" in value:
        return True
    return all(isinstance(v, dict) and "type" in v for v in value.values())
