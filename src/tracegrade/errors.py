"""Every error tracegrade raises on purpose: one tree under `TracegradeError`.

    TracegradeError
    ├── TraceFormatError (ValueError)            a trace file that cannot be read
    ├── SpecError (ValueError)                   a grading spec that cannot be built
    ├── ConfigError (ValueError)                 an invalid setting
    ├── ExpectError (ValueError, TypeError)      an invalid `Expect` field
    ├── ParameterError (ValueError, TypeError)   a bad constructor argument
    ├── TranscriptError (ValueError)             an invalid transcript file
    ├── BatchInputError (ValueError)             bad batch input
    ├── ServiceError (RuntimeError)              a service that did not start or exited with an error
    └── TracegradeEvaluationError (RuntimeError) an evaluator ended with outcome `error` (pydantic-evals)

Each subclass also derives from the builtin that describes its kind (`ValueError` for bad input,
`RuntimeError` for a failed process or evaluation), so `except ValueError` keeps working.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = [
    "BatchInputError",
    "ConfigError",
    "ExpectError",
    "ParameterError",
    "ServiceError",
    "SpecError",
    "TraceFormatError",
    "TracegradeError",
    "TracegradeEvaluationError",
    "TranscriptError",
]

Loc = tuple[str | int, ...]


class TracegradeError(Exception):
    """Base of every error tracegrade raises on purpose."""


class TraceFormatError(TracegradeError, ValueError):
    """A trace file that cannot be read: says which file, where in it, and what is wrong.

    `path` is the file, `line` the 1-based line of a JSON lines file (None for a whole document),
    `location` the JSON path inside the document or line (`resourceSpans[0].scopeSpans[1].spans[3].spanId`)
    or a position (`column 17`, `message 2`), and `problem` the bare description.
    """

    def __init__(
        self, problem: str, path: str | os.PathLike[str] | None = None, line: int | None = None, location: str = ""
    ) -> None:
        self.problem = problem
        self.path = None if path is None else os.fspath(path)
        self.line = line
        self.location = location
        super().__init__(problem)

    def __str__(self) -> str:
        where = self.path or "<trace>"
        if self.line is not None:
            where += f":{self.line}"
        if self.location:
            where += f": {self.location}"
        return f"{where}: {self.problem}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.problem, self.path, self.line, self.location))


class SpecError(TracegradeError, ValueError):
    """A grading spec that cannot be turned into evaluators; the message says where and why."""


class ConfigError(TracegradeError, ValueError):
    """An invalid setting; the message names the key and where it was set."""


class ExpectError(TracegradeError, ValueError, TypeError):
    """An invalid `Expect` field; `field` names it (YAML errors prefix the transcript path). A
    `TypeError` too, as Python raises for a bad call (`Expect(foo=1)`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class ParameterError(TracegradeError, ValueError, TypeError):
    """A bad constructor argument of an evaluator or of the pytest sugar: `owner` is the class, `param`
    the parameter (empty for a problem with the call as a whole), `problem` what is wrong
    (`must be an integer >= 0, got -1`): `MaxToolCalls.max_calls: must be an integer >= 0, got -1`.
    A `TypeError` too, as Python raises for a bad call."""

    def __init__(self, owner: str, param: str, problem: str) -> None:
        self.owner, self.param, self.problem = owner, param, problem
        super().__init__(f"{owner}.{param}: {problem}" if param else f"{owner}: {problem}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.owner, self.param, self.problem))


def format_loc(loc: Loc) -> str:
    """`("turns", 1, "expect", "judge")` → `turns[1].expect.judge`."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


class TranscriptError(TracegradeError, ValueError):
    """An invalid transcript file: `file:line: path: message` (a `ValueError`, as pytest-agent-eval's),
    then `Schema reference: <schema>` on a line of its own when the schema of valid files is given."""

    def __init__(self, path: Path, loc: Loc, message: str, line: int | None = None, schema: str | None = None) -> None:
        self.path, self.loc, self.message, self.line, self.schema = path, loc, message, line, schema
        where = f"{path}:{line}" if line else str(path)
        text = f"{where}: {format_loc(loc)}: {message}" if loc else f"{where}: {message}"
        super().__init__(f"{text}\nSchema reference: {schema}" if schema else text)


class BatchInputError(TracegradeError, ValueError):
    """Bad batch input (a source, an option, a table that is not in the span layout): says what and where."""


class ServiceError(TracegradeError, RuntimeError):
    """The service did not start, or exited with an error; the message ends with its log."""


class TracegradeEvaluationError(TracegradeError, RuntimeError):
    """A tracegrade evaluator ended with outcome `error` (e.g. a judge's model call failed):
    raised so that pydantic-evals reports an evaluator failure, not a FAIL verdict."""
