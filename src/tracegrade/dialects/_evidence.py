"""What a trajectory's telemetry does not hold, and the setting that would record it.

`missing_evidence` looks at what extraction found: with no tool spans and no requested calls, tool
checks can only be decided when every model request recorded its output or why it ended (a finish
reason that is not a tool call) and none comes from an instrumentation whose model may name the tools in
free text (DSPy's adapters; that text is never parsed into calls); agent and tool spans without any
model-request span cannot bound a request count. `no_steps_evidence` says why a trace with spans holds no step at
all, naming the instrumentation its spans come from.
`content_setting` names, for a span's instrumentation, the switch that records message content.
`cut_outputs` reports the requested calls a model output cut short by a value-length limit leaves unknown.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from ..trajectory import NO_SPANS_REASON, VALUE_LIMIT_SETTING, cut_short
from . import logfire
from ._messages import logs_output_recorded
from .genai import OPERATION, REDACTED, output_ref

if TYPE_CHECKING:
    from ..trajectory import AgentRun, ModelRequest, ToolCall, Trajectory
    from ..tree import SpanNode, SpanTree

__all__ = [
    "TOOL_FINISH_REASONS",
    "content_setting",
    "cut_outputs",
    "finish_reasons",
    "missing_evidence",
    "no_steps_evidence",
]

TOOL_FINISH_REASONS = frozenset({"tool_calls", "tool_call", "tool_use", "tool-calls", "function_call"})

_OPENINFERENCE = "OPENINFERENCE_HIDE_INPUTS=false and OPENINFERENCE_HIDE_OUTPUTS=false"
_STRANDS = (
    "no gen_ai_unredacted_attributes= token in OTEL_SEMCONV_STABILITY_OPT_IN, or one that lists the content "
    "attributes (Strands Agents redacts every sensitive attribute the token does not list)"
)
_SETTINGS: tuple[tuple[str, str], ...] = (
    # (instrumentation scope prefix, what records message content), most specific first
    ("opentelemetry.instrumentation.openai_v2", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true "
     "(opentelemetry-instrumentation-openai-v2; content then arrives as log records, give them to tracegrade too)"),
    ("opentelemetry.instrumentation.google_genai", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true"),
    ("opentelemetry.instrumentation.", "TRACELOOP_TRACE_CONTENT=true (OpenLLMetry)"),
    ("openinference.instrumentation.", f"{_OPENINFERENCE} (OpenInference TraceConfig)"),
    ("pydantic-ai", "InstrumentationSettings(include_content=True) on the agent "
     "(or tracegrade.content.instrument_content() in the test process)"),
    ("gcp.vertex.agent", "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=true, or OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
     "=true with the latest telemetry schema (Google ADK)"),
    ("agent_framework", "enable_sensitive_data=True (Microsoft Agent Framework observability)"),
    ("semantic_kernel", "SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE=true (Semantic Kernel; "
     "message content then arrives as Python logging records: route the semantic_kernel.utils.telemetry loggers "
     "to an OTel LoggingHandler and give the log records to tracegrade too)"),
    ("strands", _STRANDS),
    ("com.anthropic.sdk", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (the Anthropic SDK's tracing)"),
    ("openlit.instrumentation.", "openlit.init(capture_message_content=True), and no "
     "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=false (OpenLIT)"),
    ("logfire", "logfire's content scrubbing / capture settings"),
    ("ai", "experimental_telemetry: { recordInputs: true, recordOutputs: true } (Vercel AI SDK)"),
    ("@traceloop/instrumentation-langchain", "traceContent: true (OpenLLMetry-JS: traceloop.initialize({ "
     "traceContent: true }) or new LangChainInstrumentation({ traceContent: true }); its tool spans are named after "
     "the LangChain tool class, and only the recorded output names the tool)"),
    ("langfuse-sdk", "no mask= function on the Langfuse client that replaces input/output (the OpenAI and "
     "LangChain integrations record them unless masked; the Haystack integration, langfuse-haystack's "
     "LangfuseConnector, only with HAYSTACK_CONTENT_TRACING_ENABLED=true where haystack is first imported), and "
     "LANGFUSE_OBSERVE_DECORATOR_IO_CAPTURE_ENABLED=true or @observe(capture_input=True, capture_output=True) for "
     "decorated functions (Langfuse SDK)"),
    ("haystack", "HAYSTACK_CONTENT_TRACING_ENABLED=true where haystack is first imported (Haystack's tracing "
     "content tags)"),
    ("langsmith", "LANGSMITH_HIDE_INPUTS and LANGSMITH_HIDE_OUTPUTS unset or false (the LangSmith client's "
     "hide_inputs / hide_outputs)"),
    ("mlflow.tracing", "no mlflow.tracing.configure(span_processors=[...]) function that removes or masks the span "
     "inputs and outputs (MLflow Tracing records them unless masked; MLFLOW_ENABLE_OTEL_GENAI_SEMCONV=true exports "
     "them as gen_ai.* messages)"),
)  # fmt: skip


_CONVERTED_SETTINGS: tuple[tuple[str, str], ...] = (
    # (scope prefix, what records message content) for a framework's span that an OpenInference span processor
    # with a content switch of its own converted in place (the span keeps its scope, gains openinference.span.kind)
    ("strands", f"{_OPENINFERENCE} (the TraceConfig of StrandsAgentsToOpenInferenceProcessor), and {_STRANDS}"),
)  # fmt: skip


_CLIENT_TOO_DEFAULT = "instrument the model client too (e.g. an OpenTelemetry GenAI, OpenInference or OpenLLMetry instrumentor for its SDK)"
_CLIENT_TOO: tuple[tuple[str, str], ...] = (
    ("mlflow.tracing", "turn on the MLflow autolog of the model client the framework calls too (e.g. "
     "mlflow.openai.autolog()); a framework's own autolog may patch a method its version no longer calls, and a "
     "client's may not trace every call path (mlflow.anthropic.autolog() traces Messages.create, not "
     "messages.stream())"),
)  # fmt: skip
"""By instrumentation scope prefix: how to record the model requests where only agent and tool spans were."""

def _client_too(scope: str) -> str:
    """How to record the model requests of a run whose spans (of instrumentation `scope`) are agent and tool spans."""
    return next((how for prefix, how in _CLIENT_TOO if _scope_matches(scope, prefix)), _CLIENT_TOO_DEFAULT)


_CONVERSATION_ON_RUNS: tuple[tuple[str, str], ...] = (
    ("mlflow.tracing", "MLflow records an AutoGen agent's conversation in the outputs of its agent spans, and a "
     "CrewAI task's in its task span's (mlflow.autogen.autolog(), mlflow.crewai.autolog())"),
)  # fmt: skip
"""By instrumentation scope prefix: the agent spans that may record a run's whole conversation, tool calls included,
in their outputs (so with only agent spans, none recording an output, the content setting is what records the
calls)."""


def _scope_matches(scope: str, prefix: str) -> bool:
    return scope == prefix or (prefix.endswith(".") and scope.startswith(prefix)) or scope.startswith(prefix + ".")


_DIALECT_SCOPES = {
    "pydantic_ai": "pydantic-ai",
    "openinference": "openinference.instrumentation.",
    "openllmetry": "opentelemetry.instrumentation.",
    "vercel_ai": "ai",
    "langfuse": "langfuse-sdk",
    "langsmith": "langsmith",
    "haystack": "haystack",
    "mlflow": "mlflow.tracing",
}
"""The instrumentation a dialect's spans come from, for spans that do not name their scope."""


