"""Instrumentation conventions ("dialects") and the one pipeline that turns a tree into a `Trajectory`.

A dialect is any object (usually a module) with a `name` and five functions of a `SpanNode`:
`classify` (the fast path, run on every span: False when the dialect does not recognize the span, True
when it does but finds no step in it, `NO_STEP` when the span holds no step for any dialect, else the step)
and its readable spec `recognizes`, `agent_run`, `tool_call`, `model_request` (the last three return None
when the span is not of that kind) and, for a dialect that answers `NO_STEP`, `claims`; a property
test keeps the two equal. Optionally: `handoff(node)` (transfers of control between agents),
`MESSAGE_SHAPES` / `requested_calls` / `tool_results` (where its model spans record requested calls
and their results; `requested_calls_of` / `tool_results_of` read the span itself, e.g. its events),
`settle_calls(calls, requests)` (marks failures of the calls known only from requests; returns notes),
`transcript(node)` (a conversation the span recorded whole, a `_messages.Transcript`: its calls are read when no
tool span and no model-request span records any), `RUN_MESSAGES` (agent-span attributes holding a run's messages, for argument
recovery), `ARGS_MAY_BE_WRAPPED` (its tool spans may record a framework's wrapper around the
arguments) and `GATE`, a `Gate` naming what a span must carry for `classify` to recognize it: each span
is offered only to the dialects whose gate admits it (one dispatch per span, whatever the number of
dialects), and to every dialect without a gate. A dialect's functions and data are taken when `DIALECTS`
changes or `register_dialect` is called (not on every extraction). A new dialect is one module plus one line in `DIALECTS`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from operator import attrgetter
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.util import BoundedList

from .._gc import paused_gc
from ..spans import Span
from ..trajectory import AgentRun, Handoff, ModelRequest, ToolCall, Trajectory, mark_truncated
from . import (
    _messages,
    genai,
    haystack,
    langfuse,
    langsmith,
    llamaindex,
    logfire,
    mcp,
    mlflow,
    openai_agents,
    openinference,
    openllmetry,
    pydantic_ai,
    vercel_ai,
)
from ._dispatch import NO_STEP, Classifier, Dispatch, Gate, gate_of
from ._evidence import content_setting, cut_outputs, missing_evidence, no_steps_evidence
from ._merge import Readers, merge_requested, transcript_calls
from ._recovery import recover_arguments

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from ..tree import SpanNode, SpanTree

__all__ = ["DIALECTS", "NO_STEP", "Dialect", "Gate", "classify", "content_setting", "extract", "get_dialect", "register_dialect"]

_PROTOCOL = ("classify", "recognizes", "agent_run", "tool_call", "model_request")


class Dialect(Protocol):
    name: str

    def classify(self, node: SpanNode) -> object: ...
    def recognizes(self, node: SpanNode) -> bool: ...
    def agent_run(self, node: SpanNode) -> AgentRun | None: ...
    def tool_call(self, node: SpanNode) -> ToolCall | None: ...
    def model_request(self, node: SpanNode) -> ModelRequest | None: ...


DIALECTS: list[Dialect] = [
    pydantic_ai, openinference, openllmetry, vercel_ai, langfuse, openai_agents, llamaindex, langsmith, mlflow, haystack,
    logfire, genai, mcp,
]
"""Auto-detection order: most specific first."""


def register_dialect(dialect: Dialect, *, first: bool = False) -> None:
    """Add a dialect to auto-detection (`first=True` gives it priority). A dialect with a `GATE` is asked
    only about the spans its gate admits; one without is asked about every span."""
    lacking = [f for f in _PROTOCOL if not callable(getattr(dialect, f, None))]
    if lacking or not isinstance(getattr(dialect, "name", None), str):
        what = ", ".join(lacking) if lacking else "a str `name`"
        raise TypeError(f"a dialect needs `name` and {', '.join(_PROTOCOL)}; {dialect!r} lacks {what}")
    gate_of(dialect)  # a GATE that is not a Gate is refused here, not at the next extraction
    if any(d.name == dialect.name for d in DIALECTS):
        raise ValueError(f"a dialect named {dialect.name!r} is already registered")
    DIALECTS.insert(0 if first else len(DIALECTS), dialect)
    _REGISTRY.clear()  # take the dialects' data again (a dialect removed and registered anew may have changed)


def classify(node: SpanNode) -> object:
    """What `extract` reads one span as, by the rule it applies: the step (`AgentRun`, `ToolCall`,
    `ModelRequest`, `Handoff`) the first dialect finding one reads in it, True when dialects recognize the span
    but find no step, False when none recognizes it (its context in the tree is not looked at)."""
    step = _read(node, _dispatch().classifiers(node))[0]
    return True if step is NO_STEP else step


def _read(node: SpanNode, asked: list[Classifier]) -> tuple[object, str]:
    """The step the first of `asked` that finds one reads in the span (True: recognized, no step; False: not
    recognized; `NO_STEP`: a dialect claimed it, holding no step, before any found one), and the dialect that did
    (the first that recognized it when none found a step)."""
    step: object = False
    by = ""
    for name, classify in asked:
        found = classify(node)
        if found is False:
            continue
        by = by or name
        if found is not True:
            return found, name  # a step, or NO_STEP: the others are not asked
        step = True  # recognized, but not a step: another dialect may still find one
    return step, by


def get_dialect(dialect: str | Dialect) -> Dialect:
    if not isinstance(dialect, str):
        return dialect
    for d in DIALECTS:
        if d.name == dialect:
            return d
    names = ", ".join(repr(d.name) for d in DIALECTS)
    raise ValueError(f"unknown dialect {dialect!r}; known dialects: {names}")


def extract(
    tree: SpanTree,
    *,
    dialect: str | Dialect | None = None,
    messages: Iterable[Any] | None = None,
    value_limit: Callable[[SpanNode], int | None] | None = None,
    explain: dict[int, str] | None = None,
) -> Trajectory:
    """The trajectory of `tree`: every span classified once, requested calls merged with executed ones,
    pre-execution decisions applied, arguments recovered, and what is incomplete noted.

    A span is read by the first dialect that finds a step in it; one that recognizes the span but finds
    no step lets the others look (`dialect` forces one convention instead). Arguments missing from tool
    spans are recovered by call id from the runs' recorded messages and from `messages` (Pydantic AI
    `ModelMessage`s or the OTel JSON form); arguments held only behind an external content reference are
    marked `args_source="external"`. `value_limit` gives the attribute value-length limit a span was
    recorded under, when known (see `trajectory.mark_truncated`). `explain`, when given, receives for each
    span (by `id(node)`) what it was read as, by which dialect, or why it was ignored.
    """
    registry = _registry()
    with paused_gc():
        traj, referenced = _extract(tree, dialect, explain, registry)
    recover_arguments(traj, messages, registry.run_messages)
    if referenced:
        _external_arguments(traj)
    mark_truncated(traj, value_limit)
    cut_outputs(traj, value_limit)  # requested calls lost with a model output cut short
    traj.incomplete[:0] = tree.notes  # broken parent cycles: which run a call belongs to is unsure
    return traj


def _extract(
    tree: SpanTree, dialect: str | Dialect | None, explain: dict[int, str] | None, registry: _Registry
) -> tuple[Trajectory, bool]:
    """The trajectory, and whether a model request holds an external content reference."""
    forced: list[Classifier] | None = None
    if dialect is not None:
        one = get_dialect(dialect)
        forced = [(one.name, one.classify)]
    classifiers = registry.dispatch.classifiers
    calls: list[ToolCall] = []
    unnamed: list[ToolCall] = []
    requests: list[ModelRequest] = []
    # the same requests recorded again inside them (a provider's span in a framework's), by the identity of
    # the request they repeat: read for tool results, and for requested calls when the outer span records none
    inside: dict[int, list[ModelRequest]] = {}
    runs: list[AgentRun] = []
    handoffs: list[Handoff] = []
    decided: list[tuple[int, str, str | None, str | None, SpanNode, AgentRun | None]] = []
    no_step: dict[str, SpanNode] = {}  # by dialect: the first span it recognized without finding a step
    still_open: list[str] = []
    hosts_tools = ""  # a model-request span with tool executions beneath it (not one request)
    referenced = False  # a model-request span holds `gen_ai.output.messages_ref`
    genai_name, operation, output_ref = genai.name, genai.OPERATION, genai.OUTPUT_REF
    label_scopes = genai.LABEL_AGENT_SCOPES
    # Depth first, in span order: (the spans of one level still to visit, their agent run, the nearest
    # enclosing tool call or model request); a level is set aside while the children of one of its spans are.
    levels: list[tuple[Iterator[SpanNode], AgentRun | None, ToolCall | ModelRequest | None]] = [
        (iter(tree.roots), None, None)
    ]
    while levels:
        level, level_run, outer = levels.pop()
        for node in level:
            run = level_run
            if node.end_ns is None:
                still_open.append(f"span {node.name!r} had not ended (trace still open)")
            attrs = node.attributes
            if attrs.get("logfire.span_type") == "pending_span":
                if explain is not None:
                    explain[id(node)] = "ignored: Logfire's pending-span duplicate of a span recorded in full"
                if node.children:
                    levels.append((level, level_run, outer))
                    levels.append((iter(node.children), run, outer))
                    break
                continue
            step, by = _read(node, forced if forced is not None else classifiers(node))
            kind = type(step)
            inner = outer
            if explain is not None:
                explain[id(node)] = _explained(step, by, outer)
            src = node.source
            if kind is ToolCall:
                call: ToolCall = step  # type: ignore[assignment]
                if type(outer) is ModelRequest and outer.span is not None and not hosts_tools:
                    hosts_tools = f"{outer.span.name!r} ({outer.span.scope_name or 'unknown scope'})"
                if type(outer) is ToolCall and _same_call(outer, call):
                    _absorb_call(outer, call)  # the same call recorded again inside (another instrumentation, MCP)
                elif call.name_missing is not None:  # an execution whose span does not say which tool ran
                    if run is not None:
                        call.agent, call.run = _agent_of(run), run
                    unnamed.append(call)
                else:
                    if call.dialect == genai_name or attrs.get(operation) == "execute_tool":
                        agent = attrs.get("gen_ai.agent.name")  # on execute_tool: the agent that ran the call
                        if (
                            type(agent) is str
                            and agent
                            and (run is None or agent == run.name or node.scope_name not in label_scopes)
                        ):  # (a scope whose agent name is a label: the run names the agent)
                            call.agent = agent
                    if run is not None:
                        call.agent = call.agent or _agent_of(run)
                        call.run = run
                    if not isinstance(src, Span) and (dropped := _dropped_attributes(src)):
                        call.dropped_attributes = dropped
                    calls.append(call)
                    inner = call
            elif kind is ModelRequest:
                req: ModelRequest = step  # type: ignore[assignment]
                if type(outer) is ModelRequest:
                    _absorb_request(outer, req)  # a provider's span inside a framework's span for one request
                    inside.setdefault(id(outer), []).append(req)
                else:
                    if run is not None:
                        req.agent = _agent_of(run)
                        req.run = run
                    requests.append(req)
                    inner = req
                if output_ref in attrs:
                    referenced = True
            elif isinstance(step, AgentRun):
                run = _with_parent(step, run)
                runs.append(run)
            elif kind is Handoff:
                hand: Handoff = step  # type: ignore[assignment]
                hand.run, hand.agent = run, hand.source or (_agent_of(run) if run is not None else None)
                handoffs.append(hand)
            elif step is True or step is NO_STEP:
                no_step.setdefault(by, node)
            # pre-execution decisions about tool calls (2026 GenAI), only on spans with events or logs
            events: Any
            if type(src) is Span:
                events = src.events
            else:  # an SDK span's `events` copies them on every access: its `_events` is read where present
                events = getattr(src, "_events", _NO_EVENTS)
                if type(events) is BoundedList:
                    events = events._dq  # type: ignore[attr-defined]  # a deque: `len(BoundedList)` reads it
                elif events is _NO_EVENTS:
                    events = src.events
            if node._logs or events:
                decided.extend((*d, node, run) for d in genai.decisions(node))
            if node.children:
                levels.append((level, level_run, outer))
                levels.append((iter(node.children), run, inner))
                break
    recognized = len(calls) + len(unnamed) + len(requests) + len(runs) + len(handoffs)
    requests.sort(key=_BY_START)
    requests, twins = _one_per_response(requests)
    for outer_id, records in inside.items():
        twins.setdefault(outer_id, []).extend(records)
    absorbed = [r for records in inside.values() for r in records]  # in span order: each outer's lie in its subtree
    wrapping = registry.wrapping if calls else frozenset()
    added, notes = merge_requested(calls, requests, registry.readers_of, twins, handoffs, wrapping, absorbed, unnamed)
    if added and registry.settlers:  # dialects that tie failures to requested-only calls (`settle_calls`)
        made = {c.dialect for c in added}
        for name, settle in registry.settlers.items():
            if name in made:
                notes.extend(settle(added, requests))
    if explain is not None:
        _explain_merge(explain, twins, added)
    calls.extend(added)
    if not calls and not handoffs and not unnamed and registry.transcripts:  # no span records a call: conversations may
        added, more = transcript_calls(_transcripts(tree, registry, forced))
        calls.extend(added)
        notes.extend(more)
        if explain is not None:
            for call in added:
                explain[id(call.span)] = f"{call.dialect}: a recorded conversation holding the trace's tool calls"
    if decided:
        calls.extend(_apply_decisions(calls, decided, explain))
    calls.sort(key=_BY_START)
    runs.sort(key=_BY_START)
    handoffs.sort(key=_BY_START)
    unnamed.sort(key=_BY_START)
    traj = Trajectory(
        calls, requests, runs, tree=tree, recognized_spans=recognized, handoffs=handoffs, unnamed_calls=unnamed
    )
    traj.incomplete = still_open + notes
    traj.user_message = _user_message(runs, requests, twins, registry)
    traj.missing = missing_evidence(
        calls, requests, runs, len(handoffs), tree.unattached_logs, unnamed, tree.unread_logs
    )
    if traj.is_empty and (why := no_steps_evidence(tree, no_step)) is not None:
        traj.missing = {"model_requests": why, "tool_calls": why}  # nothing to grade: the one reason for every check
    if hosts_tools:
        traj.missing.setdefault("model_requests", (
            f"the model-request span {hosts_tools} has tool executions beneath it: this instrumentation records "
            "several model calls on one span, so the number of requests is not recorded"
        ))  # fmt: skip
    return traj, referenced


def _user_message(
    runs: list[AgentRun], requests: list[ModelRequest], twins: dict[int, list[ModelRequest]], registry: _Registry
) -> str | None:
    """`Trajectory.user_message`: the last user message in the input of the first model request (`requests` are in
    start order) of the last top-level agent run, the run whose final output is the reply (a request of a run
    inside it counts), or of the first model request when no agent run was recorded. It is read from that
    request's span, else from the spans that recorded the same request again; None when none records it."""
    top = next((r for r in reversed(runs) if r.parent is None), None)
    for req in requests:
        if top is not None and (req.run is None or not req.run.within(top)):
            continue
        for record in (req, *twins.get(id(req), ())):
            if record.span is not None and (text := registry.user_text_of(record.dialect, record.span)) is not None:
                return text
        return None
    return None


