"""Pydantic AI instrumentation, versions 2-6 (see shared/reference/conventions.md §2).

v2: `agent run` / `running tool` / `running output function`, `tool_arguments` / `tool_response`.
v3+: `invoke_agent {agent}` / `execute_tool {tool}`, `gen_ai.tool.call.arguments` / `.result`;
output functions are told apart by `logfire.msg = "running output function: ..."`.
Deferred calls (`pydantic_ai.tool.deferral.name`; before v5 an ERROR span raising CallDeferred /
ApprovalRequired) never executed; retries (`pydantic_ai.tool.retry.*`) and argument-validation
failures (`pydantic_ai.tool.failure_stage = validation`) are failed attempts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..trajectory import AgentRun, ModelRequest, ToolCall
from ._common import COST_AMOUNT, cost_of, first_int, first_str
from ._dispatch import Gate

if TYPE_CHECKING:
    from ..tree import SpanNode

__all__ = ["agent_run", "classify", "model_request", "name", "recognizes", "tool_call"]

name = "pydantic_ai"
MESSAGE_SHAPES = ("otel",)
"""Where this convention records a model's requested tool calls and the results it was given
(`_messages.requested` / `_messages.results`)."""

SCOPE = "pydantic-ai"
RUN_MESSAGES = ("pydantic_ai.all_messages",)
"""Agent-span attributes holding the run's messages (OTel JSON form), read to recover tool arguments."""
_V2_NAMES = frozenset({"running tool", "running output function", "agent run", "running tools"})
_MSG_PREFIXES = ("running tool:", "running output function:", "invalid tool call:")
_DEFERRAL_EXCEPTIONS = ("CallDeferred", "ApprovalRequired")
GATE = Gate(keys=frozenset({"logfire.msg"}), names=_V2_NAMES, prefixes=("chat ", "execute_tool "), scopes=frozenset({SCOPE}))


def recognizes(node: SpanNode) -> bool:
    if node.name in _V2_NAMES:
        return True
    msg = node.attributes.get("logfire.msg")
    if isinstance(msg, str) and msg.startswith(_MSG_PREFIXES):
        return True
    if msg is None and "gen_ai.agent.call.id" in node.attributes and node.name.startswith(("chat ", "execute_tool ")):
        return True  # a model request or tool call of an agent run, recorded without its scope
    return node.scope_name == SCOPE


def classify(node: SpanNode) -> AgentRun | ToolCall | ModelRequest | bool:
    """One pass over a span: False when not a Pydantic AI span, True when it is one but not a step
    (e.g. `running tools`), else the step. Same answers as `recognizes` + the three functions, with
    the span name deciding which one to ask (this runs on every span)."""
    nm = node.name
    if nm.startswith("chat "):
        if not _is_mine(node, nm):
            return False
        return model_request(node) or True
    if nm.startswith("execute_tool ") or nm == "running tool" or nm == "running output function":
        if not _is_mine(node, nm):
            return False
        return _tool_call(node, nm) or model_request(node) or True
    if nm not in _V2_NAMES:  # `recognizes`, inlined
        msg = node.attributes.get("logfire.msg")
        if not (isinstance(msg, str) and msg.startswith(_MSG_PREFIXES)) and node.scope_name != SCOPE:
            return False
    return agent_run(node) or model_request(node) or True


def _is_mine(node: SpanNode, nm: str) -> bool:
    if nm in _V2_NAMES:  # a v2 span name is Pydantic AI's whatever its logfire.msg (as `recognizes` says)
        return True
    attrs = node.attributes
    msg = attrs.get("logfire.msg")
    if msg is not None:
        return (isinstance(msg, str) and msg.startswith(_MSG_PREFIXES)) or node.scope_name == SCOPE
    return "gen_ai.agent.call.id" in attrs or nm in _V2_NAMES or node.scope_name == SCOPE


