"""`paused_gc()`: building thousands of small acyclic objects (nodes, tool calls) makes the cyclic
GC rescan the whole span graph at every generation-0 threshold; pausing it there is 20-30% faster."""

from __future__ import annotations

import gc
from types import TracebackType

__all__ = ["paused_gc"]

_isenabled, _disable, _enable = gc.isenabled, gc.disable, gc.enable


class _Paused:
    """The cyclic GC disabled inside the block and restored to its prior state after it. A class
    rather than a `@contextmanager` generator: it is entered once per trace on the hot paths."""

    __slots__ = ("_enabled",)

    def __enter__(self) -> None:
        self._enabled = _isenabled()
        _disable()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        if self._enabled:
            _enable()


def paused_gc() -> _Paused:
    """A context manager that pauses the cyclic GC for its block (nesting restores each prior state)."""
    return _Paused()