def _transcripts(
    tree: SpanTree, registry: _Registry, forced: list[Classifier] | None
) -> list[tuple[SpanNode, str, _messages.Transcript]]:
    """The conversations the tree's spans recorded whole, read by the dialects that read them (`transcript`), in
    span order."""
    out = []
    for node in tree:
        for name, _ in forced if forced is not None else registry.dispatch.classifiers(node):
            read = registry.transcripts.get(name)
            if read is not None and (found := read(node)) is not None:
                out.append((node, name, found))
                break
    return out


class _Registry:
    """What extraction reads off the registered dialects, taken once per state of `DIALECTS`, so that
    extracting a trajectory costs the same however many dialects are registered: the dispatch table, the
    agent-span attributes holding a run's messages, the dialects whose tool spans may record a wrapper, the
    message readers by dialect name, the dialects' `settle_calls` and their `transcript` readers."""

    __slots__ = ("_dialects", "_readers", "_shapes", "dispatch", "run_messages", "settlers", "transcripts", "wrapping")

    def __init__(self, dialects: Sequence[Dialect]) -> None:
        self.dispatch = Dispatch(dialects)
        self._dialects = {d.name: d for d in reversed(dialects)}  # the first of a name wins, as in `DIALECTS` order
        self.run_messages: tuple[str, ...] = tuple(k for d in dialects for k in _attribute(d, "RUN_MESSAGES", ()))
        self.wrapping = frozenset(d.name for d in dialects if _attribute(d, "ARGS_MAY_BE_WRAPPED", False))
        self.settlers: dict[str, Callable[[list[ToolCall], list[ModelRequest]], list[str]]] = {
            d.name: settle for d in dialects if (settle := _attribute(d, "settle_calls", None)) is not None
        }
        self.transcripts: dict[str, Callable[[SpanNode], _messages.Transcript | None]] = {
            d.name: read for d in dialects if (read := _attribute(d, "transcript", None)) is not None
        }
        self._readers: dict[str | None, Readers] = {}
        self._shapes: dict[str | None, tuple[str, ...]] = {}

    def readers_of(self, dialect: str | None) -> Readers:
        """How the named dialect's model-request spans record requested calls and tool results."""
        found = self._readers.get(dialect)
        if found is None:
            found = self._readers[dialect] = _message_readers(self._dialects.get(dialect or ""))
        return found

    def user_text_of(self, dialect: str | None, span: SpanNode) -> str | None:
        """The last user message in the input messages a model-request span of the named dialect records (in the
        dialect's `MESSAGE_SHAPES`, else in log events attached to the span)."""
        shapes = self._shapes.get(dialect)
        if shapes is None:
            shapes = self._shapes[dialect] = _attribute(self._dialects.get(dialect or ""), "MESSAGE_SHAPES", ("otel",))
        found = _messages.user_text(span.attributes, shapes)
        return found if found is not None or not span.logs else _messages.logs_user_text(span.logs)


