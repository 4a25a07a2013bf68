"""`instrument_content()`: record tool arguments (and other content) in the process that runs the evals.

Production agents are often instrumented with `include_content=False`, which keeps prompts, tool
arguments and results out of the spans. Tool names, order and budgets still grade from such spans;
argument checks need the arguments. Inside `instrument_content()`, every Pydantic AI agent without
instrumentation settings of its own records content (`Agent.instrument_all(...)` with
`include_content=True`); on exit the previous default is restored exactly. Agents that set their own
(`agent.instrument = ...`, `Agent(instrument=...)`, or an `Instrumentation` capability) keep them:
their arguments stay "not recorded", and the argument checks' reason names the agent.

The setting is process-wide (it is a class attribute of `Agent`), so use it in the test or eval
process, around the whole session or one test, not in code that serves production traffic.
"""

from __future__ import annotations

import copy
import functools
import inspect
import threading
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from pydantic_ai import InstrumentationSettings

__all__ = ["content_instrumentation_active", "instrument_content"]

F = TypeVar("F", bound=Callable[..., Any])

_lock = threading.Lock()
_active = 0


def content_instrumentation_active() -> bool:
    """Whether an `instrument_content()` block is active in this process."""
    return _active > 0


class instrument_content:
    """Turn on content capture for Pydantic AI agents that have no instrumentation settings of their own.

    ```python
    with instrument_content():
        with tracegrade.capture() as cap:
            agent.run_sync("Refund order 12345")
    ```

    Also a decorator, of sync and async functions: `@instrument_content()`.

    `settings`: the `InstrumentationSettings` to use (they must have `include_content=True`). Without
    it, the keyword arguments build `InstrumentationSettings(include_content=True, **kwargs)`; with
    neither, a previous default that was an `InstrumentationSettings` is copied with content turned
    on (keeping its tracer provider, version, ...), and anything else becomes
    `InstrumentationSettings(include_content=True)`. Blocks nest; each exit restores the default that
    was in force at its entry. `__enter__` returns the settings it installed.
    """

    def __init__(self, settings: InstrumentationSettings | None = None, **kwargs: Any) -> None:
        if settings is not None and kwargs:
            raise TypeError("instrument_content() takes either settings or keyword arguments, not both")
        if settings is not None and not getattr(settings, "include_content", False):
            raise ValueError("instrument_content(settings=...) needs settings with include_content=True")
        if kwargs.get("include_content", True) is not True:
            raise ValueError("instrument_content() always records content: do not pass include_content=False")
        kwargs.pop("include_content", None)
        self._settings = settings
        self._kwargs = kwargs
        self._saved: list[InstrumentationSettings | bool] = []

    def _build(self, previous: InstrumentationSettings | bool) -> InstrumentationSettings:
        from pydantic_ai import InstrumentationSettings

        if self._settings is not None:
            return self._settings
        if not self._kwargs and isinstance(previous, InstrumentationSettings):
            settings = copy.copy(previous)
            settings.include_content = True
            return settings
        return InstrumentationSettings(include_content=True, **self._kwargs)

    def __enter__(self) -> InstrumentationSettings:
        global _active
        from pydantic_ai import Agent

        with _lock:
            previous = Agent._instrument_default
            settings = self._build(previous)
            self._saved.append(previous)
            Agent.instrument_all(settings)
            _active += 1
        return settings

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        global _active
        from pydantic_ai import Agent

        with _lock:
            Agent.instrument_all(self._saved.pop())
            _active -= 1

    def __call__(self, func: F) -> F:
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                with self:
                    return await func(*args, **kwargs)

            return cast(F, async_wrapper)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return cast(F, wrapper)
