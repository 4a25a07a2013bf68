"""`Trajectory`: the normalized steps of an agent run, as plain data.

`tracegrade.dialects.extract(tree)` builds one from a `SpanTree`; this module knows nothing of the
conventions it was read from.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .tree import SpanNode, SpanTree

__all__ = [
    "NOT_RECORDED",
    "NO_SPANS_REASON",
    "UNNAMED",
    "VALUE_LIMIT_SETTING",
    "AgentRun",
    "Cost",
    "Handoff",
    "ModelRequest",
    "ToolCall",
    "Trajectory",
    "args_cut_reason",
    "cut_short",
    "mark_truncated",
    "parse_args",
]


NOT_RECORDED: None = None
"""What `ToolCall.args` is when the telemetry did not record the arguments (e.g. `include_content=False`):
`None`, as in pytest-agent-eval. `{}` is a call recorded with no arguments."""

ToolStatus = Literal["ok", "error"]
Decision = Literal["allow", "deny", "require_approval"]
CallState = Literal["executed", "requested", "not_executed", "failed", "deferred", "denied", "awaiting_approval"]


def parse_args(raw: Any) -> Any:
    """Arguments as recorded → a Python value: JSON text is decoded, anything else kept as is (JSON
    `null` too: `None` means "not recorded")."""
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return raw
        return raw if value is None else value
    return raw


def cut_short(text: str) -> bool:
    """True when `text` is a JSON object or array that stops mid-way (what a value-length limit
    leaves of one): not valid JSON, and every error is at the end of the text."""
    head = text.lstrip()[:1]
    if head not in ("{", "["):
        return False
    try:
        json.loads(text)
    except json.JSONDecodeError as e:
        if e.msg.startswith("Unterminated string"):  # the text ends inside a string
            return True
        rest = text[e.pos :].rstrip()  # what follows the error: nothing, or a number or literal cut short
        if not rest:
            return e.msg != "Extra data"
        number_tail = rest[0] in "-.eE" and not rest.lstrip("-+.0123456789eE")
        return number_tail or any(w.startswith(rest) for w in ("true", "false", "null"))
    return False


NO_SPANS_REASON = (
    "no agent spans were recorded: instrument the agent (Agent.instrument_all(), `agent.instrument = True`, "
    "or logfire.instrument_pydantic_ai()) and run it inside `tracegrade.capture()`"
)
"""How to record agent spans, where nothing recorded points to an instrumentation other than Pydantic AI's."""

VALUE_LIMIT_SETTING = (
    "raise OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT (or OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT, or "
    "SpanLimits(max_span_attribute_length=...) on the TracerProvider) where the spans are recorded"
)
"""The settings that bound a span attribute's value length, named in every truncation reason."""


_LAZY: Any = object()

UNNAMED = "<tool name not recorded>"
"""How listings show a tool execution whose tool is not recorded (`ToolCall.name_missing`)."""