_REGISTRY: list[_Registry] = []


def _registry() -> _Registry:
    """The registry of `DIALECTS` as it is now (taken again when the list changed)."""
    if not _REGISTRY or _REGISTRY[0].dispatch.dialects != tuple(DIALECTS):
        _REGISTRY[:] = [_Registry(DIALECTS)]
    return _REGISTRY[0]


def _dispatch() -> Dispatch:
    """The dispatch table of `DIALECTS` as it is now."""
    return _registry().dispatch


def _agent_of(run: AgentRun) -> str | None:
    """The agent a step inside `run` is credited to: the run's name; a nameless run's nearest named enclosing
    run's (`_named`); but a workflow run inside an agent run (the agent's own executor, e.g. CrewAI's
    `AgentExecutor` flow, which OpenLIT records as `invoke_workflow AgentExecutor` under `invoke_agent {role}`)
    works for that agent: its steps are the nearest enclosing named `invoke_agent` run's. A workflow that no
    agent run encloses keeps its own name."""
    if run.operation == "invoke_workflow":
        parent = run.parent
        while parent is not None:
            if parent.operation == "invoke_agent" and parent.name:
                return parent.name
            parent = parent.parent
    return run.name or _named(run)


def _named(run: AgentRun) -> str | None:
    """The name of the nearest enclosing run that has one: the agent a nameless run (a framework's task or turn
    span read as a run, e.g. OpenLIT's unmapped OpenAI Agents SDK spans) works for."""
    parent = run.parent
    while parent is not None:
        if parent.name:
            return parent.name
        parent = parent.parent
    return None


