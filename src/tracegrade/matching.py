"""The one argument matcher every argument check uses, and the LCS behind `in_order` scores."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Literal

__all__ = ["ArgsMode", "diff_arguments", "lcs_length"]

ArgsMode = Literal["exact", "subset"]


def diff_arguments(actual: Mapping[str, Any], expected: Mapping[str, Any], mode: ArgsMode = "subset") -> list[str]:
    """Human-readable differences; empty means a match.

    `subset`: every expected top-level key is present with an equal value (nested values compare
    in full). `exact`: the same, and no unexpected keys.
    """
    if mode not in ("exact", "subset"):
        raise ValueError(f"argument match mode must be 'exact' or 'subset', got {mode!r}")
    diffs: list[str] = []
    for key, want in expected.items():
        if key not in actual:
            diffs.append(f"missing key {key!r}")
        elif actual[key] != want:
            diffs.append(f"key {key!r}: expected {want!r}, got {actual[key]!r}")
    if mode == "exact":
        diffs.extend(f"unexpected key {k!r} with value {v!r}" for k, v in actual.items() if k not in expected)
    return diffs


def lcs_length(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of the longest common subsequence, bit-parallel (Allison-Dix / Hyyrö).

    One big-int bit vector over `b`; each element of `a` costs a few word-parallel operations, so
    10,000 x 10,000 takes milliseconds instead of the O(nm) table's minutes.
    """
    if not a or not b:
        return 0
    masks: dict[Hashable, int] = {}
    for i, item in enumerate(b):
        masks[item] = masks.get(item, 0) | (1 << i)
    full = (1 << len(b)) - 1
    v = full
    for item in a:
        m = masks.get(item)
        if m is None:
            continue
        u = v & m
        v = ((v + u) | (v - u)) & full
    return len(b) - v.bit_count()