class ToolCall(str):
    """One tool-call attempt. Equal to (and hashable as) its tool name, so `"search" in calls` works.

    `args` is the decoded JSON arguments (normally a dict) or `NOT_RECORDED` when the span carries
    no arguments, or none by name (`args_text` then holds what it recorded, e.g. a decorator's positional
    arguments); `args_text` is the raw recorded text and `args_source` where the arguments came
    from (`"span"`, `"messages"`, `"given"`, or `"external"`: stored outside the telemetry, at
    `args_ref`, so `args` is `NOT_RECORDED`). `status` is `"ok"` or `"error"` (the tool raised or
    asked for a retry); deferred calls and output functions are flagged, not failed. A call denied
    before execution, or still awaiting approval (`decision`, see `blocked`), is neither executed nor
    failed: `Trajectory.calls()` leaves it out unless `include_blocked=True`.
    """

    # Class-level defaults: instances only store what differs (cheap to build per span).
    args_text: str | None = None
    args_source: str | None = None
    call_id: str | None = None
    status: ToolStatus = "ok"
    result: Any = None
    error: str | None = None
    retry_cause: str | None = None
    retry_attempt: int | None = None
    deferred: str | None = None
    output_function: bool = False
    agent: str | None = None
    run: AgentRun | None = None
    span: SpanNode | None = None
    dialect: str | None = None
    dropped_attributes: int = 0
    """Attributes the SDK dropped from the span (span limits): arguments may be among them."""
    name_truncated: str | None = None
    """Why the recorded name may be cut short by a value-length limit (see `mark_truncated`), else None."""
    args_truncated: str | None = None
    """Why the recorded arguments are cut short by a value-length limit (see `mark_truncated`), else None."""
    args_ref: str | None = None
    """Where the arguments are stored when the telemetry holds only a reference to them (`args_source ==
    "external"`), e.g. the `gen_ai.output.messages_ref` URI of the model response that requested the call."""
    decision: Decision | None = None
    """The last pre-execution decision recorded for the call (`gen_ai.tool.call.decision` events):
    `"allow"`, `"deny"` or `"require_approval"`; None when none was recorded."""
    name_missing: str | None = None
    """Why the telemetry does not name the tool, for a tool span that records an execution but not which tool ran
    (the call's name is then `""`, and it is in `Trajectory.unnamed_calls`, not in `all_calls`); else None."""
    executed: bool | None = True
    """True: a tool span recorded the execution. None: only the model's request is recorded and the
    telemetry has no tool spans at all, so execution is unknown (such calls form the trajectory).
    False: the model requested it but, although tool spans are recorded, none executed it."""
    _args: Any = NOT_RECORDED

    def __new__(cls, name: str, args: Any = NOT_RECORDED, **fields: Any) -> ToolCall:
        self = super().__new__(cls, name)
        if args is not NOT_RECORDED:
            self._args = args
            self.args_source = "given"
        for key, value in fields.items():
            if not hasattr(cls, key) or key.startswith("_"):
                raise TypeError(f"ToolCall() got an unexpected keyword argument {key!r}")
            setattr(self, key, value)
        return self

    @classmethod
    def _from_span(cls, name: str, args_text: str | None, span: SpanNode, dialect: str) -> ToolCall:
        self = str.__new__(cls, name)
        self.span = span
        self.dialect = dialect
        if args_text is not None:
            self.args_text = args_text
            self.args_source = "span"
            self._args = _LAZY
        return self

    def __bool__(self) -> bool:
        return True  # a call, even one whose tool is not recorded (name "")

    @property
    def name(self) -> str:
        return str.__str__(self)

    @property
    def label(self) -> str:
        """The name listings show: the tool's, or `UNNAMED` when the telemetry does not record it."""
        return str.__str__(self) if self.name_missing is None else UNNAMED

    @property
    def args(self) -> Any:
        """Decoded arguments (dict for a normal call) or `NOT_RECORDED`."""
        args = self._args
        if args is _LAZY:
            args = self._args = parse_args(self.args_text)
        return args

    @property
    def failed(self) -> bool:
        """The attempt ended in an error or requested a retry."""
        return self.status == "error" or self.retry_cause is not None

    @property
    def args_recorded(self) -> bool:
        return self.args is not NOT_RECORDED

    @property
    def blocked(self) -> Literal["denied", "awaiting_approval"] | None:
        """`"denied"` (a `deny` decision) or `"awaiting_approval"` (`require_approval`, and no tool span shows
        it ran) for a call that did not execute because of a pre-execution decision; else None."""
        decision = self.decision
        if decision is None or decision == "allow" or self.executed is True:
            return None
        return "denied" if decision == "deny" else "awaiting_approval"

    @property
    def state(self) -> CallState:
        """What became of the call: `denied` / `awaiting_approval` (see `blocked`), `deferred`, `failed`,
        `executed` (a tool span), `requested` (only the model's request is recorded and the telemetry has no
        tool spans) or `not_executed` (requested, but no tool span executed it)."""
        if (blocked := self.blocked) is not None:
            return blocked
        if self.deferred:
            return "deferred"
        if self.failed:
            return "failed"
        if self.executed is None:
            return "requested"
        return "executed" if self.executed else "not_executed"

    def __repr__(self) -> str:
        bits = [repr(self.name) if self.name_missing is None else UNNAMED, f"args={self.args!r}"]
        if self.status != "ok":
            bits.append(f"status={self.status!r}")
        if self.deferred:
            bits.append(f"deferred={self.deferred!r}")
        if self.blocked:
            bits.append(f"state={self.blocked!r}")
        return f"ToolCall({', '.join(bits)})"

    def describe(self) -> str:
        """`name(arg=value, ...)` for reports."""
        name = self.label
        args = self.args
        if args is NOT_RECORDED:
            if self.args_ref is not None:
                return f"{name}(<args stored externally: {self.args_ref}>)"
            return f"{name}(<args not recorded>)"
        if isinstance(args, dict):
            return f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})"
        return f"{name}({args!r})"


