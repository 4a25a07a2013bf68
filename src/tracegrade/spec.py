"""Evaluators from data: pydantic-evals' evaluator-spec syntax, used by `tracegrade grade --spec`.

Each item is `Name`, `{Name: positional_arg}` or `{Name: {param: value, ...}}`. The evaluator class
checks its own parameters (`tracegrade.evaluators.base.CheckedParameters`), so a bad value gives
the message Python gives, prefixed by the item (`evaluators[2]: MaxToolCalls.max_calls must be an
integer, got 'five'`); unknown names get the closest valid one.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

from ._hints import did_you_mean
from .errors import SpecError

__all__ = [
    "build_evaluator",
    "build_evaluators",
    "evaluator_registry",
    "load_spec",
    "make_evaluator",
    "register_evaluator",
]

_EXTRA: dict[str, type] = {}


def register_evaluator(cls: type, name: str | None = None) -> type:
    """Make a dataclass evaluator usable by name in specs, YAML transcripts (`expect.evaluators`) and
    `tracegrade.bridges.pydantic_evals.evaluator_types()` (also usable as a decorator)."""
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"register_evaluator() needs a dataclass evaluator class, got {cls!r}")
    _EXTRA[name or cls.__name__] = cls
    return cls


def evaluator_registry() -> dict[str, type]:
    """Every evaluator usable by name: the built-ins of `tracegrade.evaluators` and the registered ones."""
    from . import evaluators

    builtin = {n: getattr(evaluators, n) for n in evaluators.__all__}
    return {**{n: c for n, c in builtin.items() if _buildable(c)}, **_EXTRA}


def _buildable(cls: object) -> bool:
    """A concrete evaluator class (not a base such as `ScopedEvaluator`)."""
    from .evaluators import BaseEvaluator, ScopedEvaluator

    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls) and issubclass(cls, BaseEvaluator)):
        return False
    return cls.evaluate is not BaseEvaluator.evaluate and not (
        issubclass(cls, ScopedEvaluator) and cls.check is ScopedEvaluator.check
    )


def make_evaluator(item: Any) -> object:
    """The evaluator an item stands for. Raises `SpecError` (the item's shape, an unknown name) or the
    evaluator's own error for its parameters (`ParameterError`, `ValueError`, `TypeError`)."""
    registry = evaluator_registry()
    args: tuple[Any, ...]
    if isinstance(item, str):
        name, args, kwargs = item, (), {}
    elif isinstance(item, Mapping) and len(item) == 1:
        name, value = next(iter(item.items()))
        args, kwargs = ((), dict(value)) if isinstance(value, Mapping) else ((value,), {})
    else:
        raise SpecError(f"expected `Name`, `{{Name: argument}}` or `{{Name: {{param: value}}}}`, got {item!r}")
    if not isinstance(name, str) or name not in registry:
        raise SpecError(f"unknown evaluator {name!r}{did_you_mean(str(name), registry)}")
    cls = registry[name]
    fields = [f for f in dataclasses.fields(cls) if f.init]
    for value in args:
        required = [f for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        positional = required or [f for f in fields if not f.kw_only]
        if not positional:
            raise SpecError(f"{name}: takes no positional parameter, got {value!r}")
        kwargs = {positional[0].name: value}
    check = getattr(cls, "check_arguments", None)
    if check is not None:
        check(**kwargs)  # unknown and missing parameters, named as Python names them
    else:
        names = [f.name for f in fields]
        for key in kwargs:
            if key not in names:
                raise SpecError(f"{name}.{key} is not a parameter{did_you_mean(str(key), names, 'parameters')}")
    return cls(**kwargs)


def build_evaluator(item: Any, where: str = "evaluators[0]") -> object:
    """`make_evaluator`, with every error a `SpecError` prefixed by `where`."""
    try:
        return make_evaluator(item)
    except (SpecError, TypeError, ValueError) as e:
        raise SpecError(f"{where}: {e}") from None


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
        raise SpecError(f"{path}: unknown top-level key {unknown[0]!r}{did_you_mean(str(unknown[0]), ['evaluators'])}")
    if data["evaluators"] == []:
        raise SpecError(f"{path}: the `evaluators:` list is empty: nothing would be checked (no checks is not a pass)")
    try:
        return build_evaluators(data["evaluators"])
    except SpecError as e:
        raise SpecError(f"{path}: {e}") from None
