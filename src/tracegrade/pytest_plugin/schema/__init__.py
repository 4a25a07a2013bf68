"""The JSON Schema of YAML transcript files, generated from the transcript classes
(`tracegrade.pytest_plugin.transcript`, `yaml_collect`) and the evaluators. It ships as
`transcript.json` next to this module; `python -m tracegrade.pytest_plugin.schema [--write]` prints or
rewrites it.
"""

from __future__ import annotations

import argparse
import builtins
import dataclasses
import inspect
import json
import sys
import types
import typing
from collections import abc
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema
from typing_extensions import is_typeddict

from ..transcript import Expect
from ..yaml_collect import SCHEMA_FILE

__all__ = ["SCHEMA_FILE", "render_schema", "transcript_json_schema"]


_DESCRIPTIONS: dict[tuple[str, str], str] = {
    ("Transcript", "id"): "Unique test identifier; becomes the pytest test name.",
    ("Transcript", "threshold"): "Fraction of runs that must pass for the test to pass (default: [tool.agent_eval] "
    "threshold, 0.8).",
    ("Transcript", "runs"): "Number of times to execute the full transcript (default: [tool.agent_eval] runs, 1).",
    ("Transcript", "tags"): "Quality-gate tags used by [tool.agent_eval.groups] membership.",
    ("Transcript", "turns"): "Ordered conversation turns; history accumulates across them.",
    ("Turn", "user"): "The user message for this turn.",
    ("Turn", "audio"): "Path of a recording of the message for voice agents, resolved against this YAML file.",
    ("Turn", "expect"): "What the agent's answer to this turn must satisfy. All fields optional.",
    ("Expect", "evaluators"): "Evaluators by name, as in grading specs: `Name`, `{Name: argument}` or "
    "`{Name: {param: value}}`.",
    ("Expect", "reply_contains_any"): "At least one substring must appear in the reply (case-insensitive).",
    ("Expect", "reply_contains_all"): "Every substring must appear in the reply (case-insensitive).",
    ("Expect", "reply_matches_any"): "At least one regex (re.search, case-insensitive) must match the reply.",
    ("Expect", "reply_matches_all"): "Every regex (re.search, case-insensitive) must match the reply.",
    ("Expect", "tool_calls_include"): "Tool names that must appear in this turn's tool calls (from its spans).",
    ("Expect", "tool_calls_exclude"): "Tool names that must NOT appear in this turn's tool calls.",
    ("Expect", "tool_calls_ordered"): "If true, tool_calls_include must appear in the given order.",
    ("Expect", "tool_calls_args"): "Assertions on the arguments of specific tools' calls.",
    ("Expect", "judge"): "An LLM judge of the reply against a rubric (JudgeEvaluator).",
    ("Expect", "trajectory"): "The expected sequence of tool calls (TrajectoryMatch): its list of steps, or "
    "its parameters.",
    ("Expect", "max_tool_calls"): "Most tool calls the turn may make (MaxToolCalls).",
    ("Expect", "max_model_requests"): "Most model requests the turn may make (MaxModelRequests).",
    ("Expect", "spans"): "Span queries that must each match some span of the turn (HasMatchingSpan).",
    ("JudgeConfig", "rubric"): "Natural-language criteria the LLM judge evaluates against.",
    ("JudgeConfig", "model"): "pydantic-ai model id (e.g. 'openai:gpt-4o'); falls back to `judge_model` / "
    "`model` in [tool.agent_eval].",
    ("JudgeConfig", "retries"): "Retries after a failed judge call, before the result is an error (default: "
    "[tool.agent_eval] retries, 2).",
    ("JudgeConfig", "timeout"): "Seconds per judge call (default: [tool.agent_eval] timeout, 30).",
    ("ToolCallArgsConfig", "tool"): "Name of the tool whose call arguments to check.",
    ("ToolCallArgsConfig", "args"): "Expected arguments (compared by `mode`); `args`, `judge` or both are needed.",
    ("ToolCallArgsConfig", "mode"): "subset: the expected keys match; exact: equality; superset; ignore.",
    ("ToolCallArgsConfig", "judge"): "An LLM judge of the arguments against a rubric (ToolCallArgsJudgeEvaluator).",
    ("ToolCallArgsConfig", "recursive"): "Match nested mappings as subsets too.",
    ("ToolCallArgsConfig", "key_modes"): "A comparison mode per dotted key path.",
    ("ToolCallArgsConfig", "ignore_keys"): "Glob patterns of key paths left out of the comparison.",
    ("ToolCallArgsConfig", "occurrence"): "Which call: 'any' (some call), 'first', 'last' or a 0-based index.",
}
"""Editor help for each field of the transcript's own mappings (evaluators carry their docstrings)."""

