"""YAML from files people hand to tracegrade (grading specs, transcripts), read with bounds.

Only YAML's safe tags are constructed (`!!python/...` is refused). Before anything is built, the
composed node graph is measured: aliases may not expand the document by more than `MAX_ALIAS_NODES`
nodes (a "billion laughs" document of a few hundred bytes names ~1e9 nodes), refer to a node that
contains them, or nest collections deeper than `MAX_DEPTH`. Sizes are counted once per anchored
node, so measuring never expands anything. Refusals are `yaml.MarkedYAMLError`s whose mark is the
offending alias (or collection), so callers report them like any other YAML error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

__all__ = ["MAX_ALIAS_NODES", "MAX_DEPTH", "YAMLBoundError", "describe", "load"]

MAX_ALIAS_NODES = 100_000
"""Nodes a document may gain through aliases (each alias counts the expanded size of its target)."""

MAX_DEPTH = 100
"""Collections nested deeper than this are refused (the composer and everything after it recurse)."""


class YAMLBoundError(yaml.MarkedYAMLError):  # type: ignore[misc]  # PyYAML has no type stubs here
    """A document refused for its shape (alias expansion, recursive alias, nesting), not its syntax."""


@dataclass
class _Open:
    """A collection being composed: its expanded size so far, the nodes it holds literally, and the
    last alias inside it (the one to blame when it grows too large)."""

    size: int = 1
    literal: int = 1
    alias: tuple[str, yaml.Mark] | None = field(default=None)


class _BoundedLoader(yaml.SafeLoader):  # type: ignore[misc]
    def __init__(self, stream: str, max_alias_nodes: int, max_depth: int) -> None:
        super().__init__(stream)
        self._max_alias_nodes, self._max_depth = max_alias_nodes, max_depth
        self._open: list[_Open] = []
        self._done: dict[int, tuple[int, tuple[str, yaml.Mark] | None]] = {}  # id(anchored node) → size, alias

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            target = self.anchors.get(event.anchor)
            if target is not None and id(target) not in self._done:
                raise YAMLBoundError(
                    problem=f"alias *{event.anchor} refers to a collection that contains it (a recursive alias)",
                    problem_mark=event.start_mark,
                )
            node = super().compose_node(parent, index)  # an undefined alias raises here
            size = self._done[id(node)][0]
            self._add(size, 0, (event.anchor, event.start_mark))
            return node
        anchor = getattr(event, "anchor", None)
        if not isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
            node = super().compose_node(parent, index)
            if anchor is not None:
                self._done[id(node)] = (1, None)
            self._add(1, 1, None)
            return node
        if len(self._open) >= self._max_depth:
            raise YAMLBoundError(
                problem=f"collections nested deeper than {self._max_depth} levels", problem_mark=event.start_mark
            )
        self._open.append(_Open())
        node = super().compose_node(parent, index)
        done = self._open.pop()
        if anchor is not None:
            self._done[id(node)] = (done.size, done.alias)
        self._add(done.size, done.literal, done.alias)
        return node

    def _add(self, size: int, literal: int, alias: tuple[str, yaml.Mark] | None) -> None:
        if not self._open:
            return
        top = self._open[-1]
        top.size += size
        top.literal += literal
        if alias is not None:
            top.alias = alias
        if top.size - top.literal > self._max_alias_nodes and top.alias is not None:
            name, mark = top.alias
            raise YAMLBoundError(
                problem=f"alias *{name} makes the document expand past {self._max_alias_nodes} nodes through "
                "aliases (refused: a YAML alias bomb)",
                problem_mark=mark,
            )

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except yaml.YAMLError:
            raise
        except (ValueError, OverflowError) as e:  # e.g. a 5000-digit integer, month 13 in a timestamp
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {_preview(node)} ({e})", node.start_mark
            ) from None


def _preview(node: yaml.Node) -> str:
    value = node.value if isinstance(node, yaml.ScalarNode) else node.tag
    text = str(value)
    return repr(text if len(text) <= 40 else text[:40] + "...")


def load(
    text: str, *, max_alias_nodes: int = MAX_ALIAS_NODES, max_depth: int = MAX_DEPTH
) -> tuple[yaml.Node | None, Any]:
    """The composed root node (for line numbers) and the constructed data of a one-document YAML
    text; `yaml.YAMLError` (a `YAMLBoundError` for a refused shape) on any problem."""
    loader = _BoundedLoader(text, max_alias_nodes, max_depth)
    try:
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    finally:
        loader.dispose()


def describe(error: yaml.YAMLError) -> tuple[int | None, str]:
    """The 1-based line of a YAML error and a one-line message for it (without the mark):
    `invalid YAML: ...` for a syntax or construction error, the refusal for a `YAMLBoundError`."""
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    if isinstance(error, yaml.MarkedYAMLError):
        text = "; ".join(str(p) for p in (error.context, error.problem) if p)
    else:
        text = str(error)
    text = " ".join(text.split()) or type(error).__name__
    return (mark.line + 1 if mark is not None else None), (
        text if isinstance(error, YAMLBoundError) else f"invalid YAML: {text}"
    )
