"""MLflow Tracing (`mlflow` / `mlflow-tracing`): `@mlflow.trace`, `mlflow.start_span` and the autolog integrations
(`mlflow.openai.autolog()`, `mlflow.langchain.autolog()`, ...), as MLflow exports them over OTLP.

Every attribute value MLflow writes is JSON text (a string is quoted: `mlflow.spanType` = `"TOOL"`). The autolog
integrations name a span after the method they patch (`{Class}.{method}`: `Agent.run`, `FunctionTool.acall`) and may
record the agent's or tool's own name in a `name` attribute; a span named as a method without one names no agent and
no tool. Recognized by `mlflow.spanType`: `TOOL` is a tool call (named by its `name` attribute, as the DSPy callback
records it on its `Tool.<name>` spans and the LlamaIndex autolog on `FunctionTool.acall`, else after the span unless
that is a method's name: smolagents' `SimpleTool.__call__` records no tool name, an execution whose tool is not
recorded, `ToolCall.name_missing`; `mlflow.spanInputs`
the keyword arguments, a patched method's bound `{"kwargs": {...}}` unwrapped (smolagents' with its
`sanitize_inputs_outputs` flag too); the `tool_call_id` attribute
LangChain's callback records, the model's call id; `mlflow.spanOutputs` the result, a LangChain `ToolMessage`'s
content; `null` inputs or outputs, as a masking span processor may leave them, are not recorded; status ERROR and
the `exception` event when it raised), `CHAT_MODEL` and `LLM` a model request (but LlamaIndex's
`._prepare_chat_with_tools` LLM span, which only builds the request beside the CHAT_MODEL span that sends it;
`mlflow.llm.model`, else the `model` invocation parameter; tokens from `mlflow.chat.tokenUsage`, else, on an Agents
SDK response span, from the `usage` the response recorded; an Agents SDK span's usage of zero input and output
tokens, the SDK's empty usage when a stream carried none, is not recorded; `mlflow.llm.provider`), `AGENT` an agent
run named by its `name` attribute, else after the span unless that is a method's name (its output the final output, a patched run method's result object read for what it returned;
an Agents SDK agent span's `{"output_type": ...}` outputs are no output; the span `mlflow.openai.autolog()` opens
around an Agents SDK `Runner.run`, marked `mlflow.openai.agent_run_root`, a run without an agent's name whose output
is the run's final output), and a `CHAIN` span of a LangGraph graph that is not one of a graph's nodes (its
`metadata` attribute has `ls_integration` = `langgraph` and no `langgraph_node`) an agent run named after the graph,
the last AI message of its output the final output. Other span types are not steps.

`mlflow.haystack.autolog()` exports Haystack's own spans (`haystack.agent.run` / `.step` / `.step.llm` /
`.step.tool`, read by `haystack`), with `mlflow.spanType` `null`: MLflow types, and records inputs and outputs of,
only `haystack.component.run` and `haystack.pipeline.run` spans, which an Agent run outside a Pipeline does not make.
The autolog switches Haystack's content tracing on, so the arguments, results and replies are in Haystack's
attributes; MLflow's span processor functions are not run on these spans (OpenTelemetry ends them, not MLflow).

A model request's `mlflow.spanOutputs` is the OpenAI chat completion (LangChain's messages are recorded in the same
shape): `choices[].message.tool_calls` hold the requested calls; its `mlflow.spanInputs` `messages` hold the `role:
tool` messages with the results. An Agents SDK generation span records the messages sent as a list and the assistant
messages it received (streamed: the Responses API responses the SDK builds, `function_call` output items); its
response span (Responses API) the input items (`function_call_output` with the results) and the output items
(`function_call`), and the client span inside it the response; a LlamaIndex ChatResponse
`message.additional_kwargs.tool_calls` (a streamed one records its generator's repr); an Anthropic request the
Message (`tool_use` blocks) and the `tool_result` blocks of its user messages. A streamed OpenAI client request's
output is the chunks reduced to text only (no tool calls): the calls are read from the chunks themselves, span events
`mlflow.chunk.item.N` (`streamed_calls`), which a masking function over inputs and outputs leaves in place. MLflow has no setting that leaves inputs and outputs out;
`mlflow.tracing.configure(span_processors=[...])` runs the user's functions over each span MLflow starts before
export, which may mask them. `mlflow.agno.autolog()` (Agno 2 and later) starts none: it runs OpenInference's Agno
instrumentor on MLflow's tracer, so its spans are OpenInference's (scope `openinference.instrumentation.agno`, read by
`openinference`; OpenInference's TraceConfig hides their content, MLflow's span processor functions never see them)
with `mlflow.traceRequestId` and `mlflow.spanType` `null` added, which is no step. With
`MLFLOW_ENABLE_OTEL_GENAI_SEMCONV=true` MLflow writes `gen_ai.*` attributes instead (read by `genai`).

`mlflow.strands.autolog()` opens no span of its own: its span processor adopts Strands Agents' native GenAI spans
(`invoke_agent <agent>` AGENT, `execute_event_loop_cycle` with a `null` span type, `chat` CHAT_MODEL, `execute_tool
<tool>` TOOL, scope `strands.telemetry.tracer`), adding `mlflow.spanType`, inputs and outputs taken from Strands'
message events (a tool's arguments and result; a chat's user and tool messages and its reply as Strands content
blocks, `toolUse` for a requested call), `mlflow.llm.model` and `mlflow.chat.tokenUsage`; Strands' `gen_ai.*`
attributes and events stay (with Strands' latest conventions, messages in `gen_ai.client.inference.operation.details`
events, MLflow records no inputs or outputs). Such a span is read by `genai` (`adopted`). The user's
`span_processors` functions run only on spans MLflow opens, not on these: Strands' own redaction switch is what
leaves their content out.

`mlflow.litellm.autolog()` registers LiteLLM's own `mlflow` callback, which opens one `LLM` span `litellm-completion`
per request (inside the active MLflow span, else the root of a trace of its own): `mlflow.spanInputs` the messages and
tools sent, `mlflow.spanOutputs` the response as a chat completion (a streamed one assembled, its tool calls
included), the `model` as requested (no provider prefix), `mlflow.chat.tokenUsage`, and `raw_llm_response`, the
response again from LiteLLM's logging payload: an attribute of its own, which a function masking inputs and outputs
leaves in place: the requested calls are read from it when the outputs are masked (`litellm_requested_calls`), and a
response without tool calls shows that none was requested.

`mlflow.autogen.autolog()` (AutoGen AgentChat) opens AGENT spans `{agent}.run` and `{agent}.on_messages` (no `name`
attribute: the agent is named by the span's name, `autogen_agent`) and an LLM span `{Client}.create` per model request
(`mlflow.message.format` `"autogen"`), no tool span. A request's outputs are AutoGen's CreateResult (`content` the
FunctionCalls `{"id", "name", "arguments"}`, or the reply), its inputs AutoGen's messages (a
FunctionExecutionResultMessage's results `{"call_id", "content", "is_error"}`); an agent span's outputs are its
TaskResult (`messages`) or Response (`chat_message`, `inner_messages`): the whole conversation, ToolCallRequestEvents
and ToolCallExecutionEvents, which give the calls of a streaming agent (`create_stream` is not patched: no request
is recorded). A tool that raised is only `is_error` in its result (`settle_calls`, `autogen_transcript`).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..trajectory import AgentRun, ModelRequest, ToolCall
from . import genai
from ._common import json_value, to_int
from ._dispatch import Gate
from ._messages import Requested, Transcript, tool_calls_in, tool_results_in
from .genai import new_tool_call, set_failure

if TYPE_CHECKING:
    from ..tree import SpanNode

__all__ = [
    "adopted", "adopted_run", "agent_run", "autogen_agent", "autogen_requested", "autogen_results",
    "autogen_transcript", "classify", "litellm_requested_calls", "model_request", "name",
    "recognizes", "requested_calls", "requested_calls_of", "settle_calls", "streamed_calls", "tool_call",
    "tool_results", "transcript",
]  # fmt: skip

name = "mlflow"
SPAN_TYPE = "mlflow.spanType"
GATE = Gate(keys=frozenset({SPAN_TYPE}))
INPUTS, OUTPUTS = "mlflow.spanInputs", "mlflow.spanOutputs"
MODEL, PROVIDER, USAGE = "mlflow.llm.model", "mlflow.llm.provider", "mlflow.chat.tokenUsage"
METADATA, CALL_ID, TOOL_NAME = "metadata", "tool_call_id", "name"
RUN_ROOT = "mlflow.openai.agent_run_root"
"""Marks the AGENT span `mlflow.openai.autolog()` opens around an Agents SDK `Runner.run` / `run_streamed`."""
OUTPUT_TYPE = "output_type"
MESSAGE_FORMAT, RESPONSE_USAGE = "mlflow.message.format", "usage"
_AGENTS_SDK = '"openai-agent"'
"""`mlflow.message.format` of the Agents SDK's generation and response spans (a response span copies the Responses
API response's fields, its `usage` among them, as attributes)."""
_TOOL, _AGENT, _CHAIN = '"TOOL"', '"AGENT"', '"CHAIN"'
_MODEL_TYPES = ('"CHAT_MODEL"', '"LLM"')  # a tuple: the recorded value may be of any type, hashable or not
_METHOD = re.compile(r"[A-Za-z_]\w*\.[A-Za-z_]\w*")
"""A span named `{Class}.{method}`, as MLflow's autolog integrations name the spans of the methods they patch
(`Agent.run`, `FunctionAgent.run`, `SimpleTool.__call__`): the method's name, not an agent's or a tool's."""
_NOT_A_REQUEST = "._prepare_chat_with_tools"
"""LlamaIndex: an `LLM` span of the method that only builds a request (the `CHAT_MODEL` span beside it sends it)."""
_EXTRA = "additional_kwargs"
"""A LlamaIndex ChatMessage's provider fields: an OpenAI assistant message's `tool_calls`, a tool message's
`tool_call_id`."""
_NULL = "null"
"""Inputs or outputs a span processor set to None: not recorded."""