_TITLE = "tracegrade transcript"
_DESCRIPTION = (
    "A multi-turn agent evaluation transcript. Files matching this schema under a configured yaml_dirs "
    "directory (default tests/evals) are collected as pytest tests."
)


class _Unrepresentable:
    """Stands for an annotation with no YAML form (a callable, a model object, a name not importable)."""


class _Names(dict[str, Any]):
    """Evaluation namespace of a class's string annotations: its module's names, then builtins, then
    `_Unrepresentable` for names defined only for type checkers."""

    def __init__(self, module: Any) -> None:
        super().__init__()
        self.module = module

    def __missing__(self, key: str) -> Any:
        found = getattr(self.module, key, None) if self.module is not None else None
        if found is None:
            found = getattr(builtins, key, _Unrepresentable)
        return found


def _annotation(cls: type, name: str) -> Any:
    """Field `name`'s annotation on `cls` (or a base), evaluated; `Any` when it has none."""
    for klass in cls.__mro__:
        raw = inspect.get_annotations(klass).get(name)
        if raw is None:
            continue
        return eval(raw, {}, _Names(sys.modules.get(klass.__module__))) if isinstance(raw, str) else raw
    return Any


class _SchemaTypes:
    """The YAML form of the transcript classes as pydantic models, built from their dataclass fields:
    Python-only alternatives (callables, objects, the "or its keyword arguments" `dict`) dropped."""

    def __init__(self) -> None:
        self.models: dict[type, type[BaseModel]] = {}

    def of(self, hint: Any) -> Any:
        """`hint`'s YAML form, or `_Unrepresentable`."""
        if hint is Any or hint in (str, int, float, bool, type(None), timedelta):
            return hint
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin is Literal or is_typeddict(hint):
            return hint
        if origin in (typing.Union, types.UnionType):
            kept = [t for t in (self.of(a) for a in args) if t is not _Unrepresentable]
            if any(isinstance(t, type) and issubclass(t, BaseModel) for t in kept):
                kept = [t for t in kept if typing.get_origin(t) is not dict]  # a mapping of the model's fields
            return typing.Union[tuple(kept)] if kept else _Unrepresentable  # noqa: UP007 - built from a tuple
        if origin in (list, tuple, set, frozenset, abc.Sequence) and args:
            item = self.of(args[0])
            return _Unrepresentable if item is _Unrepresentable else list[item]  # type: ignore[valid-type]
        if origin in (dict, abc.Mapping) and len(args) == 2:
            value = self.of(args[1])
            return _Unrepresentable if value is _Unrepresentable else dict[str, value]  # type: ignore[valid-type]
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            return self.model(hint)
        return _Unrepresentable

    def model(self, cls: type, name: str | None = None, overrides: Mapping[str, Any] | None = None) -> type[BaseModel]:
        """The model of dataclass `cls`'s init fields (each field's YAML form; a field with none is left out)."""
        if (known := self.models.get(cls)) is not None and overrides is None:
            return known
        name = name or cls.__name__
        defined: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            hint = (overrides or {}).get(f.name) or self.of(_annotation(cls, f.name))
            if hint is _Unrepresentable:
                continue
            default: Any = ...
            if f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            described = _DESCRIPTIONS.get((name, f.name))
            defined[f.name] = (hint, Field(default, description=described))
        doc = inspect.cleandoc(cls.__doc__ or "").split("\n\n")[0].replace("\n", " ") or None
        built: type[BaseModel] = create_model(name, __config__=ConfigDict(extra="forbid"), __doc__=doc, **defined)
        self.models[cls] = built
        return built

    def evaluator_item(self, registry: Mapping[str, type]) -> Any:
        """An `evaluators:` entry: `Name` (when nothing is required), `{Name: {param: value}}` or
        `{Name: argument}` (the first required parameter), for each evaluator of `registry`."""
        choices: list[Any] = []
        bare: list[str] = []
        for name, cls in sorted(registry.items()):
            params = self.model(cls, name)
            required = [n for n, f in params.model_fields.items() if f.is_required()]
            if not required:
                bare.append(name)
            value: Any = params
            if required:
                value = typing.Union[params, params.model_fields[required[0]].annotation]  # noqa: UP007
            entry: dict[str, Any] = {name: (value, Field(title=name, description=params.__doc__))}
            choices.append(create_model(f"{name}Entry", __config__=ConfigDict(extra="forbid"), **entry))
        if bare:
            choices.insert(0, Literal[tuple(bare)])
        return typing.Union[tuple(choices)]  # noqa: UP007 - built from a tuple


