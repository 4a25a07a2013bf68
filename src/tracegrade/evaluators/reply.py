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
    """The reply contains / matches the given strings and patterns (case-insensitive by default).

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
            raise ParameterError("ContainsEvaluator", f"{where}[{index}]", f"invalid regex {pattern!r}: {e}") from None

    async def evaluate(self, ctx: TurnContext) -> EvalResult:
        return self.check(ctx.reply or "")

    def check(self, reply: str) -> EvalResult:
        """The verdict on one reply (the synchronous core of `evaluate`)."""
        text = reply if self.case_sensitive else reply.lower()

        def has(s: str) -> bool:
            return (s if self.case_sensitive else s.lower()) in text

        problems: list[str] = []
        if self.any_of and not any(has(s) for s in self.any_of):
            problems.append(f"contains none of {self.any_of!r}")
        if missing := [s for s in self.all_of if not has(s)]:
            problems.append(f"is missing {missing!r}")
        if self._any and not any(p.search(reply) for p in self._any):
            problems.append(f"matches none of {self.matches_any!r}")
        if unmatched := [p.pattern for p in self._all if not p.search(reply)]:
            problems.append(f"does not match {unmatched!r}")
        shown = reply if len(reply) <= 200 else reply[:200] + "..."
        if problems:
            return EvalResult(False, f"reply {'; '.join(problems)} (reply: {shown!r})")
        return EvalResult(True, "reply contains the expected text")
