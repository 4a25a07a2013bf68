"""The one argument matcher every argument check uses, the LCS and alignments behind trajectory
scores, and the TrajectoryMatch scores themselves (`score_trajectory`, `score_steps`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, Literal

from ._hints import did_you_mean
from .errors import ParameterError

if TYPE_CHECKING:
    from .trajectory import ToolCall

__all__ = [
    "ARGS_MODES",
    "ORDERS",
    "ArgsMode",
    "KeyRule",
    "Step",
    "TrajectoryOrder",
    "align_any_order",
    "align_exact",
    "align_in_order",
    "check_args_options",
    "check_occurrence",
    "diff_arguments",
    "lcs_length",
    "occurrence_index",
    "score_steps",
    "score_trajectory",
    "step_matches",
]

ArgsMode = Literal["exact", "subset", "superset", "ignore"]
ARGS_MODES: tuple[str, ...] = ("exact", "subset", "superset", "ignore")
KeyRule = str | Callable[[Any], bool]
TrajectoryOrder = Literal["exact", "in_order", "any_order", "strict", "unordered", "subset", "superset"]
ORDERS: tuple[str, ...] = ("exact", "in_order", "any_order", "strict", "unordered", "subset", "superset")


def check_args_options(mode: str, key_modes: Mapping[str, KeyRule] | None, where: str) -> None:
    """Raise `ParameterError` for an unknown mode (overall or per key), at construction time; `where`
    is `Owner.param` (the mode's parameter) or the caller's name."""
    owner, _, param = where.partition(".")
    if mode not in ARGS_MODES:
        raise ParameterError(owner, param or "mode", f"must be one of {ARGS_MODES}, got {mode!r}")
    if not key_modes:
        return
    for key, rule in key_modes.items():
        if not callable(rule) and rule not in ARGS_MODES:
            raise ParameterError(
                owner, f"key_modes.{key}", f"must be a mode in {ARGS_MODES} or a callable, got {rule!r}"
            )


def check_occurrence(occ: object, owner: str = "") -> None:
    """Raise `ParameterError` unless `occ` is `"first"`, `"last"`, `"any"` or a 0-based index."""
    if not (occ in ("first", "last", "any") or (isinstance(occ, int) and not isinstance(occ, bool) and occ >= 0)):
        problem = f"must be 'first', 'last', 'any' or a 0-based index >= 0, got {occ!r}"
        raise ParameterError(owner, "occurrence", problem) if owner else ValueError(f"occurrence {problem}")


def occurrence_index(occ: object, count: int) -> int | None:
    """The 0-based index `occ` picks among `count` calls, or None when it picks none (an index out of
    range, a negative one, or not an occurrence at all)."""
    if occ == "first" or occ == "last":
        index = 0 if occ == "first" else count - 1
    elif isinstance(occ, int) and not isinstance(occ, bool):
        index = occ
    else:
        return None
    return index if 0 <= index < count else None


def diff_arguments(
    actual: Mapping[str, Any],
    expected: Mapping[str, Any],
    mode: str = "subset",
    *,
    recursive: bool = False,
    key_modes: Mapping[str, KeyRule] | None = None,
    ignore_keys: Sequence[str] = (),
) -> list[str]:
    """Human-readable differences between called and expected arguments; empty means a match.

    - `subset`: every expected key is present with an equal value (extra keys are fine); nested
      values compare in full unless `recursive=True`, which applies subset matching to nested dicts.
    - `superset`: every called key is expected, with an equal value (expected keys may be missing).
    - `exact`: the same keys with equal values. `ignore`: always matches.
    `key_modes` overrides the mode per dotted key path (`"filters.date"`), or checks the called
    value with a callable; `ignore_keys` are glob patterns of key paths left out on both sides.
    """
    check_args_options(mode, key_modes, "diff_arguments")
    diffs: list[str] = []
    _diff(actual, expected, mode, "", diffs, recursive, key_modes or {}, tuple(ignore_keys))
    return diffs


def _diff(
    actual: Mapping[str, Any], expected: Mapping[str, Any], mode: str, prefix: str, diffs: list[str],
    recursive: bool, rules: Mapping[str, KeyRule], ignore: tuple[str, ...],
) -> None:  # fmt: skip
    if mode == "ignore":
        return
    keys = list(expected) + [k for k in actual if k not in expected]
    if rules:
        keys += [r[len(prefix):] for r in rules if r.startswith(prefix) and "." not in r[len(prefix):]
                 and r[len(prefix):] not in keys]  # fmt: skip
    for key in keys:
        path = f"{prefix}{key}"
        if ignore and any(fnmatchcase(path, pattern) for pattern in ignore):
            continue
        rule = rules.get(path) if rules else None
        if callable(rule):
            if key not in actual:
                diffs.append(f"missing key {path!r}")
            elif not rule(actual[key]):
                diffs.append(f"key {path!r}: {actual[key]!r} does not satisfy {getattr(rule, '__name__', rule)}")
            continue
        key_mode = rule or mode
        if key_mode == "ignore":
            continue
        in_a, in_e = key in actual, key in expected
        if not in_e:
            if key_mode in ("exact", "superset") and in_a:
                diffs.append(f"unexpected key {path!r} with value {actual[key]!r}")
            continue
        if not in_a:
            if key_mode in ("exact", "subset"):
                diffs.append(f"missing key {path!r}")
            continue
        a, e = actual[key], expected[key]
        deep = rule is not None or recursive or (bool(rules or ignore) and _has_rules_under(rules, ignore, path))
        if deep and isinstance(a, Mapping) and isinstance(e, Mapping):
            _diff(a, e, key_mode, f"{path}.", diffs, recursive, rules, ignore)
        elif a != e:
            diffs.append(f"key {path!r}: expected {e!r}, got {a!r}")


def _has_rules_under(rules: Mapping[str, KeyRule], ignore: tuple[str, ...], path: str) -> bool:
    prefix = f"{path}."
    return any(r.startswith(prefix) for r in rules) or any(p.startswith(prefix) for p in ignore)


def lcs_length(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of the longest common subsequence, bit-parallel (Allison-Dix / Hyyrö).

    One big-int bit vector over `b`; each element of `a` costs a few word-parallel operations, so
    10,000 x 10,000 takes milliseconds instead of the O(nm) table's minutes.
    """
    if not a or not b:
        return 0
    if a == b:
        return len(a)
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


# --- trajectory alignment --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    """One expected trajectory step: a tool name, optionally with arguments, optionally optional."""

    tool: str
    args: Mapping[str, Any] | None = None
    optional: bool = False

    @classmethod
    def parse(cls, value: Any, where: str) -> Step:
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, Mapping):
            keys = ("tool", "args", "optional")
            unknown = [k for k in value if k not in keys]
            if unknown or not isinstance(value.get("tool"), str):
                problem = f"unknown key {unknown[0]!r}{did_you_mean(str(unknown[0]), keys)}" if unknown else (
                    "needs a 'tool' name")  # fmt: skip
                raise ValueError(f"{where}: a step is a tool name or {{tool, args?, optional?}}; {problem}")
            args = value.get("args")
            if args is not None and not isinstance(args, Mapping):
                raise ValueError(f"{where}.args: expected a dict, got {type(args).__name__}")
            optional = value.get("optional", False)
            if type(optional) is not bool:
                raise ValueError(f"{where}.optional: expected true or false, got {optional!r}")
            return cls(value["tool"], args, optional)
        raise ValueError(f"{where}: a step is a tool name or {{tool, args?, optional?}}, got {value!r}")

    def describe(self) -> str:
        text = self.tool
        if self.args is not None:
            text += f"({', '.join(f'{k}={v!r}' for k, v in self.args.items())})"
        return f"{text}?" if self.optional else text