ARGS_MAY_BE_WRAPPED = True
"""A LangChain tool span records LangChain's tool input (injected arguments, `{"input": ...}` for a string input):
`dialects.extract` prefers the model's requested arguments where they differ."""


def recognizes(node: SpanNode) -> bool:
    return SPAN_TYPE in node.attributes


# --- spans of another instrumentation that MLflow adopted (Strands Agents) ---


def adopted(attrs: Mapping[str, Any]) -> bool:
    """A span carrying `mlflow.spanType` and `gen_ai.operation.name`: another instrumentation's OpenTelemetry GenAI
    span that an MLflow autolog adopted (`mlflow.strands.autolog()`'s span processor), not one MLflow opened. It
    keeps every `gen_ai.*` attribute and event its instrumentation wrote (the agent's and the tool's names, the call
    id, the tool's status), from which MLflow derived its own attributes: `genai` reads its steps; an `AGENT` span
    is `genai`'s agent run with MLflow's outputs as its final output (`adopted_run`)."""
    return genai.OPERATION in attrs


def adopted_run(node: SpanNode) -> AgentRun | None:
    """The agent run of an adopted `AGENT` span: `genai`'s reading, its final output `mlflow.spanOutputs` (the text of
    the span's `gen_ai.choice` event, which `genai` does not read; a redaction marker is none)."""
    run = genai.agent_run(node)
    if run is None:
        return None
    outputs = _decoded(node.attributes.get(OUTPUTS))
    final = None if isinstance(outputs, str) and outputs in genai.REDACTED else outputs
    return dataclasses.replace(run, final_output=final, dialect=name)


