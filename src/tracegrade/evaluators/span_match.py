"""HasMatchingSpan: some span in the tree satisfies a `SpanQuery` (or predicate)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..results import EvalResult, TurnContext
from ..trajectory import NO_SPANS_REASON
from ..tree import SpanPredicate, SpanQuery, validate_query
from .base import OWN_CHECK, BaseEvaluator

__all__ = [
    "HasMatchingSpan",
]


@dataclass(repr=False)
class HasMatchingSpan(BaseEvaluator):
    """Passes when at least one span matches `query`."""

    query: SpanQuery | SpanPredicate = field(metadata=OWN_CHECK)
    evaluation_name: str | None = field(default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        validate_query(self.query)

    def evaluate(self, ctx: TurnContext) -> EvalResult:
        tree = ctx.span_tree
        if tree is None or len(tree) == 0:
            return EvalResult.not_evaluated(NO_SPANS_REASON)
        node = tree.first(self.query)
        what = getattr(self.query, "__name__", None) or repr(self.query)
        if node is not None:
            return EvalResult(True, f"span {node.name!r} matches {what}")
        names = list(dict.fromkeys(n.name for n in tree))
        shown = ", ".join(repr(n) for n in names[:15]) + (", ..." if len(names) > 15 else "")
        return EvalResult(False, f"no span of {len(tree)} matches {what} (span names: {shown})")