def step_matches(step: Step, name: str, args: Any, mode: str) -> bool:
    if name != step.tool:
        return False
    if step.args is None:
        return True
    return isinstance(args, Mapping) and not diff_arguments(args, step.args, mode)


def align_in_order(n_actual: int, steps: Sequence[Step], match: Callable[[int, int], bool]) -> tuple[int, int]:
    """LCS under a match predicate (O(nm)); returns (matched, matched optional steps)."""
    m = len(steps)
    # dp[j] = (matched, -optional_matched) best for actual[:i] vs steps[:j]; prefer fewer optional matches
    prev = [(0, 0)] * (m + 1)
    for i in range(1, n_actual + 1):
        cur = [(0, 0)] * (m + 1)
        for j in range(1, m + 1):
            best = max(prev[j], cur[j - 1])
            if match(i - 1, j - 1):
                diag = prev[j - 1]
                cand = (diag[0] + 1, diag[1] - (1 if steps[j - 1].optional else 0))
                best = max(best, cand)
            cur[j] = best
        prev = cur
    matched, neg_opt = prev[m]
    return matched, -neg_opt


def align_exact(n_actual: int, steps: Sequence[Step], match: Callable[[int, int], bool]) -> bool:
    """Whether actual equals steps with some optional steps left out."""
    reach = {0}  # positions in steps reachable after consuming actual[:i]
    for i in range(n_actual):
        nxt: set[int] = set()
        for j in _skip_optional(reach, steps):
            if j < len(steps) and match(i, j):
                nxt.add(j + 1)
        if not nxt:
            return False
        reach = nxt
    return len(steps) in _skip_optional(reach, steps)