def _with_parent(step: AgentRun, parent: AgentRun | None) -> AgentRun:
    """`dataclasses.replace(step, parent=parent)`, without the copy when `step` already has that parent."""
    if step.parent is parent:
        return step
    if type(step) is not AgentRun:
        return dataclasses.replace(step, parent=parent)
    return AgentRun(
        step.name, step.run_id, step.final_output, step.input_tokens, step.output_tokens, parent, step.span,
        step.dialect, step.operation,
    )  # fmt: skip


def _dropped_attributes(src: Any) -> Any:
    """`src.dropped_attributes` of an SDK span: its `BoundedAttributes`' count, 0 for a plain dict (a
    `capture`-slimmed span's, which dropped nothing)."""
    attrs = getattr(src, "_attributes", None)
    if type(attrs) is BoundedAttributes:
        return attrs.dropped
    if type(attrs) is dict:
        return 0
    return src.dropped_attributes


def _attribute(dialect: object, key: str, default: Any) -> Any:
    """`getattr(dialect, key, default)`. A module dialect's namespace is read directly: for a missing
    name, `getattr` on a module builds and discards an AttributeError (microseconds per trace)."""
    if type(dialect) is ModuleType:
        namespace = dialect.__dict__
        if "__getattr__" not in namespace:
            return namespace.get(key, default)
    return getattr(dialect, key, default)