def classify(node: SpanNode) -> AgentRun | ToolCall | ModelRequest | bool:
    """The span type selects the one reader to ask (same answers as the readable spec)."""
    attrs = node.attributes
    if SPAN_TYPE not in attrs:
        return False
    kind = attrs[SPAN_TYPE]
    if adopted(attrs):
        return (adopted_run(node) or True) if kind == _AGENT else True
    if kind == _TOOL:
        return _tool_call(node)
    if kind in _MODEL_TYPES:
        return True if node.name.endswith(_NOT_A_REQUEST) else _model_request(node)
    if kind in (_AGENT, _CHAIN):
        return _agent_run(node) or True
    return True


def _decoded(raw: Any) -> Any:
    """An attribute as MLflow wrote it: JSON text decoded (text that is not JSON as is)."""
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _text(attrs: Mapping[str, Any], key: str) -> str | None:
    value = _decoded(attrs.get(key))
    return value if isinstance(value, str) and value else None


def agent_run(node: SpanNode) -> AgentRun | None:
    kind = node.attributes.get(SPAN_TYPE)
    if adopted(node.attributes):
        return adopted_run(node) if kind == _AGENT else None
    if kind not in (_AGENT, _CHAIN):
        return None
    return _agent_run(node)


def _agent_run(node: SpanNode) -> AgentRun | None:
    """`agent_run` of an `AGENT` or `CHAIN` span."""
    attrs = node.attributes
    outputs = _decoded(attrs.get(OUTPUTS))
    if attrs[SPAN_TYPE] == _AGENT:
        if attrs.get(RUN_ROOT) == "true":  # the runner's span, named after its method: no agent's name
            return AgentRun(name=None, final_output=outputs, span=node, dialect=name)
        if OUTPUT_TYPE in attrs and isinstance(outputs, dict) and outputs.keys() == {OUTPUT_TYPE}:
            outputs = None  # an Agents SDK agent span: its output's type, not its output
        if _METHOD.fullmatch(node.name):
            outputs = _returned(outputs)
        return AgentRun(name=_own_name(node) or autogen_agent(node), final_output=outputs, span=node, dialect=name)
    raw = attrs.get(METADATA)
    if not isinstance(raw, str) or '"langgraph"' not in raw:
        return None
    metadata = _decoded(raw)
    if not isinstance(metadata, dict) or metadata.get("ls_integration") != "langgraph":
        return None
    if "langgraph_node" in metadata:
        return None  # one of a graph's nodes, or a graph run inside a node (its calls are the outer graph's)
    return AgentRun(name=node.name or None, final_output=_last_ai_text(outputs), span=node, dialect=name)


