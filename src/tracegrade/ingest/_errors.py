"""`TraceFormatError` and the internal exception decoders raise while unwinding to a JSON path."""

from __future__ import annotations

from ..errors import TraceFormatError

__all__ = ["DEFAULT_MAX_ATTRIBUTE_BYTES", "DEFAULT_MAX_INFLATED_BYTES", "TraceFormatError"]

DEFAULT_MAX_ATTRIBUTE_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_INFLATED_BYTES = 256 * 1024 * 1024
"""The most bytes one gzip-compressed trace file may inflate to."""


class Bad(Exception):
    """Raised by decoders; each enclosing level adds its step of the JSON path while unwinding."""

    def __init__(self, problem: str, *where: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.parts: list[str] = list(reversed(where))  # innermost first

    def at(self, *steps: str) -> Bad:
        """Prefix the path with `steps` (outermost first); returns self for `raise e.at(...)`."""
        self.parts.extend(reversed(steps))
        return self

    def prefixed(self, text: str) -> Bad:
        """Prefix the problem with `text` (e.g. which attribute); returns self."""
        self.problem = text + self.problem
        return self

    @property
    def location(self) -> str:
        out = ""
        for part in reversed(self.parts):
            out += part if part.startswith("[") or not out else "." + part
        return out


def type_name(value: object) -> str:
    """The JSON name of a decoded value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        text = repr(value)
        return f"a number ({text})" if len(text) <= 40 else f"a number ({text[:20]}..., {len(text):,} characters)"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return f"a string ({text!r})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