def _explained(step: object, by: str, outer: ToolCall | ModelRequest | None) -> str:
    """What a span was read as (`extract(..., explain=...)`)."""
    if step is False:
        return "not recognized by any dialect"
    if step is True:
        return f"{by}: recognized, not a step"
    if step is NO_STEP:
        return f"{by}: recognized, not a step for any dialect (the others were not asked)"
    if isinstance(step, ToolCall):
        if type(outer) is ToolCall and _same_call(outer, step):
            return f"{by}: tool call {step.name!r}, the same call as the enclosing tool span (merged into it)"
        if step.name_missing is not None:
            return f"{by}: tool execution, tool name not recorded ({step.name_missing})"
        return f"{by}: tool call {step.name!r}" + (f" (call id {step.call_id})" if step.call_id else "")
    if isinstance(step, ModelRequest):
        if type(outer) is ModelRequest:
            return f"{by}: model request, the same request as the enclosing one (merged into it)"
        return f"{by}: model request" + (f" ({step.model})" if step.model else "")
    if isinstance(step, AgentRun):
        what = "conversation turn" if step.operation == "handle_conversation_turn" else "agent run"
        return f"{by}: {what}" + (f" {step.name!r}" if step.name else "")
    if isinstance(step, Handoff):
        return f"{by}: handoff {step.source!r} -> {step.target!r} (a transfer of control, not a tool call)"
    return f"{by}: {type(step).__name__}"


