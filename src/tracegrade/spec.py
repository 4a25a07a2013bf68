"""Evaluators from data: pydantic-evals' evaluator-spec syntax, used by `tracegrade grade --spec`.

Each item is `Name`, `{Name: positional_arg}` or `{Name: {param: value, ...}}`. Names, parameters
and types are checked; errors name the item (`evaluators[2].ToolCorrectness.expected_tool`) and the
closest valid name.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from .errors import SpecError

__all__ = ["SpecError", "build_evaluator", "build_evaluators", "evaluator_registry", "load_spec", "register_evaluator"]

_EXTRA: dict[str, type] = {}


def register_evaluator(cls: type, name: str | None = None) -> type:
    """Make a dataclass evaluator usable by name in specs (also usable as a decorator)."""
    _EXTRA[name or cls.__name__] = cls
    return cls


def evaluator_registry() -> dict[str, type]:
    from . import evaluators

    names = {n: getattr(evaluators, n) for n in evaluators.__all__ if n not in ("BaseEvaluator", "Evaluator")}
    return {**{n: c for n, c in names.items() if isinstance(c, type) and dataclasses.is_dataclass(c)}, **_EXTRA}


def _closest(word: str, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.5)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _fields(cls: type) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(cls) if f.init]


def build_evaluator(item: Any, where: str = "evaluators[0]") -> object:
    registry = evaluator_registry()
    args: tuple[Any, ...]
    if isinstance(item, str):
        name, args, kwargs = item, (), {}
    elif isinstance(item, Mapping) and len(item) == 1:
        name, value = next(iter(item.items()))
        if isinstance(value, Mapping):
            args, kwargs = (), dict(value)
        else:
            args, kwargs = (value,), {}
    else:
        raise SpecError(f"{where}: expected `Name`, `{{Name: argument}}` or `{{Name: {{param: value}}}}`, got {item!r}")
    if not isinstance(name, str) or name not in registry:
        raise SpecError(f"{where}: unknown evaluator {name!r}{_closest(str(name), registry)}")
    cls = registry[name]
    fields = _fields(cls)
    names = [f.name for f in fields]
    if args:
        required = [
            f.name for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ]
        if not names:
            raise SpecError(f"{where}.{name}: takes no parameters, got {args[0]!r}")
        kwargs = {(required or names)[0]: args[0]}
    for key in kwargs:
        if key not in names:
            raise SpecError(f"{where}.{name}.{key}: unknown parameter{_closest(str(key), names)}; parameters: {names}")
    missing = [f.name for f in fields if f.name not in kwargs and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING]  # fmt: skip
    if missing:
        raise SpecError(f"{where}.{name}: missing required parameter(s) {missing}")
    try:
        TypeAdapter(cls).validate_python(kwargs)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise SpecError(f"{where}.{name}.{loc}: {err['msg']} (got {err.get('input')!r})") from None
    except Exception:  # a type pydantic cannot check: the constructor still validates below
        pass
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as e:
        raise SpecError(f"{where}.{name}: {e}") from None


def build_evaluators(items: Any, where: str = "evaluators") -> list[object]:
    if not isinstance(items, list):
        raise SpecError(f"{where}: expected a list of evaluators, got {type(items).__name__}")
    return [build_evaluator(item, f"{where}[{i}]") for i, item in enumerate(items)]


def load_spec(path: str | os.PathLike[str]) -> list[object]:
    """Read a YAML spec file with a top-level `evaluators:` list (safe tags only; alias expansion and
    nesting bounded, see `tracegrade._yaml`)."""
    import yaml

    from . import _yaml

    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise SpecError(f"{path}: cannot read spec: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise SpecError(f"{path}: cannot read spec: not UTF-8 text ({e.reason} at byte {e.start})") from None
    try:
        data = _yaml.load(text)[1]
    except yaml.YAMLError as e:
        line, message = _yaml.describe(e)
        raise SpecError(f"{path}{f':{line}' if line else ''}: {message}") from None
    if not isinstance(data, Mapping) or "evaluators" not in data:
        raise SpecError(f"{path}: expected a mapping with a top-level `evaluators:` list")
    if unknown := [k for k in data if k != "evaluators"]:
        raise SpecError(f"{path}: unknown top-level key {unknown[0]!r}{_closest(str(unknown[0]), ['evaluators'])}")
    try:
        return build_evaluators(data["evaluators"])
    except SpecError as e:
        raise SpecError(f"{path}: {e}") from None
