"""Fill arguments missing from tool spans from the run's messages, matched by tool call id.

Sources, in this order for each call:
1. the messages recorded on the agent span of the call's own run, then of the runs enclosing it
   (the attributes the dialects name in their `RUN_MESSAGES`, e.g. `pydantic_ai.all_messages`; OTel
   JSON form: parts of type `tool_call` with `id`, `name`, `arguments`) — the model-request spans'
   own output messages were already merged by `dialects.extract`;
2. the messages given to the capture (`capture(messages=...)`, `cap.add_messages(...)`, an
   `AgentReply`'s `messages`): Pydantic AI `ModelMessage`s (`result.all_messages()`) or the OTel
   JSON form. If one call id has several different calls there (independent runs whose model reused
   ids), the n-th call with that id in the trajectory takes the n-th of them.

The tool name must match too. A call id that matches nothing (or only ambiguously) leaves the
arguments `NOT_RECORDED`: nothing is guessed from order or from other calls of the same tool.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..trajectory import NOT_RECORDED, AgentRun, ToolCall, Trajectory, parse_args
from ._messages import json_list

__all__ = ["recover_arguments", "tool_call_parts"]

Entry = tuple[str, Any]
"""(tool name, arguments) of one requested tool call."""


def tool_call_parts(messages: Iterable[Any]) -> dict[str, Entry]:
    """`{call_id: (tool_name, args)}` for every tool call requested in `messages` (the last one wins)."""
    return {call_id: entries[-1] for call_id, entries in _entries(messages).items()}


def _entries(messages: Iterable[Any]) -> dict[str, list[Entry]]:
    """`{call_id: [distinct (tool_name, args), ...]}` in the order the messages hold them."""
    found: dict[str, list[Entry]] = {}
    for message in messages:
        parts = message.get("parts", ()) if isinstance(message, dict) else getattr(message, "parts", ())
        for part in parts or ():
            entry: Entry
            if isinstance(part, dict):
                if part.get("type") != "tool_call" or not isinstance(part.get("id"), str) or "arguments" not in part:
                    continue
                call_id, entry = part["id"], (str(part.get("name")), parse_args(part["arguments"]))
            elif getattr(part, "part_kind", None) == "tool-call" and getattr(part, "tool_call_id", None):
                call_id, entry = str(part.tool_call_id), (str(part.tool_name), _part_args(part))
            else:
                continue
            known = found.setdefault(call_id, [])
            if entry not in known:  # a conversation's history repeats earlier calls: count each once
                known.append(entry)
    return found


def _part_args(part: Any) -> Any:
    try:
        return part.args_as_dict()
    except Exception:  # args that are not a JSON object: keep what the model sent
        return parse_args(part.args)


def _messages_by_run(traj: Trajectory, keys: Iterable[str]) -> dict[int, dict[str, list[Entry]]]:
    """For each agent run (by identity), the tool calls the messages its span records under `keys` hold."""
    messages: dict[int, list[Any]] = {}
    for run in traj.agent_runs:
        if run.span is not None:
            attrs = run.span.attributes
            for key in keys:
                if key in attrs:
                    messages.setdefault(id(run), []).extend(json_list(attrs[key]))
    return {key: found for key, msgs in messages.items() if (found := _entries(msgs))}


def _from_runs(call: ToolCall, by_run: dict[int, dict[str, list[Entry]]]) -> Entry | None:
    run: AgentRun | None = call.run
    while run is not None:
        entries = by_run.get(id(run), {}).get(call.call_id or "")
        if entries:
            return entries[0] if len(entries) == 1 else None  # one run reusing an id: ambiguous
        run = run.parent
    return None


def recover_arguments(
    traj: Trajectory, messages: Iterable[Any] | None = None, run_keys: Iterable[str] = ("pydantic_ai.all_messages",)
) -> Trajectory:
    """Set `args` (with `args_source="messages"`) on calls whose span did not record them (or not by name);
    `run_keys` are the agent-span attributes that may hold a run's messages (read only when a call lacks
    arguments)."""
    missing = [c for c in traj.all_calls if c._args is NOT_RECORDED and c.call_id]
    if not missing:
        return traj
    by_run = _messages_by_run(traj, tuple(dict.fromkeys(run_keys)))
    given = _entries(messages) if messages is not None else {}
    position: dict[int, int] = {}  # n-th call with its id, among all the trajectory's calls
    if given:
        seen: dict[str, int] = {}
        for call in traj.all_calls:
            if call.call_id:
                position[id(call)] = seen.get(call.call_id, 0)
                seen[call.call_id] = position[id(call)] + 1
    for call in missing:
        hit = _from_runs(call, by_run)
        if hit is None and (entries := given.get(call.call_id or "")):
            n = 0 if len(entries) == 1 else position.get(id(call), len(entries))
            hit = entries[n] if n < len(entries) else None
        if hit is not None and hit[0] == call.name:
            _set_args(call, hit[1])
    return traj


def _set_args(call: ToolCall, args: Any) -> None:
    call._args = args
    call.args_source = "messages"
    call.args_ref = None
