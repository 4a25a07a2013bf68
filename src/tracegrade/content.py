"""`instrument_content()`: record tool arguments and results in the test process only."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["instrument_content"]


@contextmanager
def instrument_content(**settings: Any) -> Iterator[None]:
    """Within the block, Pydantic AI agents with no instrumentation settings of their own record
    content (`Agent.instrument_all(InstrumentationSettings(include_content=True, **settings))`);
    the previous default is restored on exit. Agents with their own settings keep them."""
    from pydantic_ai import Agent, InstrumentationSettings

    previous = Agent._instrument_default
    Agent.instrument_all(InstrumentationSettings(include_content=True, **settings))
    try:
        yield
    finally:
        Agent.instrument_all(previous)