def _skip_optional(positions: set[int], steps: Sequence[Step]) -> set[int]:
    out = set(positions)
    stack = list(positions)
    while stack:
        j = stack.pop()
        if j < len(steps) and steps[j].optional and j + 1 not in out:
            out.add(j + 1)
            stack.append(j + 1)
    return out


def align_any_order(n_actual: int, steps: Sequence[Step], match: Callable[[int, int], bool]) -> tuple[int, int, int]:
    """Maximum multiset matching of calls to steps, each call matching one step at most: as many required steps
    as any assignment matches, then as many optional ones (augmenting paths, so the order of `steps` never changes
    the result). Returns (matched, matched optional steps, actual calls left unmatched)."""
    adjacent = [[i for i in range(n_actual) if match(i, j)] for j in range(len(steps))]
    owner = [-1] * n_actual  # the step each call is matched to
    matched = optional = 0
    for j in sorted(range(len(steps)), key=lambda j: steps[j].optional):  # required steps first
        if _augment(j, adjacent, owner):
            matched += 1
            optional += steps[j].optional
    return matched, optional, owner.count(-1)


def _augment(root: int, adjacent: list[list[int]], owner: list[int]) -> bool:
    """Match step `root`, moving matched steps to other calls along one augmenting path when no call it matches
    is free (iterative depth-first search; a step once matched stays matched)."""
    for i in adjacent[root]:
        if owner[i] < 0:
            owner[i] = root
            return True
    seen = [False] * len(owner)
    stack = [(root, iter(adjacent[root]))]
    via: list[int] = []  # via[k]: the call through which stack[k]'s step reaches stack[k + 1]'s
    while stack:
        step, calls = stack[-1]
        for i in calls:
            if seen[i]:
                continue
            seen[i] = True
            if owner[i] < 0:
                owner[i] = step
                for k in range(len(via) - 1, -1, -1):
                    owner[via[k]] = stack[k][0]
                return True
            via.append(i)
            stack.append((owner[i], iter(adjacent[owner[i]])))
            break
        else:
            stack.pop()
            if via:
                via.pop()
    return False


# --- TrajectoryMatch scores -------------------------------------------------------------------------


