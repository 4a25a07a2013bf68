"""OpenInference (Arize / Phoenix) spans (shared/reference/conventions.md §3).

Recognized by `openinference.span.kind` (UPPERCASE): `TOOL` is a tool call, `LLM` a model request, `AGENT`
an agent run; `CHAIN`, `RETRIEVER` and the other kinds are not steps. Tool arguments come from
`input.value`, else from `tool.parameters` unless that holds the tool's JSON schema (OpenAI Agents,
smolagents and CrewAI put the schema there; the Pydantic AI and Google ADK instrumentations the arguments).
`"__REDACTED__"` (the `OPENINFERENCE_HIDE_*` settings) means not recorded. Status OK is a normal success.
Spans that also carry `gen_ai.*` (the Pydantic AI processor, ADK) fall back to those attributes.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..trajectory import AgentRun, ModelRequest, ToolCall
from ._common import first_int, first_str
from .genai import adk_error, new_tool_call, set_failure

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..tree import SpanNode

__all__ = ["agent_run", "model_request", "name", "recognizes", "tool_call"]

name = "openinference"
MESSAGE_SHAPES = ("openinference", "otel")
"""Where this convention records a model's requested tool calls and the results it was given
(`_messages.requested` / `_messages.results`)."""

KIND = "openinference.span.kind"
REDACTED = "__REDACTED__"
_ADK_SCOPE = "openinference.instrumentation.google_adk"
_NOT_A_REQUEST = "._prepare_chat_with_tools"  # LlamaIndex: LLM-kind span that only builds the request


def recognizes(node: SpanNode) -> bool:
    return KIND in node.attributes


def agent_run(node: SpanNode) -> AgentRun | None:
    attrs = node.attributes
    if attrs.get(KIND) != "AGENT":
        return None
    return AgentRun(
        name=first_str(attrs, "agent.name", "gen_ai.agent.name") or node.name.removeprefix("invoke_agent "),
        run_id=first_str(attrs, "gen_ai.agent.call.id"),
        final_output=_content(attrs, "output.value"),
        input_tokens=first_int(attrs, "llm.token_count.prompt", "gen_ai.aggregated_usage.input_tokens"),
        output_tokens=first_int(attrs, "llm.token_count.completion", "gen_ai.aggregated_usage.output_tokens"),
        span=node,
        dialect=name,
    )


def tool_call(node: SpanNode) -> ToolCall | None:
    attrs = node.attributes
    if attrs.get(KIND) != "TOOL":
        return None
    tool = first_str(attrs, "tool.name", "gen_ai.tool.name") or node.name
    raw = _content(attrs, "input.value")
    if raw is None:
        params = _content(attrs, "tool.parameters")
        raw = params if params is not None and not _is_schema(params) else None
    if raw is None:
        raw = _content(attrs, "gen_ai.tool.call.arguments")
    call = new_tool_call(tool, raw, node, name)
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
    )


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