def content_setting(node: SpanNode | None, dialect: str | None = None) -> str:
    """The setting that makes the instrumentation that wrote `node` record message content: found by the
    span's scope (and, for a span an OpenInference processor converted, that processor's switch too), else by
    the `dialect` that read the span."""
    scope = node.scope_name if node is not None else ""
    converted = node is not None and "openinference.span.kind" in node.attributes
    for prefix, setting in (*_CONVERTED_SETTINGS, *_SETTINGS) if converted else _SETTINGS:
        if _scope_matches(scope, prefix):
            return setting
    if not scope and (key := _DIALECT_SCOPES.get(dialect or "")) is not None:
        return next(setting for prefix, setting in _SETTINGS if prefix == key)
    where = f" ({scope})" if scope else ""
    return f"the instrumentation's message-content capture setting{where}"


def _describe(node: SpanNode | None) -> str:
    if node is None:
        return "a model request"
    return f"model request {node.name!r}" + (f" ({node.scope_name})" if node.scope_name else "")


def finish_reasons(attrs: Mapping[str, Any]) -> list[str] | None:
    """Why a model response ended, as recorded (None when not recorded)."""
    raw: Any = attrs.get("gen_ai.response.finish_reasons")
    if raw is None:
        raw = attrs.get("ai.response.finishReason", attrs.get("llm.finish_reason"))
    if raw is None:
        found = [v for k, v in attrs.items() if k.startswith("gen_ai.completion.") and k.endswith(".finish_reason")]
        raw = found or None
    if isinstance(raw, str):
        if raw.startswith("["):
            try:
                raw = json.loads(raw)
            except ValueError:
                return [raw]
        else:
            return [raw]
    if isinstance(raw, list | tuple):
        return [str(r) for r in raw]
    return None


