"""The closest valid name to a misspelt one, for every "did you mean" in tracegrade's messages."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["closest", "did_you_mean", "unknown_field"]

CUTOFF = 0.6
"""How alike (difflib ratio) a name must be to be suggested."""


def closest(word: str, choices: Iterable[str], n: int = 1) -> list[str]:
    """Up to `n` of `choices` most like `word`, best first."""
    return difflib.get_close_matches(word, list(choices), n=n, cutoff=CUTOFF)


def did_you_mean(word: str, choices: Iterable[str], valid: str = "") -> str:
    """` (did you mean 'x'?)` for the closest choice; without one, `; {valid}: a, b, c` when `valid`
    names the choices (e.g. "valid fields"), else an empty string."""
    options = list(choices)
    if found := closest(word, options):
        return f" (did you mean {found[0]!r}?)"
    return f"; {valid}: {', '.join(options)}" if valid and options else ""


def unknown_field(key: str, fields: Iterable[str]) -> str:
    """pytest-agent-eval's words for an unknown transcript field, which its users grep for:
    `unknown field 'x'. Did you mean 'y'? Valid fields: [...]` (the question only when one is close)."""
    names = sorted(fields)
    found = closest(key, names)
    return f"unknown field {key!r}.{f' Did you mean {found[0]!r}?' if found else ''} Valid fields: {names}"
