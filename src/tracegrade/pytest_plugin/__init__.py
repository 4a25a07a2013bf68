"""The pytest plugin (registered through the `pytest11` entry point as `tracegrade.pytest_plugin.plugin`).

The plugin module itself is loaded by pytest; the values below are plain Python and usable anywhere.
They load on first use, so that pytest loading the plugin does not import the evaluators.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

if TYPE_CHECKING:
    from .session import EvalSession, RunResult, TranscriptResult, TurnResult

__all__ = [
    "EvalSession",
    "RunResult",
    "TranscriptResult",
    "TurnResult",
]

_LAZY = {
    name: module
    for module, names in {
        ".session": "EvalSession RunResult TranscriptResult TurnResult",
    }.items()
    for name in names.split()
}


if not TYPE_CHECKING:  # type checkers read the imports above; a misspelt name stays an error for them
    __getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY, __all__)