def _returned(outputs: Any) -> Any:
    """What a patched run method returned, recorded as the fields of the framework's result object: Pydantic AI's
    AgentRunResult (`output`, `_state`), smolagents' AgentText (`_value`), LlamaIndex's AgentOutput (`result`, its
    `response` message's text blocks), AutoGen's TaskResult and Response (`_autogen_reply`); another value as
    recorded."""
    if not isinstance(outputs, dict):
        return outputs
    if (reply := _autogen_reply(outputs)) is not None:
        return reply
    if outputs.keys() == {"_value"}:
        return outputs["_value"]
    if "output" in outputs and "_state" in outputs:
        return outputs["output"]
    response = outputs["result"].get("response") if isinstance(outputs.get("result"), dict) else None
    blocks = response.get("blocks") if isinstance(response, dict) else None
    parts = [b for b in blocks if isinstance(b, dict) and b.get("block_type") == "text"] if blocks else []
    if parts and all(isinstance(text := b.get("text"), str) and text for b in parts):
        return "".join(str(b["text"]) for b in parts)
    return outputs


def _own_name(node: SpanNode) -> str | None:
    """An agent's or a tool's name: its `name` attribute, else the span's name unless that is a method's."""
    return _text(node.attributes, TOOL_NAME) or (None if _METHOD.fullmatch(node.name) else node.name or None)


def _last_ai_text(outputs: Any) -> Any:
    """The content of the last AI message of a graph's `{"messages": [...]}` output, else None."""
    messages = outputs.get("messages") if isinstance(outputs, dict) else None
    if not isinstance(messages, list) or not messages:
        return None
    last = messages[-1]
    if isinstance(last, dict) and last.get("type") == "ai" and last.get("content"):
        return last["content"]
    return None


def tool_call(node: SpanNode) -> ToolCall | None:
    if node.attributes.get(SPAN_TYPE) != _TOOL or adopted(node.attributes):
        return None
    return _tool_call(node)