def _f1(precision: float, recall: float) -> float:
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def score_trajectory(actual: list[str], expected: list[str], order: TrajectoryOrder) -> tuple[float, str]:
    """The score of tool names against expected names for `exact`, `in_order` (F1 of the LCS) and
    `any_order` (F1 of the multiset overlap), and the reason that reproduces it."""
    if order == "exact":
        if actual == expected:
            return 1.0, f"actual trajectory matches expected: {actual!r}"
        return 0.0, f"actual trajectory {actual!r} does not equal expected {expected!r}"
    if not actual and not expected:
        return 1.0, "both actual and expected trajectories are empty"
    if order == "any_order":
        overlap, label = sum((Counter(expected) & Counter(actual)).values()), "multiset overlap"
    else:
        overlap, label = lcs_length(actual, expected), "LCS"
    precision = overlap / len(actual) if actual else 0.0
    recall = overlap / len(expected) if expected else 0.0
    f1 = _f1(precision, recall)
    return f1, (
        f"{label}={overlap}, precision={overlap}/{len(actual)}={precision:.3f}, "
        f"recall={overlap}/{len(expected)}={recall:.3f}, F1={f1:.3f} "
        f"(expected: {expected!r}, actual: {actual!r})"
    )


def score_steps(calls: Sequence[ToolCall], steps: Sequence[Step], order: TrajectoryOrder,
                args_mode: str = "subset") -> tuple[float, str]:  # fmt: skip
    """The score of `calls` against `steps` in every order mode, and the reason that reproduces it.
    Plain name steps in `exact` / `in_order` / `any_order` use `score_trajectory`."""
    actual = [c.name for c in calls]
    if order in ("exact", "in_order", "any_order") and all(s.args is None and not s.optional for s in steps):
        return score_trajectory(actual, [s.tool for s in steps], order)

    def match(i: int, j: int) -> bool:
        return step_matches(steps[j], calls[i].name, calls[i].args, args_mode)

    with_args = any(s.args is not None for s in steps)
    actual_shown = [c.describe() for c in calls] if with_args else actual
    shown = f"(expected: {[s.describe() for s in steps]!r}, actual: {actual_shown!r})"
    required = sum(not s.optional for s in steps)
    if order in ("exact", "strict", "in_order"):
        overlap, optional = align_in_order(len(calls), steps, match)
        label, extra = "LCS", len(calls) - overlap
    else:
        overlap, optional, extra = align_any_order(len(calls), steps, match)
        label = "multiset overlap"
    if not calls and required == 0:
        return 1.0, f"both actual and expected trajectories are empty {shown}"
    denominator = required + optional
    precision = overlap / len(calls) if calls else 0.0
    recall = overlap / denominator if denominator else 0.0
    pr = (f"{label}={overlap}, precision={overlap}/{len(calls)}={precision:.3f}, "
          f"recall={overlap}/{denominator}={recall:.3f}")  # fmt: skip
    if order in ("exact", "strict"):
        ok = align_exact(len(calls), steps, match)
        verb = "matches" if ok else "does not match"
        return (1.0 if ok else 0.0), f"actual trajectory {verb} the expected sequence; {pr} {shown}"
    if order in ("in_order", "any_order"):
        f1 = _f1(precision, recall)
        return f1, f"{pr}, F1={f1:.3f} {shown}"
    missing = required - (overlap - optional)  # required steps no call matched
    checks = {"unordered": missing == 0 and extra == 0, "subset": extra == 0, "superset": missing == 0}
    ok = checks[order]
    why = {"unordered": f"{missing} missing, {extra} unexpected", "subset": f"{extra} call(s) outside the expected",
           "superset": f"{missing} expected step(s) not called"}[order]  # fmt: skip
    return (1.0 if ok else 0.0), f"{order}: {'pass' if ok else 'fail'} ({why}); {pr} {shown}"