_OUTPUT_KEYS = (
    "gen_ai.output.messages", "ai.response.text", "ai.response.toolCalls", "output.value", "output",
    "langfuse.observation.output", "raw_llm_response",
)  # fmt: skip
_OUTPUT_PREFIXES = ("llm.output_messages.", "gen_ai.completion.")


def _output_recorded(attrs: Mapping[str, Any]) -> bool:
    """The span holds the model's output (so an absent tool call means none was requested), also as the response
    LiteLLM's MLflow callback records beside the span's outputs (`raw_llm_response`)."""
    for key in _OUTPUT_KEYS:
        value = attrs.get(key)
        if value is not None and not (isinstance(value, str) and value in REDACTED):
            return True
    return any(key.startswith(_OUTPUT_PREFIXES) for key in attrs)


def _request_attributes(node: SpanNode) -> Mapping[str, Any]:
    """A model request's attributes: its span's, completed by those of the spans inside it (with no tool call
    beneath, the same call recorded again by a provider instrumentation, which extraction absorbs into the
    request: OpenLLMetry's `openai.chat` under the OpenAI Agents SDK's `openai.response` records the output and
    finish reasons the outer span lacks)."""
    if not node.children:
        return node.attributes
    merged: dict[str, Any] = {}
    for n in reversed([node, *node.descendants]):  # the request's own span last: its values win
        merged.update(n.attributes)
    return merged


def _stored_elsewhere(ref: str) -> str:
    return (
        f"its output messages are stored outside the telemetry, at {ref} (an external content reference, which "
        "tracegrade does not fetch); to grade them, record message content on the spans as well"
    )


_LEGACY_SWITCH = ("opentelemetry.instrumentation.litellm", "opentelemetry.instrumentation.llamaindex")
"""OpenLLMetry instrumentors whose switch between content on the spans and log records is still named
`use_legacy_attributes` (0.62; the OpenAI and Anthropic ones renamed it `use_attributes`)."""


def _unread(files: Sequence[str]) -> str:
    """Where the content may be when logs files beside the trace file were not read (leads the capture advice)."""
    if not files:
        return ""
    names = ", ".join(PurePath(f).name for f in files)
    it = "it" if len(files) == 1 else "them"
    return f"its log records may be in {names}, beside the trace file but not given: give {it} too (or the directory); else, "