def _tool_call(node: SpanNode) -> ToolCall:
    """`tool_call` of a `TOOL` span (without the tool's name, an execution whose tool is not recorded)."""
    attrs = node.attributes
    tool = _own_name(node)
    raw = attrs.get(INPUTS)
    call = new_tool_call(tool or "", None if raw == _NULL else raw, node, name)
    if not tool:
        call.name_missing = (
            f"MLflow named the span after the method it patched ({node.name!r}) and recorded no {TOOL_NAME!r} "
            "attribute naming the tool"
        )
    if _METHOD.fullmatch(node.name) and raw != _NULL:
        args = call.args  # a patched method's bound arguments: LlamaIndex's `FunctionTool.acall(**kwargs)`, smolagents'
        if isinstance(args, dict) and args.keys() in _BOUND and isinstance(args["kwargs"], dict) and not args.get("args"):
            call._args = args["kwargs"]  # `SimpleTool.__call__(*args, sanitize_inputs_outputs, **kwargs)`
    if (call_id := _text(attrs, CALL_ID)) is not None:
        call.call_id = call_id
    if OUTPUTS in attrs and attrs[OUTPUTS] != _NULL:
        result = _decoded(attrs[OUTPUTS])
        if isinstance(result, dict) and result.get("type") == "tool" and "content" in result:
            result = result["content"]  # a LangChain ToolMessage
        call.result = result
    set_failure(call, node)
    if call.status == "error" and not node.status_message:
        for event in node.events:
            if event.name == "exception" and isinstance(text := event.attributes.get("exception.message"), str):
                call.error = text
                break
    return call


def model_request(node: SpanNode) -> ModelRequest | None:
    attrs = node.attributes
    if attrs.get(SPAN_TYPE) not in _MODEL_TYPES or node.name.endswith(_NOT_A_REQUEST) or adopted(attrs):
        return None
    return _model_request(node)


def _model_request(node: SpanNode) -> ModelRequest:
    attrs = node.attributes
    usage = _decoded(attrs.get(USAGE))
    cache_read = usage.get("cache_read_input_tokens") if isinstance(usage, dict) else None
    if not isinstance(usage, dict) and attrs.get(MESSAGE_FORMAT) == _AGENTS_SDK:
        usage = _decoded(attrs.get(RESPONSE_USAGE))  # an Agents SDK response span: the Response's own usage
        details = usage.get("input_tokens_details") if isinstance(usage, dict) else None
        cache_read = details.get("cached_tokens") if isinstance(details, dict) else None
    if not isinstance(usage, dict) or (
        attrs.get(MESSAGE_FORMAT) == _AGENTS_SDK and usage.get("input_tokens") == 0 == usage.get("output_tokens")
    ):
        usage = {}  # none recorded; an Agents SDK span's zeros: the SDK's empty usage (a stream without a usage chunk)
    return ModelRequest(
        model=_text(attrs, MODEL) or _text(attrs, "model"),
        input_tokens=to_int(usage.get("input_tokens")),
        output_tokens=to_int(usage.get("output_tokens")),
        cache_read_tokens=to_int(cache_read),
        provider=_text(attrs, PROVIDER),
        span=node,
        dialect=name,
    )


def _recorded(raw: Any, marker: str) -> Any:
    """A span's recorded inputs or outputs as JSON, when the text holds `marker` at all (else None)."""
    if not isinstance(raw, str) or marker not in raw:
        return None
    return json_value(raw)


def _messages(items: Any) -> Iterator[dict[str, Any]]:
    """The messages of a recorded list (lists nested one per prompt, as LangChain records them)."""
    for item in items if isinstance(items, list) else ():
        for entry in item if isinstance(item, list) else (item,):
            if isinstance(entry, dict):
                yield entry


def requested_calls(attrs: Mapping[str, Any]) -> list[Requested]:
    """The tool calls a model request generated, from `mlflow.spanOutputs`: `choices[].message.tool_calls` of a chat
    completion; the `output[]` items of type `function_call` of a Responses API response; an Agents SDK span's list
    of assistant messages (their `tool_calls`), of responses, or of response output items; a LlamaIndex ChatResponse's
    `message.additional_kwargs.tool_calls`; an Anthropic Message's `tool_use` content blocks; an AutoGen
    CreateResult's FunctionCalls (`autogen_requested`)."""
    raw = attrs.get(OUTPUTS)
    if attrs.get(MESSAGE_FORMAT) == _AUTOGEN:
        return autogen_requested(raw)
    doc = _recorded(raw, '"tool_calls"') or _recorded(raw, '"function_call"') or _recorded(raw, '"tool_use"')
    out = []
    if isinstance(doc, dict) and doc.get("type") == "message" and isinstance(blocks := doc.get("content"), list):
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                out.append(Requested.of(block.get("name"), block.get("input"), block.get("id")))
        return out
    if isinstance(doc, dict):
        choices = doc.get("choices")
        doc = [c.get("message") for c in choices if isinstance(c, dict)] if isinstance(choices, list) else [doc]
    for item in doc if isinstance(doc, list) else ():
        if not isinstance(item, dict):
            continue
        out.extend(tool_calls_in(item.get("tool_calls")))
        if isinstance(message := item.get("message"), dict) and isinstance(extra := message.get(_EXTRA), dict):
            out.extend(tool_calls_in(extra.get("tool_calls")))  # a LlamaIndex ChatResponse
        parts = (item.get("output") or ()) if item.get("object") == "response" else (item,)
        for part in parts if isinstance(parts, list | tuple) else ():
            if isinstance(part, dict) and part.get("type") == "function_call":
                out.append(Requested.of(part.get("name"), part.get("arguments"), part.get("call_id")))
    return out


