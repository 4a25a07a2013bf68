"""MaxCost: a spending budget over the run's model requests (`gen_ai.usage.cost.*`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

from ..results import EvalResult, TurnContext
from ..trajectory import Trajectory
from .base import ScopedEvaluator

__all__ = ["MaxCost"]


@dataclass(repr=False)
class MaxCost(ScopedEvaluator):
    """The model requests' recorded cost adds up to at most `max_cost` units of `currency`.

    Cost is what the telemetry recorded on each request (`ModelRequest.cost`), never an estimate:
    when a request has no cost, or its cost is in another or an unrecorded currency, the check is
    `not_evaluated` (a partial sum would understate the spend).
    """

    needs: ClassVar[tuple[str, ...]] = ("model_requests",)

    max_cost: float
    currency: str = "USD"
    evaluation_name: str | None = field(default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not math.isfinite(self.max_cost) or self.max_cost < 0:
            raise self._invalid("max_cost", f"must be a finite number >= 0, got {self.max_cost!r}")
        if not self.currency:
            raise self._invalid("currency", "must be a currency code such as 'USD'")

    def check(self, traj: Trajectory, ctx: TurnContext) -> EvalResult:
        reqs = traj.model_requests
        if not reqs:
            return EvalResult.not_evaluated("no model request was recorded: nothing to add up")
        unpriced = sum(r.cost is None for r in reqs)
        if unpriced:
            return EvalResult.not_evaluated(
                f"{unpriced} of {len(reqs)} model request(s) carry no cost (gen_ai.usage.cost.amount): "
                "the spend is not recorded; the instrumentation or a cost-computing span processor must "
                "record it"
            )
        want = self.currency.upper()
        other = sorted({str(r.cost.currency) for r in reqs if r.cost and (r.cost.currency or "").upper() != want})
        if other:
            return EvalResult.not_evaluated(
                f"cost recorded in {', '.join(repr(c) for c in other)}, not {self.currency!r}: "
                "amounts in different or unrecorded currencies are not added up"
            )
        spent = math.fsum(r.cost.amount for r in reqs if r.cost is not None)
        verdict = f"{spent:.6g} {want} over {len(reqs)} model request(s), budget={self.max_cost:g} {want}"
        return EvalResult(spent <= self.max_cost, ("over budget: " if spent > self.max_cost else "") + verdict)
