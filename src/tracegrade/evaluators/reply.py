"""ContainsEvaluator: substring and regex checks on the reply."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ParameterError
from ..results import EvalResult, TurnContext
from .base import BaseEvaluator

__all__ = ["ContainsEvaluator"]


@dataclass(repr=False)
class ContainsEvaluator(BaseEvaluator):
    """The reply contains / matches the given strings and patterns (case-insensitive by default); not evaluated
    when the reply was to come from spans that recorded none (`TurnContext.reply_missing`).

    Invalid regex patterns raise `ValueError` here, at construction. `evaluate` is async, as the
    reference protocol says (`await evaluator.evaluate(ctx)` works in custom evaluators).
    """

    any_of: list[str] = field(default_factory=list)
    all_of: list[str] = field(default_factory=list)
    matches_any: list[str] = field(default_factory=list)
    matches_all: list[str] = field(default_factory=list)
    case_sensitive: bool = False
    evaluation_name: str | None = field(default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        flags = 0 if self.case_sensitive else re.IGNORECASE
        self._any = [self._compile(p, flags, "matches_any", i) for i, p in enumerate(self.matches_any)]
        self._all = [self._compile(p, flags, "matches_all", i) for i, p in enumerate(self.matches_all)]

    @staticmethod
    def _compile(pattern: str, flags: int, where: str, index: int) -> re.Pattern[str]:
        try:
            return re.compile(pattern, flags)
        except (re.error, TypeError) as e:
            raise ParameterError(
                "ContainsEvaluator", f"{where}[{index}]", f"Invalid regex pattern {pattern!r}: {e}"
            ) from None

    async def evaluate(self, ctx: TurnContext) -> EvalResult:
        if ctx.reply_missing is not None:
            return EvalResult.not_evaluated(ctx.reply_missing)
        return self.check(ctx.reply or "")

    def check(self, reply: str) -> EvalResult:
        """The verdict on one reply (the synchronous core of `evaluate`)."""
        text = reply if self.case_sensitive else reply.lower()

        def has(s: str) -> bool:
            return (s if self.case_sensitive else s.lower()) in text

        problems: list[str] = []
        found: list[str] = []
        if self.any_of:
            hit = next((s for s in self.any_of if has(s)), None)
            if hit is None:
                problems.append(f"Reply did not contain any of {self.any_of!r}")
            else:
                found.append(f"contains {hit!r}")
        if missing := [s for s in self.all_of if not has(s)]:
            problems.append(f"Reply missing required strings: {missing!r}")
        elif self.all_of:
            found.append(f"contains all of {self.all_of!r}")
        if self._any:
            match = next((m for p in self._any if (m := p.search(reply))), None)
            if match is None:
                problems.append(f"Reply did not match any of {self.matches_any!r}")
            else:
                found.append(f"{match.re.pattern!r} matched {match.group(0)!r}")
        if unmatched := [p.pattern for p in self._all if not p.search(reply)]:
            problems.append(f"Reply missing required patterns: {unmatched!r}")
        else:
            found += [f"{p.pattern!r} matched {m.group(0)!r}" for p in self._all if (m := p.search(reply))]
        if problems:
            return EvalResult(False, "; ".join(problems))
        detail = f" ({'; '.join(found)})" if found else ""
        return EvalResult(True, "All substring and pattern checks passed" + detail)
