"""YAML transcripts: files under `yaml_dirs` become tests run against the `llm_eval_agent` fixture.

A file holds one transcript (`id`, `turns`, optional `threshold`, `runs`, `tags`); each turn has
`user` and an `expect` mapping of `Expect`'s keyword arguments. Validation happens at collection:
the file's shape with pydantic, each `expect` by `Expect` and the evaluators themselves (the
messages Python gives). Every error names the file and line, the path (`turns[1].expect.judge`),
the bad value and, for an unknown field, the closest valid name.
"""

from __future__ import annotations

import dataclasses
import os
import re
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import _yaml
from .._hints import unknown_field
from ..errors import ExpectError, TranscriptError
from ..tree import validate_query
from .audio import resolve_audio
from .config import DEFAULT_RUNS, DEFAULT_THRESHOLD
from .transcript import Expect, Turn

__all__ = [
    "SCHEMA_FILE",
    "AgentEvalFile",
    "AgentEvalItem",
    "Transcript",
    "load_transcript",
    "validate_transcript_dict",
]

SCHEMA_FILE = Path(__file__).with_name("schema") / "transcript.json"
"""The shipped JSON Schema of valid transcript files (`tracegrade.pytest_plugin.schema`); errors
about a file's content name it."""
_SCHEMA = str(SCHEMA_FILE)

Loc = tuple[str | int, ...]


