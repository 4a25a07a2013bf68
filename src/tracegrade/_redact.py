"""Redaction by key glob (`--redact 'card*'`), for every surface that writes what it graded: values
under matching keys are replaced in tool-call arguments and span attributes (also inside attribute
values holding JSON), and the values removed are scrubbed from free text (reasons, replies).
Grading is unaffected: redaction applies to what is written, after grading."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase
from typing import Any

__all__ = ["REDACTED", "Redactor"]

REDACTED = "[redacted]"
_MIN_SCRUB = 3
"""Shorter values are not scrubbed from free text (they would blank unrelated words)."""


class Redactor:
    """Applies key globs (matched case-insensitively against the key's last segment and its full
    dotted path); remembers what it removed so `scrub` can take it out of free text."""

    def __init__(self, globs: Iterable[str] = ()) -> None:
        self.globs = [g.lower() for g in globs]
        self.removed: set[str] = set()

    def __bool__(self) -> bool:
        return bool(self.globs)

    def matches(self, key: str) -> bool:
        key = key.lower()
        last = key.rsplit(".", 1)[-1]
        return any(fnmatchcase(key, g) or fnmatchcase(last, g) for g in self.globs)

    def _remember(self, value: Any) -> None:
        if isinstance(value, dict | list):
            for v in value.values() if isinstance(value, dict) else value:
                self._remember(v)
        elif value is not None and not isinstance(value, bool):
            text = str(value)
            if len(text) >= _MIN_SCRUB:
                self.removed.add(text)

    def value(self, value: Any, path: str = "") -> Any:
        """`value` with every entry under a matching key replaced (dicts and lists walked, JSON text parsed)."""
        if not self.globs:
            return value
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                sub = f"{path}.{k}" if path else str(k)
                if self.matches(sub):
                    self._remember(v)
                    out[k] = REDACTED
                else:
                    out[k] = self.value(v, sub)
            return out
        if isinstance(value, list | tuple):
            return [self.value(v, path) for v in value]
        if isinstance(value, str) and value[:1] in ("{", "["):
            try:
                parsed = json.loads(value)
            except ValueError:
                return value
            redacted = self.value(parsed, path)
            return value if redacted == parsed else json.dumps(redacted, ensure_ascii=False)
        return value

    def attributes(self, attrs: dict[str, Any]) -> dict[str, Any]:
        return self.value(attrs) if self.globs else attrs  # type: ignore[no-any-return]

    def scrub(self, text: str) -> str:
        """`text` with every removed value (and its `repr`) replaced, longest first."""
        if not self.removed or not text:
            return text
        for secret in sorted(self.removed, key=len, reverse=True):
            if secret in text:
                text = text.replace(repr(secret), repr(REDACTED)).replace(secret, REDACTED)
        return text

    def scrub_all(self, texts: Sequence[str]) -> list[str]:
        return [self.scrub(t) for t in texts]