def _unattributed(count: int, node: SpanNode | None) -> str:
    """Why content sent as log records that name no span cannot be read, and what would fix it."""
    scope = node.scope_name if node is not None else ""
    if scope.startswith("opentelemetry.instrumentation.") and not scope.startswith(_OTEL_GENAI):
        switch = "use_legacy_attributes" if any(_scope_matches(scope, p) for p in _LEGACY_SWITCH) else "use_attributes"
        fix = (
            f"{content_setting(node)} with the instrumentor's {switch}=True (its default: content on the "
            f"spans; {switch}=False sends it as log records)"
        )
    else:
        fix = content_setting(node)
    return (
        f"{count} OTel log record(s) name no span (no trace or span id), so what they hold (message content, tool "
        f"calls) cannot be attributed to any model request; to record it on the spans: {fix}; or emit the log "
        "records inside the span's context so they carry its trace and span id"
    )


_OTEL_GENAI = ("opentelemetry.instrumentation.openai_v2", "opentelemetry.instrumentation.google_genai")

_TEXT_TOOL_CHOICE: tuple[tuple[str, str], ...] = (
    # (instrumentation scope prefix of a model-request span, why its recorded output does not show which tools
    # were called, and what records them)
    ("openinference.instrumentation.dspy", "DSPy's adapters ask the model for the next tool as text fields they "
     "parse themselves (ReAct's next_tool_name / next_tool_args), which tracegrade does not read as calls; to "
     "record the calls: DSPy's tool spans (Tool.__call__ / Tool.acall, kind TOOL, from openinference-"
     "instrumentation-dspy's DSPyInstrumentor)"),
)  # fmt: skip
"""Instrumentations whose model output may name the tools to call in free text, not as tool calls: with no
tool spans, an output without tool calls does not show that no tool was called."""


def _text_tool_choice(node: SpanNode | None) -> str | None:
    scope = node.scope_name if node is not None else ""
    return next((why for prefix, why in _TEXT_TOOL_CHOICE if _scope_matches(scope, prefix)), None)