@dataclass(frozen=True, slots=True)
class Cost:
    """What one operation cost, as the telemetry recorded it (`gen_ai.usage.cost.*`; OpenInference's
    `llm.cost.*`, which its conventions define in USD).

    `amount` is in units of `currency` (an ISO 4217 code such as `"USD"`; None when not recorded, so
    amounts in unknown currencies must not be added to others). `source` is `"provider"` when the value
    was in the response the client received (from the provider or a priced intermediary), `"local"`
    when the emitting component computed it from pricing data it owns; the amount is frozen at
    recording time.
    """

    amount: float
    currency: str | None = None
    source: str | None = None


@dataclass(slots=True)
class ModelRequest:
    """One model (chat) request, its token usage and cost (None when not recorded)."""

    model: str | None
    input_tokens: int | None = None
    output_tokens: int | None = None
    response_model: str | None = None
    provider: str | None = None
    cache_read_tokens: int | None = None
    agent: str | None = None
    span: SpanNode | None = field(default=None, compare=False, repr=False)
    dialect: str | None = None
    run: AgentRun | None = field(default=None, compare=False, repr=False)
    cost: Cost | None = None
    """What the request cost (`gen_ai.usage.cost.*`), None when not recorded."""

    @property
    def total_tokens(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)


@dataclass(frozen=True, slots=True)
class AgentRun:
    """One agent invocation (`invoke_agent` / `agent run` span); `parent` is the enclosing run."""

    name: str | None
    run_id: str | None = None
    final_output: Any = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    parent: AgentRun | None = field(default=None, compare=False, repr=False)
    span: SpanNode | None = field(default=None, compare=False, repr=False)
    dialect: str | None = None
    operation: str | None = None
    """What the span anchors, when the convention says: `invoke_agent`, `invoke_workflow` or
    `handle_conversation_turn` (a runner's conversation turn)."""

    def within(self, top: AgentRun) -> bool:
        """Whether this run is `top` or runs inside it (following `parent`)."""
        run: AgentRun | None = self
        while run is not None:
            if run is top:
                return True
            run = run.parent
        return False


@dataclass(slots=True)
class Handoff:
    """Control passed from one agent to another through a transfer tool (`execute_tool` with
    `gen_ai.transfer.target.name`, `gen_ai.agent.handoff.{source,target}.name`, or OpenInference's
    `handoff to {agent}` TOOL span from the OpenAI Agents SDK): a step of the run, never a tool call.
    `mode` is `gen_ai.transfer.mode` as recorded (whether control returns)."""

    source: str | None
    target: str | None
    tool: str | None = None
    call_id: str | None = None
    mode: str | None = None
    status: ToolStatus = "ok"
    agent: str | None = None
    span: SpanNode | None = field(default=None, compare=False, repr=False)
    dialect: str | None = None
    run: AgentRun | None = field(default=None, compare=False, repr=False)


def _start_key(call: ToolCall) -> tuple[int, int]:
    span = call.span
    return (0, 0) if span is None else (span.start_ns, span.span_id)


def _under(node: SpanNode, top: SpanNode) -> bool:
    n: SpanNode | None = node
    while n is not None:
        if n is top:
            return True
        n = n.parent
    return False


