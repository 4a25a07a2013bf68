"""Small helpers shared by dialects: typed attribute reads."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..trajectory import Cost

__all__ = ["COST_AMOUNT", "cost_of", "first_int", "first_str", "is_pending", "json_value", "to_int"]

COST_AMOUNT = "gen_ai.usage.cost.amount"


def to_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def json_value(raw: Any) -> Any:
    """A value recorded as JSON text, decoded (None when the text is not JSON); any other value as is."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return None
    return raw


def first_int(attrs: Mapping[str, Any], *keys: str) -> int | None:
    """The first of `keys` present with an integer value."""
    for key in keys:
        if key in attrs and (v := to_int(attrs[key])) is not None:
            return v
    return None


def first_str(attrs: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        v = attrs.get(key)
        if isinstance(v, str) and v:
            return v
    return None


def is_pending(attrs: Mapping[str, Any]) -> bool:
    """Logfire's zero-length 'pending span' duplicates (`logfire.span_type = pending_span`)."""
    return attrs.get("logfire.span_type") == "pending_span"


def cost_of(attrs: Mapping[str, Any]) -> Cost | None:
    """`gen_ai.usage.cost.{amount,currency,source}` as a `Cost`; None without a numeric amount."""
    amount = attrs.get(COST_AMOUNT)
    if amount is None or isinstance(amount, bool):
        return None
    if isinstance(amount, str):
        try:
            amount = float(amount)
        except ValueError:
            return None
    if not isinstance(amount, int | float):
        return None
    return Cost(
        float(amount), first_str(attrs, "gen_ai.usage.cost.currency"), first_str(attrs, "gen_ai.usage.cost.source")
    )