def missing_evidence(
    calls: Sequence[ToolCall],
    requests: Sequence[ModelRequest],
    runs: Sequence[AgentRun],
    handoffs: int = 0,
    unattached_logs: int = 0,
    unnamed: Sequence[ToolCall] = (),
    unread_logs: Sequence[str] = (),
) -> dict[str, str]:
    """`{"tool_calls": reason}` when tool checks cannot be decided from this telemetry, and
    `{"model_requests": reason}` when a request budget cannot (see the module docstring). A model output
    held only behind an external content reference (`gen_ai.output.messages_ref`) is not recorded.
    `unattached_logs` counts the log records given with the spans that named none of them: content they
    may hold is named as the reason (not the content-capture setting) when the calls are unknown. `unnamed` are the
    tool executions whose spans do not say which tool ran: with no other call, they are the reason. `unread_logs`
    are logs files beside the trace file read that were not read (`SpanTree.unread_logs`): named, where the
    content-capture setting is advised, as where the missing content may be."""
    missing: dict[str, str] = {}
    if not calls and not handoffs and unnamed:
        node = unnamed[0].span
        where = f"{node.name!r}{f' ({node.scope_name})' if node.scope_name else ''}" if node is not None else "?"
        missing["tool_calls"] = (
            f"{len(unnamed)} tool span(s) record tool executions but not which tools ran (span {where}), and no "
            "other span names a called tool: "
            f"{unnamed[0].name_missing}"
        )
    elif not calls and not handoffs and requests:
        unknown: ModelRequest | None = None
        in_text: tuple[ModelRequest, str] | None = None
        for req in requests:
            attrs = _request_attributes(req.span) if req.span is not None else {}
            reasons = finish_reasons(attrs)
            if reasons is not None and TOOL_FINISH_REASONS.intersection(reasons):
                ref = output_ref(attrs)
                detail = (
                    f"({_stored_elsewhere(ref)})" if ref
                    else f"(no tool spans, no message content on the spans): {_unattributed(unattached_logs, req.span)}"
                    if unattached_logs
                    else f"(no tool spans, no message content); {_unread(unread_logs)}to record them: "
                    f"{content_setting(req.span)}"
                )  # fmt: skip
                missing["tool_calls"] = (
                    f"{_describe(req.span)} ended for tool calls ({', '.join(reasons)}) but the calls were not "
                    f"recorded {detail}"
                )
                break
            if in_text is None and (why := _text_tool_choice(req.span)) is not None:
                in_text = (req, why)
            logged = req.span is not None and logs_output_recorded(req.span.logs)
            if reasons is None and unknown is None and not _output_recorded(attrs) and not logged:
                unknown = req
        else:
            if in_text is not None:
                missing["tool_calls"] = (
                    f"no tool spans, and {_describe(in_text[0].span)} records the model's output as text: whether "
                    f"tools were called is unknown; {in_text[1]}"
                )
            elif unknown is not None:
                ref = output_ref(unknown.span.attributes) if unknown.span is not None else None
                how = (
                    _stored_elsewhere(ref) if ref
                    else _unattributed(unattached_logs, unknown.span) if unattached_logs
                    else f"{_unread(unread_logs)}to record it: {content_setting(unknown.span)}"
                )  # fmt: skip
                missing["tool_calls"] = (
                    f"no tool spans, and {_describe(unknown.span)} recorded neither its output nor why it ended: "
                    f"whether tools were called is unknown; {how}"
                )
    if not requests and (calls or runs or unnamed):
        node = runs[0].span if runs else (calls or unnamed)[0].span
        name = node.scope_name if node is not None else ""
        scope = f" ({name})" if name else ""
        how = _client_too(name)
        missing["model_requests"] = (
            f"no model-request span was recorded, only agent/tool spans{scope}: the number of model requests is "
            f"unknown; {how}"
        )
        if not calls and not handoffs and not unnamed:  # a transfer span shows tool spans are recorded
            missing["tool_calls"] = (
                f"only agent spans were recorded{scope}: no tool or model-request spans tell which tools were called"
            )
            held = next((why for prefix, why in _CONVERSATION_ON_RUNS if _scope_matches(name, prefix)), None)
            if held is not None and runs and all(r.final_output is None for r in runs):
                missing["tool_calls"] += (
                    f", and no agent span recorded its output: {held}; to record it: {content_setting(node)}"
                )
    return missing


_DIALECT_NAMES = {
    "pydantic_ai": "Pydantic AI", "openinference": "OpenInference", "openllmetry": "OpenLLMetry",
    "vercel_ai": "the Vercel AI SDK", "langfuse": "Langfuse", "openai_agents": "the OpenAI Agents SDK",
    "llamaindex": "LlamaIndex", "langsmith": "LangSmith", "mlflow": "MLflow", "haystack": "Haystack",
    "logfire": "Logfire", "genai": "an OpenTelemetry GenAI instrumentation", "mcp": "an MCP instrumentation",
}  # fmt: skip
"""How a reason names the instrumentation whose spans a dialect read (its scope follows in parentheses)."""


_ONE_TRACE = "spans share a trace only under one enclosing span: record the whole run inside one parent span"


