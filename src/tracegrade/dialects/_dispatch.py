"""One dispatch per span: which dialects to ask, decided by what the span carries.

A dialect may declare `GATE`, a `Gate` naming what a span must carry for its `classify` to answer
anything but False. The gates of all dialects are merged into three lookups (the span's attribute keys,
its name, its instrumentation scope), so choosing the dialects to ask costs the same however many are
registered; a dialect without a gate is asked about every span.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..tree import SpanNode

__all__ = ["NO_STEP", "Dispatch", "Gate", "NoStep", "gate_of"]

Classifier = tuple[str, Callable[["SpanNode"], object]]


class NoStep:
    """The type of `NO_STEP`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_STEP"


NO_STEP = NoStep()
"""`classify`'s third answer beside False and True: the span is the dialect's and holds no step for any
dialect, so no other dialect is asked about it (e.g. a client span that only opened a request another span
records; True lets the next dialects look). A dialect that gives it declares `claims(node)` in its readable spec."""

_NAME_CACHE = 10_000
"""Distinct span names remembered per dispatch table; names past it are matched each time."""


@dataclasses.dataclass(frozen=True, slots=True)
class Gate:
    """What a span must carry for a dialect's `classify` to recognize it: one of `keys` among its
    attributes, a name in `names`, starting with one of `prefixes` or ending with one of `suffixes`, or
    an instrumentation scope in `scopes`. A necessary condition, not a sufficient one: `classify` still
    decides, and answers False for every span the gate does not admit (a property test checks it)."""

    keys: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()
    scopes: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        """Each field as its immutable collection of non-empty strings (a set or list given is converted; a
        bare string, which would be taken letter by letter, is refused)."""
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, str | bytes) or not all(isinstance(v, str) and v for v in value):
                raise TypeError(f"Gate({field.name}=...) takes a collection of non-empty strings, got {value!r}")
            kind = tuple if field.name in ("prefixes", "suffixes") else frozenset
            object.__setattr__(self, field.name, kind(value))

    def admits(self, node: SpanNode) -> bool:
        """The gate on one span (the readable spec of `Dispatch.classifiers`)."""
        name = node.name
        return (
            any(key in node.attributes for key in self.keys)
            or name in self.names
            or name.startswith(self.prefixes)
            or name.endswith(self.suffixes)
            or node.scope_name in self.scopes
        )


class Dispatch:
    """The classifiers of `dialects` to ask about a span, in `dialects` order: those whose gate admits
    it, and every dialect without a gate. Each dialect is a bit; a span's bits are the union of those
    its name, its attribute keys and its scope select."""

    __slots__ = ("_by_bit", "_by_bits", "_gate_keys", "_key_bits", "_name_bits", "_name_rules", "_scope_bits",
                 "always", "dialects", "scoped")  # fmt: skip

    def __init__(self, dialects: Sequence[object]) -> None:
        self.dialects = tuple(dialects)
        self._by_bit: list[Classifier] = []
        self._key_bits: dict[str, int] = {}
        self._scope_bits: dict[str, int] = {}
        self._name_rules: list[tuple[int, Gate]] = []
        self.always = 0  # the dialects without a gate
        self.scoped = 0  # the dialects a scope can admit
        for i, dialect in enumerate(self.dialects):
            bit = 1 << i
            name: str = dialect.name  # type: ignore[attr-defined]
            self._by_bit.append((name, dialect.classify))  # type: ignore[attr-defined]
            gate = gate_of(dialect)
            if gate is None:
                self.always |= bit
                continue
            for key in gate.keys:
                self._key_bits[key] = self._key_bits.get(key, 0) | bit
            for scope in gate.scopes:
                self._scope_bits[scope] = self._scope_bits.get(scope, 0) | bit
                self.scoped |= bit
            if gate.names or gate.prefixes or gate.suffixes:
                self._name_rules.append((bit, gate))
        # a set, not a frozenset: `dict.keys() & set` walks the smaller side, `& frozenset` always the frozenset
        self._gate_keys = set(self._key_bits)
        self._name_bits: dict[str, int] = {}
        self._by_bits: dict[int, list[Classifier]] = {}

    def classifiers(self, node: SpanNode) -> list[Classifier]:
        """(name, classify) of each dialect to ask about `node`, in order; empty when none can read it."""
        bits = self._name_bits.get(node.name)
        if bits is None:
            bits = self._of_name(node.name)
        bits |= self.always
        for key in node.attributes.keys() & self._gate_keys:
            bits |= self._key_bits[key]
        if self.scoped & ~bits:
            bits |= self._scope_bits.get(node.scope_name, 0)
        found = self._by_bits.get(bits)
        if found is None:
            found = self._by_bits[bits] = [c for i, c in enumerate(self._by_bit) if bits >> i & 1]
        return found

    def _of_name(self, name: str) -> int:
        """The dialects a span name admits (remembered for the first `_NAME_CACHE` names)."""
        bits = 0
        for bit, gate in self._name_rules:
            if name in gate.names or name.startswith(gate.prefixes) or name.endswith(gate.suffixes):
                bits |= bit
        if len(self._name_bits) < _NAME_CACHE:
            self._name_bits[name] = bits
        return bits


def gate_of(dialect: object) -> Gate | None:
    """The dialect's `GATE` (None without one); a `GATE` that is not a `Gate` is a TypeError."""
    gate = getattr(dialect, "GATE", None)
    if gate is not None and not isinstance(gate, Gate):
        name = getattr(dialect, "name", dialect)
        raise TypeError(f"dialect {name!r}: GATE must be a tracegrade.dialects.Gate, not {type(gate).__name__}")
    return gate