def agent_run(node: SpanNode) -> AgentRun | None:
    nm = node.name
    attrs = node.attributes
    if not (
        nm == "agent run"
        or (nm.startswith("invoke_agent") and attrs.get("gen_ai.operation.name", "invoke_agent") == "invoke_agent")
    ):
        return None
    get = attrs.get  # each value is read directly when it has the usual type, else by the general helper
    agent, run_id = get("gen_ai.agent.name"), get("gen_ai.agent.call.id")
    inp, out = get(_TOTAL_INPUT), get(_TOTAL_OUTPUT)
    return AgentRun(
        agent if type(agent) is str and agent else first_str(attrs, "gen_ai.agent.name", "agent_name"),
        run_id if type(run_id) is str and run_id else first_str(attrs, "gen_ai.agent.call.id", "pydantic_ai.run_id"),
        get("final_result"),
        inp if type(inp) is int else first_int(attrs, _TOTAL_INPUT, "gen_ai.usage.input_tokens"),
        out if type(out) is int else first_int(attrs, _TOTAL_OUTPUT, "gen_ai.usage.output_tokens"),
        span=node,
        dialect=name,
    )


_TOTAL_INPUT, _TOTAL_OUTPUT = "gen_ai.aggregated_usage.input_tokens", "gen_ai.aggregated_usage.output_tokens"


def tool_call(node: SpanNode) -> ToolCall | None:
    nm = node.name
    if nm != "running tool" and nm != "running output function" and not nm.startswith("execute_tool "):
        return None
    return _tool_call(node, nm)


def _tool_call(node: SpanNode, nm: str) -> ToolCall | None:
    """`tool_call` of a span whose name is a tool span's."""
    attrs = node.attributes
    get = attrs.get
    tool = get("gen_ai.tool.name")
    if type(tool) is not str:
        return None
    raw = get("gen_ai.tool.call.arguments")
    if raw is None:
        raw = get("tool_arguments")
    call = ToolCall._from_span(tool, raw if raw is None or type(raw) is str else str(raw), node, name)
    if raw is not None and type(raw) is not str:
        call._args = raw
    if (cid := get("gen_ai.tool.call.id")) is not None:
        call.call_id = str(cid)
    result = get("gen_ai.tool.call.result")
    if result is None:
        result = get("tool_response")
    if result is not None:
        call.result = result
    msg = get("logfire.msg")
    if nm == "running output function" or (type(msg) is str and msg.startswith("running output function:")):
        call.output_function = True
    _rare_attributes(call, attrs)
    if node.status == "error":
        exc = _exception_type(node)
        if call.deferred is None and exc is not None and exc.endswith(_DEFERRAL_EXCEPTIONS):
            call.deferred = exc.rsplit(".", 1)[-1]  # before v5, deferrals were ERROR spans
        if call.deferred is None:
            call.status = "error"
            call.error = node.status_message or exc or "error"
    return call


def _rare_attributes(call: ToolCall, attrs: Mapping[str, Any]) -> None:
    deferral = attrs.get("pydantic_ai.tool.deferral.name")
    if isinstance(deferral, str):
        call.deferred = deferral
    if (cause := attrs.get("pydantic_ai.tool.retry.cause")) is not None:
        call.retry_cause = str(cause)
        call.retry_attempt = first_int(attrs, "pydantic_ai.tool.retry.attempt")
    if attrs.get("pydantic_ai.tool.failure_stage") == "validation":
        call.status = "error"
        call.retry_cause = call.retry_cause or "validation_error"


def model_request(node: SpanNode) -> ModelRequest | None:
    attrs = node.attributes
    get = attrs.get
    if get("gen_ai.operation.name") != "chat" or "gen_ai.request.model" not in attrs:
        return None
    inp, out, cache = get("gen_ai.usage.input_tokens"), get("gen_ai.usage.output_tokens"), get(_CACHE_READ)
    model, response, provider = get("gen_ai.request.model"), get("gen_ai.response.model"), get("gen_ai.provider.name")
    return ModelRequest(
        model if type(model) is str else None,
        inp if type(inp) is int else first_int(attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
        out if type(out) is int else first_int(attrs, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
        response if type(response) is str else None,
        provider if type(provider) is str else first_str(attrs, "gen_ai.system"),
        cache if type(cache) is int else None,
        None,
        node,
        name,
        cost=cost_of(attrs) if COST_AMOUNT in attrs else None,
    )


_CACHE_READ = "gen_ai.usage.cache_read.input_tokens"


def _exception_type(node: SpanNode) -> str | None:
    for event in node.events:
        if event.name == "exception":
            t = event.attributes.get("exception.type")
            if isinstance(t, str):
                return t
    return None
