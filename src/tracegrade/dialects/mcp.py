"""MCP (Model Context Protocol) client and server spans of a `tools/call` request.

Three shapes: the MCP semantic conventions (`mcp.method.name`; the tool in `gen_ai.tool.name`, else in the span
name `tools/call {tool}` or the MCP SDK's client span `MCP send tools/call {tool}`; arguments and result, when
content is recorded, in `gen_ai.tool.call.arguments` / `.result`, which the 2026 conventions put on the server
span — the MCP SDK 2.x and FastMCP record neither); and Logfire's `instrument_mcp()` (mcp 1.x), a
client span `MCP request: tools/call {tool}` and a server span `MCP server handle request: tools/call`,
each holding the JSON-RPC `request` (tool name and arguments in `params`) and `response` (`content`,
`isError`) whatever the content settings. A span that also carries `gen_ai.operation.name=execute_tool` is
read by the GenAI conventions first; every other MCP method (`initialize`, `tools/list`, ...) is no step.
`jsonrpc.request.id` numbers JSON-RPC messages: it is not the model's tool call id.

The third, OpenLIT's MCP instrumentation (mcp 1.x), writes `mcp {method}` spans with `mcp.method` (the wrapped
function's name): its client span of `ClientSession.call_tool` (`mcp.method=call_tool`, twice nested: the async
wrapper around the sync one, whose response is a placeholder for the coroutine) names the tool in
`mcp.tool.name` and, with content capture on, records `mcp.tool.arguments` and the `CallToolResult` in
`mcp.response.payload` (content items as Python reprs: only `structuredContent` and `isError` are read). Its
server spans name the tool only inside the request payload and sit in the server's own trace (no context is
taken from the request): they are no step, so the call is not counted again.

One call is usually seen several times — the framework's tool span, the MCP client's span, the server's
span in the same trace: `dialects.extract` merges a tool span inside a tool span of the same tool into the
outer one, which takes the arguments, result and failure it lacks from them. Alone (an MCP server's own
trace), such a span is the call.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..trajectory import AgentRun, ModelRequest, ToolCall
from ._common import first_str
from ._dispatch import Gate
from .genai import new_tool_call, set_failure

if TYPE_CHECKING:
    from ..tree import SpanNode

__all__ = ["agent_run", "classify", "model_request", "name", "recognizes", "tool_call"]

name = "mcp"

METHOD = "mcp.method.name"
TOOLS_CALL = "tools/call"
ARGUMENTS, RESULT = "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"
"""Where the MCP conventions put a `tools/call` span's arguments and result (opt-in content, on the server span)."""
OPENLIT_METHOD = "mcp.method"
"""OpenLIT's MCP spans: the name of the function it wrapped (`call_tool`, `list_tools`, `send_request`, ...)."""
_NAME_PREFIXES = ("MCP request: ", "MCP server handle request: ", "MCP send ")
"""Span names of Logfire's MCP client / server spans and of the MCP SDK's client spans."""
GATE = Gate(keys=frozenset({METHOD, OPENLIT_METHOD}), prefixes=_NAME_PREFIXES)


def recognizes(node: SpanNode) -> bool:
    attrs = node.attributes
    return METHOD in attrs or OPENLIT_METHOD in attrs or node.name.startswith(_NAME_PREFIXES)


def classify(node: SpanNode) -> ToolCall | bool:
    """`recognizes` then `tool_call` (MCP spans are never agent runs or model requests)."""
    attrs = node.attributes
    if METHOD not in attrs and OPENLIT_METHOD not in attrs and not node.name.startswith(_NAME_PREFIXES):
        return False
    return tool_call(node) or True


def agent_run(node: SpanNode) -> AgentRun | None:
    return None


def model_request(node: SpanNode) -> ModelRequest | None:
    return None


def tool_call(node: SpanNode) -> ToolCall | None:
    attrs = node.attributes
    if METHOD not in attrs and OPENLIT_METHOD in attrs:
        return _openlit_call(node)
    method, _, target = _unprefixed(node.name).partition(" ")
    if (first_str(attrs, METHOD, "rpc.method") or method) != TOOLS_CALL:
        return None
    request = _decode(attrs.get("request")) if node.name.startswith(_NAME_PREFIXES[:2]) else None
    params = request.get("params") if isinstance(request, dict) else None
    if not isinstance(params, dict):
        params = {}
    tool = first_str(attrs, "gen_ai.tool.name") or first_str(params, "name") or (target if " " not in target else "")
    if not tool:
        return None
    if params:
        args = params.get("arguments", {})  # a recorded request without arguments: none were given
        call = new_tool_call(tool, args if isinstance(args, dict) else None, node, name)
    else:  # the MCP conventions: the GenAI attributes, where the instrumentation records them
        call = new_tool_call(tool, attrs.get(ARGUMENTS), node, name)
        if (result := attrs.get(RESULT)) is not None:
            call.result = result
        if (call_id := attrs.get("gen_ai.tool.call.id")) is not None:
            call.call_id = str(call_id)
    response = _decode(attrs.get("response")) if params else None
    if isinstance(response, dict):
        call.result = _result(response)
    set_failure(call, node)
    if call.status == "ok" and isinstance(response, dict) and response.get("isError") is True:
        call.status, call.error = "error", str(call.result)
    return call


def _openlit_call(node: SpanNode) -> ToolCall | None:
    """OpenLIT's client span of `ClientSession.call_tool`; its server spans (no `mcp.tool.name`) are no call."""
    attrs = node.attributes
    tool = attrs.get("mcp.tool.name")
    if attrs.get(OPENLIT_METHOD) != "call_tool" or not isinstance(tool, str) or not tool:
        return None
    call = new_tool_call(tool, attrs.get("mcp.tool.arguments"), node, name)
    response = _decode(attrs.get("mcp.response.payload"))
    if not isinstance(response, dict) or "isError" not in response:  # not recorded, or the coroutine's placeholder
        response = None
    elif (structured := response.get("structuredContent")) is not None:
        call.result = _unwrapped(structured, response.get("meta"))
    set_failure(call, node)
    if call.status == "ok" and response is not None and response["isError"] is True:
        call.status, call.error = "error", "the MCP server answered isError: true"
    return call


def _unwrapped(structured: Any, meta: Any) -> Any:
    """FastMCP sends a result that is not an object as `{"result": value}` and says so in `meta.fastmcp.wrap_result`."""
    fastmcp = meta.get("fastmcp") if isinstance(meta, dict) else None
    wrapped = isinstance(fastmcp, dict) and fastmcp.get("wrap_result") is True
    return structured["result"] if wrapped and isinstance(structured, dict) and "result" in structured else structured


def _unprefixed(span_name: str) -> str:
    """`tools/call search` from `MCP send tools/call search` or `MCP request: tools/call search`."""
    for prefix in _NAME_PREFIXES:
        if span_name.startswith(prefix):
            return span_name[len(prefix) :]
    return span_name


def _decode(value: Any) -> Any:
    if isinstance(value, str) and value.startswith("{"):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def _result(response: dict[str, Any]) -> Any:
    """A `CallToolResult`'s text content (joined), else its structured content, else the whole result."""
    content = response.get("content")
    if isinstance(content, list) and content and all(isinstance(c, dict) and c.get("type") == "text" for c in content):
        return "\n".join(str(c.get("text", "")) for c in content)
    structured = response.get("structuredContent")
    return structured if structured is not None else response