def _apply_decisions(
    calls: list[ToolCall],
    decided: list[tuple[int, str, str | None, str | None, SpanNode, AgentRun | None]],
    explain: dict[int, str] | None,
) -> list[ToolCall]:
    """Set each call's last recorded decision (`gen_ai.tool.call.decision`), matched by call id, else by tool
    name among the same run's calls that did not execute; a denied or pending call seen nowhere else becomes
    a call of its own on the span holding the event. Returns those new calls."""
    by_id: dict[str, list[ToolCall]] = {}
    for c in calls:
        if c.call_id:
            by_id.setdefault(c.call_id, []).append(c)
    new: list[ToolCall] = []
    for _time, outcome, call_id, tool, node, run in sorted(decided, key=lambda d: d[0]):
        hits = (
            [c for c in by_id.get(call_id, ()) if tool is None or c.name == tool]
            if call_id
            else [c for c in (*calls, *new) if c.name == tool and c.executed is not True and c.run is run][-1:]
        )
        if not hits:
            if tool is None or outcome == "allow":
                if explain is not None:
                    explain[id(node)] = explain.get(id(node), "") + f"; decision {outcome!r} for a call not recorded"
                continue
            call = ToolCall._from_span(tool, None, node, genai.name)
            call.executed, call.call_id, call.run = False, call_id, run
            call.agent = _agent_of(run) if run is not None else None
            new.append(call)
            if call_id:
                by_id.setdefault(call_id, []).append(call)
            hits = [call]
        for call in hits:
            call.decision = outcome  # type: ignore[assignment]  # one of genai.DECISIONS
            if explain is not None and call.span is not None and outcome != "allow":
                ran = (
                    "ran (its tool span): approved"
                    if outcome == "require_approval"
                    else "ran all the same (its tool span)"
                )
                state = call.blocked.replace("_", " ") if call.blocked else ran
                text = f"; tool call {call.name!r} {state} ({genai.DECISION_EVENT} {outcome})"
                explain[id(call.span)] = explain.get(id(call.span), "") + text
    return new


