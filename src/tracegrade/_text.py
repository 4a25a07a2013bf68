"""Recorded text (span, tool and agent names, arguments, reasons, replies) made safe to print: its control
characters written as escapes, so a terminal or a document shows them instead of acting on them, and a
long value clipped to `MAX_TEXT` characters with a note saying how much was left out."""

from __future__ import annotations

import re

__all__ = ["MAX_TEXT", "clip", "printable"]

MAX_TEXT = 500
"""Characters of one recorded value that the terminal output and the markdown report show."""

_BIDI_AND_SEPARATORS = "\u2028\u2029\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI_AND_SEPARATORS}]")
_CONTROL_BUT_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI_AND_SEPARATORS}]")
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _SHORT.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: str, *, lines: bool = False) -> str:
    """`text` with each control character written as a Python string literal writes it (`\\n`, `\\x1b`,
    `\\u202e`): C0 and C1 controls, DEL, the bidirectional embeddings, overrides and isolates, and the
    Unicode line and paragraph separators. With `lines`, newlines and tabs are kept (multi-line text)."""
    pattern = _CONTROL_BUT_LINES if lines else _CONTROL
    return pattern.sub(_escape, text) if pattern.search(text) else text


def clip(text: str, limit: int = MAX_TEXT) -> str:
    """`text`, or its first `limit` characters followed by `… (clipped: N more characters)`."""
    return text if len(text) <= limit else f"{text[:limit]}… (clipped: {len(text) - limit:,} more characters)"