def _parse_loc(text: str) -> Loc:
    return tuple(int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", text))


# --- the schema: one pydantic model per YAML mapping ------------------------------------------------


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TurnSpec(_Spec):
    user: str
    audio: str | None = None
    expect: dict[str, Any] = Field(default_factory=dict)


class TranscriptSpec(_Spec):
    id: str = Field(min_length=1)
    threshold: float | None = Field(default=None, ge=0, le=1)
    runs: int | None = Field(default=None, ge=1)
    tags: list[str] = Field(default_factory=list)
    turns: list[TurnSpec] = Field(min_length=1)


@dataclasses.dataclass
class Transcript:
    """A validated transcript file. `threshold` / `runs` default to pytest-agent-eval's 0.8 / 1; None
    (what this module's `load_transcript` gives for a file that sets none) leaves them to the plugin's
    `[tool.agent_eval]` settings."""

    id: str
    turns: list[Turn]
    threshold: float | None = DEFAULT_THRESHOLD
    runs: int | None = DEFAULT_RUNS
    tags: list[str] = dataclasses.field(default_factory=list)
    path: Path | None = None
    line: int = 1


class _SpecError(ValueError):
    def __init__(self, loc: Loc, message: str) -> None:
        super().__init__(message)
        self.loc, self.message = loc, message


def _relative(message: str) -> tuple[Loc, str]:
    """`".Name.param: text"` (an error about a path relative to the item) → (path, text)."""
    nested, _, text = message.partition(": ")
    return _parse_loc(nested), text


def _evaluator(item: Any, loc: Loc) -> Any:
    """A built-in evaluator from pydantic-evals' spec syntax (`tracegrade.spec`), e.g.
    `{MaxToolCalls: 3}` or `{ToolCorrectness: {expected_tools: [search]}}`."""
    from ..spec import make_evaluator

    try:
        return make_evaluator(item)
    except (TypeError, ValueError) as e:
        raise _SpecError(loc, str(e)) from None


# --- loading ------------------------------------------------------------------------------------------


def _model_at(loc: Loc) -> type[BaseModel] | None:
    """The spec model that holds the last element of `loc` (for unknown-field suggestions)."""
    model: type[BaseModel] | None = TranscriptSpec
    for part in loc[:-1]:
        if isinstance(part, int) or model is None:
            continue
        info = model.model_fields.get(part)
        model = _find_model(info.annotation) if info is not None else None
    return model


def _find_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        if (found := _find_model(arg)) is not None:
            return found
    return None


def _line(node: yaml.Node | None, loc: Loc, key: bool = False) -> int | None:
    """1-based line of the YAML node at `loc` (of its key when `key`), or of the deepest ancestor."""
    line = node.start_mark.line + 1 if node is not None else None
    for i, part in enumerate(loc):
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == part:
                    last = i == len(loc) - 1
                    node = k if (key and last) else v
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            return line
        line = node.start_mark.line + 1
    return line


def _union_tag(part: Any) -> bool:
    """A step pydantic adds to an error's location inside a union (`str`, `StepSpec`, `literal[...]`)."""
    return isinstance(part, str) and (
        part in ("str", "int", "float", "bool", "dict", "list")
        or part[:1].isupper()
        or part.startswith(("literal[", "constrained-", "function-"))
    )


def _union_errors(errors: list[Any]) -> tuple[Any, int]:
    """The error to report, and how many other places are wrong. Inside a union, pydantic reports
    every branch; report the deepest (the branch the input was meant for), joining branches that
    fail at the same place ("'first', 'last' or 'any'; or: greater than or equal to 0")."""
    cleaned = [{**e, "loc": tuple(p for p in e["loc"] if not _union_tag(p))} for e in errors]
    first = cleaned[0]
    outer = first["loc"][: next((i for i, p in enumerate(errors[0]["loc"]) if _union_tag(p)), len(first["loc"]))]
    group = [e for e in cleaned if e["loc"][: len(outer)] == outer]
    deepest = max(len(e["loc"]) for e in group)
    best = [e for e in group if len(e["loc"]) == deepest]
    if len(best) > 1 and len({e["loc"] for e in best}) == 1:
        msgs = list(dict.fromkeys(e["msg"] for e in best))
        best = [{**best[0], "msg": "; or: ".join(msgs)}]
    return best[0], len({e["loc"] for e in cleaned if e["loc"][: len(outer)] != outer})


# pytest-agent-eval's words for the top-level fields' constraints (its users grep for them)
_CONSTRAINTS: dict[Loc, str] = {
    ("threshold",): "must be a number between 0 and 1",
    ("runs",): "must be an integer >= 1",
}
_NO_TURNS = "must define at least one turn (an empty transcript would test nothing)"


def _pydantic_message(err: Any) -> tuple[Loc, str, bool]:
    loc: Loc = tuple(err["loc"])
    kind = err["type"]
    if kind == "extra_forbidden":
        model = _model_at(loc)
        fields = list(model.model_fields) if model is not None else []
        return loc, unknown_field(str(loc[-1]), fields), True
    if loc == ("turns",) and kind in ("missing", "too_short"):
        return loc, _NO_TURNS if kind == "too_short" else f"missing required field 'turns': {_NO_TURNS}", False
    if kind == "missing":
        return loc, f"missing required field {loc[-1]!r}", False
    if loc in _CONSTRAINTS:
        return loc, f"{_CONSTRAINTS[loc]}, got {err.get('input')!r}", False
    return loc, f"{err['msg']} (got {err.get('input')!r})", False


def load_transcript(path: str | os.PathLike[str]) -> Transcript:
    """Read and validate one transcript file; `TranscriptError` on any problem. An unknown key is
    reported before the errors it likely explains (`turn:` before the missing `turns:`)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise TranscriptError(path, (), f"cannot read the file: {e}") from None
    try:
        node, data = _yaml.load(text)  # safe tags only; alias expansion and nesting bounded
    except yaml.YAMLError as e:
        line, message = _yaml.describe(e)
        if line is not None and message.startswith("invalid YAML: "):  # pytest-agent-eval's words
            message = f"invalid YAML at line {line}: {message.removeprefix('invalid YAML: ')}"
        raise TranscriptError(path, (), message, line) from None
    spec, turns = _validate(data, path, node)
    turns = [resolve_audio(turn, path.parent) for turn in turns]
    return Transcript(spec.id, turns, spec.threshold, spec.runs, spec.tags, path, _line(node, ("id",)) or 1)


def validate_transcript_dict(data: Any, source: str = "transcript") -> None:
    """Validate a parsed transcript document (e.g. YAML loaded by the caller) as `load_transcript`
    validates a file; `TranscriptError` on the first problem, located as `source: path: message`."""
    _validate(data, Path(source), None)


def _validate(data: Any, path: Path, node: yaml.Node | None) -> tuple[TranscriptSpec, list[Turn]]:
    """The document's spec and turns (`audio:` as written); errors name `path` and, given the YAML
    `node`, the line."""
    if not isinstance(data, dict):
        raise TranscriptError(
            path,
            (),
            f"a transcript must be a YAML mapping with `id` and `turns`, got {type(data).__name__}",
            1 if node is not None else None,
            _SCHEMA,
        )
    try:
        spec = TranscriptSpec.model_validate(data)
    except ValidationError as e:
        # an unknown key first: a misspelt key is why the required one is "missing"
        err, more = _union_errors(sorted(e.errors(), key=lambda x: x["type"] != "extra_forbidden"))
        loc, message, at_key = _pydantic_message(err)
        suffix = f" (and {more} more error{'s' if more > 1 else ''})" if more else ""
        raise TranscriptError(path, loc, message + suffix, _line(node, loc, key=at_key), _SCHEMA) from None
    try:
        turns = [_turn(t, i) for i, t in enumerate(spec.turns)]
    except _SpecError as e:
        raise TranscriptError(path, e.loc, e.message, _line(node, e.loc), _SCHEMA) from None
    return spec, turns


def _turn(spec: TurnSpec, index: int) -> Turn:
    base: Loc = ("turns", index, "expect")
    given = dict(spec.expect)
    if isinstance(items := given.get("evaluators"), list):
        given["evaluators"] = [_evaluator(item, (*base, "evaluators", j)) for j, item in enumerate(items)]
    for j, query in enumerate(given.get("spans") or []):
        try:
            validate_query(query, "")
        except ValueError as e:
            nested, text = _relative(str(e))
            raise _SpecError((*base, "spans", j, *nested), text) from None
    try:
        expect = Expect(**given)
    except ExpectError as e:
        message = e.message
        if message.startswith("Invalid regex pattern"):  # pytest-agent-eval's loader words it in lower case
            message = "i" + message[1:]
        raise _SpecError((*base, *_parse_loc(e.field)), message) from None
    return Turn(spec.user, expect=expect, audio=spec.audio)


# --- pytest collection ----------------------------------------------------------------------------------


class AgentEvalFile(pytest.File):
    """One transcript file; collects one `AgentEvalItem`."""

    def collect(self) -> Iterator[pytest.Item]:
        transcript = load_transcript(self.path)
        yield AgentEvalItem.from_parent(self, name=transcript.id, transcript=transcript)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, TranscriptError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


def _transcript_test(turns: list[Turn]) -> Callable[..., None]:
    def agent_eval_transcript(llm_eval_agent: Any, agent_eval: Any) -> None:
        agent_eval.run_sync(agent=llm_eval_agent, turns=turns).assert_threshold()

    return agent_eval_transcript


class AgentEvalItem(pytest.Function):
    """A transcript run as a test: a `Function` over a generated callable, so fixtures
    (`llm_eval_agent`, `agent_eval`) resolve exactly as for a Python test in the same directory."""

    def __init__(self, *, transcript: Transcript, **kwargs: Any) -> None:
        kwargs.setdefault("callobj", _transcript_test(transcript.turns))
        super().__init__(**kwargs)
        self.transcript = transcript
        options = {"threshold": transcript.threshold, "runs": transcript.runs, "tags": transcript.tags or None}
        self.add_marker(pytest.mark.agent_eval(**{k: v for k, v in options.items() if v is not None}))

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, self.transcript.line - 1, f"agent_eval transcript {self.transcript.id}"

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, AssertionError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)  # type: ignore[call-arg]