def _external_arguments(traj: Trajectory) -> None:
    """Calls without recorded arguments whose requesting model response was stored outside the telemetry
    (`gen_ai.output.messages_ref`): the arguments are there, `args_source="external"`, `args_ref` the
    reference. The requesting response is the call's own span (a requested call) or the last model
    request of the same run that started before the call."""
    requests = [(r.span.start_ns, id(r.run), genai.output_ref(r.span.attributes)) for r in traj.model_requests
                if r.span is not None]  # fmt: skip
    if not any(ref for _, _, ref in requests):
        return
    for call in traj.all_calls:
        if call.args_source is not None or call.span is None:
            continue
        ref = genai.output_ref(call.span.attributes)
        if ref is None:
            start, run = call.span.start_ns, id(call.run)
            earlier = [r for r in requests if r[0] <= start and r[1] == run]  # in start order
            ref = earlier[-1][2] if earlier else None
        if ref is not None:
            call.args_source, call.args_ref = "external", ref


def _explain_merge(explain: dict[int, str], twins: dict[int, list[ModelRequest]], added: list[ToolCall]) -> None:
    counted_once = {id(twin.span) for group in twins.values() for twin in group}
    for key, text in list(explain.items()):
        if key in counted_once:
            explain[key] = text + " — recorded twice (same response id or time as another request): counted once"
    for call in added:
        if call.span is not None:
            state = "never executed" if call.executed is False else "no tool span: counted from the request"
            explain[id(call.span)] = explain.get(id(call.span), "") + f"; requested {call.name!r} ({state})"


def _one_per_response(requests: list[ModelRequest]) -> tuple[list[ModelRequest], dict[int, list[ModelRequest]]]:
    """Model requests with the same response id are one request recorded twice, in separate traces
    (e.g. the Anthropic SDK's own span beside an instrumentor's): the first is kept and completed from
    the others, which are returned by kept request (by identity) for reading its messages."""
    kept: list[ModelRequest] = []
    first: dict[str, ModelRequest] = {}
    twins: dict[int, list[ModelRequest]] = {}
    for req in requests:
        rid = _response_id(req.span) if req.span is not None else None
        if rid is None or (seen := first.get(rid)) is None:
            kept.append(req)
            if rid is not None:
                first[rid] = req
        else:
            _absorb_request(seen, req)
            twins.setdefault(id(seen), []).append(req)
    return _pair_by_time(kept, twins), twins


def _pair_by_time(requests: list[ModelRequest], twins: dict[int, list[ModelRequest]]) -> list[ModelRequest]:
    """A request whose span lies within the time of another instrumentation's request span for the same
    model, without being its descendant, is that request recorded twice (an SDK's own span beside an
    instrumentor's, in another trace); each request absorbs at most one twin per instrumentation.
    One sweep in start order over the requests still open at each start (few: requests rarely overlap)."""
    end = -1
    for req in requests:  # in start order: none overlaps the one before it, nothing is recorded twice
        span = req.span
        if span is None or span.end_ns is None or span.start_ns < end:
            break
        end = span.end_ns
    else:
        return requests
    scopes = {req.span.scope_name for req in requests if req.span is not None}
    if len(scopes) < 2:
        return requests  # one instrumentation: nothing recorded twice
    kept: list[ModelRequest] = []
    open_: list[ModelRequest] = []  # kept requests whose span has not ended at the current start
    taken: set[tuple[int, str]] = set()
    for req in requests:  # in start order: a containing span comes first
        span = req.span
        if span is None or span.end_ns is None:
            kept.append(req)
            continue
        start, scope = span.start_ns, span.scope_name
        open_ = [k for k in open_ if k.span is not None and (k.span.end_ns or 0) >= start]
        host = next(
            (k for k in reversed(open_)
             if k.span is not None and k.span.scope_name != scope and span.end_ns <= (k.span.end_ns or 0)
             and (k.model is None or req.model is None or k.model == req.model) and (id(k), scope) not in taken),
            None,
        )  # fmt: skip
        if host is None:
            kept.append(req)
            open_.append(req)
        else:
            taken.add((id(host), scope))
            _absorb_request(host, req)
            twins.setdefault(id(host), []).append(req)
    return kept


