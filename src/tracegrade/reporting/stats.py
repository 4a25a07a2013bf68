"""Statistics over a case's repeated runs: pass@k and pass^k, per-check pass rates with Wilson
95% intervals, and flaky checks (passed in some runs, failed in others).

- pass@k: the probability that at least one of k runs drawn without replacement from the n
  recorded ones passes, `1 - C(n-c, k) / C(n, k)` (the unbiased estimator of Chen et al., 2021).
- pass^k: the probability that all k drawn runs pass, `C(c, k) / C(n, k)` (τ-bench's reliability).
- A check's rate counts the runs in which it ran (`not_evaluated` runs are left out and counted
  apart); the Wilson score interval stays inside [0, 1] and is informative for small n.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb, sqrt
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import CaseRecord

__all__ = ["CaseStats", "CheckStats", "case_stats", "pass_at_k", "pass_hat_k", "wilson"]

Z95 = 1.959963984540054


def wilson(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (`(0.0, 1.0)` when there are no trials)."""
    if trials <= 0:
        return (0.0, 1.0)
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def pass_at_k(n: int, c: int, k: int) -> float:
    """P(at least one of k of the n runs passes), c of them passing."""
    if not 0 < k <= n:
        raise ValueError(f"k must be in 1..{n}, got {k}")
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """P(all k of the n runs pass), c of them passing."""
    if not 0 < k <= n:
        raise ValueError(f"k must be in 1..{n}, got {k}")
    return comb(c, k) / comb(n, k)


@dataclass(frozen=True, slots=True)
class CheckStats:
    name: str
    passed: int
    """Runs in which every instance of the check passed."""
    runs: int
    """Runs in which the check ran (reached a verdict other than not evaluated)."""
    not_evaluated: int
    informational: bool = False

    @property
    def rate(self) -> float | None:
        return self.passed / self.runs if self.runs else None

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.passed, self.runs)

    @property
    def flaky(self) -> bool:
        return 0 < self.passed < self.runs

    def to_dict(self) -> dict[str, Any]:
        lo, hi = self.interval
        return {
            "name": self.name, "passed": self.passed, "runs": self.runs, "not_evaluated": self.not_evaluated,
            "rate": self.rate, "ci95": [lo, hi], "flaky": self.flaky, "informational": self.informational,
        }  # fmt: skip

    def describe(self) -> str:
        """`Name 2/3 = 0.67 (95% CI 0.21-0.94)`."""
        if not self.runs:
            return f"{self.name}: not evaluated in {self.not_evaluated} run(s)"
        lo, hi = self.interval
        return f"{self.name} {self.passed}/{self.runs} = {self.rate:.2f} (95% CI {lo:.2f}-{hi:.2f})"


@dataclass(frozen=True, slots=True)
class CaseStats:
    runs: int
    passed: int
    pass_at: dict[int, float]
    pass_hat: dict[int, float]
    checks: list[CheckStats]

    @property
    def flaky(self) -> list[CheckStats]:
        return [c for c in self.checks if c.flaky]

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": self.runs, "passed": self.passed,
            "pass_at_k": {str(k): v for k, v in self.pass_at.items()},
            "pass_hat_k": {str(k): v for k, v in self.pass_hat.items()},
            "checks": [c.to_dict() for c in self.checks], "flaky": [c.name for c in self.flaky],
        }  # fmt: skip

    def line(self) -> str:
        """`pass@1 0.67, pass@3 1.00, pass^3 0.00; flaky: ToolCorrectness 2/3 = 0.67 (95% CI 0.21-0.94)`."""
        bits = [f"pass@{k} {v:.2f}" for k, v in self.pass_at.items()]
        bits += [f"pass^{k} {v:.2f}" for k, v in self.pass_hat.items() if k > 1]
        text = ", ".join(bits)
        if self.flaky:
            text += "; flaky: " + ", ".join(c.describe() for c in self.flaky)
        return text


def _ks(n: int) -> list[int]:
    return sorted({k for k in (1, 3, 5, 10, n) if k <= n})


def case_stats(case: CaseRecord) -> CaseStats | None:
    """The statistics of a case with more than one run (None for a single run)."""
    n = len(case.runs)
    if n < 2:
        return None
    c = case.runs_passed
    order: list[str] = []
    per: dict[str, list[int]] = {}  # name -> [runs passed, runs ran, runs not evaluated, informational]
    for run in case.runs:
        verdicts: dict[str, str] = {}
        for check in run.checks:
            name = check.name or "check"
            if name not in per:
                order.append(name)
                per[name] = [0, 0, 0, 0]
            per[name][3] |= check.informational
            prev = verdicts.get(name)
            if check.outcome == "not_evaluated":
                verdicts.setdefault(name, "not_evaluated")
            elif check.outcome == "passed":
                verdicts[name] = "passed" if prev in (None, "not_evaluated", "passed") else prev
            else:
                verdicts[name] = "failed"
        for name, verdict in verdicts.items():
            counts = per[name]
            if verdict == "not_evaluated":
                counts[2] += 1
            else:
                counts[1] += 1
                counts[0] += verdict == "passed"
    checks = [CheckStats(name, p, r, ne, bool(info)) for name in order for p, r, ne, info in [per[name]]]
    ks = _ks(n)
    return CaseStats(n, c, {k: pass_at_k(n, c, k) for k in ks}, {k: pass_hat_k(n, c, k) for k in ks}, checks)