class Trajectory:
    """Ordered tool calls (start time, ties by span id), model requests, agent runs and handoffs of a tree."""

    def __init__(
        self,
        calls: Sequence[ToolCall] = (),
        model_requests: Sequence[ModelRequest] = (),
        agent_runs: Sequence[AgentRun] = (),
        tree: SpanTree | None = None,
        recognized_spans: int = 0,
        handoffs: Sequence[Handoff] = (),
        unnamed_calls: Sequence[ToolCall] = (),
    ) -> None:
        self.all_calls: list[ToolCall] = list(calls)
        """Every tool-span attempt: failed, deferred and output-function ones included."""
        self.unnamed_calls: list[ToolCall] = list(unnamed_calls)
        """Tool executions whose spans do not record which tool ran (`ToolCall.name_missing`), in start order: not
        tool calls of the trajectory; a check whose selection of calls would include one is not evaluated
        (`unnamed_reason`)."""
        self.model_requests: list[ModelRequest] = list(model_requests)
        self.agent_runs: list[AgentRun] = list(agent_runs)
        self.handoffs: list[Handoff] = list(handoffs)
        """Transfers of control between agents, in start order (not tool calls)."""
        self.tree = tree
        self.recognized_spans = recognized_spans
        """How many spans a dialect recognized as agent, model or tool spans."""
        self.incomplete: list[str] = []
        """Why the recorded run may be incomplete (open spans, values cut short); trajectory checks are
        then not evaluated."""
        self.missing: dict[str, str] = {}
        """What the telemetry does not hold (`"tool_calls"`, `"model_requests"`) and why: checks that need
        it are not evaluated."""
        self.user_message: str | None = None
        """The turn's user message as the spans recorded it (set by extraction): the last user message in the input
        of the first model request of the last top-level agent run (the run whose final output is the reply), or of
        the first model request when no agent run was recorded; None when not recorded."""

    @classmethod
    def from_calls(cls, calls: Iterable[str | ToolCall]) -> Trajectory:
        """A trajectory from tool calls that were not seen in spans (e.g. returned by an agent)."""
        return cls([c if isinstance(c, ToolCall) else ToolCall(str(c)) for c in calls])

    def calls(
        self,
        *,
        include_failed: bool = False,
        include_deferred: bool = False,
        include_output_functions: bool = False,
        agent: str | None = None,
        include_unexecuted: bool = False,
        include_blocked: bool = False,
    ) -> list[ToolCall]:
        """Tool calls, by default only the successful, executed ones (calls known only from the model's
        request count as executed when the telemetry records no tool spans at all). Calls denied or
        awaiting approval (`ToolCall.blocked`) never ran: they are left out unless `include_blocked`
        (which includes them whatever `include_unexecuted` says)."""
        return [
            c
            for c in self.all_calls
            if (include_failed or not c.failed)
            and (include_deferred or not c.deferred)
            and (include_output_functions or not c.output_function)
            and (
                (include_unexecuted or c.executed is not False)
                if c.decision is None or c.blocked is None
                else include_blocked
            )
            and (agent is None or c.agent == agent)
        ]

    def unnamed_reason(self, *, include_failed: bool = False) -> str | None:
        """Why the calls a check selects (failed attempts only with `include_failed`) cannot be told apart: the
        tool executions among them whose spans do not record which tool ran; None when there are none."""
        unnamed = self._unnamed(include_failed)
        if not unnamed:
            return None
        first = unnamed[0]
        node = first.span
        where = f"span {node.name!r}{f' ({node.scope_name})' if node.scope_name else ''}" if node is not None else "a span"
        failed = sum(1 for c in unnamed if c.failed)
        n = len(unnamed)
        what = f"{n} tool execution{'s' if n > 1 else ''}" + (f" ({failed} failed)" if failed else "")
        return f"{what} among the calls checked {'do' if n > 1 else 'does'} not record which tool ran ({where}): {first.name_missing}"

    def listed(self, calls: Sequence[ToolCall], *, include_failed: bool = True) -> list[ToolCall]:
        """`calls` and, among them in start order, the executions whose tool is not recorded (failed ones only with
        `include_failed`), e.g. for listings."""
        unnamed = self._unnamed(include_failed)
        return sorted([*calls, *unnamed], key=_start_key) if unnamed else list(calls)

    def _unnamed(self, include_failed: bool) -> list[ToolCall]:
        return [c for c in self.unnamed_calls if include_failed or not c.failed]

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Successful, executed tool calls (no failed attempts, deferrals or output functions)."""
        return self.calls()

    @property
    def tool_names(self) -> list[str]:
        return [c.name for c in self.calls()]

    @property
    def final_output(self) -> Any:
        """The final result of the last top-level agent run, when recorded."""
        for run in reversed(self.agent_runs):
            if run.parent is None:
                return run.final_output
        return None

    @property
    def open_spans(self) -> list[SpanNode]:
        """Spans that had not ended when they were recorded (the run was still in progress)."""
        tree = self.tree
        return [n for n in tree if n.end_ns is None] if tree is not None else []

    def steps(self, calls: Sequence[ToolCall]) -> list[int]:
        """For each call, the index of the model response that issued it within its agent run
        (calls with the same step and run were requested together, i.e. in parallel)."""
        counters: dict[int, int] = {}
        events: list[tuple[int, int, int, object]] = []
        for req in self.model_requests:
            if req.span is not None:
                events.append((req.span.start_ns, 0, req.span.span_id, req))
        out = [-1 - i for i in range(len(calls))]  # calls seen in no span: each its own step
        for i, call in enumerate(calls):
            if call.span is not None:
                events.append((call.span.start_ns, 1, i, call))
        for _, kind, index, item in sorted(events, key=lambda e: e[:3]):
            run = item.run  # type: ignore[attr-defined]
            key = id(run)
            if kind == 0:
                counters[key] = counters.get(key, 0) + 1
            else:
                out[index] = counters.get(key, 0)
        return out

    def scope(self, *, agent: str | None = None, subtree: Any = None) -> Trajectory:
        """Only what `agent` did (by its agent run), and/or only spans under the first span matching
        the `subtree` SpanQuery. Raises `LookupError` naming what exists when nothing matches, and when
        scoping to an agent while some calls lie outside every agent run (which agent made them is unknown)."""
        calls, requests, runs, handoffs = self.all_calls, self.model_requests, self.agent_runs, self.handoffs
        unnamed = self.unnamed_calls
        tree = self.tree
        if subtree is not None:
            if tree is None or (top := tree.first(subtree)) is None:
                raise LookupError(f"no span matches subtree={subtree!r}")
            # what ran under the match; the match itself counts only as an agent run
            calls = [c for c in calls if c.span is not None and c.span is not top and _under(c.span, top)]
            unnamed = [c for c in unnamed if c.span is not None and c.span is not top and _under(c.span, top)]
            requests = [r for r in requests if r.span is not None and r.span is not top and _under(r.span, top)]
            runs = [r for r in runs if r.span is not None and _under(r.span, top)]
            handoffs = [h for h in handoffs if h.span is not None and _under(h.span, top)]
        if agent is not None:
            if not any(r.name == agent for r in runs) and not any(c.agent == agent for c in calls):
                names = sorted({str(r.name) for r in self.agent_runs} | {c.agent for c in self.all_calls if c.agent})
                raise LookupError(f"no agent run named {agent!r} (agent runs: {names})")
            if loose := sum(1 for c in (*calls, *unnamed) if c.agent is None):
                # e.g. tool spans a streaming run leaves in traces of their own: any agent may have made them
                raise LookupError(
                    f"{loose} tool call(s) lie outside every agent run (no agent span above them, no agent name "
                    f"on them): the telemetry does not say whether agent {agent!r} made them"
                )
            calls = [c for c in calls if c.agent == agent]
            unnamed = [c for c in unnamed if c.agent == agent]
            requests = [r for r in requests if r.agent == agent]
            runs = [r for r in runs if r.name == agent]
            handoffs = [h for h in handoffs if h.agent == agent or h.source == agent]
        scoped = Trajectory(
            calls, requests, runs, tree=tree, recognized_spans=self.recognized_spans, handoffs=handoffs,
            unnamed_calls=unnamed,
        )  # fmt: skip
        scoped.incomplete = list(self.incomplete)
        scoped.missing = dict(self.missing)
        scoped.user_message = self.user_message
        return scoped

    @property
    def is_empty(self) -> bool:
        """True when there is nothing to grade: no spans, or none from an agent instrumentation."""
        return self.recognized_spans == 0 and not self.all_calls and not self.unnamed_calls

    def __repr__(self) -> str:
        return f"<Trajectory calls={[c.describe() for c in self.tool_calls]} model_requests={len(self.model_requests)}>"


def _key_holding(attrs: Any, value: str) -> str | None:
    """The attribute whose value is `value` (the one a dialect read it from)."""
    return next((k for k, v in attrs.items() if v is value or (type(v) is str and v == value)), None)


_CLOSERS = ("}", "]")


def mark_truncated(traj: Trajectory, value_limit: Callable[[SpanNode], int | None] | None = None) -> None:
    """Flag tool calls whose name or arguments a value-length limit cut short, and note each in
    `traj.incomplete`.

    With the span's limit known (`value_limit(node)`, e.g. a capture reads the SDK's): a name
    attribute exactly that long may be cut; arguments exactly that long that are not valid JSON
    are cut. Without it (files): arguments that are JSON stopping mid-way (`cut_short`) are cut.
    Arguments are those a tool span recorded and those taken from the model's request (`args_source`
    `"messages"`: a flattened arguments value of the requesting model span, checked against its limit).
    """
    for call in traj.all_calls:
        node = call.span
        if node is None:
            continue
        limit = value_limit(node) if value_limit is not None else None
        if (
            limit is not None
            and call.name_truncated is None
            and len(call.name) == limit
            and not node.name.endswith(f" {call.name}")  # span names are not limited: `execute_tool {tool}`
            and (key := _key_holding(node.attributes, call.name)) is not None
        ):
            call.name_truncated = (
                f"tool {call.name!r} (span {node.name!r}): attribute {key!r} is exactly {limit} characters, the "
                f"span attribute value length limit, so the tool name may be cut short; {VALUE_LIMIT_SETTING}"
            )
            traj.incomplete.append(call.name_truncated)
        text = call.args_text
        source = call.args_source
        if text is None or call.args_truncated is not None or (source != "span" and source != "messages"):
            continue
        at_limit = limit is not None and len(text) == limit
        if not at_limit and (text.endswith(_CLOSERS) or text.rstrip().endswith(_CLOSERS)):
            continue  # looks whole: confirmed lazily (`args_cut_reason`)
        holder, key = node, _key_holding(node.attributes, text)
        if key is None and source == "messages":  # an executed call given the arguments its model request recorded
            found, key = _request_holding(traj, text)
            if found is not None:
                holder = found
                if value_limit is not None:
                    limit = value_limit(found)
                    at_limit = limit is not None and len(text) == limit
        if (at_limit and isinstance(call.args, str) and call.args is text) or cut_short(text):
            who = f"tool {call.name!r} (span {node.name!r})"
            where = f"attribute {key or 'arguments'!r}" + (f" of span {holder.name!r}" if holder is not node else "")
            how = (
                f"is exactly {limit} characters, the span attribute value length limit" if at_limit else "stops mid-way"
            )
            what = "the arguments" if source == "span" else "the arguments the model requested"
            call.args_truncated = f"{who}: {where} {how}: {what} are cut short; {VALUE_LIMIT_SETTING}"
            traj.incomplete.append(call.args_truncated)


def _request_holding(traj: Trajectory, text: str) -> tuple[SpanNode | None, str | None]:
    """The model-request span, and its attribute, that recorded `text` (None, None when none did)."""
    for req in traj.model_requests:
        if req.span is not None and (key := _key_holding(req.span.attributes, text)) is not None:
            return req.span, key
    return None, None


def args_cut_reason(call: ToolCall) -> str | None:
    """Why `call`'s arguments cannot be checked because they were cut short, or None: the mark set by
    `mark_truncated`, or recorded arguments that are JSON stopping mid-way."""
    if call.args_truncated is not None:
        return call.args_truncated
    text = call.args_text
    if text is not None and call.args_source in ("span", "messages") and isinstance(call.args, str) and cut_short(text):
        return f"tool {call.name!r}: its recorded arguments stop mid-way (cut short); {VALUE_LIMIT_SETTING}"
    return None