def no_steps_evidence(tree: SpanTree, recognized: Mapping[str, SpanNode]) -> str | None:
    """Why the spans of `tree` hold no step to grade (no agent run, model request, tool call or handoff), and what
    would record one. `recognized` maps each dialect that recognized spans without finding a step in them to the
    first such span: the reason names those instrumentations (dialect and scope), what the span records instead and
    advice that fits that instrumentation. With none, the reason names the spans' scopes, and gives the Pydantic AI
    advice (`NO_SPANS_REASON`) only when no scope is another known instrumentation's. None without spans."""
    n = len(tree)
    if not n:
        return None
    spans = "1 span was" if n == 1 else f"{n} spans were"
    if recognized:
        who = ", ".join(
            _DIALECT_NAMES.get(d, f"the {d} dialect") + (f" ({node.scope_name})" if node.scope_name else "")
            for d, node in list(recognized.items())[:3]
        )
        dialect, node = next(iter(recognized.items()))
        return f"{spans} recorded by {who}, but no agent run, model request or tool span: {_no_step(dialect, node)}"
    scopes = list(dict.fromkeys(node.scope_name for node in tree if node.scope_name))
    listed = f" ({', '.join(scopes[:3])}{', ...' if len(scopes) > 3 else ''})" if scopes else ""
    head = f"{spans} recorded{listed} but none is an agent, model or tool span of a known instrumentation"
    known = [s for s in scopes if _known_scope(s)]
    if not known or all(_scope_matches(s, "pydantic-ai") for s in known):
        return f"{head}; {NO_SPANS_REASON}"
    return (
        f"{head}: the run's steps may be in another trace ({_ONE_TRACE}), or were not recorded: instrument the agent "
        "and its model client (e.g. an OpenTelemetry GenAI, OpenInference or OpenLLMetry instrumentor for its SDK)"
    )


def _known_scope(scope: str) -> bool:
    return any(_scope_matches(scope, prefix) for prefix, _ in (*_SETTINGS, *_CLIENT_TOO)) or scope in logfire.SCOPES


def _no_step(dialect: str, node: SpanNode) -> str:
    """What a span a dialect recognized without a step records instead, and the advice that fits its instrumentation."""
    if dialect == logfire.name and logfire.stream_opening(node):
        return (
            f"span {node.name!r} opened a streamed request, and Logfire logs its response (the model request) only "
            "once the stream has been read, beside the request span in the caller's context: in another trace when "
            "no span encloses the request; read the stream to its end, and make the requests inside one enclosing "
            "span (e.g. `with logfire.span('agent run'):`) so their responses are logged in the run's trace"
        )
    op = node.attributes.get(OPERATION)
    if op == "create_agent":
        agent = node.attributes.get("gen_ai.agent.name")
        created = f"agent {agent!r}" if isinstance(agent, str) and agent else "an agent"
        return (
            f"span {node.name!r} records creating {created} (create_agent), not a run of it; the run's spans, if it "
            f"ran, are in another trace ({_ONE_TRACE} that also encloses creating the agent, or grade the run's trace)"
        )
    what = f"span {node.name!r}" + (
        f" records a {op!r} operation, no step" if isinstance(op, str) else " holds no step"
    )
    if dialect == "pydantic_ai":
        return f"{what}; {NO_SPANS_REASON}"
    scope = node.scope_name
    how = _client_too(scope)
    return f"{what}; the run's steps may be in another trace ({_ONE_TRACE}), or were not recorded: {how}"


_CALL_OUTPUTS = (
    "gen_ai.output.messages", "ai.response.toolCalls", "output", "langfuse.observation.output", "gen_ai.completion",
    "mlflow.spanOutputs", "raw_llm_response", "haystack.agent.step.llm.output", "response_data", "events",
    "gen_ai.tool.name", "gen_ai.tool.call.id", "gen_ai.tool.args", "gen_ai.tool.call.arguments",
)  # fmt: skip
"""The attributes of a model-request span that the dialects read whole for the tool calls the model requested (the
flattened `llm.output_messages.*` / `gen_ai.completion.*` values hold one field of one call each: a cut one is
found on the call, `trajectory.mark_truncated`)."""


def _cut(value: Any, limit: int | None) -> str | None:
    """How a recorded value was cut short, or None: exactly `limit` characters (the span's value-length limit) and
    not valid JSON, or JSON stopping mid-way (`cut_short`; the length is then the limit the SDKs cut at)."""
    if type(value) is not str:
        return None
    if limit is not None and len(value) == limit:
        try:
            json.loads(value)
        except ValueError:
            return f"is exactly {limit} characters, the span attribute value length limit"
        return None
    if cut_short(value):
        return f"is JSON that stops mid-way after {len(value)} characters (what a value-length limit of {len(value)} leaves)"
    return None


