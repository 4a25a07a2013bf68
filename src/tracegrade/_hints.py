"""The closest valid name to a misspelt one, for every "did you mean" in tracegrade's messages."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["closest", "did_you_mean"]

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