def _response_id(span: SpanNode) -> str | None:
    """The provider's id of the response a model-request span recorded (`gen_ai.response.id`, or the
    `id` leading OpenInference's `output.value`); a placeholder id is none (`_PLACEHOLDER_RESPONSE_IDS`)."""
    attrs = span.attributes
    rid = attrs.get("gen_ai.response.id")
    if isinstance(rid, str) and rid:
        return None if rid in _PLACEHOLDER_RESPONSE_IDS else rid
    out = attrs.get("output.value")
    if isinstance(out, str) and out.startswith('{"id":"'):
        end = out.find('"', 7)
        rid = out[7:end] if end > 7 else None
        return None if rid in _PLACEHOLDER_RESPONSE_IDS else rid
    return None


_PLACEHOLDER_RESPONSE_IDS = frozenset({"__fake_id__"})
"""Ids that name no response: the OpenAI Agents SDK gives every response it assembles from a streamed chat
completion the id `__fake_id__` (`agents.models.fake_id.FAKE_RESPONSES_ID`)."""


def _same_call(outer: ToolCall, call: ToolCall) -> bool:
    """A tool span inside a tool span of the same tool (or one that does not name its tool), with no call id
    telling them apart."""
    return (outer.name == call.name or call.name_missing is not None) and (outer.call_id is None or call.call_id is None or outer.call_id == call.call_id)


def _absorb_call(outer: ToolCall, call: ToolCall) -> None:
    """Fill what the outer span of one call lacks from an inner span of the same call."""
    if outer.call_id is None and call.call_id is not None:
        outer.call_id = call.call_id
    if not outer.args_recorded and call.args_recorded:
        outer._args, outer.args_text, outer.args_source = call._args, call.args_text, call.args_source
    if outer.result is None and call.result is not None:
        outer.result = call.result
    if call.status == "error" and outer.status != "error":
        outer.status, outer.error = "error", call.error


def _absorb_request(outer: ModelRequest, req: ModelRequest) -> None:
    """Fill what the outer span of one model request lacks (tokens, model, cost) from an inner span."""
    for field in ("model", "input_tokens", "output_tokens", "response_model", "provider", "cache_read_tokens", "cost"):
        if getattr(outer, field) is None and (value := getattr(req, field)) is not None:
            setattr(outer, field, value)


_NO_EVENTS: tuple[()] = ()
_BY_START = attrgetter("span.start_ns", "span.span_id")


def _message_readers(d: Dialect | None) -> Readers:
    """How a dialect's model-request spans record requested calls and tool results: its own
    `requested_calls_of(node)` / `tool_results_of(node)` (spans that record them in events or in other
    spans), else `requested_calls(attrs)` / `tool_results(attrs)`, else its `MESSAGE_SHAPES` (the OTel
    shape for a span no registered dialect made)."""
    shapes: tuple[str, ...] = _attribute(d, "MESSAGE_SHAPES", ("otel",))
    requested = _attribute(d, "requested_calls_of", None) or _of_attributes(
        _attribute(d, "requested_calls", None) or _messages.requested_reader(shapes)
    )
    results = _attribute(d, "tool_results_of", None) or _of_attributes(
        _attribute(d, "tool_results", None) or _messages.results_reader(shapes)
    )
    return requested, results


def _of_attributes(read: Callable[[Any], Any]) -> Callable[[SpanNode], Any]:
    """A reader of a span's attributes as a reader of the span."""
    return lambda node: read(node.attributes)