def _cut_output(
    node: SpanNode, value_limit: Callable[[SpanNode], int | None] | None, tool_spans: set[int]
) -> str | None:
    """Where and how the output of a model request (its span's `_CALL_OUTPUTS`, or those of the spans inside it
    that record the same request: none is a tool span) is cut short, or None."""
    nodes = [node]
    if node.children and not any(id(n) in tool_spans for n in node.descendants):
        nodes.extend(node.descendants)
    for n in nodes:
        attrs = n.attributes
        limit = value_limit(n) if value_limit is not None else None
        for key in _CALL_OUTPUTS:
            if (value := attrs.get(key)) is not None and (how := _cut(value, limit)) is not None:
                inner = f" (in span {n.name!r} inside it)" if n is not node else ""
                return f"{_describe(node)}{inner}: attribute {key!r} {how}"
    return None


def cut_outputs(traj: Trajectory, value_limit: Callable[[SpanNode], int | None] | None = None) -> None:
    """Where a value-length limit cut the recorded output of a model request (`_CALL_OUTPUTS`), the tool calls it
    requested are unknown, never read as none: with no tool spans (the requested calls are the trajectory), such a
    request whose span holds no call (none read from another record of it) sets `traj.missing["tool_calls"]`; a
    call without recorded arguments whose requesting request's output is cut (the call's own span for a call known
    only from its request; for an executed call, the last request of its run that started before it) is marked
    `args_truncated`, noted in `traj.incomplete`. `value_limit` is the span's limit when known (see
    `trajectory.mark_truncated`); without it, JSON stopping mid-way is cut."""
    requests = [r for r in traj.model_requests if r.span is not None]
    if not requests:
        return
    executed = {id(c.span) for c in (*traj.all_calls, *traj.unnamed_calls) if c.executed is True and c.span is not None}
    found: dict[int, str | None] = {}

    def cut_of(node: SpanNode) -> str | None:
        key = id(node)
        if key not in found:
            found[key] = _cut_output(node, value_limit, executed)
        return found[key]

    if not executed and not traj.handoffs:  # no tool spans: the requested calls are the trajectory
        holding = {id(c.span) for c in traj.all_calls}
        for req in requests:
            node = req.span
            if (
                node is not None
                and id(node) not in holding
                and not logs_output_recorded(node.logs)
                and (why := cut_of(node)) is not None
            ):
                traj.missing["tool_calls"] = (
                    f"{why}, so the model's output is cut short and which tools it requested is unknown; "
                    f"{VALUE_LIMIT_SETTING}"
                )
                break
    by_span = {id(r.span) for r in requests}
    runs: dict[int, tuple[list[int], list[SpanNode]]] | None = None  # by run: the request spans' starts, in order
    for call in traj.all_calls:
        node = call.span
        if node is None or call.args_source is not None or call.args_truncated is not None:
            continue
        if id(node) in by_span:  # requested only: its own request
            asked: SpanNode | None = node
        elif call.executed is True:  # the last request of its run that started before it
            if runs is None:
                runs = {}
                for req in requests:  # in start order
                    if req.span is not None:
                        starts, spans = runs.setdefault(id(req.run), ([], []))
                        starts.append(req.span.start_ns)
                        spans.append(req.span)
            starts, spans = runs.get(id(call.run), ([], []))
            i = bisect_right(starts, node.start_ns)
            asked = spans[i - 1] if i else None
        else:
            continue
        if asked is not None and (why := cut_of(asked)) is not None:
            call.args_truncated = (
                f"tool {call.name!r} (span {node.name!r}) records no arguments, and the output of the model request "
                f"that asked for it is cut short ({why}): its arguments are unknown; {VALUE_LIMIT_SETTING}"
            )
            traj.incomplete.append(call.args_truncated)
