"""Fill arguments missing from tool spans from the run's messages, matched by tool call id.

Sources: Pydantic AI `ModelMessage`s (`result.all_messages()`), or their OTel JSON form (the
`pydantic_ai.all_messages` / `gen_ai.output.messages` attributes: parts of type `tool_call`).
A call id that matches nothing leaves the arguments `NOT_RECORDED`: nothing is guessed from order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .trajectory import NOT_RECORDED, ToolCall, Trajectory, parse_args

__all__ = ["recover_arguments", "tool_call_parts"]


def tool_call_parts(messages: Iterable[Any]) -> dict[str, tuple[str, Any]]:
    """`{call_id: (tool_name, args)}` for every tool call requested in `messages`."""
    found: dict[str, tuple[str, Any]] = {}
    for message in messages:
        parts = message.get("parts", ()) if isinstance(message, dict) else getattr(message, "parts", ())
        for part in parts or ():
            if isinstance(part, dict):
                if part.get("type") == "tool_call" and isinstance(part.get("id"), str) and "arguments" in part:
                    found[part["id"]] = (str(part.get("name")), parse_args(part["arguments"]))
            elif getattr(part, "part_kind", None) == "tool-call" and getattr(part, "tool_call_id", None):
                found[part.tool_call_id] = (part.tool_name, _part_args(part))
    return found


def _part_args(part: Any) -> Any:
    try:
        return part.args_as_dict()
    except Exception:  # args that are not a JSON object: keep what the model sent
        return parse_args(part.args)


def _messages_from_spans(traj: Trajectory) -> list[Any]:
    out: list[Any] = []
    for run in traj.agent_runs:
        raw = run.span.attributes.get("pydantic_ai.all_messages") if run.span is not None else None
        if isinstance(raw, str):
            try:
                decoded = json.loads(raw)
            except ValueError:
                continue
            if isinstance(decoded, list):
                out.extend(decoded)
    return out


def recover_arguments(traj: Trajectory, messages: Iterable[Any] | None = None) -> Trajectory:
    """Set `args` (with `args_source="messages"`) on calls whose span did not record them."""
    missing = [c for c in traj.all_calls if c.args_text is None and c.args is NOT_RECORDED and c.call_id]
    if not missing:
        return traj
    parts = tool_call_parts(_messages_from_spans(traj))
    if messages is not None:
        parts.update(tool_call_parts(messages))
    for call in missing:
        hit = parts.get(call.call_id) if call.call_id else None
        if hit is not None and hit[0] == call.name:
            _set_args(call, hit[1])
    return traj


def _set_args(call: ToolCall, args: Any) -> None:
    call._args = args
    call.args_source = "messages"