_BOUND = ({"kwargs"}, {"sanitize_inputs_outputs", "kwargs"}, {"args", "sanitize_inputs_outputs", "kwargs"})
"""The bound arguments a patched tool method records around the keyword arguments (no positional ones)."""
CHUNK_EVENT, CHUNK_VALUE = "mlflow.chunk.item.", "mlflow.chunk.value"
_TASK_OUTPUT = frozenset({"messages", "expected_output", "raw", "agent"})
"""Fields of a CrewAI TaskOutput: recorded as a span's outputs, the task's whole conversation."""


def transcript(node: SpanNode) -> Transcript | None:
    """A CrewAI task's conversation: the TaskOutput MLflow's crewai autolog records as the outputs of the
    `Task.execute_sync` CHAIN span, its `messages` OpenAI chat messages (assistant `tool_calls`, `role: tool`
    results) and its `agent` the agent's role; an AutoGen agent's, on its AGENT spans (`autogen_transcript`); None
    for any other span."""
    attrs = node.attributes
    raw = attrs.get(OUTPUTS)
    if attrs.get(SPAN_TYPE) == _AGENT:
        return autogen_transcript(node)
    if attrs.get(SPAN_TYPE) != _CHAIN or not isinstance(raw, str) or '"tool_calls"' not in raw:
        return None
    doc = _decoded(raw)
    if not isinstance(doc, dict) or not doc.keys() >= _TASK_OUTPUT or not isinstance(doc["messages"], list):
        return None
    messages = [m for m in doc["messages"] if isinstance(m, dict)]
    requested = [r for m in messages if m.get("role") == "assistant" for r in tool_calls_in(m.get("tool_calls"))]
    agent = doc["agent"] if isinstance(doc["agent"], str) and doc["agent"] else None
    return Transcript(requested, tool_results_in(messages), agent)


def requested_calls_of(node: SpanNode) -> list[Requested]:
    """`requested_calls` of the span's outputs, else of the streamed chunks it recorded as events, else of the
    response LiteLLM's callback recorded beside masked outputs (`litellm_requested_calls`)."""
    found = requested_calls(node.attributes)
    if not found and node.events:
        found = streamed_calls(node)
    return found or litellm_requested_calls(node.attributes)


def streamed_calls(node: SpanNode) -> list[Requested]:
    """The tool calls of a streamed OpenAI chat completion, from the chunks MLflow records as span events
    (`mlflow.chunk.item.N`, the chunk's JSON in `mlflow.chunk.value`): each call's deltas joined by their
    `index` within their choice (the id and name as first sent, the arguments' fragments concatenated)."""
    calls: dict[tuple[Any, int], list[Any]] = {}  # (choice, index) -> [id, name, argument fragments]
    for event in node.events:
        raw = event.attributes.get(CHUNK_VALUE)
        if not event.name.startswith(CHUNK_EVENT) or not isinstance(raw, str) or '"tool_calls"' not in raw:
            continue
        chunk = _decoded(raw)
        choices = chunk.get("choices") if isinstance(chunk, dict) else None
        for choice in choices if isinstance(choices, list) else ():
            delta = choice.get("delta") if isinstance(choice, dict) else None
            deltas = delta.get("tool_calls") if isinstance(delta, dict) else None
            for d in deltas if isinstance(deltas, list) else ():
                if not isinstance(d, dict) or not isinstance(index := d.get("index"), int):
                    continue
                call = calls.setdefault((str(choice.get("index", 0)), index), [None, None, []])
                function = d.get("function")
                if not isinstance(function, dict):
                    function = {}
                call[0] = call[0] or d.get("id")
                call[1] = call[1] or function.get("name")
                if isinstance(fragment := function.get("arguments"), str):
                    call[2].append(fragment)
    return [Requested.of(name, "".join(parts) if parts else None, call_id)
            for call_id, name, parts in (calls[i] for i in sorted(calls))]  # fmt: skip


