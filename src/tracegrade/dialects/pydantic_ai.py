"""Pydantic AI instrumentation, versions 2-6 (see shared/reference/conventions.md §2).

v2: `agent run` / `running tool` / `running output function`, `tool_arguments` / `tool_response`.
v3+: `invoke_agent {agent}` / `execute_tool {tool}`, `gen_ai.tool.call.arguments` / `.result`;
output functions are told apart by `logfire.msg = "running output function: ..."`.
Deferred calls (`pydantic_ai.tool.deferral.name`; before v5 an ERROR span raising CallDeferred /
ApprovalRequired) never executed; retries (`pydantic_ai.tool.retry.*`) and argument-validation
failures (`pydantic_ai.tool.failure_stage = validation`) are failed attempts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..trajectory import AgentRun, ModelRequest, ToolCall
from ._common import first_int, first_str

if TYPE_CHECKING:
    from ..tree import SpanNode

__all__ = ["agent_run", "model_request", "name", "recognizes", "tool_call"]

name = "pydantic_ai"

SCOPE = "pydantic-ai"
_V2_NAMES = frozenset({"running tool", "running output function", "agent run", "running tools"})
_MSG_PREFIXES = ("running tool:", "running output function:", "invalid tool call:")
_DEFERRAL_EXCEPTIONS = ("CallDeferred", "ApprovalRequired")


def recognizes(node: SpanNode) -> bool:
    if node.name in _V2_NAMES:
        return True
    msg = node.attributes.get("logfire.msg")
    if isinstance(msg, str) and msg.startswith(_MSG_PREFIXES):
        return True
    return node.scope_name == SCOPE


def agent_run(node: SpanNode) -> AgentRun | None:
    nm = node.name
    attrs = node.attributes
    if not (nm == "agent run" or (nm.startswith("invoke_agent") and attrs.get("gen_ai.operation.name", "invoke_agent") == "invoke_agent")):
        return None
    return AgentRun(
        name=first_str(attrs, "gen_ai.agent.name", "agent_name"),
        run_id=first_str(attrs, "gen_ai.agent.call.id", "pydantic_ai.run_id"),
        final_output=attrs.get("final_result"),
        input_tokens=first_int(attrs, "gen_ai.aggregated_usage.input_tokens", "gen_ai.usage.input_tokens"),
        output_tokens=first_int(attrs, "gen_ai.aggregated_usage.output_tokens", "gen_ai.usage.output_tokens"),
        span=node,
        dialect=name,
    )


def tool_call(node: SpanNode) -> ToolCall | None:
    nm = node.name
    if nm != "running tool" and nm != "running output function" and not nm.startswith("execute_tool "):
        return None
    attrs = node.attributes
    tool = attrs.get("gen_ai.tool.name")
    if not isinstance(tool, str):
        return None
    raw = attrs.get("gen_ai.tool.call.arguments", attrs.get("tool_arguments"))
    call = ToolCall._from_span(tool, raw if isinstance(raw, str) or raw is None else str(raw), node, name)
    if raw is not None and not isinstance(raw, str):
        call._args = raw
    if (cid := attrs.get("gen_ai.tool.call.id")) is not None:
        call.call_id = str(cid)
    result = attrs.get("gen_ai.tool.call.result", attrs.get("tool_response"))
    if result is not None:
        call.result = result
    msg = attrs.get("logfire.msg")
    if nm == "running output function" or (isinstance(msg, str) and msg.startswith("running output function:")):
        call.output_function = True
    deferral = attrs.get("pydantic_ai.tool.deferral.name")
    if isinstance(deferral, str):
        call.deferred = deferral
    if (cause := attrs.get("pydantic_ai.tool.retry.cause")) is not None:
        call.retry_cause = str(cause)
        call.retry_attempt = first_int(attrs, "pydantic_ai.tool.retry.attempt")
    if attrs.get("pydantic_ai.tool.failure_stage") == "validation":
        call.status = "error"
        call.retry_cause = call.retry_cause or "validation_error"
    if node.status == "error":
        exc = _exception_type(node)
        if call.deferred is None and exc is not None and exc.endswith(_DEFERRAL_EXCEPTIONS):
            call.deferred = exc.rsplit(".", 1)[-1]  # before v5, deferrals were ERROR spans
        if call.deferred is None:
            call.status = "error"
            call.error = node.status_message or exc or "error"
    return call


def model_request(node: SpanNode) -> ModelRequest | None:
    attrs = node.attributes
    if attrs.get("gen_ai.operation.name") != "chat" or "gen_ai.request.model" not in attrs:
        return None
    return ModelRequest(
        model=first_str(attrs, "gen_ai.request.model"),
        input_tokens=first_int(attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
        output_tokens=first_int(attrs, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
        response_model=first_str(attrs, "gen_ai.response.model"),
        provider=first_str(attrs, "gen_ai.provider.name", "gen_ai.system"),
        cache_read_tokens=first_int(attrs, "gen_ai.usage.cache_read.input_tokens"),
        span=node,
        dialect=name,
    )


def _exception_type(node: SpanNode) -> str | None:
    for event in node.events:
        if event.name == "exception":
            t = event.attributes.get("exception.type")
            if isinstance(t, str):
                return t
    return None