class _GenerateSchema(GenerateJsonSchema):
    """pydantic's generator, with `SpanQuery` closed (an unknown key is an error, as in `validate_query`)."""

    def typed_dict_schema(self, schema: core_schema.TypedDictSchema) -> JsonSchemaValue:
        generated = super().typed_dict_schema(schema)
        generated["additionalProperties"] = False
        return generated


def transcript_json_schema(evaluators: Mapping[str, type] | None = None) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of YAML transcript files, generated from `TranscriptSpec` /
    `TurnSpec` (the file's shape) and `Expect`, `JudgeConfig`, `ToolCallArgsConfig` and the evaluators
    (what `expect:` holds). `evaluators` names the classes `expect.evaluators` may use: by default
    the built-ins of `tracegrade.evaluators`; pass `tracegrade.spec.evaluator_registry()` to add the
    registered ones."""
    from ... import evaluators as builtin
    from ...spec import evaluator_registry
    from ..yaml_collect import TranscriptSpec, TurnSpec

    if evaluators is None:
        evaluators = {n: c for n, c in evaluator_registry().items() if getattr(builtin, n, None) is c}
    made = _SchemaTypes()
    item = made.evaluator_item(evaluators)
    expect = made.model(Expect, overrides={"evaluators": list[item]})  # type: ignore[valid-type]

    def spec(model: type[BaseModel], name: str, **types_: Any) -> type[BaseModel]:
        defined: dict[str, Any] = {}
        for key, info in model.model_fields.items():
            merged = FieldInfo.merge_field_infos(info, description=_DESCRIPTIONS.get((name, key)))
            if key in types_:
                merged = FieldInfo.merge_field_infos(merged, annotation=types_[key])
            defined[key] = (merged.annotation, merged)
        return create_model(name, __config__=ConfigDict(extra="forbid"), **defined)

    turn = spec(TurnSpec, "Turn", expect=expect)
    transcript = spec(TranscriptSpec, "Transcript", turns=list[turn])  # type: ignore[valid-type]
    generated = transcript.model_json_schema(schema_generator=_GenerateSchema)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **generated,
        "title": _TITLE,
        "description": _DESCRIPTION,
    }


def render_schema() -> str:
    """`transcript_json_schema()` as the text of `SCHEMA_FILE`."""
    return json.dumps(transcript_json_schema(), indent=2, ensure_ascii=False) + "\n"


def _main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tracegrade.pytest_plugin.schema",
        description="Print (or write) the JSON Schema of YAML transcripts.",
    )
    parser.add_argument("--write", action="store_true", help=f"write it to the shipped file ({SCHEMA_FILE.name})")
    args = parser.parse_args(argv)
    if args.write:
        SCHEMA_FILE.write_text(render_schema(), encoding="utf-8")
        print(f"wrote {SCHEMA_FILE}")
    else:
        sys.stdout.write(render_schema())
    return 0