def tool_results(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """`{call_id: content}` of the `role: tool` messages in `mlflow.spanInputs` (its `messages`, or the list of
    messages itself: an Agents SDK span's input), of its Responses API `function_call_output` items, of the
    `tool_result` blocks of Anthropic user messages, and of AutoGen's FunctionExecutionResultMessages."""
    raw = attrs.get(INPUTS)
    if attrs.get(MESSAGE_FORMAT) == _AUTOGEN:
        return autogen_results(_recorded(raw, '"call_id"'))[0]
    doc = _recorded(raw, '"tool_call_id"') or _recorded(raw, '"tool_use_id"')
    doc = doc or _recorded(raw, '"function_call_output"')
    if isinstance(doc, dict):
        doc = doc.get("messages") if "messages" in doc else doc.get("input")
    return tool_results_in(_messages(doc))


# --- LiteLLM's MLflow callback (mlflow.litellm.autolog()) ---

LITELLM_RESPONSE = "raw_llm_response"
"""An attribute of the `litellm-completion` LLM span of LiteLLM's "mlflow" callback: the response, as LiteLLM's
standard logging payload holds it (an OpenAI chat completion, streamed ones assembled), written whatever the span's
inputs and outputs hold."""


def litellm_requested_calls(attrs: Mapping[str, Any]) -> list[Requested]:
    """The tool calls of the response in `raw_llm_response` when the span's outputs are not recorded (a function
    masking inputs and outputs leaves that attribute in place); none when they are (`requested_calls` reads them)."""
    raw = attrs.get(LITELLM_RESPONSE)
    if raw is None or attrs.get(OUTPUTS, _NULL) != _NULL:
        return []
    return requested_calls({OUTPUTS: raw})


# --- AutoGen AgentChat (mlflow.autogen.autolog()) ---

_AUTOGEN = '"autogen"'
"""`mlflow.message.format` of the LLM spans `mlflow.autogen.autolog()` opens around `ChatCompletionClient.create`."""
_AUTOGEN_REQUESTS = ("ToolCallRequestEvent",)
"""AutoGen AgentChat messages holding the FunctionCalls a model response requested."""
_AUTOGEN_RESULTS = ("FunctionExecutionResultMessage", "ToolCallExecutionEvent")
"""AutoGen messages holding FunctionExecutionResults (`call_id`, `name`, `content`, `is_error`): the model client's
input message, and AgentChat's event of the tools' execution."""
_AUTOGEN_LISTS = ("messages", "inner_messages")
"""Where a recorded value holds AutoGen messages: a model request's inputs and a TaskResult (`messages`), an agent's
Response (`inner_messages`)."""


def autogen_agent(node: SpanNode) -> str | None:
    """The agent an AGENT span of `mlflow.autogen.autolog()` names: the autolog names them `{agent}.on_messages`
    (`BaseChatAgent.on_messages`, AutoGen's method) and `{agent}.run` (around the same agent's `on_messages`); None
    for another span."""
    head, dot, method = node.name.rpartition(".")
    if not dot or not head or node.attributes.get(SPAN_TYPE) != _AGENT:
        return None
    if method == "on_messages":
        return head
    inner = f"{head}.on_messages"
    if method == "run" and any(c.name == inner and c.attributes.get(SPAN_TYPE) == _AGENT for c in node.children):
        return head
    return None


def _autogen_reply(outputs: dict[str, Any]) -> Any:
    """The reply in an AutoGen agent's recorded result: a TaskResult's (`messages`, `stop_reason`) last message's
    text, a Response's (`chat_message`, `inner_messages`) chat message's text; None for another value."""
    if outputs.keys() == {"messages", "stop_reason"} and isinstance(messages := outputs["messages"], list):
        last = messages[-1] if messages else None
    elif outputs.keys() == {"chat_message", "inner_messages"}:
        last = outputs["chat_message"]
    else:
        return None
    content = last.get("content") if isinstance(last, dict) else None
    return content if isinstance(content, str) else None


def _autogen_calls(content: Any) -> list[Requested]:
    """The calls in a list of AutoGen FunctionCalls (`{"id", "arguments", "name"}`)."""
    items = content if isinstance(content, list) else ()
    return [Requested.of(c.get("name"), c.get("arguments"), c.get("id")) for c in items if isinstance(c, dict)]


def autogen_requested(raw: Any) -> list[Requested]:
    """The tool calls of an AutoGen CreateResult (an LLM span's outputs): its `content`, a list of FunctionCalls
    when the model asked for tools (else the reply's text)."""
    doc = _recorded(raw, '"content"')
    return _autogen_calls(doc.get("content")) if isinstance(doc, dict) else []


def _autogen_messages(doc: Any) -> Iterator[dict[str, Any]]:
    """The AutoGen messages of a recorded value (`_AUTOGEN_LISTS`)."""
    for key in _AUTOGEN_LISTS:
        items = doc.get(key) if isinstance(doc, dict) else None
        yield from (m for m in items if isinstance(m, dict)) if isinstance(items, list) else ()


def autogen_results(doc: Any) -> tuple[dict[str, Any], frozenset[str]]:
    """`{call_id: content}` of the FunctionExecutionResults in a recorded value's AutoGen messages, and the call ids
    of those with `is_error` true (the tool raised: AutoGen hands its error text to the model as the result)."""
    results: dict[str, Any] = {}
    failed: set[str] = set()
    for message in _autogen_messages(doc):
        if message.get("type") not in _AUTOGEN_RESULTS or not isinstance(content := message.get("content"), list):
            continue
        for result in content:
            if isinstance(result, dict) and isinstance(call_id := result.get("call_id"), str) and call_id:
                results[call_id] = result.get("content")
                if result.get("is_error") is True:
                    failed.add(call_id)
    return results, frozenset(failed)


def autogen_transcript(node: SpanNode) -> Transcript | None:
    """An AutoGen agent's conversation, recorded whole as the outputs of the autolog's AGENT spans (`{agent}.run`:
    the TaskResult's `messages`; `{agent}.on_messages`: the Response's `inner_messages`): the FunctionCalls of its
    ToolCallRequestEvents, the results of its ToolCallExecutionEvents (failed where `is_error`), the agent the
    span names. It holds the calls of a streaming agent, whose model requests the autolog does not record
    (`create_stream` is not patched). None when the span records no such event."""
    raw = node.attributes.get(OUTPUTS)
    agent = autogen_agent(node)
    if agent is None or not isinstance(raw, str) or '"ToolCallRequestEvent"' not in raw:
        return None
    doc = _decoded(raw)
    requested = [
        r for m in _autogen_messages(doc) if m.get("type") in _AUTOGEN_REQUESTS for r in _autogen_calls(m.get("content"))
    ]  # fmt: skip
    results, failed = autogen_results(doc)
    return Transcript(requested, results, agent, failed)


def settle_calls(calls: Sequence[ToolCall], requests: Sequence[ModelRequest]) -> list[str]:
    """Mark failed the calls known only from MLflow's model requests whose AutoGen FunctionExecutionResult has
    `is_error` true: read, by call id, from the inputs of the requests and from the outputs of the AGENT spans
    enclosing them (a streamed request's calls have their results in the agent's events only: the OpenAI messages
    `mlflow.openai.autolog()` records hold no error flag)."""
    mine = [c for c in calls if c.dialect == name and c.executed is None and c.call_id is not None]
    if not mine:
        return []
    failed: dict[str, Any] = {}
    seen: set[int] = set()
    for req in requests:
        node = req.span if req.dialect == name else None
        while node is not None and id(node) not in seen:
            seen.add(id(node))
            for key in (INPUTS, OUTPUTS):
                if (doc := _recorded(node.attributes.get(key), '"is_error"')) is not None:
                    results, ids = autogen_results(doc)
                    failed.update((i, results[i]) for i in ids)
            node = node.parent
    for call in mine:
        if call.call_id in failed and call.status != "error":
            error = failed[call.call_id]
            call.status, call.error = "error", str(error) if error is not None else "error"
    return []
